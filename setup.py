"""Build script for tensorops' compiled extension (tensorops._C).

What it decides, and why (it prints every decision):
* CUDA kernels are compiled when torch is a CUDA build and a CUDA toolkit is found. No GPU is needed and no
  device is queried: the target architectures come from TORCH_CUDA_ARCH_LIST or a fixed default list.
* The toolkit is looked up in CUDA_HOME / CUDA_PATH first, then through the `nvcc` on PATH (asking nvcc where
  its own toolkit lives, so a wrapper script outside the toolkit is fine), then in the usual install prefixes.
* FORCE_CUDA=1 makes a missing toolkit an error, FORCE_CUDA=0 builds the CPU kernels only.
* DEBUG=1 builds with -O0 -g; MAX_JOBS is honoured by torch's ninja build.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import find_packages, setup

NAME = "tensorops"
HERE = os.path.dirname(os.path.abspath(__file__))
# The version lives in tensorops/_version.py only; read as text, since importing tensorops needs the built
# extension (or warns without it).
with open(os.path.join(HERE, "tensorops", "_version.py"), encoding="utf-8") as _f:
    VERSION = re.search(r'^__version__ = "([^"]+)"', _f.read(), re.M).group(1)
# Architectures compiled when TORCH_CUDA_ARCH_LIST is unset: sm_75 (T4), sm_80 (A100; its code also runs on
# every 8.x GPU), sm_90 (H100/H200) and PTX that newer GPUs (Blackwell...) compile at load time.
DEFAULT_CUDA_ARCHS = "7.5;8.0;9.0+PTX"


def log(msg: str) -> None:
    print(f"[tensorops setup] {msg}", flush=True)


def _is_toolkit(path: str) -> bool:
    return bool(path) and os.path.isfile(os.path.join(path, "bin", "nvcc")) and os.path.isfile(
        os.path.join(path, "include", "cuda_runtime.h")
    )


def _nvcc_reported_home(nvcc: str):
    """Ask nvcc for its own install root: `--dryrun` prints `#$ TOP=<toolkit>/bin/..`."""
    try:
        out = subprocess.run(
            [nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
            capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"^#\$ TOP=(.+)$", out.stdout + out.stderr, re.MULTILINE)
    return os.path.realpath(m.group(1).strip()) if m else None


def find_cuda_home():
    """Return (path, how) for the real CUDA toolkit, or (None, reason)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        path = os.environ.get(var)
        if path:
            if _is_toolkit(path):
                return path, f"${var}"
            log(f"warning: ${var}={path} has no bin/nvcc and include/cuda_runtime.h; looking elsewhere")
    nvcc = shutil.which("nvcc")
    if nvcc:
        for path, how in (
            (os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), f"nvcc on PATH ({nvcc})"),
            (_nvcc_reported_home(nvcc), f"nvcc on PATH ({nvcc}) reports it"),
        ):
            if path and _is_toolkit(path):
                return path, how
    for path in ["/usr/local/cuda", *sorted(glob.glob("/usr/local/cuda-*"), reverse=True), "/opt/cuda"]:
        if _is_toolkit(path):
            return os.path.realpath(path), "standard install prefix"
    return None, "no nvcc on PATH, no CUDA_HOME, nothing under /usr/local/cuda*"


def torchvision_extra(torch_version: str) -> list:
    """The `tensorops[torchvision]` extra: the torchvision series released with the torch tensorops is built
    against (torchvision 0.(m+15) pairs with torch 2.m), and that torch itself pinned, so installing the extra
    never moves torch (the compiled extension only loads with the torch it was built against)."""
    base = torch_version.split("+")[0]  # 2.14.1+cu130 -> 2.14.1 (the pin matches any local build of it)
    m = re.match(r"2\.(\d+)\.\d+$", base)
    return [f"torch=={base}", f"torchvision==0.{int(m.group(1)) + 15}.*" if m else "torchvision"]


# `tensorops[peers]`: the benchmarks' optional peer columns (benchmarks/images/peers.py: albumentations on OpenCV, DALI's
# CPU operators), for whoever measures; never a dependency of tensorops itself. DALI ships x86-64 and aarch64 Linux
# wheels only.
PEERS_EXTRA = ["albumentations>=2.0", "opencv-python-headless",
               "nvidia-dali-cuda130; sys_platform == 'linux' and platform_machine in 'x86_64 aarch64'"]


