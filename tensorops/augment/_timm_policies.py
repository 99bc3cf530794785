"""timm's RandAugment, AutoAugment and AugMix as batched policies with per-sample draws (``timm.py``'s docstring
says how they relate to timm's Pillow ops; their tables are in ``_timm_tables.py``)."""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Optional, Sequence, Tuple

import torch

from tensorops.augment import functional as _AF
from tensorops.augment._batched import (
    Params, _Batched, _check_batch, _check_fill, _check_rows, _interpolation_name, _map_values, _round,
)
from tensorops.augment._timm_tables import (
    _AA_POLICIES, _AUGMIX_TRANSFORMS, _IMAGENET_MEAN_U8, _LEVEL_DENOM, _RAND_TRANSFORMS, _TIMM_OPS, _noisy_level,
    _timm_args,
)


# Pillow's geometric ops for timm's kinds (timm's argument as timm gives it to Pillow; translate_rel: times the size)
_PILLOW_GEOMETRY = {
    "rotate": {"rotate": "pil_rotate"}, "shear": {"shear_x": "pil_shear_x", "shear_y": "pil_shear_y"},
    "translate_abs": {"translate_x": "pil_translate_x", "translate_y": "pil_translate_y"},
    "translate_rel": {"translate_x": "pil_translate_x", "translate_y": "pil_translate_y"},
}


def _timm_interpolation(interpolation: Any) -> str:
    """"nearest" / "bilinear" (torchvision's geometry), "bicubic" (Pillow's), or "random" (Pillow's bilinear or
    bicubic per op, timm's ``interpolation="random"``: a list or tuple of bilinear and bicubic means it too)."""
    if isinstance(interpolation, (list, tuple)):
        names = {str(getattr(m, "value", m)).lower() for m in interpolation}
        if names == {"bilinear", "bicubic"}:
            return "random"
        raise ValueError(f"interpolation as a list must be (bilinear, bicubic), timm's random choice, got "
                         f"{interpolation!r}")
    name = getattr(interpolation, "value", interpolation)
    if isinstance(name, str) and name.lower() in ("bicubic", "random"):
        return name.lower()
    return _interpolation_name(interpolation)


