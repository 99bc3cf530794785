"""Every CPU source of the extension compiled for aarch64 with the cross compiler, and the baseline build's hot loops
checked to vectorize there (NEON): the baseline build is what ARM machines run, and nothing else in CI compiles it
for them.

    python .ci/aarch64_check.py [--jobs 2] [--cxx aarch64-linux-gnu-g++]

The sources are setup.py's (cpu_sources): the CPU kernels (csrc/cpu) compiled at -O3, the host code checked by
the compiler's front end (-fsyntax-only: it has no hot loop), with torch's headers of the venv that runs this (headers are the same on
every architecture; nothing is linked) and without libjpeg-turbo (its jconfig.h is per architecture: the build
without it compiles the same loops). GCC's -fopt-info-vec-optimized report of each source is then searched for the
loops in LOOPS: each named by its file and a piece of its line, which must be reported vectorized. Exit 1 when a
source fails to compile or a listed loop stays scalar; exit 0 with a message (and nothing checked) when no cross
compiler is installed and CI is not set (CI=true makes that a failure: .ci/run installs g++-aarch64-linux-gnu).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (file, a piece of the loop's line): the baseline build's per-element loops that must become NEON code
LOOPS = [
    ("csrc/cpu/augment_loops_colour.h", "y[j] = augment::brightness("),
    ("csrc/cpu/augment_loops_colour.h", "y[j] = augment::blend<kHardFma>(static_cast<float>(x[j]), mean, f, a)"),
    ("csrc/cpu/augment_loops_colour.h", "y[j] = augment::autocontrast("),
    ("csrc/cpu/augment_loops_colour.h", "y[j] = x[j] & m;"),
    ("csrc/cpu/augment_loops_colour.h", "y[j] = x[j] >= tb ? static_cast<uint8_t>(255 - x[j]) : x[j];"),  # solarize
    ("csrc/cpu/augment_loops_colour.h", "bl[j] = augment::sharpen_blur(x[j], sum8);"),  # sharpness's blur
    ("csrc/cpu/augment_loops_colour.h", "yr[c0 + j] = augment::sharpen_apply<kHardFma>(x[j], bl[j], alpha);"),
    ("csrc/cpu/augment_loops_colour.h", "augment::hue(r[j], g[j], b[j], hf, ro, go, bo);"),
    ("csrc/cpu/augment_loops_colour.h", "yr[j] = augment::blend<kHardFma>(R, gray, f0, f1);"),  # saturation
    ("csrc/cpu/normalize_loops.h", "y[t] = math::cast_out<out_t>(value(t));"),
    ("csrc/cpu/resize_loops.h", "acc += q[k] * p[k * TENSOROPS_NC + c];"),  # the horizontal pass's taps
    ("csrc/cpu/resize_vertical.h", "out[u] += wk * static_cast<acc_t>(r[u * es]);"),  # the vertical pass
]


def _setup_module():
    spec = importlib.util.spec_from_file_location("tensorops_setup", os.path.join(ROOT, "setup.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # main() runs only as __main__
    return mod


def _loop_line(path: str, piece: str) -> int:
    """The line of the `for` that holds ``piece`` (its own line or the nearest above): GCC reports a loop there."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        lines = f.read().splitlines()
    hits = [k for k, line in enumerate(lines) if piece in line]
    if len(hits) != 1:
        raise SystemExit(f"aarch64 check: {piece!r} is on {len(hits)} lines of {path}, not one: update LOOPS")
    k = hits[0]
    while k > 0 and "for (" not in lines[k]:
        k -= 1
    return k + 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cxx", default="aarch64-linux-gnu-g++")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args(argv)
    if shutil.which(args.cxx) is None:
        msg = f"aarch64 check: no {args.cxx} here (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu)"
        if os.environ.get("CI", "").lower() == "true":
            print(msg + ": CI must run this check", file=sys.stderr)
            return 1
        print(msg + "; nothing checked")
        return 0
    from torch.utils.cpp_extension import include_paths

    os.chdir(ROOT)
    sources = _setup_module().cpu_sources()
    flags = ["-std=c++20", "-fPIC", "-fopenmp", "-fvisibility=hidden", "-DNDEBUG",
             "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C", '-DTENSOROPS_VERSION="aarch64-check"',
             '-DTENSOROPS_TORCH_VERSION="aarch64-check"', '-DTENSOROPS_CUDA_ARCHS=""', "-Icsrc/include"]
    flags += [f"-I{d}" for d in include_paths()] + [f"-I{sysconfig.get_paths()['include']}"]
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        def build(src: str):
            stem = src.replace("/", "_")
            report = os.path.join(tmp, stem + ".vec")
            # the kernels' loops compiled at the build's -O3 (their vectorization report is the check); the host
            # code (checks, schemas, the module: no hot loop) checked for aarch64 by the front end alone
            if src.startswith("csrc/cpu/"):
                how = ["-O3", f"-fopt-info-vec-optimized={report}", "-c", src, "-o", os.path.join(tmp, stem + ".o")]
            else:
                how = ["-fsyntax-only", src]
            proc = subprocess.run([args.cxx, *flags, *how], capture_output=True, text=True)
            text = open(report, encoding="utf-8").read() if os.path.exists(report) else ""
            return src, proc.returncode, proc.stderr, text

        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(build, sources))
    failed = [(s, err) for s, rc, err, _ in results if rc != 0]
    for src, err in failed:
        print(f"aarch64 check: {src} does not compile for aarch64:\n{err[-3000:]}", file=sys.stderr)
    vectorized = set()
    for _, _, _, text in results:
        vectorized.update(re.findall(r"^([^:\s]+\.(?:h|cpp)):(\d+):\d+: optimized: loop vectorized", text, re.M))
    scalar = []
    for path, piece in LOOPS:
        line = _loop_line(path, piece)
        if (path, str(line)) not in vectorized:
            scalar.append(f"{path}:{line} ({piece})")
    for s in scalar:
        print(f"aarch64 check: not vectorized for aarch64: {s}", file=sys.stderr)
    print(f"aarch64 check: {len(sources) - len(failed)}/{len(sources)} CPU sources compiled for aarch64 with "
          f"{args.cxx}, {len(LOOPS) - len(scalar)}/{len(LOOPS)} listed loops vectorized (NEON), "
          f"{time.time() - t0:.0f} s")
    return 1 if failed or scalar else 0


if __name__ == "__main__":
    sys.exit(main())
