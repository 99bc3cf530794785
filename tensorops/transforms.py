"""torchvision transforms v2 classes backed by tensorops kernels (needs torchvision).

``import tensorops`` never imports torchvision: this module is loaded on first use of ``tensorops.transforms``
(or ``import tensorops.transforms``) and raises an ImportError that names torchvision when it is missing.
"""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

import torch

from tensorops._optional import require

require("torchvision.transforms.v2", feature="tensorops.transforms", package="torchvision", extra="torchvision")
import PIL.Image  # noqa: E402  (torchvision needs Pillow)
from torchvision import tv_tensors  # noqa: E402
from torchvision.transforms.v2 import Transform  # noqa: E402
from torchvision.transforms.v2 import functional as F  # noqa: E402
from torchvision.transforms.v2._utils import is_pure_tensor  # noqa: E402

from tensorops._checks import FLOATS, INT_SCALES, stat_numbers, where
from tensorops.normalize import normalize as _normalize

__all__ = ["Normalize"]

_FN = where("transforms.Normalize")


class Normalize(Transform):
    """``v2.ToDtype(dtype, scale=scale)`` followed by ``v2.Normalize(mean, std)``, in one pass.

    A drop-in for the pair inside ``v2.Compose``: samples (tuples, dicts, nested containers) pass through with
    only images normalized, by torchvision's rules: ``tv_tensors.Image`` and ``tv_tensors.Video`` (which keep
    their type), and a plain tensor only when it is the first one and the sample holds no explicit image or
    video; bounding boxes, masks, labels and every other entry pass through untouched. PIL images raise
    ``TypeError`` as ``v2.Normalize`` does (convert them first with ``v2.PILToTensor()`` or ``v2.ToImage()``).

    Images of shape ``(..., C, H, W)``: uint8 and uint16 inputs are scaled to [0, 1] as ``ToDtype(scale=True)``
    does (1/255, 1/65535), float inputs are converted; a 1-channel image with C statistics is broadcast to C
    channels as the pair does. The arithmetic is float32 (float64 for float64 output) rounded once to ``dtype``,
    where the pair computes in ``dtype`` itself: float32 results agree with the pair within 1e-6, fp16/bf16
    results are the correctly rounded float32 value (the pair's fp16 arithmetic rounds at each step, and turns
    uint16 values above 65519 into inf). Inputs the kernels do not cover (other integer dtypes, fewer than
    3 dims, statistics that do not fit the channels) go through the torchvision pair itself, with its results and
    errors.

    Args:
        mean, std: sequences of C numbers (or one number for every channel).
        dtype: output dtype: float16, bfloat16, float32 (default) or float64.
        scale: as ``v2.ToDtype``'s: divide integer inputs by their maximum value (default True).

    Example:
        >>> from torchvision.transforms import v2
        >>> import tensorops.transforms as T
        >>> pipeline = v2.Compose([v2.PILToTensor(), v2.RandomHorizontalFlip(),
        ...                        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    """

    _transformed_types = (torch.Tensor,)

    def __init__(
        self,
        mean: Sequence[float],
        std: Sequence[float],
        *,
        dtype: torch.dtype = torch.float32,
        scale: bool = True,
    ) -> None:
        super().__init__()
        if not isinstance(dtype, torch.dtype) or dtype not in FLOATS:
            raise TypeError(f"{_FN}dtype must be float16, bfloat16, float32 or float64, got {dtype!r}")
        if not isinstance(scale, bool):
            raise TypeError(f"{_FN}scale must be True or False (as v2.ToDtype's), got {scale!r}")
        # checked now (numbers, finite, std non-zero), kept as the lists v2.Normalize keeps
        self.mean: List[float] = stat_numbers("transforms.Normalize", "mean", mean)  # type: ignore[assignment]
        self.std: List[float] = stat_numbers("transforms.Normalize", "std", std)  # type: ignore[assignment]
        self.dtype = dtype
        self.scale = scale
        self._channels = max(len(self.mean), len(self.std))
        self._stats_fit = len(self.mean) in (1, self._channels) and len(self.std) in (1, self._channels)

    def extra_repr(self) -> str:
        return f"mean={self.mean}, std={self.std}, dtype={self.dtype}, scale={self.scale}"

    def check_inputs(self, flat_inputs: List[Any]) -> None:
        if any(isinstance(x, PIL.Image.Image) for x in flat_inputs):
            raise TypeError(f"{type(self).__name__}() does not support PIL images.")

    def transform(self, inpt: Any, params: Dict[str, Any]) -> Any:
        if not (is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))):
            return inpt  # what both ToDtype(dtype) and Normalize do with boxes, masks and other tv_tensors
        out = self._normalize(inpt.as_subclass(torch.Tensor))
        return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else out

    def _normalize(self, x: torch.Tensor) -> torch.Tensor:
        n = self._channels
        covered = (x.dtype in INT_SCALES or x.dtype in FLOATS) and x.dim() >= 3 and self._stats_fit
        if covered and x.shape[-3] in (1, n):
            if x.shape[-3] == 1 and n > 1:  # the pair broadcasts one channel against C statistics
                x = x.expand(*x.shape[:-3], n, *x.shape[-2:])
            scale = None if self.scale else 1.0  # None: normalize's 1/255, 1/65535 or 1.0 by input dtype
            return _normalize(x, self.mean, self.std, dim=-3, dtype=self.dtype, scale=scale)
        # not a case for the kernels: the torchvision pair, with its results and its errors
        return F.normalize(F.to_dtype(x, self.dtype, scale=self.scale), mean=self.mean, std=self.std)