# `tensorops[timm]`: timm, for whoever hands timm's create_transform / Mixup to tensorops.data.from_pipeline and for
# the tests that build timm's pipelines (they skip, saying so, without it); never a dependency of tensorops itself.
TIMM_EXTRA = ["timm>=1.0"]


# `tensorops[docs]`: what `python docs/build.py` needs (for whoever builds the docs, not for users). Pinned so a
# new Sphinx cannot turn a passing -W build into a failing one; Sphinx 9 needs Python 3.11+.
DOCS_EXTRA = ["sphinx==9.0.4; python_version >= '3.11'", "docutils==0.22.4; python_version >= '3.11'"]


def ray_extra(torch_version: str) -> list:
    """The `tensorops[ray]` extra (tensorops.ray, Ray Data stages): Ray Data plus Ray Train (iter_torch_batches
    imports it), with the torch tensorops is built against pinned, like the torchvision extra, so it never moves
    torch. 2.60 is the Ray the stage and its tests were written against."""
    return [f"torch=={torch_version.split('+')[0]}", "ray[data,train]>=2.60"]


def find_libjpeg():
    """(include_dir, library_dir, version) of a libjpeg-turbo >= 2.0 (its libjpeg API: jpeglib.h with
    jpeg_crop_scanline and jpeg_skip_scanlines, the partial decode), or (None, None, why not).

    Looked up in $TENSOROPS_LIBJPEG_DIR (a prefix with include/ and lib/), $CONDA_PREFIX, then /usr and
    /usr/local (Debian/Ubuntu: apt install libjpeg-dev or libjpeg-turbo8-dev); of those found, the first of
    version 3.0 or later is taken (it decodes more kinds of JPEG), else the first. TENSOROPS_LIBJPEG=0 builds
    without it: the decode op then decodes through PIL (and warns once)."""
    if os.environ.get("TENSOROPS_LIBJPEG", "").strip() == "0":
        return None, None, "TENSOROPS_LIBJPEG=0"
    prefixes = [os.environ.get("TENSOROPS_LIBJPEG_DIR"), os.environ.get("CONDA_PREFIX"), "/usr", "/usr/local"]
    found = []
    for prefix in filter(None, prefixes):
        header = os.path.join(prefix, "include", "jpeglib.h")
        if not os.path.isfile(header):
            continue
        with open(header, encoding="latin-1") as f:
            text = f.read()
        if "jpeg_crop_scanline" not in text or "jpeg_skip_scanlines" not in text:
            log(f"{header} has no jpeg_crop_scanline/jpeg_skip_scanlines (IJG libjpeg, not libjpeg-turbo >= 2.0)")
            continue
        version = "unknown version"
        for conf in [os.path.join(prefix, "include", "jconfig.h"),
                     *glob.glob(os.path.join(prefix, "include", "*", "jconfig.h"))]:
            if not os.path.isfile(conf):
                continue
            with open(conf, encoding="latin-1") as f:
                m = re.search(r"LIBJPEG_TURBO_VERSION\s+([0-9.]+)", f.read())
            if m:
                version = m.group(1)
                break
        libs = glob.glob(os.path.join(prefix, "lib*", "libjpeg.so*")) + glob.glob(
            os.path.join(prefix, "lib*", "*", "libjpeg.so*"))
        libdir = os.path.dirname(sorted(libs)[0]) if libs else None
        if libdir is None:
            log(f"{header} found but no libjpeg.so under {prefix}/lib*")
            continue
        found.append((os.path.join(prefix, "include"), libdir, version))
    if found:
        def major(v):
            return int(v.split(".")[0]) if v[:1].isdigit() else 0
        return next((f for f in found if major(f[2]) >= 3), found[0])
    return None, None, "no jpeglib.h with libjpeg-turbo's partial decode in " + ", ".join(filter(None, prefixes))


def cpu_sources() -> list:
    """The C++ sources of every build: the schemas and module, csrc/host (the host-side code of every op family,
    compiled once by the C++ compiler for CPU and CUDA) and the CPU kernels (.ci/asan_build.py builds these too)."""
    return sorted(glob.glob("csrc/*.cpp") + glob.glob("csrc/host/*.cpp") + glob.glob("csrc/cpu/*.cpp"))


