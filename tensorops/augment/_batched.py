"""The plumbing every batched transform shares: the ``make_params`` / ``transform`` / ``forward`` protocol
(``_Batched``), the checks of batches, arguments and params that name what is wrong, and one ``apply_ops`` round
over the samples (``_round``)."""
from __future__ import annotations

import numbers
from typing import Any, Callable, Dict, Optional

import torch
from torch import nn

from tensorops.augment import functional as _AF

Params = Dict[str, Any]


def _check_batch(batch: Any, who: str, *, allow_float: bool = False, any_channels: bool = False) -> None:
    """Raise naming ``batch`` unless it is an (N, C, H, W) tensor of the dtype and channel count ``who`` takes."""
    if not isinstance(batch, torch.Tensor):
        raise TypeError(f"{who}: batch must be a torch.Tensor (N, C, H, W), got {type(batch).__name__}")
    if batch.ndim != 4:
        raise ValueError(f"{who}: batch must have 4 dims (N, C, H, W), got shape {tuple(batch.shape)}")
    if batch.dtype != torch.uint8 and not (allow_float and batch.dtype.is_floating_point):
        wanted = "uint8 or floating point" if allow_float else "uint8"
        raise TypeError(f"{who}: batch has dtype {batch.dtype} but {who} needs {wanted} (N, C, H, W) images")
    if not any_channels and batch.shape[1] not in (1, 3):
        raise ValueError(f"{who}: batch has {batch.shape[1]} channels along dim 1, but {who} needs 1 or 3")


def _pick_generator(generator: Optional[torch.Generator],
                    default: Optional[torch.Generator]) -> Optional[torch.Generator]:
    g = generator if generator is not None else default
    if g is not None and (not isinstance(g, torch.Generator) or g.device.type != "cpu"):
        raise TypeError(f"generator must be a CPU torch.Generator (draws happen on the CPU), got {g!r}")
    return g


def _interpolation_name(interpolation: Any) -> str:
    """'nearest' or 'bilinear' from a string or an InterpolationMode-like enum (its ``.value``)."""
    name = getattr(interpolation, "value", interpolation)
    if not isinstance(name, str) or name.lower() not in ("nearest", "bilinear"):
        raise ValueError(f"interpolation must be 'nearest' or 'bilinear' (or InterpolationMode.NEAREST/BILINEAR), "
                         f"got {interpolation!r}")
    return name.lower()


def _check_fill(fill: Any) -> Any:
    if fill is None or isinstance(fill, numbers.Number):
        return fill
    if isinstance(fill, (list, tuple)) and all(isinstance(v, numbers.Number) for v in fill) and len(fill) >= 1:
        return list(fill)
    raise TypeError(f"fill must be None, a number or a sequence of numbers, got {fill!r}")


def _check_rows(params: Params, key: str, n: int, who: str, *, ndim: int, dtype: torch.dtype) -> torch.Tensor:
    if key not in params:
        raise KeyError(f"{who}: params has no {key!r} (make them with {who}.make_params)")
    t = params[key]
    if not isinstance(t, torch.Tensor) or t.ndim != ndim or t.shape[0] != n or t.dtype != dtype:
        shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        dt = t.dtype if isinstance(t, torch.Tensor) else ""
        raise ValueError(f"{who}: params[{key!r}] must be a {dtype} tensor with {ndim} dims and {n} rows (one per "
                         f"sample of the batch), got {shape} {dt}")
    return t


_OPS_INDEX = {name: i for i, name in enumerate(_AF.OPS)}


def _ops_index(name: str) -> int:
    return _OPS_INDEX[name]


def _round(batch: torch.Tensor, ops: torch.Tensor, magnitudes: torch.Tensor, interpolation: str,
           fill: Any) -> torch.Tensor:
    """One ``apply_ops`` round, skipped when every sample drew identity."""
    if ops.numel() == 0 or bool((ops == _OPS_INDEX["identity"]).all()):
        return batch
    return _AF.apply_ops(batch, ops.contiguous(), magnitudes.contiguous(), interpolation=interpolation, fill=fill)


def _map_values(values: torch.Tensor, fn: Callable[[float], float]) -> torch.Tensor:
    """``fn`` (Python float math, as torchvision computes it) over the distinct values: a loop over a handful of
    magnitude bins, never over samples."""
    if values.numel() == 0:
        return values.clone()
    uniq, inverse = torch.unique(values, return_inverse=True)
    mapped = torch.tensor([fn(float(u)) for u in uniq.tolist()], dtype=torch.float64)
    out = mapped[inverse]
    # torch.unique merges -0.0 and 0.0; keep the sign the Python math gives for each
    zero = values == 0
    if bool(zero.any()):
        out[zero & torch.signbit(values)] = fn(-0.0)
        out[zero & ~torch.signbit(values)] = fn(0.0)
    return out


class _Batched(nn.Module):
    """make_params / transform / forward plumbing shared by every transform here."""

    needs_labels = False  # tensorops.data.augmenting's protocol: MixUp and CutMix mix labels (True)

    def __init__(self, generator: Optional[torch.Generator] = None) -> None:
        super().__init__()
        self.generator = _pick_generator(generator, None)

    def _gen(self, generator: Optional[torch.Generator]) -> Optional[torch.Generator]:
        return _pick_generator(generator, self.generator)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # v2's Transform.forward calls make_params(flat_inputs): a list of the inputs it transforms. Every
        # subclass's make_params takes that list as well as the batch, and picks the batch from it as v2's
        # _needs_transform_list picks the image: the first tv_tensors.Image or Video, else the first plain tensor.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("make_params")
        if own is None or getattr(own, "_takes_flat_inputs", False):
            return

        def make_params(self, batch: Any, generator: Optional[torch.Generator] = None) -> Params:
            if isinstance(batch, (list, tuple)):
                batch = _batch_of_flat_inputs(type(self).__name__, batch)
            return own(self, batch, generator)

        make_params.__doc__, make_params.__qualname__ = own.__doc__, own.__qualname__
        make_params._takes_flat_inputs = True  # type: ignore[attr-defined]
        cls.make_params = make_params

    def make_params(self, batch: torch.Tensor, generator: Optional[torch.Generator] = None) -> Params:
        raise NotImplementedError

    def transform(self, batch: torch.Tensor, params: Params) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        return self.transform(batch, self.make_params(batch))


def _fresh_copy(batch: torch.Tensor) -> torch.Tensor:
    """A copy of ``batch`` in its own layout (channels_last stays channels_last)."""
    if batch.is_contiguous(memory_format=torch.channels_last) and not batch.is_contiguous():
        return batch.clone(memory_format=torch.channels_last)
    return batch.clone(memory_format=torch.contiguous_format) if batch.is_contiguous() else batch.clone()


def _batch_of_flat_inputs(name: str, inputs: Any) -> torch.Tensor:
    """The image batch among v2's flat inputs: the first tv_tensors.Image or Video, else the first plain tensor."""
    import sys

    tv = sys.modules.get("torchvision.tv_tensors")  # loaded wherever a tv_tensor exists
    named = [x for x in inputs if tv is not None and isinstance(x, (tv.Image, tv.Video))]
    plain = [x for x in inputs if isinstance(x, torch.Tensor) and not (tv and isinstance(x, tv.TVTensor))]
    if not named and not plain:
        raise TypeError(f"{name}: make_params got a list of inputs (v2's flat_inputs) without an image batch: "
                        f"{[type(x).__name__ for x in inputs]}")
    return (named or plain)[0]
