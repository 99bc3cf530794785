"""The auto-augment policies on uint8 batches, every sample drawing its own ops, magnitude bins and signs:
``TrivialAugmentWide``, ``RandAugment``, ``AutoAugment`` and ``AugMix``, torchvision v2's per sample (their tables
in ``_op_tables.py``; the params they draw are described in ``transforms.py``)."""
from __future__ import annotations

import numbers
from enum import Enum
from typing import Any, Dict, Optional, Tuple

import torch

from tensorops.augment import functional as _AF
from tensorops.augment._batched import (
    Params, _Batched, _check_batch, _check_fill, _check_rows, _interpolation_name,
)
from tensorops.augment._op_tables import (
    _AUGMIX_PARTIAL_SPACE, _AUGMIX_SPACE, _AUTOAUGMENT_POLICIES, _AUTOAUGMENT_SPACE, _RANDAUGMENT_SPACE,
    _TRIVIALAUGMENT_SPACE, _MagFn, _magnitude_table, _none, _signed, _tv_round,
)


class AutoAugmentPolicy(Enum):
    """The AutoAugment policies (torchvision's ``AutoAugmentPolicy`` values are accepted too)."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


class _AutoAugmentBase(_Batched):
    _SPACE: Dict[str, Tuple[_MagFn, bool]] = {}

    def __init__(self, *, interpolation: Any = "nearest", fill: Any = None,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(generator)
        self.interpolation = _interpolation_name(interpolation)
        self.fill = _check_fill(fill)
        self.op_names: Tuple[str, ...] = tuple(self._SPACE)

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        name = type(self).__name__
        _check_batch(batch, name)
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, name, ndim=2, dtype=torch.int64)
        mags = _check_rows(params, "magnitudes", n, name, ndim=2, dtype=torch.float64)
        if ops.shape != mags.shape:
            raise ValueError(f"{name}: params['ops'] {tuple(ops.shape)} and params['magnitudes'] "
                             f"{tuple(mags.shape)} must have the same shape")
        if ops.numel() and (int(ops.min()) < 0 or int(ops.max()) >= len(self.op_names)):
            raise ValueError(f"{name}: params['ops'] must index op_names (0..{len(self.op_names) - 1})")
        # every sample's ops in order in one call (apply_ops with (N, K))
        out = _tv_round(batch, self.op_names, ops.cpu(), mags.cpu(), self.interpolation, self.fill)
        return out.clone() if out is batch else out

    def extra_repr(self) -> str:
        return f"interpolation={self.interpolation!r}, fill={self.fill!r}"

    def _bins(self, num_magnitude_bins: Any) -> int:
        if not isinstance(num_magnitude_bins, int) or isinstance(num_magnitude_bins, bool) or num_magnitude_bins < 2:
            raise ValueError(f"num_magnitude_bins must be an int >= 2, got {num_magnitude_bins!r}")
        return num_magnitude_bins

    def _draw_setup(self, batch: torch.Tensor, generator: Optional[torch.Generator]):
        """(generator, N, the magnitude table and its signed flags) of a batch: every binned policy's first step."""
        _check_batch(batch, type(self).__name__)
        n, _, h, w = batch.shape
        return (self._gen(generator), n) + tuple(_magnitude_table(self._SPACE, self.num_magnitude_bins, h, w))