def with_precompiled_header(build_extension_class):
    """torch's BuildExtension, plus csrc/include/tensorops/pch.h (torch's headers) precompiled once per build with
    GCC and given to every C++ source (-include): parsing torch's headers was most of a host source's compile time
    (about 10 s of 12 at -O3 on a 2-core machine, for each of ~20 sources). The header is compiled through the
    same ninja compile as the sources, with the same flags, so GCC accepts it; where it would not (-Winvalid-pch
    says so), GCC parses the headers as before. Not with other compilers, nor with TENSOROPS_PCH=0."""

    class Build(build_extension_class):
        def build_extension(self, ext):
            compile_ = self.compiler.compile  # torch's ninja compile, set up by BuildExtension.build_extensions

            def compile_with_pch(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                                 extra_preargs=None, extra_postargs=None, depends=None):
                header = self._precompile(compile_, output_dir, macros, include_dirs, debug, extra_postargs)
                post = extra_postargs
                if header:
                    flags = ["-include", header, "-Winvalid-pch"]
                    post = dict(post, cxx=[*post["cxx"], *flags]) if isinstance(post, dict) else [*post, *flags]
                return compile_(sources, output_dir, macros, include_dirs, debug, extra_preargs, post, depends)

            self.compiler.compile = compile_with_pch
            try:
                super().build_extension(ext)
            finally:
                self.compiler.compile = compile_

        def _precompile(self, compile_, output_dir, macros, include_dirs, debug, extra_postargs):
            if os.environ.get("TENSOROPS_PCH", "").strip() == "0":
                log("TENSOROPS_PCH=0: no precompiled header")
                return None
            if getattr(self.compiler, "compiler_type", "") != "unix":
                return None
            cxx = self.compiler.compiler_so[0]
            try:
                version = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=60).stdout
            except (OSError, subprocess.SubprocessError):
                version = ""
            if "Free Software Foundation" not in version or "clang" in version.lower():
                log(f"{cxx} is not GCC: no precompiled header")
                return None
            d = os.path.abspath(os.path.join(output_dir or self.build_temp, "pch"))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(HERE, "csrc", "include", "tensorops", "pch.h"), encoding="utf-8") as f:
                text = f.read().replace("#pragma once\n", "")  # compiled as the main file: no include guard
            # a .cpp name for the ninja compile (distutils knows no .h sources), and the header -include names
            src, header = os.path.join(d, "tensorops_pch.cpp"), os.path.join(d, "tensorops_pch.h")
            for path in (src, header):
                if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(text)
            try:
                obj = compile_([src], d, macros, include_dirs, debug, ["-x", "c++-header"], extra_postargs)[0]
            except Exception as e:  # noqa: BLE001 - any failure: build without it
                log(f"the precompiled header failed to build ({e}): compiling without it")
                return None
            shutil.copyfile(obj, header + ".gch")
            log(f"precompiled header: {header}.gch (torch's headers, parsed once)")
            return header

    return Build


