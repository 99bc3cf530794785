"""Expected clamp gradients for tensors too large for one reference call (tests/test_gpu.py's > 1e9-element tests):
computed by torch itself, slice by slice along dim 0, in float64 (every weight is 0, 1/2 or 1 and every bound
gradient a sum of them: exact), never by a hand-written mask.

torch's clamp gradients at ties changed between torch 2.11 and 2.14 (2.11: 1 at x == min or max; 2.14: 1/2 there with
tensor bounds, 0 with number bounds), and tensorops follows 2.14 on every torch (see conftest's
clamp_corners_of_torch_2_14). So the expectation is torch's autograd (tensorops.reference.clamp_backward) when the
running torch has 2.14's rules, and otherwise tensorops' CPU kernels, which tests/test_clamp.py pins to torch 2.14's
autograd wherever that torch runs (CI). tests/test_clamp_expect.py checks both sources on the CPU.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple, Union

import torch

from conftest import TORCH_MINOR
from tensorops import reference

Bound = Union[None, float, torch.Tensor]
# "torch": torch's autograd; "tensorops_cpu": tensorops' CPU kernels (torch 2.14's rules on any torch)
DEFAULT_SOURCE = "torch" if TORCH_MINOR >= (2, 14) else "tensorops_cpu"


def _grads(x: torch.Tensor, lo: Bound, hi: Bound, source: str) -> Tuple[torch.Tensor, ...]:
    """(grad_input, grad_min, grad_max) of clamp(x, lo, hi) for grad = ones, in float64 on x's device (None for a
    bound that is a number or absent)."""
    tensor_bounds = isinstance(lo, torch.Tensor) or isinstance(hi, torch.Tensor)
    x64 = x.double()
    g = torch.ones_like(x64)
    if source == "torch":
        lo64 = lo.double() if isinstance(lo, torch.Tensor) else lo
        hi64 = hi.double() if isinstance(hi, torch.Tensor) else hi
        return reference.clamp_backward(g, x64, lo64, hi64, [True, tensor_bounds, tensor_bounds])
    if source != "tensorops_cpu":
        raise ValueError(f"unknown source {source!r}")
    ops = torch.ops.tensorops
    cpu = [t.cpu() if isinstance(t, torch.Tensor) else t for t in (x64, lo, hi)]
    if tensor_bounds:
        b = [t.double() if isinstance(t, torch.Tensor) else t for t in cpu[1:]]
        out = ops.clamp_backward.default(g.cpu(), cpu[0], b[0], b[1], [True, True, True])
    else:
        out = (ops.clamp_scalar_backward.default(g.cpu(), cpu[0], lo, hi), None, None)
    return tuple(t.to(x.device) if isinstance(t, torch.Tensor) else None for t in out)


def clamp_grads_by_slices(
    x: torch.Tensor,
    lo: Bound,
    hi: Bound,
    on_slice: Callable[[int, torch.Tensor], None],
    rows_per_slice: int = 1 << 24,
    source: Optional[str] = None,
) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
    """The gradients of ``torch.clamp(x, lo, hi)`` for a gradient of ones, slice by slice along dim 0: calls
    ``on_slice(start, expected_grad_input)`` for each ``x[start:start + rows]`` (the expected grad_input in x's dtype,
    exact) and returns the bounds' gradients summed over all of x in float64 (None for number bounds).

    ``lo``/``hi``: numbers (or None), or tensors that broadcast against one slice of x (not along dim 0).
    ``source``: "torch" or "tensorops_cpu" (default: DEFAULT_SOURCE, see the module docstring)."""
    source = source or DEFAULT_SOURCE
    glo = ghi = None
    for start in range(0, x.shape[0], rows_per_slice):
        gi, gl, gh = _grads(x[start:start + rows_per_slice], lo, hi, source)
        on_slice(start, gi.to(x.dtype))
        del gi
        if gl is not None:
            glo = gl if glo is None else glo + gl
        if gh is not None:
            ghi = gh if ghi is None else ghi + gh
    return glo, ghi


def stepped_rows_of_3(flat: torch.Tensor) -> torch.Tensor:
    """A (len // 4, 3) view of ``flat`` with row stride 4: not dense (one element of every 4 skipped), so clamp
    cannot treat it as one flat array and runs its strided kernel, whose plan divides by 3 (a fast divisor that is
    not a power of two) and whose threads step past the end of the 3-element inner dimension within their 4
    elements."""
    return flat[: flat.numel() - flat.numel() % 4].view(-1, 4)[:, :3]



def is_dense(t: torch.Tensor) -> bool:
    """Whether t's elements fill one block of memory without gaps or overlaps, its dims taken in some order (ATen's
    is_non_overlapping_and_dense, which clamp's kernels test to treat a tensor as one flat array)."""
    expected = 1
    for stride, size in sorted((st, s) for s, st in zip(t.shape, t.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True
