"""compute-sanitizer (and ASan) calls of the resized_crop_mirror_normalize kernels: lists and batches, HWC and CHW,
fractional boxes past the image edges, the three interpolations, uint8 output, the uploaded table, backward."""
from __future__ import annotations

import torch

import tensorops
from benchmarks.sanitize_base import MEAN, STD, call, call_batch_forms, close, unaligned

_MODES = {"nearest": 0, "bilinear": 1, "bicubic": 2}  # the schema's interpolation


def run_resized_crop_mirror_normalize(device: torch.device) -> None:
    from tensorops import reference

    def check(images, dim=-3, size=(9, 8), channels=None, dtype=torch.float32, fmt=torch.contiguous_format,
              interpolation="bilinear", antialias=True, crop_first=True, what=""):
        n = len(images)
        C = images[0].shape[dim]
        sizes = [(im.shape[-2], im.shape[-1]) if dim == -3 else (im.shape[0], im.shape[1]) for im in images]
        boxes = torch.tensor([[k % 3 - 1.5, (k % 2) * 0.75 - 0.5, H * 0.9 + 1.0, W * 0.7]
                              for k, (H, W) in enumerate(sizes)], dtype=torch.float64)
        mirror = torch.arange(n) % 2 == 0
        u8 = dtype == torch.uint8
        mean, std = (None, None) if u8 else (MEAN[:1] * C, STD[:1] * C)
        out = tensorops.resized_crop_mirror_normalize(
            images, mean, std, dim=dim, size=size, boxes=boxes, mirror=mirror, dtype=dtype, memory_format=fmt,
            pad_channels=channels, fill=-2.0, out_of_bounds="pad", interpolation=interpolation, antialias=antialias,
            crop_first=crop_first)
        m = torch.tensor([[0.0]] if u8 else [MEAN[:1] * C], device=device)
        s = torch.tensor([[1.0]] if u8 else [STD[:1] * C], device=device)
        scale = 1.0 if u8 else (1 / 255 if images[0].dtype == torch.uint8 else 1.0)
        ref = reference.resized_crop_mirror_normalize(
            images, m, s, boxes, mirror, size, dim=dim, scale=scale, interpolation=_MODES[interpolation],
            antialias=antialias, crop_first=crop_first, dtype=dtype, memory_format=fmt, channels=channels or C,
            fill=-2.0, pad=True)
        if u8:
            assert (out.cpu().int() - ref.cpu().int()).abs().max() <= 1, f"resized_crop_mirror_normalize {what}"
        else:
            close(out, ref, f"resized_crop_mirror_normalize {what}")

    def unaligned_list():
        check([unaligned((3, 11 + k, 13 - k), torch.uint8, device) for k in range(5)], what="x[1:] list")
        check([unaligned((3, 11 + k, 13 - k), torch.uint8, device) for k in range(5)], size=(30, 29),
              crop_first=False, what="x[1:] list upscaled")
    call("resized_crop_mirror_normalize a list of x[1:] uint8 CHW images, boxes partly outside", unaligned_list)

    def hwc():
        check([unaligned((10 + k, 9 + 2 * k, 3), torch.uint8, device) for k in range(4)], dim=-1, channels=4,
              fmt=torch.channels_last, dtype=torch.float16, what="HWC")
        check([unaligned((10 + k, 9 + 2 * k, 3), torch.uint8, device) for k in range(4)], dim=-1, dtype=torch.uint8,
              interpolation="nearest", what="HWC uint8 nearest")
    call("resized_crop_mirror_normalize HWC x[1:] images -> channels_last fp16, uint8 nearest", hwc)

    def bicubic():  # negative taps: uint8 clamped to 0-255
        check([unaligned((3, 14 + k, 12 - k), torch.uint8, device) for k in range(4)], interpolation="bicubic",
              what="bicubic antialiased")
        check([unaligned((3, 14 + k, 12 - k), torch.uint8, device) for k in range(4)], size=(31, 27),
              interpolation="bicubic", antialias=False, crop_first=False, what="bicubic upscaled")
    call("resized_crop_mirror_normalize bicubic of x[1:] uint8 images, antialiased and not", bicubic)

    call_batch_forms("resized_crop_mirror_normalize", check, device, 33, antialias=False)

    def backward():
        ims = [torch.randn(3, 9 + k, 8, device=device, requires_grad=True) for k in range(3)]
        boxes = torch.tensor([[0.0, 0.0, 9.0, 8.0], [-1.0, 2.0, 6.5, 5.0], [3.0, 1.0, 4.0, 4.0]])
        args = dict(size=(6, 5), boxes=boxes, mirror=torch.tensor([True, False, True]), out_of_bounds="pad")
        g = torch.randn(3, 3, 6, 5, device=device)
        got = torch.autograd.grad(tensorops.resized_crop_mirror_normalize(ims, MEAN, STD, **args), ims, g)
        m, s = torch.tensor([MEAN], device=device), torch.tensor([STD], device=device)
        ref = reference.resized_crop_mirror_normalize(
            ims, m, s, boxes.double(), args["mirror"], (6, 5), dim=-3, scale=1.0, interpolation=1, antialias=True,
            crop_first=True, dtype=torch.float32, memory_format=torch.contiguous_format, channels=3, fill=0.0,
            pad=True)
        want = torch.autograd.grad(ref, ims, g)
        for a, b in zip(got, want):
            close(a, b, "resized_crop_mirror_normalize backward")
    call("resized_crop_mirror_normalize backward of a list", backward)
