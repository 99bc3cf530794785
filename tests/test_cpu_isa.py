"""Every build of the CPU loops (csrc/include/tensorops/cpu_isa.h: AVX-512, AVX2+FMA, baseline) gives the same
values. One battery of ops (clamp with number, per-channel, channels-last and elementwise bounds over every
dtype, NaN included; clamp's fused backward; the list clamp; normalize to three dtypes and three layouts;
crop_mirror_normalize; resized_crop_mirror_normalize; tensorops.augment's ops) runs in a fresh process per build
(and the AVX-512 build once more without its VBMI paths), with TENSOROPS_CPU_ISA capping the build, which the
process reports back (and the baseline build once more as a CPU without FMA runs it: TENSOROPS_CPU_ISA=base-nofma).
Each result must equal torch's (or tensorops.reference's, within float32 rounding) in that process, and the
builds' results must be bit-identical to each other, but for normalize's x * a + b, which the FMA builds round once
and the baseline build twice."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import tensorops
from conftest import requires_compiled

pytestmark = requires_compiled

ISAS = ("base", "avx2", "avx512")

BATTERY = r'''
import sys
import torch
import tensorops
from tensorops import reference

gen = torch.Generator().manual_seed(0)
out = {}


def same(name, ours, theirs):
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0, equal_nan=True, msg=name)
    assert ours.dtype == theirs.dtype and ours.stride() == theirs.stride(), name
    out[name] = ours


x = torch.randn(2, 3, 37, 41, generator=gen) * 3
x.view(-1)[::97] = float("nan")
x_cl = x.contiguous(memory_format=torch.channels_last)
lo = torch.linspace(-2.0, -0.5, 3).view(1, 3, 1, 1)
hi = torch.linspace(0.5, 2.0, 3).view(1, 3, 1, 1)
lo_full, hi_full = torch.randn(x.shape, generator=gen) - 1, torch.randn(x.shape, generator=gen) + 1
for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int16,
              torch.int8, torch.uint8, torch.int64):
    xd = x.nan_to_num(0).mul(30).to(dtype) if not dtype.is_floating_point else x.to(dtype)
    bounds = (-1.5, 1.25) if dtype.is_floating_point else (-20, 40)
    same(f"clamp {dtype} numbers", tensorops.clamp(xd, *bounds), torch.clamp(xd, *bounds))
    same(f"clamp {dtype} min only", tensorops.clamp(xd, min=bounds[0]), torch.clamp(xd, min=bounds[0]))
    ld, hd = (lo * 20).to(dtype), (hi * 20).to(dtype)
    same(f"clamp {dtype} (1,C,1,1)", tensorops.clamp(xd, ld, hd), torch.clamp(xd, ld, hd))
    xc = xd.contiguous(memory_format=torch.channels_last)
    same(f"clamp {dtype} channels_last", tensorops.clamp(xc, ld, hd), torch.clamp(xc, ld, hd))
same("clamp bool", tensorops.clamp(x > 0, 0, 1), torch.clamp(x > 0, 0, 1))
same("clamp elementwise", tensorops.clamp(x, lo_full, hi_full), torch.clamp(x, lo_full, hi_full))
same("clamp max only elementwise", tensorops.clamp(x_cl, max=hi_full), torch.clamp(x_cl, max=hi_full))

leaves = [t.clone().requires_grad_() for t in (x.nan_to_num(0), lo, hi)]
g = torch.randn(x.shape, generator=gen)
grads = torch.autograd.grad(tensorops.clamp(*leaves), leaves, g)
theirs = torch.autograd.grad(torch.clamp(*leaves), leaves, g)
same("clamp backward input", grads[0], theirs[0])
for i, name in ((1, "min"), (2, "max")):  # sums over 2,500 entries: torch's order differs, ours must not
    torch.testing.assert_close(grads[i], theirs[i], rtol=1e-5, atol=1e-4)
    out[f"clamp backward {name}"] = grads[i]

tensors = [x[0].clone(), x.double(), x[:, :2].half(), (x.nan_to_num(0) * 30).int()]
for i, t in enumerate(tensorops.clamp(tensors, -1.0, 1.0)):
    same(f"list clamp {i}", t, torch.clamp(tensors[i], -1.0, 1.0))

u8 = torch.randint(0, 256, (2, 3, 37, 41), dtype=torch.uint8, generator=gen)
mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
for layout, img in (("nchw", u8), ("channels_last", u8.contiguous(memory_format=torch.channels_last))):
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for mf in (torch.preserve_format, torch.contiguous_format):
            name = f"normalize {layout} {dtype} {mf}"
            ours = tensorops.normalize(img, mean, std, dtype=dtype, memory_format=mf)
            ref = reference.normalize(img, mean, std, dim=1, scale=1 / 255, dtype=dtype, memory_format=mf)
            tol = 1e-5 if dtype == torch.float32 else 1e-2
            torch.testing.assert_close(ours, ref, rtol=tol, atol=tol, msg=name)
            out[name] = ours

imgs = [torch.randint(0, 256, (3, 40 + i, 45), dtype=torch.uint8, generator=gen) for i in range(3)]
out["crop_mirror_normalize"] = tensorops.crop_mirror_normalize(
    imgs, mean, std, size=(32, 32), mirror=torch.tensor([0, 1, 1]).bool())

boxes = torch.tensor([[1.5, 2.0, 38.0, 40.0], [0.0, 0.0, 41.0, 45.0], [10.25, 5.0, 12.0, 30.5]])
for layout, ims, dim in (("chw", imgs, -3), ("hwc", [im.permute(1, 2, 0).contiguous() for im in imgs], -1)):
    # downscaled by ~1.2x (a block's taps in one register pair), by ~1.7x (a register pair a tap) and upscaled
    for size in ((32, 32), (22, 23), (20, 70)):
        out[f"resized {layout} {size}"] = tensorops.resized_crop_mirror_normalize(
            ims, mean, std, size=size, boxes=boxes, mirror=torch.tensor([0, 1, 1]).bool(), dim=dim)
    out[f"resized {layout} 4x down"] = tensorops.resized_crop_mirror_normalize(
        ims, mean, std, size=(8, 9), boxes=boxes, dim=dim)  # windows too wide for a permute
    out[f"resized {layout} bicubic"] = tensorops.resized_crop_mirror_normalize(
        ims, mean, std, size=(11, 23), boxes=boxes, dim=dim, interpolation="bicubic")  # negative taps, clamped

# tensorops.augment: every op of apply_ops, both layouts, 1 and 3 channels; affine nearest and bilinear with and
# without fill at angles whose taps stay on one row pair per 8 outputs (shear along x, translations: the AVX2
# rows' byte-shuffle windows, the source row computed once per row) and angles whose taps do not (the gathers,
# from pair planes for rotations); nearest of 1 channel (the padded plane) and 3 (the interleaved image); mix
from tensorops.augment import functional as AF

mags = {"brightness": 1.6, "contrast": 0.3, "saturation": 1.9, "hue": -0.3, "sharpness": 0.1, "posterize": 3.0,
        "solarize": 128.0, "shear_x": 17.0, "shear_y": -9.5, "translate_x": 4.0, "translate_y": -7.0,
        "rotate": 33.0, "solarize_add": 70.0}
ops = torch.arange(len(AF.OPS))
m = torch.tensor([mags.get(name, 0.0) for name in AF.OPS], dtype=torch.float64)
u = torch.randint(0, 256, (len(AF.OPS), 3, 45, 67), dtype=torch.uint8, generator=gen)
u[0, :, :20] = 77
u[list(AF.OPS).index("sharpness"), :, 20:30] = 255  # the blur's largest sum: the AVX2 rows' exact division by 26
for layout, img in (("nchw", u), ("channels_last", u.contiguous(memory_format=torch.channels_last))):
    for c in (1, 3):
        x = img[:, :c] if layout == "nchw" else img[:, :c].contiguous(memory_format=torch.channels_last)
        for interp in ("nearest", "bilinear"):
            for fill in (None, [10.0, 20.0, 30.0][:c]):
                out[f"augment {layout} C{c} {interp} fill={fill}"] = AF.apply_ops(x, ops, m, interpolation=interp,
                                                                                  fill=fill)
angles = torch.tensor([0.0, 0.3, 3.0, -7.5, 45.0, 90.5, 178.0, -133.0] * 2, dtype=torch.float64)
for interp in ("nearest", "bilinear"):
    out[f"affine {interp}"] = AF.affine(u[:16], angles, torch.tensor([[2.5, -1.25]] * 16), 1.1, [4.0, 0.0],
                                        interpolation=interp, fill=[1.0, 2.0, 3.0])
# Pillow's geometry (timm's bicubic and random interpolation): both filters, every op, with a fill
pil = torch.arange(len(AF.PIL_OPS)).repeat(4) + len(AF.OPS)
pm = torch.tensor([33.0, 0.27, -0.2, 5.5, -7.25] * 4, dtype=torch.float64)
out["pillow geometry"] = AF._apply(torch.cat([u, u])[:20], pil, pm, "bicubic", [1.0, 2.0, 3.0],
                                   torch.tensor([1] * 10 + [2] * 10), AF._ALL_OPS)
# brightness at factors whose product with 0 is NaN (inf), which clamp_ keeps and the conversion makes 0, as torch
bf = torch.tensor([float("inf"), 1e30, 0.0, 2.5] * 4 + [1.6] * (len(u) - 16), dtype=torch.float64)
same("brightness inf", AF.adjust_brightness(u, bf),
     torch.stack([x.float().mul(float(f)).clamp_(0, 255).to(torch.uint8) for x, f in zip(u, bf)]))
# solarize, which compares bytes with the threshold's ceiling: thresholds between, at and below the byte values
st = torch.tensor([0.0, 0.5, 1.0, 127.3, 128.0, 254.9, 255.0, -3.0, float("-inf"), 1e-30, 254.0] * 2,
                  dtype=torch.float64)[: len(u)]
same("solarize thresholds", AF.solarize(u[: len(st)], st),
     torch.stack([torch.where(x.float() >= float(t), 255 - x, x) for x, t in zip(u, st)]))
chains = [torch.randint(0, 256, u.shape, dtype=torch.uint8, generator=gen) for _ in range(3)]
w = torch.rand(u.shape[0], 4, generator=gen)
out["mix"] = AF.mix(u, chains, w / w.sum(1, keepdim=True))

torch.save(out, sys.argv[1])
print(tensorops._extension._C.cpu_isa())
'''


def _run(isa: str, path: str) -> str:
    env = dict(os.environ, TENSOROPS_CPU_ISA=isa)
    proc = subprocess.run([sys.executable, "-c", BATTERY, path], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"the battery failed with TENSOROPS_CPU_ISA={isa}:\n{proc.stderr[-4000:]}"
    return proc.stdout.strip().splitlines()[-1]


def test_cpu_isa_names_the_build_in_use():
    assert tensorops._extension._C.cpu_isa() in ISAS


def test_every_cpu_build_gives_torchs_values_and_the_same_bits(tmp_path):
    best = tensorops._extension._C.cpu_isa()
    if best == "base" and os.environ.get("TENSOROPS_CPU_ISA") is None:
        pytest.skip("this CPU (or compiler) has only the baseline build: nothing to compare it with")
    results = {}
    # avx512-novbmi: the AVX-512 build without its VBMI byte-permute paths; base-nofma: the baseline build as a CPU
    # without FMA runs it (augment's fused multiply-adds in double arithmetic, math/augment.h's fma_soft), where
    # "base" on a CPU with FMA runs augment's FMA variant (the same build names)
    for isa in ISAS[: ISAS.index(best) + 1] + ("base-nofma",) + (("avx512-novbmi",) if best == "avx512" else ()):
        ran = _run(isa, str(tmp_path / f"{isa}.pt"))
        assert ran == isa.split("-")[0], f"asked for the {isa} build, the process ran {ran}"
        results[isa] = torch.load(tmp_path / f"{isa}.pt")
    first, *others = results
    assert len(results[first]) > 50
    for isa in others:
        assert results[isa].keys() == results[first].keys()
        for name, value in results[first].items():
            theirs = results[isa][name]
            if name.startswith(("normalize", "crop_mirror")) and "base" in (isa, first):
                # x * a + b: the AVX2 and AVX-512 builds (like the CUDA kernels) fuse it into one rounding, the
                # baseline build (no FMA instruction) rounds twice: at most one unit in the last place apart
                eps = torch.finfo(value.dtype).eps
                torch.testing.assert_close(theirs.double(), value.double(), rtol=eps, atol=eps, msg=name)
                continue
            if name.startswith("resized"):
                # the AVX-512 and AVX2 builds' planar horizontal pass (16 and 8 outputs a register) and the
                # baseline's 4-lane pixels sum the same taps in the same order; the baseline build rounds each
                # multiply-add twice: a few units in the last place
                torch.testing.assert_close(theirs, value, rtol=4e-7, atol=4e-6, msg=name)
                continue
            bits = value.flatten().view(torch.uint8)  # NaN payloads and signed zeros included
            assert torch.equal(theirs.flatten().view(torch.uint8), bits), f"{name}: {isa} != {first}"