def _solarize_threshold(threshold: torch.Tensor, op: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """timm's solarize thresholds and the kernel ops they run: a threshold above 255 (timm's 256) inverts
    nothing, so those samples run Identity (argument 0)."""
    above = threshold > 255
    return torch.where(above, 0.0, threshold), torch.where(above, _AF.OPS.index("identity"), op)


class _TimmBase(_Batched):
    def __init__(self, op_names: Sequence[str], *, magnitude_std: float, magnitude_max: Optional[float],
                 hparams: Optional[Dict[str, Any]], interpolation: Any, fill: Any,
                 generator: Optional[torch.Generator]) -> None:
        super().__init__(generator)
        unknown = [n for n in op_names if n not in _TIMM_OPS]
        if unknown:
            raise ValueError(f"ops: unknown timm op names {unknown} (known: {sorted(_TIMM_OPS)})")
        if not isinstance(magnitude_std, numbers.Real) or magnitude_std < 0:
            raise ValueError(f"magnitude_std must be a number >= 0 (inf: uniform), got {magnitude_std!r}")
        self.op_names: Tuple[str, ...] = ("Identity",) + tuple(op_names)
        self.magnitude_std = float(magnitude_std)
        self.magnitude_max = magnitude_max
        self.hparams = dict(hparams or {})
        self.interpolation = _timm_interpolation(interpolation)
        self.fill = _check_fill(fill)
        self._kinds = [_TIMM_OPS[n][1] for n in self.op_names]

    def _resample_of(self, params: Params, shape: Tuple[int, ...], name: str) -> Optional[torch.Tensor]:
        if self.interpolation != "random":
            return None
        r = params.get("resample")
        if not isinstance(r, torch.Tensor) or tuple(r.shape) != tuple(shape):
            raise ValueError(f"{name}: interpolation='random' needs params['resample'] of ops' shape {tuple(shape)} "
                             "(make_params draws it)")
        return r.cpu()

    def _resample_draws(self, shape: Tuple[int, ...], g: Optional[torch.Generator]) -> Params:
        """interpolation="random": timm's ``random.choice((BILINEAR, BICUBIC))`` per op applied, as Pillow's filter
        codes (1 bilinear, 2 bicubic), drawn last (the other draws are those of the fixed modes)."""
        if self.interpolation != "random":
            return {}
        return {"resample": torch.randint(1, 3, shape, generator=g)}

    def _upper(self) -> float:
        return float(self.magnitude_max or _LEVEL_DENOM)

    def _fill_for(self, channels: int) -> Any:
        if self.fill is not None:
            return self.fill
        return list(self.hparams.get("img_mean", _IMAGENET_MEAN_U8)) if channels == 3 else 128

    def _round(self, batch: torch.Tensor, ops: torch.Tensor, args: torch.Tensor,
               resample: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``op_names[ops[i, k]]`` with timm argument ``args[i, k]`` (ops and args (N,) or (N, K): K ops per sample
        in order), in one ``apply_ops`` call. interpolation "bicubic" or "random": the geometric ops are Pillow's
        (``apply_ops``' pil_* ops, timm's arguments as timm gives them to Pillow), ``resample`` their filters."""
        n, c, h, w = batch.shape
        if self.interpolation in ("bicubic", "random"):
            return self._round_pillow(batch, ops, args, resample)
        names = [_TIMM_OPS[name][0] for name in self.op_names]
        apply_index = torch.tensor([_AF.OPS.index(o) if o in _AF.OPS else 0 for o in names], dtype=torch.int64)
        op = apply_index[ops]
        out_args = torch.zeros_like(args)
        for kind in set(self._kinds):
            sel = torch.isin(ops, torch.tensor([i for i, k in enumerate(self._kinds) if k == kind], dtype=torch.int64))
            if kind == "none" or not bool(sel.any()):
                continue
            a = args[sel]
            if kind == "shear":
                out_args[sel] = _map_values(a, lambda f: math.degrees(math.atan(f)))
            elif kind == "translate_rel":
                # timm: pixels = pct * width (x) or height (y); Pillow's offset p is torchvision's translate -p
                is_x = torch.tensor([nm == "translate_x" for nm in names])[ops[sel]]
                out_args[sel] = -(a * torch.where(is_x, float(w), float(h)))  # fractional, as Pillow's offset
            elif kind == "translate_abs":
                out_args[sel] = -a
            elif kind.startswith("solarize") and kind != "solarize_add":
                out_args[sel], op[sel] = _solarize_threshold(a, op[sel])
            else:
                out_args[sel] = a
        return _round(batch, op, out_args, self.interpolation, self._fill_for(c))

    def _round_pillow(self, batch: torch.Tensor, ops: torch.Tensor, args: torch.Tensor,
                      resample: Optional[torch.Tensor]) -> torch.Tensor:
        n, c, h, w = batch.shape
        names = [_PILLOW_GEOMETRY.get(_TIMM_OPS[name][1], {}).get(_TIMM_OPS[name][0], _TIMM_OPS[name][0])
                 for name in self.op_names]
        op = torch.tensor([_AF._ALL_OPS.index(o) if o in _AF._ALL_OPS else 0 for o in names], dtype=torch.int64)[ops]
        out_args = args.clone()
        for kind in set(self._kinds):
            sel = torch.isin(ops, torch.tensor([i for i, k in enumerate(self._kinds) if k == kind], dtype=torch.int64))
            if not bool(sel.any()):
                continue
            if kind == "translate_rel":  # timm: pixels = pct * width (x) or height (y), Pillow's offset as it is
                is_x = torch.tensor([nm == "pil_translate_x" for nm in names])[ops[sel]]
                out_args[sel] = args[sel] * torch.where(is_x, float(w), float(h))
            elif kind.startswith("solarize") and kind != "solarize_add":
                out_args[sel], op[sel] = _solarize_threshold(args[sel], op[sel])
        if ops.numel() == 0 or bool((op == _AF.OPS.index("identity")).all()):
            return batch
        if resample is None:
            resample = torch.full_like(ops, 2)  # bicubic
        return _AF._apply(batch, op.contiguous(), out_args.contiguous(), "bicubic", self._fill_for(c),
                          resample.to(torch.int64).contiguous(), _AF._ALL_OPS)

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        name = type(self).__name__
        _check_batch(batch, name)
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, name, ndim=2, dtype=torch.int64).cpu()
        mags = _check_rows(params, "magnitudes", n, name, ndim=2, dtype=torch.float64).cpu()
        if ops.shape != mags.shape:
            raise ValueError(f"{name}: params['ops'] and params['magnitudes'] must have the same shape")
        if ops.numel() and (int(ops.min()) < 0 or int(ops.max()) >= len(self.op_names)):
            raise ValueError(f"{name}: params['ops'] must index op_names (0..{len(self.op_names) - 1})")
        out = self._round(batch, ops, mags, self._resample_of(params, ops.shape, name))  # every op in order, one call
        return out.clone() if out is batch else out


class TimmRandAugment(_TimmBase):
    """timm's RandAugment (``rand-...`` strings) with per-sample draws; see the module docstring.

    Each sample draws ``num_layers`` ops (uniform with replacement, or by ``choice_weights`` without replacement
    as timm's ``np.random.choice``), each applied with probability ``prob`` (timm: 0.5), at level ``magnitude``
    (+ noise) of 10.

    Params: ``ops`` int64 (N, num_layers), ``magnitudes`` float64 (N, num_layers), ``levels`` float64.
    """

    def __init__(self, ops: Sequence[str] = tuple(_RAND_TRANSFORMS), num_layers: int = 2, magnitude: float = 10,
                 magnitude_std: float = 0.0, magnitude_max: Optional[float] = None,
                 choice_weights: Optional[Sequence[float]] = None, prob: float = 0.5,
                 hparams: Optional[Dict[str, Any]] = None, interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(ops, magnitude_std=magnitude_std, magnitude_max=magnitude_max, hparams=hparams,
                         interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(num_layers, int) or num_layers < 0:
            raise ValueError(f"num_layers must be an int >= 0, got {num_layers!r}")
        if choice_weights is not None:
            if len(choice_weights) != len(ops):
                raise ValueError(f"choice_weights has {len(choice_weights)} values but there are {len(ops)} ops")
            w = torch.tensor([float(v) for v in choice_weights], dtype=torch.float64)
            if (w < 0).any() or int((w > 0).sum()) < num_layers:
                raise ValueError(f"choice_weights must be >= 0 with at least num_layers={num_layers} positive")
            choice_weights = w / w.sum()
        self.num_layers = num_layers
        self.magnitude = float(magnitude)
        self.choice_weights = choice_weights
        self.prob = float(prob)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmRandAugment")
        g = self._gen(generator)
        n, L = batch.shape[0], self.num_layers
        if self.choice_weights is None:
            ops = torch.randint(1, len(self.op_names), (n, L), generator=g)
        elif n == 0 or L == 0:
            ops = torch.zeros((n, L), dtype=torch.int64)
        else:
            ops = torch.multinomial(self.choice_weights.expand(n, -1), L, replacement=False, generator=g) + 1
        applied = torch.rand((n, L), generator=g, dtype=torch.float64) <= self.prob if self.prob < 1.0 \
            else torch.ones((n, L), dtype=torch.bool)
        levels = _noisy_level((n, L), torch.tensor(self.magnitude), self.magnitude_std, self._upper(), g)
        negate = torch.rand((n, L), generator=g, dtype=torch.float64) > 0.5
        args = _timm_args(self._kinds, ops, levels, negate, self.hparams)
        zero = torch.zeros_like(args)
        return {"ops": torch.where(applied, ops, torch.zeros_like(ops)), "magnitudes": torch.where(applied, args, zero),
                "levels": torch.where(applied, levels, zero), **self._resample_draws((n, L), g)}


class TimmAutoAugment(_TimmBase):
    """timm's AutoAugment (``original``, ``originalr``, ``v0``, ``v0r`` [``-mstd<x>``]) with per-sample draws.

    Each sample draws a sub-policy; each of its ops applies with its probability, at its level (+ noise).

    Params: ``ops`` int64 (N, 2), ``magnitudes`` float64 (N, 2), ``levels`` float64 (N, 2), ``policy`` int64 (N,).
    """

    def __init__(self, policy: str = "v0", magnitude_std: float = 0.0, magnitude_max: Optional[float] = None,
                 hparams: Optional[Dict[str, Any]] = None, interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        if policy not in _AA_POLICIES:
            raise ValueError(f"policy must be one of {sorted(_AA_POLICIES)}, got {policy!r}")
        subs = _AA_POLICIES[policy]
        names = sorted({op for sub in subs for op, _, _ in sub})
        super().__init__(names, magnitude_std=magnitude_std, magnitude_max=magnitude_max, hparams=hparams,
                         interpolation=interpolation, fill=fill, generator=generator)
        self.policy = policy
        index = {name: i for i, name in enumerate(self.op_names)}
        self._sub_ops = torch.tensor([[index[op] for op, _, _ in sub] for sub in subs], dtype=torch.int64)
        self._sub_probs = torch.tensor([[p for _, p, _ in sub] for sub in subs], dtype=torch.float64)
        self._sub_levels = torch.tensor([[m for _, _, m in sub] for sub in subs], dtype=torch.float64)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmAutoAugment")
        g = self._gen(generator)
        n = batch.shape[0]
        policy = torch.randint(len(self._sub_ops), (n,), generator=g)
        ops, probs = self._sub_ops[policy], self._sub_probs[policy]
        # timm: `if self.prob < 1.0 and random.random() > self.prob: return img`
        applied = (torch.rand((n, 2), generator=g, dtype=torch.float64) <= probs) | (probs >= 1.0)
        levels = _noisy_level((n, 2), self._sub_levels[policy], self.magnitude_std, self._upper(), g)
        negate = torch.rand((n, 2), generator=g, dtype=torch.float64) > 0.5
        args = _timm_args(self._kinds, ops, levels, negate, self.hparams)
        zero = torch.zeros_like(args)
        return {"ops": torch.where(applied, ops, torch.zeros_like(ops)), "magnitudes": torch.where(applied, args, zero),
                "levels": torch.where(applied, levels, zero), "policy": policy, **self._resample_draws((n, 2), g)}


class TimmAugMix(_TimmBase):
    """timm's AugMix (``augmix-...`` strings) with per-sample draws; see the module docstring.

    ``width`` chains of ``depth`` ops (uniform in [1, 3] per chain when ``depth <= 0``) drawn uniformly from
    timm's AugMix op list (probability 1), level ``severity`` with noise (default uniform in [0, severity]);
    ``weights ~ Dirichlet([alpha] * width)``, ``m ~ Beta(alpha, alpha)`` (float32, as timm casts them), mixed as
    timm's ``_apply_basic``: ``mixed = sum_i weights_i * chain_i`` (float32), clipped to [0, 255], truncated to
    uint8, then ``image + m * (mixed - image)`` truncated (Pillow's ``Image.blend`` formula, float32).

    Params: ``ops`` int64 (N, width, depth) (Identity-padded), ``magnitudes`` and ``levels`` float64 (same shape),
    ``depths`` int64 (N, width), ``weights`` float32 (N, width), ``m`` float32 (N,).
    """

    def __init__(self, severity: float = 3, width: int = 3, depth: int = -1, alpha: float = 1.0,
                 magnitude_std: float = float("inf"), magnitude_max: Optional[float] = None,
                 ops: Sequence[str] = tuple(_AUGMIX_TRANSFORMS), hparams: Optional[Dict[str, Any]] = None,
                 interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(ops, magnitude_std=magnitude_std, magnitude_max=magnitude_max, hparams=hparams,
                         interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be an int >= 1, got {width!r}")
        if not isinstance(depth, int) or depth == 0:
            raise ValueError(f"depth must be a positive int, or negative for a depth drawn in [1, 3], got {depth!r}")
        if not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        self.severity = float(severity)
        self.width = width
        self.depth = depth
        self.alpha = float(alpha)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "TimmAugMix")
        g = self._gen(generator)
        n, width = batch.shape[0], self.width
        dmax = self.depth if self.depth > 0 else 3
        weights = torch._sample_dirichlet(torch.full((n, width), self.alpha, dtype=torch.float64), generator=g)
        m = torch._sample_dirichlet(torch.full((n, 2), self.alpha, dtype=torch.float64), generator=g)[:, 0]
        depths = (torch.full((n, width), self.depth, dtype=torch.int64) if self.depth > 0
                  else torch.randint(1, 4, (n, width), generator=g))
        shape = (n, width, dmax)
        ops = torch.randint(1, len(self.op_names), shape, generator=g)
        levels = _noisy_level(shape, torch.tensor(self.severity), self.magnitude_std, self._upper(), g)
        negate = torch.rand(shape, generator=g, dtype=torch.float64) > 0.5
        args = _timm_args(self._kinds, ops, levels, negate, self.hparams)
        live = torch.arange(dmax)[None, None, :] < depths[:, :, None]
        zero = torch.zeros_like(args)
        return {"ops": torch.where(live, ops, torch.zeros_like(ops)), "magnitudes": torch.where(live, args, zero),
                "levels": torch.where(live, levels, zero), "depths": depths,
                "weights": weights.to(torch.float32), "m": m.to(torch.float32),  # timm: np.float32(...)
                **self._resample_draws(shape, g)}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "TimmAugMix")
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, "TimmAugMix", ndim=3, dtype=torch.int64).cpu()
        mags = _check_rows(params, "magnitudes", n, "TimmAugMix", ndim=3, dtype=torch.float64).cpu()
        weights = _check_rows(params, "weights", n, "TimmAugMix", ndim=2, dtype=torch.float32)
        m = _check_rows(params, "m", n, "TimmAugMix", ndim=1, dtype=torch.float32)
        if ops.shape != mags.shape or weights.shape[1] != ops.shape[1]:
            raise ValueError(f"TimmAugMix: params shapes disagree: ops {tuple(ops.shape)}, magnitudes "
                             f"{tuple(mags.shape)}, weights {tuple(weights.shape)}")
        dims = (n, 1, 1, 1)
        w = weights.to(batch.device)
        mixed = torch.zeros_like(batch, dtype=torch.float32)
        resample = self._resample_of(params, tuple(ops.shape), "TimmAugMix")
        for i in range(ops.shape[1]):
            aug = self._round(batch, ops[:, i], mags[:, i], None if resample is None else resample[:, i])
            mixed += w[:, i].reshape(dims) * aug.to(torch.float32)
        mixed = mixed.clamp_(0.0, 255.0).to(torch.uint8).to(torch.float32)
        x = batch.to(torch.float32)
        return (x + m.to(batch.device).reshape(dims) * (mixed - x)).to(torch.uint8)
