"""The emulated CUDA device tier: builds tensorops' CUDA launch code and kernels as plain C++ against the emulator
(csrc/include/tensorops/emu/device.h) into an extension whose ops, ``torch.ops.tensorops_emu.<op>`` on CPU
tensors, run the CUDA kernels on the CPU; and runs the emulated tests under the sanitizers.

Not a test module (leading underscore). Three builds (``VARIANTS``): ``plain``, ``asan`` (AddressSanitizer +
UBSan, alignment included, no recovery) and ``tsan`` (ThreadSanitizer). Each is built from the ``csrc/`` beside
these tests (not from the installed package), once per hash of what it reads (its sources and every header under
csrc/include), the flags, the compiler and torch, into ``$TENSOROPS_EMU_CACHE`` (default
``~/.cache/tensorops/emulated``), with ninja.

Running one kernel under the emulator by hand::

    python -c "import sys, torch; sys.path.insert(0, 'tests'); import _emulated as e; m = e.load('plain'); \\
               print(torch.ops.tensorops_emu.clamp_scalar(torch.arange(10.), 2, 5), m.events())"

The tests in tests/emulated/ load the build named by ``$TENSOROPS_EMU_VARIANT`` (default ``plain``, in the test
process itself); tests/test_emulated.py runs them in a child process per build, with
the sanitizer runtime preloaded (``child_env``).
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
NAME = "tensorops_emu"

# -O1: the sanitizers want some optimisation to run at a useful speed, and it keeps compile times low
# (-fno-sanitize-recover=all: the first report ends the process with a non-zero exit).
VARIANTS = {
    "plain": {"cflags": ["-O1"], "ldflags": [], "runtime": None},
    "asan": {
        "cflags": ["-O1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"],
        "ldflags": ["-fsanitize=address,undefined"],
        "runtime": "libasan.so",
    },
    "tsan": {
        "cflags": ["-O1", "-fsanitize=thread", "-fno-omit-frame-pointer"],
        "ldflags": ["-fsanitize=thread"],
        "runtime": "libtsan.so",
    },
}

# The builds tests/test_emulated.py runs: ASan+UBSan and TSan. The plain build is not among them: every assertion of
# tests/emulated runs under ASan+UBSan too (same -O1 code, plus the checks), so a plain build would prove nothing
# more and cost a third build; it stays the default for running the tests by hand. TENSOROPS_EMU_VARIANTS
# (comma-separated, e.g. "plain,asan,tsan") chooses others.
TESTED_VARIANTS = ("asan", "tsan")


def tested_variants() -> list[str]:
    names = [v.strip() for v in os.environ.get("TENSOROPS_EMU_VARIANTS", ",".join(TESTED_VARIANTS)).split(",")]
    unknown = [v for v in names if v and v not in VARIANTS]
    if unknown:
        raise ValueError(f"TENSOROPS_EMU_VARIANTS names unknown builds {unknown}; known: {list(VARIANTS)}")
    return [v for v in names if v]


def strict() -> bool:
    """True under CI (CI=true, as CI services set it): a missing sanitizer runtime fails instead of skipping, so a
    green run cannot hide that a sanitizer never ran."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


# What every translation unit of the emulated build includes first (precompiled once per build): the header
# setup.py precompiles for the shipped build too.
PCH = (CSRC / "include" / "tensorops" / "pch.h").read_text()


def cxx() -> str | None:
    return os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")


def _compiler_version(compiler: str) -> str:
    return subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout.splitlines()[0]


def sources() -> list[Path]:
    """What the emulated extension is built from: the schemas, the host code, the CUDA launch code (as C++) and the
    emulated module."""
    return sorted(
        [CSRC / "tensorops.cpp", *CSRC.glob("host/*.cpp"), *CSRC.glob("cuda/*.cu"), CSRC / "emulated" / "module.cpp"]
    )


def cuda_kernels_in_source() -> set[str]:
    """Names of every ``__global__`` function anywhere under csrc/ (the kernels the emulated tier must run)."""
    import re

    names = set()
    for p in CSRC.rglob("*"):
        if p.suffix in (".cu", ".cuh", ".h", ".cpp") and "emu" not in p.parts:
            names.update(re.findall(r"__global__\s+void\s+(\w+)", p.read_text()))
    return names