class TrivialAugmentWide(_AutoAugmentBase):
    """TrivialAugment Wide on a uint8 batch, each sample drawing its own op, magnitude bin and sign.

    torchvision 0.29.1's ``v2.TrivialAugmentWide`` (same augmentation space, ``num_magnitude_bins`` bins, op and bin
    uniform, sign +/- with probability 1/2 for signed ops), per sample.

    Args:
        num_magnitude_bins: number of magnitude bins (>= 2), default 31.
        interpolation: "nearest" (default) or "bilinear" (or InterpolationMode.NEAREST / BILINEAR).
        fill: None (zeros), a number or a sequence of C numbers for the area outside geometric ops.
        generator: CPU ``torch.Generator`` for the draws (else torch's global generator).

    Params (``make_params(batch)``): ``ops`` int64 (N, 1) indices into ``op_names``; ``magnitudes`` float64 (N, 1).

    Shapes: batch uint8 (N, C, H, W), C in {1, 3}, CPU or CUDA -> uint8 (N, C, H, W), same memory format.

    Example:
        >>> t = TrivialAugmentWide(generator=torch.Generator().manual_seed(0))
        >>> out = t(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _SPACE = _TRIVIALAUGMENT_SPACE

    def __init__(self, num_magnitude_bins: int = 31, interpolation: Any = "nearest", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        self.num_magnitude_bins = self._bins(num_magnitude_bins)

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        g, n, table, signed = self._draw_setup(batch, generator)
        ops = torch.randint(len(self.op_names), (n, 1), generator=g)
        bins = torch.randint(self.num_magnitude_bins, (n, 1), generator=g)
        sign = torch.rand((n, 1), generator=g)
        return {"ops": ops, "magnitudes": _signed(table, signed, ops, bins, sign)}


class RandAugment(_AutoAugmentBase):
    """RandAugment on a uint8 batch: each sample draws its own ``num_ops`` ops (uniform, with repetition) and signs.

    torchvision 0.29.1's ``v2.RandAugment``: magnitude bin ``magnitude`` of ``num_magnitude_bins``, signed ops
    negated with probability 1/2, per sample and per op.

    Args:
        num_ops: ops per sample (>= 0), default 2.
        magnitude: the magnitude bin, 0 <= magnitude < num_magnitude_bins, default 9.
        num_magnitude_bins: default 31 (>= 2).
        interpolation, fill, generator: as ``TrivialAugmentWide``.

    Params: ``ops`` int64 (N, num_ops) into ``op_names``; ``magnitudes`` float64 (N, num_ops), applied left to right.

    Example:
        >>> out = RandAugment(2, 9)(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _SPACE = _RANDAUGMENT_SPACE

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: Any = "nearest", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(num_ops, int) or isinstance(num_ops, bool) or num_ops < 0:
            raise ValueError(f"num_ops should be a non-negative integer, but got {num_ops!r} instead.")
        self._bins(num_magnitude_bins)
        if not isinstance(magnitude, int) or isinstance(magnitude, bool) or not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"magnitude must be an int bin in [0, num_magnitude_bins={num_magnitude_bins}), "
                             f"got {magnitude!r}")
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        g, n, table, signed = self._draw_setup(batch, generator)
        ops = torch.randint(len(self.op_names), (n, self.num_ops), generator=g)
        sign = torch.rand((n, self.num_ops), generator=g)
        bins = torch.full_like(ops, self.magnitude)
        return {"ops": ops, "magnitudes": _signed(table, signed, ops, bins, sign)}


