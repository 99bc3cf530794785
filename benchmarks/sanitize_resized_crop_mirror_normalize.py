"""compute-sanitizer calls of the resized_crop_mirror_normalize kernels (lists of x[1:] images with fractional
boxes, up- and downscaling, eval boxes read beyond the crop, HWC to channels_last, uint8 output, nearest)."""
from __future__ import annotations

import torch

import tensorops
from benchmarks.sanitize_base import MEAN, STD, call, close, unaligned


def run_resized_crop_mirror_normalize(device: torch.device) -> None:
    from tensorops import reference

    def check(images, boxes, dim=-3, size=(9, 8), dtype=torch.float32, fmt=torch.contiguous_format,
              channels=None, interpolation="bilinear", crop_first=True, what=""):
        n = len(images)
        C = images[0].shape[dim]
        mirror = torch.arange(n) % 2 == 0
        boxes = torch.as_tensor(boxes, dtype=torch.float64)
        u8 = dtype == torch.uint8
        mean, std = (None, None) if u8 else (MEAN[:1] * C, STD[:1] * C)
        out = tensorops.resized_crop_mirror_normalize(
            images, mean, std, size=size, boxes=boxes, mirror=mirror, dim=dim, interpolation=interpolation,
            dtype=dtype, memory_format=fmt, pad_channels=channels, fill=-2.0, out_of_bounds="pad",
            crop_first=crop_first)
        m = torch.tensor([[0.0] * C if u8 else MEAN[:1] * C], device=device)
        s = torch.tensor([[1.0] * C if u8 else STD[:1] * C], device=device)
        ref = reference.resized_crop_mirror_normalize(
            images, m, s, boxes, mirror, size, dim=dim, scale=1.0 if u8 else 1 / 255,
            interpolation={"bilinear": 1, "nearest": 0}[interpolation], antialias=True, crop_first=crop_first,
            dtype=dtype, memory_format=fmt, channels=channels or C, fill=-2.0, pad=True)
        if u8:  # rounding of values a float ulp from .5 may differ by one step
            assert (out.int() - ref.int()).abs().max() <= 1, f"resized_crop_mirror_normalize {what}"
        else:
            close(out, ref, f"resized_crop_mirror_normalize {what}")

    def unaligned_list():
        ims = [unaligned((3, 21 + k, 17 + 2 * k), torch.uint8, device) for k in range(5)]
        boxes = [[0.5 * k, 1.25, 15.5 - k, 12.0 + k] for k in range(5)]  # down- and upscaling, fractional
        check(ims, boxes, what="x[1:] list")
        check(ims, boxes, crop_first=False, what="x[1:] list, eval (reads beyond the box)")
        check(ims, boxes, interpolation="nearest", what="x[1:] list, nearest")
    call("resized_crop_mirror_normalize x[1:] uint8 CHW images, fractional boxes, train/eval/nearest", unaligned_list)

    def hwc():
        ims = [unaligned((16 + k, 13 + 3 * k, 3), torch.uint8, device) for k in range(4)]
        boxes = [[1, 2, 12, 10 + k] for k in range(4)]
        check(ims, boxes, dim=-1, channels=4, fmt=torch.channels_last, dtype=torch.float16, what="HWC")
        check(ims, boxes, dim=-1, dtype=torch.uint8, what="HWC -> uint8")
    call("resized_crop_mirror_normalize HWC x[1:] images -> channels_last fp16 (padded channel) and uint8", hwc)

    def empty():
        out = tensorops.resized_crop_mirror_normalize(torch.empty(0, 3, 8, 8, dtype=torch.uint8, device=device),
                                                      MEAN, STD, size=4)
        assert out.shape == (0, 3, 4, 4)
    call("resized_crop_mirror_normalize an empty batch", empty)