def _flags(variant: str) -> tuple[list[str], list[str]]:
    import torch
    from torch.utils.cpp_extension import include_paths

    v = VARIANTS[variant]
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cflags = [
        "-std=c++20", "-fPIC", "-g1", "-Wno-unknown-pragmas", "-Winvalid-pch", f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        "-DTENSOROPS_EMULATED=1", f"-DTENSOROPS_LIBRARY={NAME}", f"-DTORCH_EXTENSION_NAME={NAME}_{variant}",
        "-DTORCH_API_INCLUDE_EXTENSION_H", f"-I{CSRC / 'include'}",
        *[f"-isystem{p}" for p in include_paths()], f"-isystem{sysconfig.get_paths()['include']}", *v["cflags"],
    ]
    torch_lib = Path(torch.__file__).parent / "lib"
    ldflags = ["-shared", f"-L{torch_lib}", "-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python",
               f"-Wl,-rpath,{torch_lib}", *v["ldflags"]]
    return cflags, ldflags


def build(variant: str) -> Path:
    """Builds (or finds in the cache) the emulated extension ``variant``; returns the path of its .so."""
    import torch

    compiler = cxx()
    if compiler is None:
        raise RuntimeError("the emulated device needs a C++ compiler (g++)")
    cflags, ldflags = _flags(variant)
    h = hashlib.sha256()
    for p in sorted(set(sources()) | {q for q in (CSRC / "include").rglob("*") if q.is_file()}):
        h.update(str(p.relative_to(CSRC)).encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(repr((cflags, ldflags, _compiler_version(compiler), torch.__version__)).encode())
    cache = Path(os.environ.get("TENSOROPS_EMU_CACHE", Path.home() / ".cache" / "tensorops" / "emulated"))
    d = cache / f"{variant}-{h.hexdigest()[:16]}"
    so = d / f"{NAME}_{variant}.so"
    if so.exists():
        return so
    ninja_build(d, sources(), cflags, ldflags, so.name, f"emulated ({variant})")
    # keep the two newest builds of this variant (~0.5 GB each; a build for older sources is seldom used again)
    old = sorted((p for p in cache.glob(f"{variant}-*") if p.is_dir()), key=lambda p: p.stat().st_mtime)[:-2]
    for p in old:
        shutil.rmtree(p, ignore_errors=True)
    return so


def ninja_build(d: Path, srcs: list[Path], cflags: list[str], ldflags: list[str], out: str, what: str) -> Path:
    """Compiles ``srcs`` with ``cflags`` and links them with ``ldflags`` into ``d / out``, with ninja and torch's
    headers precompiled once (``PCH``, included first by every file); only a complete build leaves ``d / out``.
    Also used by .ci/asan_build.py (the CPU extension under the sanitizers)."""
    compiler = cxx()
    if compiler is None:
        raise RuntimeError(f"{what} needs a C++ compiler (g++)")
    d.mkdir(parents=True, exist_ok=True)
    objs, lines = [], []
    q = lambda a: " ".join(x.replace(" ", "$ ") for x in a)  # noqa: E731
    lines += [
        "ninja_required_version = 1.3",
        f"cxx = {compiler}",
        f"cflags = {q(cflags)}",
        f"ldflags = {q(ldflags)}",
        # torch's headers, parsed once per build as a precompiled header (most of each file's compile time)
        "rule pch",
        "  command = $cxx -MMD -MF $out.d $cflags -x c++-header $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "rule compile",
        "  command = $cxx -MMD -MF $out.d $cflags -include pch.h -x c++ -c $in -o $out",
        "  depfile = $out.d",
        "  deps = gcc",
        "  description = $what $in",
        "rule link",
        "  command = $cxx $in $ldflags -o $out",
        "  description = link $out",
    ]
    (d / "pch.h").write_text(PCH)
    lines += ["build pch.h.gch: pch pch.h"]
    for src in srcs:
        obj = f"{src.parent.name}_{src.stem}.o"
        objs.append(obj)
        lines += [f"build {obj}: compile {src} | pch.h.gch", f"  what = {q([what])}"]
    tmp = f"{out}.tmp"
    lines += [f"build {tmp}: link {' '.join(objs)}", ""]
    (d / "build.ninja").write_text("\n".join(lines))
    ninja = shutil.which("ninja") or str(Path(sys.executable).parent / "ninja")
    jobs = os.environ.get("MAX_JOBS", str(os.cpu_count() or 2))
    r = subprocess.run([ninja, "-C", str(d), "-j", jobs], capture_output=True, text=True, cwd=d)
    if r.returncode != 0:
        raise RuntimeError(f"building {what} failed:\n{r.stdout[-20000:]}\n{r.stderr}")
    os.replace(d / tmp, d / out)  # complete builds only: a killed build leaves no output
    return d / out


def build_program(variant: str, name: str, program: str, include_first: Path | None = None) -> Path:
    """Compiles a C++ program against the emulator with the flags (and precompiled header) of build ``variant``
    into an executable; ``include_first`` is searched before csrc/include (mutated copies of kernel headers)."""
    so = build(variant)
    d = so.parent
    cflags, ldflags = _flags(variant)
    # a program has no libpython; -rdynamic exports its kernels' names to the emulator's dladdr
    ldflags = [f for f in ldflags if f not in ("-shared", "-ltorch_python")] + ["-rdynamic"]
    src = d / f"{name}.cpp"
    src.write_text(program)
    exe = d / name
    first = [f"-I{include_first}"] if include_first else []
    r = subprocess.run([cxx(), *first, *cflags, "-include", str(d / "pch.h"), str(src), "-o", str(exe), *ldflags],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"building {name} ({variant}) failed:\n{r.stderr[-20000:]}")
    return exe


def import_so(so: Path):
    """Imports the extension at ``so`` (registering torch.ops.tensorops_emu.*); returns the module."""
    name = so.stem
    if name in sys.modules:
        return sys.modules[name]
    import torch  # noqa: F401  (the extension links against torch's libraries)

    loader = importlib.machinery.ExtensionFileLoader(name, str(so))
    spec = importlib.util.spec_from_file_location(name, so, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sys.modules[name] = mod
    return mod


def load(variant: str | None = None):
    """The emulated extension for this process: the .so named by $TENSOROPS_EMU_SO (a child process of the sanitizer
    runs), else ``variant`` (default $TENSOROPS_EMU_VARIANT or plain), built on first use."""
    so = os.environ.get("TENSOROPS_EMU_SO")
    if so:
        return import_so(Path(so))
    return import_so(build(variant or os.environ.get("TENSOROPS_EMU_VARIANT", "plain")))


def _library(lib: str) -> str | None:
    path = subprocess.run([cxx(), f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def runtime_library(variant: str) -> str | None:
    """The sanitizer runtime to preload for ``variant`` (its absolute path), or None."""
    lib = VARIANTS[variant]["runtime"]
    return None if lib is None else _library(lib)


def child_env(variant: str, so: Path) -> dict:
    """The environment of a child Python process that runs the emulated tests against the build at ``so``."""
    env = dict(os.environ)
    env["TENSOROPS_EMU_SO"] = str(so)
    env["TENSOROPS_EMU_VARIANT"] = variant
    rt = runtime_library(variant)
    if rt:
        # the runtime first; then libstdc++, so that ASan's __cxa_throw interceptor finds the real one when the
        # process starts (python itself does not link libstdc++: without it the first C++ exception aborts)
        env["LD_PRELOAD"] = ":".join(p for p in (rt, _library("libstdc++.so")) if p)
    # the first report ends the run with exit code 66 and a report naming the source line
    env["ASAN_OPTIONS"] = "detect_leaks=0:halt_on_error=1:exitcode=66:allocator_may_return_null=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1:exitcode=66"
    env["TSAN_OPTIONS"] = "halt_on_error=1:exitcode=66:report_signal_unsafe=0:second_deadlock_stack=1"
    env["PYTHONFAULTHANDLER"] = "1"
    return env