class AutoAugment(_AutoAugmentBase):
    """AutoAugment (ImageNet, CIFAR10 or SVHN policy) on a uint8 batch, each sample drawing its own sub-policy.

    torchvision 0.29.1's ``v2.AutoAugment``: a sub-policy uniform among the policy's 25, then each of its two ops
    applied when ``rand <= probability``, with the sub-policy's magnitude bin (of 10) and a sign +/- with
    probability 1/2 for signed ops; per sample.

    Ops not applied because of their probability are recorded as ``"Identity"`` with magnitude 0.0, so a row
    replays as it was drawn: ``op_names`` is ``("Identity",) + `` torchvision's AutoAugment op names, and
    ``params["applied"]`` (bool (N, 2)) says which of the sub-policy's two ops were applied, ``params["policy"]``
    (int64 (N,)) which sub-policy each sample drew.

    Args:
        policy: ``AutoAugmentPolicy.IMAGENET`` (default), ``CIFAR10`` or ``SVHN`` (torchvision's enum or its
            string values "imagenet", "cifar10", "svhn" also accepted).
        interpolation, fill, generator: as ``TrivialAugmentWide``.

    Params: ``ops`` int64 (N, 2), ``magnitudes`` float64 (N, 2), ``applied`` bool (N, 2), ``policy`` int64 (N,).

    Example:
        >>> out = AutoAugment(AutoAugmentPolicy.CIFAR10)(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _SPACE = {"Identity": (_none(), False), **_AUTOAUGMENT_SPACE}

    def __init__(self, policy: Any = AutoAugmentPolicy.IMAGENET, interpolation: Any = "nearest", fill: Any = None,
                 *, generator: Optional[torch.Generator] = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        key = getattr(policy, "value", policy)
        if not isinstance(key, str) or key.lower() not in _AUTOAUGMENT_POLICIES:
            raise ValueError(f"policy must be AutoAugmentPolicy.IMAGENET, CIFAR10 or SVHN, got {policy!r}")
        self.policy = AutoAugmentPolicy(key.lower())
        subs = _AUTOAUGMENT_POLICIES[key.lower()]
        index = {name: i for i, name in enumerate(self.op_names)}
        self._sub_ops = torch.tensor([[index[op[0]] for op in sub] for sub in subs], dtype=torch.int64)
        self._sub_probs = torch.tensor([[op[1] for op in sub] for sub in subs], dtype=torch.float64)
        self._sub_bins = torch.tensor([[op[2] if op[2] is not None else 0 for op in sub] for sub in subs])

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "AutoAugment")
        g = self._gen(generator)
        n, _, h, w = batch.shape
        table, signed = _magnitude_table(self._SPACE, 10, h, w)
        policy = torch.randint(len(self._sub_ops), (n,), generator=g)
        apply_draw = torch.rand((n, 2), generator=g)
        sign = torch.rand((n, 2), generator=g)
        ops = self._sub_ops[policy]
        # v2: `if not torch.rand(()) <= probability`: a float32 tensor against a Python number, compared in float32
        applied = apply_draw <= self._sub_probs[policy].to(torch.float32)
        mags = _signed(table, signed, ops, self._sub_bins[policy], sign)
        ops = torch.where(applied, ops, torch.zeros_like(ops))
        mags = torch.where(applied, mags, torch.zeros_like(mags))
        return {"ops": ops, "magnitudes": mags, "applied": applied, "policy": policy}

    def extra_repr(self) -> str:
        return f"policy={self.policy}, " + super().extra_repr()


class AugMix(_AutoAugmentBase):
    """AugMix on a uint8 batch: every sample draws its own chains, magnitudes, signs and mixing weights.

    torchvision 0.29.1's ``v2.AugMix``: ``mixture_width`` chains of ``chain_depth`` ops (uniform in [1, 3] per chain
    when ``chain_depth <= 0``), ops uniform over the (all_ops or partial) space, magnitude bin uniform in
    [0, severity) of 10 bins, sign +/- 1/2; weights ``m ~ Dirichlet([alpha, alpha])`` and
    ``w ~ Dirichlet([alpha] * mixture_width)``, float32 as v2 draws them (``torch._sample_dirichlet``). The mix is
    v2's float32 arithmetic, in its order: ``mix = m[:, 0] * batch``, then for each chain
    ``mix.add_((w * m[:, 1])[:, i] * chain_i)``, then ``.to(uint8)`` (truncation), so it replays bit for bit.

    Params: ``ops`` int64 (N, mixture_width, depth) into ``op_names`` (``("Identity",)`` + v2's space; chains
    shorter than ``depth`` — 3 when stochastic — are padded with Identity), ``magnitudes`` float64 (same shape),
    ``depths`` int64 (N, mixture_width), ``beta`` float32 (N, 2) (v2's ``m``), ``dirichlet`` float32
    (N, mixture_width) (v2's mixing Dirichlet before it is multiplied by ``m[:, 1]``).

    Args:
        severity: 1..10, default 3. mixture_width: default 3. chain_depth: default -1 (stochastic 1..3).
        alpha: default 1.0. all_ops: default True. interpolation: default "bilinear" (as v2). fill, generator.

    Example:
        >>> out = AugMix(generator=torch.Generator().manual_seed(0))(torch.zeros(4, 3, 32, 32, dtype=torch.uint8))
    """

    _PARAMETER_MAX = 10

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation: Any = "bilinear", fill: Any = None, *,
                 generator: Optional[torch.Generator] = None) -> None:
        self._SPACE = {"Identity": (_none(), False), **(_AUGMIX_SPACE if all_ops else _AUGMIX_PARTIAL_SPACE)}
        super().__init__(interpolation=interpolation, fill=fill, generator=generator)
        if not isinstance(severity, int) or not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        if not isinstance(mixture_width, int) or isinstance(mixture_width, bool) or mixture_width < 1:
            raise ValueError(f"mixture_width must be an int >= 1, got {mixture_width!r}")
        if not isinstance(chain_depth, int) or isinstance(chain_depth, bool) or chain_depth == 0:
            raise ValueError(f"chain_depth must be a positive int, or negative for a depth drawn in [1, 3], "
                             f"got {chain_depth!r}")
        if not isinstance(alpha, numbers.Real) or not alpha > 0:
            raise ValueError(f"alpha must be a positive number, got {alpha!r}")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = float(alpha)
        self.all_ops = all_ops

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        _check_batch(batch, "AugMix")
        g = self._gen(generator)
        n, _, h, w = batch.shape
        width = self.mixture_width
        depth = self.chain_depth if self.chain_depth > 0 else 3
        # v2: torch.tensor([alpha, alpha]).expand(N, -1) -> float32 concentrations
        beta = torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]).expand(n, -1).contiguous(),
                                       generator=g)
        dirichlet = torch._sample_dirichlet(torch.tensor([self.alpha] * width).expand(n, -1).contiguous(),
                                            generator=g)
        if self.chain_depth > 0:
            depths = torch.full((n, width), self.chain_depth, dtype=torch.int64)
        else:
            depths = torch.randint(1, 4, (n, width), generator=g)
        table, signed = _magnitude_table(self._SPACE, self._PARAMETER_MAX, h, w)
        ops = torch.randint(1, len(self.op_names), (n, width, depth), generator=g)  # 0 is the Identity padding
        bins = torch.randint(self.severity, (n, width, depth), generator=g)
        sign = torch.rand((n, width, depth), generator=g)
        mags = _signed(table, signed, ops, bins, sign)
        live = torch.arange(depth)[None, None, :] < depths[:, :, None]
        ops = torch.where(live, ops, torch.zeros_like(ops))
        mags = torch.where(live, mags, torch.zeros_like(mags))
        return {"ops": ops, "magnitudes": mags, "depths": depths, "beta": beta, "dirichlet": dirichlet}

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        _check_batch(batch, "AugMix")
        n = batch.shape[0]
        ops = _check_rows(params, "ops", n, "AugMix", ndim=3, dtype=torch.int64)
        mags = _check_rows(params, "magnitudes", n, "AugMix", ndim=3, dtype=torch.float64)
        beta = _check_rows(params, "beta", n, "AugMix", ndim=2, dtype=torch.float32)
        dirichlet = _check_rows(params, "dirichlet", n, "AugMix", ndim=2, dtype=torch.float32)
        if ops.shape != mags.shape or dirichlet.shape[1] != ops.shape[1] or beta.shape[1] != 2:
            raise ValueError(f"AugMix: params shapes disagree: ops {tuple(ops.shape)}, magnitudes "
                             f"{tuple(mags.shape)}, dirichlet {tuple(dirichlet.shape)}, beta {tuple(beta.shape)}")
        if ops.numel() and (int(ops.min()) < 0 or int(ops.max()) >= len(self.op_names)):
            raise ValueError(f"AugMix: params['ops'] must index op_names (0..{len(self.op_names) - 1})")
        # v2: combined_weights = dirichlet * m[:, 1].reshape([N, -1]) (float32); the mix in one pass
        # (functional.mix: v2's float32 order)
        combined = dirichlet.cpu() * beta.cpu()[:, 1].reshape(n, 1)
        weights = torch.cat([beta.cpu()[:, :1], combined], dim=1)
        ops, mags = ops.cpu(), mags.cpu()
        chains = []
        for i in range(ops.shape[1]):  # each chain's ops in one call
            chains.append(_tv_round(batch, self.op_names, ops[:, i], mags[:, i], self.interpolation, self.fill))
        if not chains:
            return (beta[:, 0].to(batch.device).reshape(n, 1, 1, 1) * batch).to(dtype=batch.dtype)
        return _AF.mix(batch, chains, weights)

    def extra_repr(self) -> str:
        return (f"severity={self.severity}, mixture_width={self.mixture_width}, chain_depth={self.chain_depth}, "
                f"alpha={self.alpha}, all_ops={self.all_ops}, " + super().extra_repr())
