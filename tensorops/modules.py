"""nn.Module front doors for transform pipelines and models."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence, Tuple, Union

import torch
from torch import nn

from tensorops._checks import FORMATS, check_stat_values, where
from tensorops.normalize import normalize

__all__ = ["Normalize"]

_FN = where("Normalize")

Stat = Union[float, Sequence[float], torch.Tensor]


def _stat_buffer(name: str, value: object) -> Tuple[torch.Tensor, Optional[List[float]]]:
    """mean/std as a float64 1-D buffer and its values as Python floats (None for a meta tensor, whose values
    cannot be read). Errors name the argument (torch.as_tensor's own messages do not, and it would silently drop
    the imaginary part of a complex tensor). Never reads a meta tensor, so this works under
    ``with torch.device("meta")``: the values are checked on the CPU, the buffer is made on the default device."""
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{_FN}{name} must be a real tensor, got {value.dtype}")
        if value.dim() > 1:
            raise ValueError(
                f"{_FN}{name} must be a number or a 1-D sequence of C values, got shape {tuple(value.shape)}"
            )
        t = value.detach().to(torch.float64, copy=True).reshape(-1)  # stays on the given tensor's device
        values = None if t.is_meta else t.tolist()
    else:
        if value is None or isinstance(value, (str, bytes, bool, complex)):
            raise TypeError(f"{_FN}{name} must be a number, a sequence of numbers or a tensor, got {value!r}")
        try:
            cpu = torch.as_tensor(value, dtype=torch.float64, device="cpu")
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(
                f"{_FN}{name} must be a number, a sequence of numbers or a tensor, got {value!r}"
            ) from exc
        if cpu.dim() > 1:
            raise ValueError(
                f"{_FN}{name} must be a number or a 1-D sequence of C values, got shape {tuple(cpu.shape)}"
            )
        values = cpu.reshape(-1).tolist()
        t = torch.tensor(values, dtype=torch.float64)  # the default device: meta under torch.device("meta")
    if t.numel() == 0:
        raise ValueError(f"{_FN}{name} is empty")
    if values is not None:
        check_stat_values("Normalize", name, values)
    return t, values


def _conversion_dtype(fn: Callable[[torch.Tensor], torch.Tensor], like: torch.Tensor) -> Optional[torch.dtype]:
    """The floating dtype ``fn`` converts every floating tensor to (``.half()``, ``.to(torch.bfloat16)``,
    ``.double()``, ``.float()``), or None when it keeps dtypes (``.cuda()``, ``to_empty``, ``share_memory``).
    Found by applying fn to two empty probes of different floating dtypes: a conversion maps both to one dtype."""
    try:
        a = fn(like.new_empty(0, dtype=torch.float32))
        b = fn(like.new_empty(0, dtype=torch.float16))
    except Exception:  # noqa: BLE001 - fn is arbitrary; a probe it rejects tells nothing about dtypes
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.is_floating_point():
        return a.dtype
    return None


class Normalize(nn.Module):
    """``tensorops.normalize`` as a module: ``(x * scale - mean) / std`` in one pass.

    The statistics are float64 buffers laid along ``dim`` (``.to(device)`` moves them, ``state_dict``
    round-trips, it pickles). The module follows nn.Module's dtype habits: ``.half()``, ``.bfloat16()``,
    ``.to(dtype)``, ``.float()`` and ``.double()`` set the dtype of its OUTPUT (so
    ``nn.Sequential(Normalize(...), net).half()`` feeds the net float16) and never round the statistics.
    It can be built under ``with torch.device("meta")``; after ``to_empty(device=...)`` call
    ``reset_parameters()`` (the statistics given to the constructor) or load a state_dict.

    Args: as :func:`tensorops.normalize` (``dtype=None``: float32 for uint8/uint16 input, else the input's).

    Example:
        >>> norm = tensorops.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        >>> norm(torch.zeros(2, 3, 8, 8, dtype=torch.uint8)).dtype
        torch.float32
        >>> norm.half()(torch.zeros(2, 3, 8, 8, dtype=torch.uint8)).dtype
        torch.float16
    """

    mean: torch.Tensor
    std: torch.Tensor

    # the keyword arguments of tensorops.normalize, with its defaults (a deliberate mirror of its signature)
    def __init__(self, mean: Stat, std: Stat, *, dim: int = -3, dtype: Optional[torch.dtype] = None,
                 scale: Optional[float] = None, memory_format: torch.memory_format = torch.preserve_format) -> None:
        super().__init__()
        if memory_format not in FORMATS:
            raise ValueError(f"{_FN}memory_format must be a torch.memory_format, got {memory_format!r}")
        mean_t, mean_values = _stat_buffer("mean", mean)
        std_t, std_values = _stat_buffer("std", std)
        self._given = (mean_values, std_values)  # what reset_parameters() restores
        self.register_buffer("mean", mean_t)
        self.register_buffer("std", std_t)
        self._refresh_values()
        self.dim = dim
        self.dtype = dtype
        self.scale = scale
        self.memory_format = memory_format

    @property
    def memory_format(self) -> torch.memory_format:
        return getattr(torch, self._memory_format)

    @memory_format.setter
    def memory_format(self, value: torch.memory_format) -> None:
        # kept by name: torch.save cannot pickle a torch.memory_format object
        self._memory_format = str(value).replace("torch.", "")

    def reset_parameters(self) -> None:
        """Write the statistics given to the constructor into the buffers (after ``to_empty``)."""
        for name, values in zip(("mean", "std"), self._given):
            if values is None:
                raise RuntimeError(f"{_FN}{name} was given as a meta tensor: there are no values to restore")
            with torch.no_grad():
                getattr(self, name).copy_(torch.tensor(values, dtype=torch.float64))

    def _apply(self, fn, recurse=True):  # type: ignore[override]
        # nn.Module's dtype conversions set the output dtype; the buffers keep float64 (moved, never rounded)
        target = _conversion_dtype(fn, self.mean)
        if target is None:
            return super()._apply(fn, recurse)

        def keep_precision(t: torch.Tensor) -> torch.Tensor:
            out = fn(t)
            if t.is_floating_point() and out.dtype != t.dtype:
                return t.to(device=out.device, copy=True)
            return out

        super()._apply(keep_precision, recurse)
        self.dtype = target
        return self

    def _refresh_values(self) -> None:
        # the statistics as Python numbers, used while the buffers live on the CPU: then a CUDA input costs no
        # host-to-device copy, and torch.compile sees constants
        readable = not (self.mean.is_meta or self.std.is_meta)
        self._mean_values = self.mean.tolist() if readable else None
        self._std_values = self.std.tolist() if readable else None
        # what the numbers were read from: forward re-reads them when a buffer was replaced (``norm.mean = t``,
        # ``.to()``, ``.double()``) or changed in place (``norm.mean.fill_(0)``), instead of using stale numbers
        self._values_key = self._stats_key()

    def _stats_key(self) -> tuple:
        return (self.mean, self.mean._version, self.std, self.std._version)

    def _values_stale(self) -> bool:
        m, mv, s, sv = self._values_key
        return m is not self.mean or s is not self.std or mv != self.mean._version or sv != self.std._version

    def __setstate__(self, state: dict) -> None:
        # modules pickled by earlier versions lack the attributes added since
        state.setdefault("_memory_format", "preserve_format")
        state.setdefault("_given", (None, None))
        super().__setstate__(state)

    def _load_from_state_dict(self, *args, **kwargs):  # type: ignore[override]
        super()._load_from_state_dict(*args, **kwargs)
        self._refresh_values()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kw = dict(dim=self.dim, dtype=self.dtype, scale=self.scale, memory_format=self.memory_format)
        if self.mean.device.type == "cpu":
            if torch.compiler.is_compiling():
                # dynamo cannot read _version: give it the buffers themselves when it can (it then reads their
                # current values at run time) and the numbers only for an input on another device
                if x.device == self.mean.device:
                    return normalize(x, self.mean, self.std, **kw)
            elif self._values_stale():
                self._refresh_values()
            return normalize(x, self._mean_values, self._std_values, **kw)
        return normalize(x, self.mean, self.std, **kw)

    def extra_repr(self) -> str:
        def shown(buf: torch.Tensor, given: Optional[List[float]]) -> str:
            if buf.is_meta:  # the values given to the constructor, when there were any
                return str(given) if given is not None else f"<meta {tuple(buf.shape)}>"
            return str(buf.tolist())  # float64: the numbers as given print as given (0.485, not 0.48500001...)

        fmt = "" if self.memory_format == torch.preserve_format else f", memory_format={self.memory_format}"
        return (
            f"mean={shown(self.mean, self._given[0])}, std={shown(self.std, self._given[1])}, dim={self.dim}, "
            f"dtype={self.dtype}, scale={self.scale}{fmt}"
        )
