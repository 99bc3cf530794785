"""nn.Module front doors for transform pipelines and models."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch
from torch import nn

from tensorops.normalize import normalize

__all__ = ["Normalize"]


def _stat_buffer(name: str, value: object) -> torch.Tensor:
    """mean/std as a float32 1-D buffer; errors name the argument (torch.as_tensor's own messages do not, and it
    would silently drop the imaginary part of a complex tensor)."""
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"Normalize: {name} must be a real tensor, got {value.dtype}")
        t = value.detach().to(torch.float32).clone()
    else:
        if value is None or isinstance(value, (str, bytes, bool, complex)):
            raise TypeError(f"Normalize: {name} must be a number, a sequence of numbers or a tensor, got {value!r}")
        try:
            t = torch.as_tensor(value, dtype=torch.float32).clone()
        except (TypeError, ValueError, RuntimeError) as exc:
            raise TypeError(
                f"Normalize: {name} must be a number, a sequence of numbers or a tensor, got {value!r}"
            ) from exc
    if t.dim() > 1:
        raise ValueError(f"Normalize: {name} must be a number or a 1-D sequence of C values, got shape {tuple(t.shape)}")
    if t.numel() == 0:
        raise ValueError(f"Normalize: {name} is empty")
    if not bool(torch.isfinite(t).all()):
        raise ValueError(f"Normalize: {name} has a NaN or infinite value: {t.tolist()}")
    return t.reshape(-1)


class Normalize(nn.Module):
    """``tensorops.normalize`` as a module: ``(x * scale - mean) / std`` in one pass.

    The statistics are float32 buffers (so ``.to(device)`` moves them and ``state_dict`` round-trips), laid along
    ``dim`` when given as C numbers.

    Example:
        >>> norm = tensorops.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
        >>> norm(torch.zeros(2, 3, 8, 8, dtype=torch.uint8)).dtype
        torch.float32
    """

    mean: torch.Tensor
    std: torch.Tensor

    def __init__(
        self,
        mean: Union[float, Sequence[float], torch.Tensor],
        std: Union[float, Sequence[float], torch.Tensor],
        *,
        dim: int = -3,
        dtype: Optional[torch.dtype] = None,
        scale: Optional[float] = None,
    ) -> None:
        super().__init__()
        mean_t, std_t = _stat_buffer("mean", mean), _stat_buffer("std", std)
        if torch.any(std_t == 0):
            raise ValueError(f"Normalize: std has a zero value: {std_t.tolist()}")
        self.register_buffer("mean", mean_t)
        self.register_buffer("std", std_t)
        self._refresh_values()
        self.dim = dim
        self.dtype = dtype
        self.scale = scale

    def _refresh_values(self) -> None:
        # the statistics as Python numbers, used while the buffers live on the CPU: then a CUDA input costs no
        # host-to-device copy, and torch.compile sees constants
        self._mean_values = self.mean.tolist()
        self._std_values = self.std.tolist()
        # what the numbers were read from: forward re-reads them when a buffer was replaced (``norm.mean = t``,
        # ``.to()``, ``.double()``) or changed in place (``norm.mean.fill_(0)``), instead of using stale numbers
        self._values_key = self._stats_key()

    def _stats_key(self) -> tuple:
        return (self.mean, self.mean._version, self.std, self.std._version)

    def _values_stale(self) -> bool:
        m, mv, s, sv = self._values_key
        return m is not self.mean or s is not self.std or mv != self.mean._version or sv != self.std._version

    def _load_from_state_dict(self, *args, **kwargs):  # type: ignore[override]
        super()._load_from_state_dict(*args, **kwargs)
        self._refresh_values()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mean.device.type == "cpu":
            if torch.compiler.is_compiling():
                # dynamo cannot read _version: give it the buffers themselves when it can (it then reads their
                # current values at run time) and the numbers only for an input on another device
                if x.device == self.mean.device:
                    return normalize(x, self.mean, self.std, dim=self.dim, dtype=self.dtype, scale=self.scale)
            elif self._values_stale():
                self._refresh_values()
            return normalize(x, self._mean_values, self._std_values, dim=self.dim, dtype=self.dtype, scale=self.scale)
        return normalize(x, self.mean, self.std, dim=self.dim, dtype=self.dtype, scale=self.scale)

    def extra_repr(self) -> str:
        return f"mean={self.mean.tolist()}, std={self.std.tolist()}, dim={self.dim}, dtype={self.dtype}, scale={self.scale}"
