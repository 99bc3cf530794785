"""Builds tensorops' CPU extension (tensorops._C, no CUDA kernels) under AddressSanitizer + UBSan, for
.ci/asan_cpu.sh: the sources of setup.py (its cpu_sources()), its macros and C++ flags, but -O1 instead of -O3,
the sanitizer flags, and torch's headers precompiled once (tests/_emulated.py's ninja_build): on a 2-core machine
this takes minutes where setup.py's -O0 debug build took a quarter of an hour (each file parsed torch's headers
again, and -O0 sanitizer code is several times larger).

    python .ci/asan_build.py OUT_DIR BUILD_DIR      (OUT_DIR: where tensorops/_C<ext suffix> is written)

Keep the flags in step with setup.py's main() (the CppExtension branch).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAN = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]


def main() -> int:
    out_dir, build_dir = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    os.chdir(ROOT)  # setup.py's globs are relative to the repository root
    import setup as tensorops_setup  # importing it builds nothing
    import _emulated
    import torch
    from torch.utils.cpp_extension import include_paths

    # what setuptools and torch put on a CppExtension's command line (python's CFLAGS: -DNDEBUG -fwrapv -Wall ...,
    # then setup.py's cxx flags), with -O1 last so it wins over python's -O3
    py_cflags = [f for f in (sysconfig.get_config_var("CFLAGS") or "").split() if not re.fullmatch(r"-O\d|-g", f)]
    openmp = torch.__config__.parallel_info().find("OpenMP") >= 0 and sys.platform.startswith("linux")
    sys.path.insert(0, str(ROOT / ".ci"))
    from nvcc_check import torch_std_flag  # the -std torch's cpp_extension gives an extension that names none
    import torch.utils.cpp_extension as ce

    std = torch_std_flag(ce)
    cflags = [
        *py_cflags, "-fPIC", "-g1", "-Winvalid-pch",
        # string macros, quoted for the shell that ninja runs each command in
        *[shlex.quote(f'-D{k}="{v}"') for k, v in (("TENSOROPS_VERSION", tensorops_setup.VERSION),
                                                    ("TENSOROPS_TORCH_VERSION", torch.__version__),
                                                    ("TENSOROPS_CUDA_ARCHS", ""))], f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        f"-I{ROOT / 'csrc' / 'include'}", *[f"-I{p}" for p in include_paths()], f"-I{sysconfig.get_paths()['include']}",
        "-O1", "-fvisibility=hidden", *(["-fopenmp"] if openmp else []),
        "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C", f"-std={std}", *SAN,
    ]
    jpeg_include, jpeg_lib, jpeg_version = tensorops_setup.find_libjpeg()  # as setup.py links it
    if jpeg_include:
        # (-I/usr/include would reorder the system headers: libstdc++'s #include_next then breaks)
        cflags += ["-DTENSOROPS_WITH_LIBJPEG=1", *([f"-I{jpeg_include}"] if jpeg_include != "/usr/include" else [])]
    torch_lib = Path(torch.__file__).parent / "lib"
    ldflags = ["-shared", f"-L{torch_lib}", "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python",
               f"-Wl,-rpath,{torch_lib}", *(["-fopenmp"] if openmp else []), *SAN,
               *([f"-L{jpeg_lib}", "-ljpeg"] if jpeg_include else [])]
    sources = [ROOT / s for s in tensorops_setup.cpu_sources()]
    name = "_C" + sysconfig.get_config_var("EXT_SUFFIX")
    print(f"asan_build: {len(sources)} sources, torch {torch.__version__}, -O1 {' '.join(SAN)}, "
          f"precompiled torch headers, libjpeg-turbo {jpeg_version if jpeg_include else 'absent'}, into {build_dir}",
          flush=True)
    print("cflags: " + " ".join(cflags), flush=True)
    so = _emulated.ninja_build(build_dir, sources, cflags, ldflags, name, "asan cpu")
    syms = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True, text=True).stdout
    if "__asan_" not in syms or "__ubsan_handle" not in syms:
        print(f"asan_build: {so} is not instrumented (no __asan_/__ubsan_ symbols)", file=sys.stderr)
        return 1
    dst = out_dir / "tensorops" / name
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(so, dst)
    print(f"asan_build: {dst}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
