"""What the sanitizer calls (benchmarks/sanitizers/sanitize_<family>.py, run by sanitize_ops.py) share: the call log, the
comparison with native torch, and awkward inputs."""
from __future__ import annotations

from typing import Callable, List

import torch

CALLS: List[str] = []
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def call(label: str, fn: Callable[[], None]) -> None:
    """Runs one sanitizer call, printing its label first (a fault then points at it)."""
    print(f"  {label}", flush=True)
    fn()
    CALLS.append(label)


# tensorops' clamp answers as torch 2.14 in three corners (a NaN number bound, gradients at ties and NaN), where
# older torch (2.11, the GPU check machine's) answers otherwise: there the corner cases still run (for the
# sanitizers) but their values are not compared with the running torch.
CLAMP_CORNERS_LIKE_TORCH = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 14)


def close(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    tol = 1e-2 if actual.dtype in (torch.float16, torch.bfloat16) else 1e-5
    torch.testing.assert_close(actual, expected.to(actual.dtype), rtol=tol, atol=tol, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


class deterministic_algorithms:
    """torch.use_deterministic_algorithms(on) inside the block."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        self.before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(self.on)

    def __exit__(self, *exc) -> None:
        torch.use_deterministic_algorithms(self.before)


def unaligned(shape, dtype, device, low=0, high=256) -> torch.Tensor:
    """A tensor of ``shape`` whose data starts one element into its storage (a misaligned pointer)."""
    n = 1
    for s in shape:
        n *= s
    if dtype.is_floating_point:
        flat = torch.randn(n + 1, device=device).to(dtype)
    else:
        flat = torch.randint(low, high, (n + 1,), device=device).to(dtype)
    return flat[1:].view(shape)


def call_batch_forms(op: str, check: Callable[..., None], device: torch.device, images: int, **many) -> None:
    """The calls every batch op makes: ``images`` images (past the kernel-parameter table, so the per-sample table
    goes through a device buffer; ``many``: the check's extra arguments), a float batch and a permuted one."""
    def many_images():
        check([torch.randint(0, 256, (3, 12, 10 + k % 3), dtype=torch.uint8, device=device) for k in range(images)],
              what=f"{images} images", **many)
    call(f"{op} {images} images (device-side sample table)", many_images)

    def batch():
        x = torch.randn(5, 3, 12, 11, device=device)
        check(x, dtype=torch.float64, what="batch")
        check(x.permute(0, 2, 3, 1), dim=-1, what="permuted batch")
    call(f"{op} a float batch and a permuted one", batch)
