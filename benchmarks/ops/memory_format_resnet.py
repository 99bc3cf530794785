"""Which layout to hand a CNN: ``python -m benchmarks.memory_format_resnet [--batch 4] [--reps 5] [--threads N]``.

Decoded images are NHWC (HWC per image). tensorops.normalize can either keep that layout (``preserve_format``:
a channels_last NCHW tensor) or write NCHW in the same pass (``contiguous_format``: the transpose fused). This
times torchvision's resnet18 (random weights, eval, no grad, CPU) on both, with the model itself in the default
layout and in channels_last; normalize + model per step, medians of alternating repetitions (torch.utils.benchmark).
"""
from __future__ import annotations

import argparse

import torch
import torch.utils.benchmark as benchmark

import tensorops

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--reps", type=int, default=5, help="timed repetitions of each case (alternated)")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from torchvision.models import resnet18

    torch.manual_seed(0)
    nhwc = torch.randint(0, 256, (args.batch, args.size, args.size, 3), dtype=torch.uint8).permute(0, 3, 1, 2)
    nets = {"model NCHW": resnet18().eval(), "model channels_last": resnet18().eval()}
    nets["model channels_last"].to(memory_format=torch.channels_last)
    formats = {"input channels_last (preserve_format)": torch.preserve_format,
               "input NCHW (fused transpose)": torch.contiguous_format}
    times = {}
    with torch.no_grad():
        for net in nets.values():  # warm up: first calls pick and cache oneDNN kernels
            for fmt in formats.values():
                net(tensorops.normalize(nhwc, MEAN, STD, memory_format=fmt))
        for _ in range(args.reps):
            for net_name, net in nets.items():
                for fmt_name, fmt in formats.items():
                    t = benchmark.Timer(
                        "net(tensorops.normalize(x, MEAN, STD, memory_format=fmt))",
                        globals=dict(net=net, tensorops=tensorops, x=nhwc, MEAN=MEAN, STD=STD, fmt=fmt),
                    ).timeit(1)
                    times.setdefault((net_name, fmt_name), []).append(t.median)
    print(f"resnet18, batch {args.batch}x3x{args.size}x{args.size} uint8 NHWC, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}; median of {args.reps} (min-max)")
    for (net_name, fmt_name), ts in times.items():
        ts = sorted(ts)
        print(f"  {net_name:20s} {fmt_name:38s} {ts[len(ts) // 2] * 1e3:8.1f} ms  ({ts[0] * 1e3:.1f}-{ts[-1] * 1e3:.1f})")


if __name__ == "__main__":
    main()
