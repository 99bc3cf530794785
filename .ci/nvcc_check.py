"""Compile-only check of every csrc/cuda/*.cu with nvcc against the running torch's headers (CI runs it in the torch
2.11.0 venv: the GPU check machine's torch), for one architecture, with the flags torch.utils.cpp_extension would
give a CUDAExtension of setup.py's: torch's include dirs for CUDA, Python's, csrc/include; torch's NVCC flags
(COMMON_NVCC_FLAGS), its -std (read from the installed cpp_extension: c++17 in torch 2.11, c++20 in 2.14, unless
--std says otherwise), -fPIC for the host compiler, -DTORCH_API_INCLUDE_EXTENSION_H -DTORCH_EXTENSION_NAME=_C, and
setup.py's own nvcc flags and macros (mirrored here: keep them in step with setup.py's main()). Objects go to a
temporary directory and are thrown away; nothing is linked and no GPU is needed.

    python .ci/nvcc_check.py [--arch 90] [--jobs N] [--std c++20] [--log-dir DIR] [--device-only]
    python .ci/nvcc_check.py --ptxas-log BUILD_LOG

--device-only compiles each file's device code only (-cubin: the whole translation unit through nvcc's front end
against the headers, cicc and ptxas, so ptxas -v still reports every kernel) and skips the host compiler's pass and
the fatbinary: what CI runs against torch 2.11.0, while the full compile is CI's main build. --ptxas-log compiles
nothing: it reads the ptxas -v report a build printed (CI's main build runs with NVCC_APPEND_FLAGS="-Xptxas -v")
and applies the same check.

Exit code: 0 when every file compiled (and no kernel spills or has a stack frame), 1 when any failed (each
failure's log is printed), 2 when there is nothing to compile or no nvcc, or the log holds no ptxas report.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import glob
import os
import re
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torch_std_flag(cpp_extension) -> str:
    """The -std torch's cpp_extension adds when an extension passes none (append_std..._if_no_std_present)."""
    with open(cpp_extension.__file__, encoding="utf-8") as f:
        src = f.read()
    m = re.search(r"cpp_flag = cpp_flag_prefix \+ '(c\+\+\d+)'", src)
    return m.group(1) if m else "c++17"


def ptxas_report(out: str) -> list:
    """Per kernel of ptxas -v's output: name (mangled), registers, stack frame bytes, spilled bytes."""
    kernels, name = [], None
    for line in out.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line) or re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            kernels.append({"name": name, "stack": int(m.group(1)), "spill": int(m.group(2)) + int(m.group(3)),
                            "registers": 0})
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and kernels and kernels[-1]["name"] == name:
            kernels[-1]["registers"] = int(m.group(1))
    return kernels


def check_kernels(kernels: list, what: str) -> bool:
    """Prints the register range and every kernel with spills or a stack frame; True when there is none."""
    # the SASS must stay clean: no spills and no local memory (stack frame) in any kernel
    dirty = [k for k in kernels if k["spill"] or k["stack"]]
    if kernels:
        regs = sorted(k["registers"] for k in kernels)
        print(f"nvcc_check: {what}: {len(kernels)} kernel instantiations, registers {regs[0]}-{regs[-1]} "
              f"(median {regs[len(regs) // 2]}), {len(dirty)} with spills or a stack frame", flush=True)
    for k in dirty:
        print(f"  SPILLS {k['name']}: {k['stack']} bytes stack frame, {k['spill']} bytes spilled", flush=True)
    return not dirty


