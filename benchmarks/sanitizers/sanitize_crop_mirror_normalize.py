"""compute-sanitizer calls of the crop_mirror_normalize kernels (lists, batches, HWC, backward)."""
from __future__ import annotations

import torch

import tensorops
from benchmarks.sanitize_base import MEAN, STD, call, call_batch_forms, close, unaligned


def run_crop_mirror_normalize(device: torch.device) -> None:
    from tensorops import reference

    def check(images, dim=-3, size=(9, 8), n_mirror=None, pad=True, channels=None, dtype=torch.float32,
              fmt=torch.contiguous_format, what=""):
        n = len(images)
        C = images[0].shape[dim]
        sizes = [(im.shape[-2], im.shape[-1]) if dim == -3 else (im.shape[0], im.shape[1]) for im in images]
        tl = torch.tensor([[(H - size[0]) // 2 + (k % 3) - 1, (W - size[1]) // 2 - (k % 2)] for k, (H, W) in
                           enumerate(sizes)])
        mirror = torch.arange(n) % 2 == 0
        out = tensorops.crop_mirror_normalize(images, MEAN[:1] * C, STD[:1] * C, dim=dim, size=size, top_left=tl,
                                              mirror=mirror, dtype=dtype, memory_format=fmt, pad_channels=channels,
                                              fill=-2.0, out_of_bounds="pad")
        m = torch.tensor([MEAN[:1] * C], device=device)
        s = torch.tensor([STD[:1] * C], device=device)
        scale = 1 / 255 if images[0].dtype == torch.uint8 else 1.0
        ref = reference.crop_mirror_normalize(images, m, s, tl, mirror, size, dim=dim, scale=scale, dtype=dtype,
                                              memory_format=fmt, channels=channels or C, fill=-2.0, pad=True)
        close(out, ref, f"crop_mirror_normalize {what}")

    def unaligned_list():
        check([unaligned((3, 11 + k, 13 - k), torch.uint8, device) for k in range(5)], what="x[1:] list")
    call("crop_mirror_normalize a list of x[1:] uint8 CHW images, mirrored, partly outside", unaligned_list)

    def hwc():
        check([unaligned((10 + k, 9 + 2 * k, 3), torch.uint8, device) for k in range(4)], dim=-1, channels=4,
              fmt=torch.channels_last, dtype=torch.float16, what="HWC")
    call("crop_mirror_normalize HWC x[1:] images -> channels_last fp16 with a padded channel", hwc)

    call_batch_forms("crop_mirror_normalize", check, device, 61)

    def empty():
        out = tensorops.crop_mirror_normalize(torch.empty(0, 3, 8, 8, device=device), MEAN, STD, size=4)
        assert out.shape == (0, 3, 4, 4)
    call("crop_mirror_normalize an empty batch", empty)

    def backward():
        ims = [torch.randn(3, 9 + k, 8, device=device, requires_grad=True) for k in range(3)]
        tl = torch.tensor([[0, 0], [-1, 2], [3, 1]])
        mirror = torch.tensor([True, False, True])
        args = dict(size=(6, 5), top_left=tl, mirror=mirror, out_of_bounds="pad")
        g = torch.randn(3, 3, 6, 5, device=device)
        got = torch.autograd.grad(tensorops.crop_mirror_normalize(ims, MEAN, STD, **args), ims, g)
        m, s = torch.tensor([MEAN], device=device), torch.tensor([STD], device=device)
        ref = reference.crop_mirror_normalize(ims, m, s, tl, mirror, (6, 5), dim=-3, scale=1.0,
                                              dtype=torch.float32, memory_format=torch.contiguous_format,
                                              channels=3, fill=0.0, pad=True)
        want = torch.autograd.grad(ref, ims, g)
        for a, b in zip(got, want):
            close(a, b, "crop_mirror_normalize backward")
    call("crop_mirror_normalize backward of a list", backward)