def main() -> None:
    import torch  # the build needs the torch that will import the extension (pip install --no-build-isolation)

    force = os.environ.get("FORCE_CUDA", "").strip()
    debug = os.environ.get("DEBUG", "0") not in ("", "0")
    with_cuda = False
    cuda_home, how = None, ""
    if force == "0":
        log("FORCE_CUDA=0: building CPU kernels only")
    elif torch.version.cuda is None:
        if force == "1":
            sys.exit("[tensorops setup] FORCE_CUDA=1 but the installed torch is a CPU-only build")
        log(f"torch {torch.__version__} is a CPU-only build: building CPU kernels only")
    else:
        cuda_home, how = find_cuda_home()
        if cuda_home is None:
            if force == "1":
                sys.exit(f"[tensorops setup] FORCE_CUDA=1 but no CUDA toolkit was found ({how})")
            log(f"no CUDA toolkit found ({how}): building CPU kernels only")
        else:
            with_cuda = True
            # torch.utils.cpp_extension reads CUDA_HOME when it is imported, so set it first.
            os.environ["CUDA_HOME"] = cuda_home
            os.environ["PATH"] = os.path.join(cuda_home, "bin") + os.pathsep + os.environ.get("PATH", "")
            if not os.environ.get("TORCH_CUDA_ARCH_LIST"):
                os.environ["TORCH_CUDA_ARCH_LIST"] = DEFAULT_CUDA_ARCHS
            log(f"CUDA toolkit: {cuda_home} (found via {how}); torch CUDA {torch.version.cuda}")
            log(f"CUDA archs: {os.environ['TORCH_CUDA_ARCH_LIST']}")

    from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

    cxx = ["-O0", "-g"] if debug else ["-O3"]
    cxx += ["-fvisibility=hidden"]  # torch adds the -std= its headers need
    link = []
    if torch.__config__.parallel_info().find("OpenMP") >= 0 and sys.platform.startswith("linux"):
        # at::parallel_for is OpenMP underneath in such torch builds: without -fopenmp its `#pragma omp` is
        # ignored and every CPU kernel silently runs on one thread
        cxx.append("-fopenmp")
        link.append("-fopenmp")
    nvcc = ["-O0", "-g", "-lineinfo"] if debug else ["-O3", "-lineinfo"]
    nvcc += ["--expt-relaxed-constexpr"]
    archs = os.environ.get("TORCH_CUDA_ARCH_LIST", "") if with_cuda else ""
    macros = [
        ("TENSOROPS_VERSION", f'"{VERSION}"'),
        ("TENSOROPS_TORCH_VERSION", f'"{torch.__version__}"'),
        ("TENSOROPS_CUDA_ARCHS", f'"{archs}"'),
    ]
    sources = cpu_sources()
    include_dirs = [os.path.join(HERE, "csrc", "include")]
    libraries, library_dirs = [], []
    jpeg_include, jpeg_lib, jpeg_version = find_libjpeg()
    if jpeg_include:
        log(f"libjpeg-turbo {jpeg_version}: {jpeg_include}, {jpeg_lib} (the decode op's partial decode)")
        macros.append(("TENSOROPS_WITH_LIBJPEG", "1"))
        if jpeg_include not in ("/usr/include",):
            include_dirs.append(jpeg_include)
        library_dirs.append(jpeg_lib)
        libraries.append("jpeg")
    else:
        log(f"libjpeg-turbo not found ({jpeg_version}): decode_resized_crop_mirror_normalize will decode through "
            "torchvision or PIL")
    if with_cuda:
        sources += sorted(glob.glob("csrc/cuda/*.cu"))
        macros.append(("TENSOROPS_WITH_CUDA", "1"))
        ext = CUDAExtension(
            f"{NAME}._C", sources, include_dirs=include_dirs, define_macros=macros,
            extra_compile_args={"cxx": cxx, "nvcc": nvcc}, extra_link_args=link,
            libraries=libraries, library_dirs=library_dirs,
        )
    else:
        ext = CppExtension(
            f"{NAME}._C", sources, include_dirs=include_dirs, define_macros=macros,
            extra_compile_args={"cxx": cxx}, extra_link_args=link,
            libraries=libraries, library_dirs=library_dirs,
        )
    log(f"extra [torchvision]: {', '.join(torchvision_extra(torch.__version__))}")
    log(f"extra [ray]: {', '.join(ray_extra(torch.__version__))}")
    log(f"building {len(sources)} sources ({'CPU + CUDA' if with_cuda else 'CPU only'}, "
        f"{'debug' if debug else 'release'}) against torch {torch.__version__}")

    setup(
        name=NAME,
        version=VERSION,
        description="Fused PyTorch preprocessing kernels: normalize, clamp, cat/split (CPU and CUDA)",
        packages=find_packages(include=["tensorops", "tensorops.*"]),
        ext_modules=[ext],
        cmdclass={"build_ext": with_precompiled_header(BuildExtension).with_options(use_ninja=True)},
        python_requires=">=3.10",
        install_requires=["torch>=2.11", "numpy", "pillow"],  # Pillow: the decode op's fallback decoder
        extras_require={"torchvision": torchvision_extra(torch.__version__), "ray": ray_extra(torch.__version__),
                        "docs": DOCS_EXTRA, "peers": PEERS_EXTRA, "timm": TIMM_EXTRA},
        zip_safe=False,
    )


if __name__ == "__main__":
    main()