def check_log(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as f:
        kernels = ptxas_report(f.read())
    if not kernels:
        print(f"nvcc_check: {path} holds no ptxas -v report (was the build run with -Xptxas -v?)", file=sys.stderr)
        return 2
    return 0 if check_kernels(kernels, f"ptxas report in {os.path.basename(path)}") else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="90", help="compute capability without the dot (default 90: sm_90 only)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="files compiled at once (default: cores)")
    p.add_argument("--std", default=None, help="C++ standard (default: what the installed torch's cpp_extension uses)")
    p.add_argument("--log-dir", default=None, help="keep each file's compiler output here (default: not kept)")
    p.add_argument("--device-only", action="store_true",
                   help="device code only (-cubin): no host compiler pass, no fatbinary; ptxas -v still checked")
    p.add_argument("--ptxas-log", default=None, help="check the ptxas -v report in this build log; compile nothing")
    args = p.parse_args()
    if args.ptxas_log:
        return check_log(args.ptxas_log)

    sys.path.insert(0, ROOT)
    import setup as tensorops_setup  # setup.py: its toolkit search (importing it builds nothing)

    cuda_home, how = tensorops_setup.find_cuda_home()
    if cuda_home is None:
        print(f"nvcc_check: no CUDA toolkit ({how})", file=sys.stderr)
        return 2
    os.environ["CUDA_HOME"] = cuda_home  # torch.utils.cpp_extension reads it at import
    import torch
    import torch.utils.cpp_extension as ce

    try:
        torch_includes = ce.include_paths(device_type="cuda")
    except TypeError:  # torch < 2.6: include_paths(cuda=True)
        torch_includes = ce.include_paths(cuda=True)
    std = args.std or torch_std_flag(ce)
    sources = sorted(glob.glob(os.path.join(ROOT, "csrc", "cuda", "*.cu")))
    if not sources:
        print("nvcc_check: no csrc/cuda/*.cu", file=sys.stderr)
        return 2
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    version = tensorops_setup.VERSION
    arch = f"{args.arch[:-1]}.{args.arch[-1]}"
    flags = (
        [f"-I{d}" for d in [os.path.join(ROOT, "csrc", "include"), *torch_includes, sysconfig.get_paths()["include"]]]
        # setup.py's macros (define_macros) and nvcc flags
        + [f"-DTENSOROPS_VERSION=\"{version}\"", f"-DTENSOROPS_TORCH_VERSION=\"{torch.__version__}\"",
           f"-DTENSOROPS_CUDA_ARCHS=\"{arch}\"", "-DTENSOROPS_WITH_CUDA=1"]
        + ["-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C"]
        + list(ce.COMMON_NVCC_FLAGS) + ["--compiler-options", "-fPIC"]
        + ["-O3", "-lineinfo", "--expt-relaxed-constexpr"]
        + [f"-gencode=arch=compute_{args.arch},code=sm_{args.arch}", f"-std={std}"]
        + ["-Xptxas", "-v"]  # every kernel's registers, stack frame and spills: checked below
    )
    print(f"nvcc_check: {len(sources)} files, torch {torch.__version__}, {nvcc}, -std={std}, sm_{args.arch}, "
          f"{args.jobs} at once{', device code only (-cubin)' if args.device_only else ''}", flush=True)
    print("flags: " + " ".join(shlex.quote(f) for f in flags), flush=True)

    with tempfile.TemporaryDirectory(prefix="nvcc_check.") as tmp:
        def compile_one(src: str):
            stem = os.path.splitext(os.path.basename(src))[0]
            if args.device_only:
                cmd = [nvcc, "-cubin", src, "-o", os.path.join(tmp, stem + ".cubin"), *flags]
            else:
                cmd = [nvcc, "-c", src, "-o", os.path.join(tmp, stem + ".o"), *flags]
            t = time.monotonic()
            r = subprocess.run(cmd, capture_output=True, text=True)
            return src, r.returncode, r.stdout + r.stderr, time.monotonic() - t

        failed, kernels = [], []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for src, rc, out, secs in pool.map(compile_one, sources):
                rel = os.path.relpath(src, ROOT)
                print(f"  {'ok    ' if rc == 0 else 'FAILED'} {rel} ({secs:.0f} s)", flush=True)
                if args.log_dir:
                    os.makedirs(args.log_dir, exist_ok=True)
                    with open(os.path.join(args.log_dir, os.path.basename(src) + ".log"), "w") as f:
                        f.write(out)
                if rc != 0:
                    failed.append((rel, out))
                kernels.extend(ptxas_report(out))
    for rel, out in failed:
        print(f"---- {rel} ----\n" + "\n".join(out.splitlines()[-60:]), flush=True)
    if not kernels and not failed:
        failed.append(("ptxas", "no ptxas -v report"))
    elif not check_kernels(kernels, f"torch {torch.__version__}"):
        failed.append(("ptxas", "kernels with spills or local memory"))
    if failed:
        print(f"nvcc_check: {len(failed)} of {len(sources)} files failed to compile against torch "
              f"{torch.__version__}", file=sys.stderr)
        return 1
    print(f"nvcc_check: all {len(sources)} files compile against torch {torch.__version__} (sm_{args.arch}"
          f"{', device code only' if args.device_only else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
