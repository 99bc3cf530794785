"""Helpers shared by the robustness tests (properties, bad input, scale, concurrency).

Not a test module (leading underscore): importable from subprocesses and DataLoader workers as ``_robust``.
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Tuple

import torch

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

# ---- tensors with a chosen layout ------------------------------------------------------------------------
LAYOUTS = ("contiguous", "permuted", "sliced", "sliced_permuted", "channels_last", "expanded")


def random_values(shape: Sequence[int], dtype: torch.dtype, gen: torch.Generator, specials: bool = False) -> torch.Tensor:
    shape = tuple(shape)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
    if not dtype.is_floating_point:
        return torch.randint(-100, 100, shape, generator=gen, dtype=dtype)
    t = torch.randn(shape, generator=gen, dtype=torch.float64) * 3
    if specials and t.numel() > 0:
        flat = t.view(-1)
        k = min(4, flat.numel())
        idx = torch.randint(0, flat.numel(), (k,), generator=gen)
        flat[idx] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0], dtype=torch.float64)[:k]
    return t.to(dtype)


@dataclasses.dataclass(frozen=True)
class Spec:
    """A reproducible tensor: logical shape, dtype, memory layout and the seed of its values.

    Its repr is what hypothesis prints for a failing example; ``Spec(...).build()`` rebuilds the same tensor.
    """

    shape: Tuple[int, ...]
    dtype: torch.dtype
    layout: str = "contiguous"
    perm: Tuple[int, ...] = ()
    seed: int = 0
    specials: bool = False

    def build(self, requires_grad: bool = False) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed)
        shape, nd = list(self.shape), len(self.shape)
        perm = list(self.perm) if len(self.perm) == nd else list(range(nd))
        inv = sorted(range(nd), key=lambda i: perm[i])
        layout = self.layout
        if layout == "channels_last" and nd not in (4, 5):
            layout = "permuted"
        if layout == "contiguous":
            x = random_values(shape, self.dtype, gen, self.specials)
        elif layout == "permuted":
            x = random_values([shape[p] for p in perm], self.dtype, gen, self.specials).permute(inv)
        elif layout == "sliced":
            base = random_values([2 * s + 1 for s in shape], self.dtype, gen, self.specials)
            x = base[tuple(slice(1, 1 + 2 * s, 2) for s in shape)]
        elif layout == "sliced_permuted":
            base = random_values([2 * shape[p] + 1 for p in perm], self.dtype, gen, self.specials)
            x = base[tuple(slice(1, 1 + 2 * shape[p], 2) for p in perm)].permute(inv)
        elif layout == "channels_last":
            fmt = torch.channels_last if nd == 4 else torch.channels_last_3d
            x = random_values(shape, self.dtype, gen, self.specials).contiguous(memory_format=fmt)
        elif layout == "expanded":
            # every other dim (chosen by the seed) is a stride-0 broadcast of a size-1 dim
            small = [1 if (self.seed >> i) & 1 else s for i, s in enumerate(shape)]
            x = random_values(small, self.dtype, gen, self.specials).expand(shape)
        else:
            raise ValueError(f"unknown layout {layout}")
        assert tuple(x.shape) == tuple(self.shape), (x.shape, self.shape)
        if requires_grad:
            x = x.detach().requires_grad_()
        return x


def assert_same_layout(out: torch.Tensor, expected: torch.Tensor, what: str = "") -> None:
    """Same strides wherever they matter (dims of size > 1) for non-empty tensors: same memory format."""
    assert tuple(out.shape) == tuple(expected.shape), f"{what} shape {tuple(out.shape)} != {tuple(expected.shape)}"
    if out.numel() > 0:  # an empty tensor has no layout to compare
        for d, (n, so, se) in enumerate(zip(out.shape, out.stride(), expected.stride())):
            assert n <= 1 or so == se, f"{what} strides {out.stride()} != expected {expected.stride()} (dim {d})"


def assert_equal_values(out: torch.Tensor, expected: torch.Tensor, what: str = "") -> None:
    """Bit-for-bit equal values (NaN == NaN), same dtype and shape: for ops that only move or select values."""
    assert out.dtype == expected.dtype, f"{what} dtype {out.dtype} != {expected.dtype}"
    assert tuple(out.shape) == tuple(expected.shape), f"{what} shape {tuple(out.shape)} != {tuple(expected.shape)}"
    torch.testing.assert_close(out, expected, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{what}: {m}")


# ---- the normalize oracle ------------------------------------------------------------------------------------
def _eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps / 2  # half an ulp: the error of one rounding


def stat_view64(stat, x: torch.Tensor, dim: int) -> torch.Tensor:
    """mean/std as a float64 tensor broadcastable to x, laid out the way tensorops.normalize reads them."""
    dim = dim % x.dim()
    if isinstance(stat, torch.Tensor):
        s = stat.detach().double()
        if s.dim() == 1 and x.dim() > 1:
            shape = [1] * x.dim()
            shape[dim] = s.numel()
            return s.view(shape)
        return s
    s = [float(stat)] if isinstance(stat, (int, float)) else [float(v) for v in stat]
    shape = [1] * x.dim()
    shape[dim] = len(s)
    return torch.tensor(s, dtype=torch.float64, device=x.device).view(shape)


def default_scale(x: torch.Tensor, scale: Optional[float]) -> float:
    if scale is None:
        return 1 / 255 if x.dtype == torch.uint8 else 1.0
    return float(scale)


def assert_normalize_close(out: torch.Tensor, x: torch.Tensor, mean, std, *, dim: int = -3, scale=None,
                           dtype: Optional[torch.dtype] = None) -> None:
    """out against float64 ``(x.double() * scale - mean) / std``, within the error of computing in the
    accumulation dtype (float32, or float64 for a float64 output) plus one rounding to the output dtype."""
    dtype = dtype or (torch.float32 if x.dtype == torch.uint8 else x.dtype)
    assert out.dtype == dtype, f"dtype {out.dtype} != {dtype}"
    assert tuple(out.shape) == tuple(x.shape), f"shape {tuple(out.shape)} != {tuple(x.shape)}"
    sc = default_scale(x, scale)
    m, s = stat_view64(mean, x, dim), stat_view64(std, x, dim)
    xs = x.detach().double() * sc
    exp = (xs - m) / s
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    # |error| <= a few roundings in acc of the terms (x*scale, mean, their difference, the division; or the
    # x*(scale/std) - mean/std form) + one rounding of the result to dtype + the smallest subnormal step of dtype
    bound = 8 * _eps(acc) * (xs.abs() + m.abs()) / s.abs() + _eps(dtype) * exp.abs() + torch.finfo(dtype).tiny * torch.finfo(dtype).eps
    got = out.detach().double()
    finite = torch.isfinite(exp)
    err = (got - exp).abs()
    bad = finite & ~(err <= bound)
    bad |= ~finite & ~((got == exp) | (got.isnan() & exp.isnan()))
    if bool(bad.any()):
        i = bad.nonzero()[0].tolist()
        raise AssertionError(
            f"{int(bad.sum())} of {out.numel()} values off; first at {i}: got {got[tuple(i)].item()!r}, "
            f"expected {exp[tuple(i)].item()!r} (bound {bound[tuple(i)].item() if finite[tuple(i)] else 0!r})"
        )
