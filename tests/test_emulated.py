"""The emulated CUDA tier (tests/_emulated.py): every CUDA kernel of csrc/ runs, in two builds - AddressSanitizer +
UBSan and ThreadSanitizer (``_emulated.tested_variants()``) - on this machine, without a GPU, and a sanitizer report
fails the run. A missing sanitizer runtime skips, and fails under CI=true.

* test_emulated_build: per build, tests/emulated in a child process (the sanitizer runtime preloaded), and every
  ``__global__`` kernel in csrc/ must have run there, its threads entering the body (a new kernel cannot skip the
  tier); the log gets the child's test count.
* test_*_is_caught: deliberately broken copies of real kernels (a removed __syncthreads, a loop bound one past the
  end, a vector load through a misaligned pointer, a lane leaving before a warp collective) built against the
  emulator, and the matching build must report each one at its source line.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import _emulated

pytestmark = [
    pytest.mark.emulated,
    pytest.mark.skipif(_emulated.cxx() is None, reason="the emulated device needs a C++ compiler (g++)"),
]

TESTS = Path(__file__).resolve().parent


def _run_child(variant: str, args: list, env: dict, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=TESTS.parent)


def skip_or_fail_without_runtime(variant: str) -> None:
    """Skips (fails under CI=true) when the compiler has no runtime for ``variant``'s sanitizer."""
    lib = _emulated.VARIANTS[variant]["runtime"]
    if lib and _emulated.runtime_library(variant) is None:
        msg = f"the compiler has no {lib}: the {variant} build cannot run"
        if _emulated.strict():
            pytest.fail(msg + " (CI=true: a missing sanitizer runtime fails)")
        pytest.skip(msg)


@pytest.mark.parametrize("variant", _emulated.tested_variants())
def test_emulated_build(variant, tmp_path, capsys):
    skip_or_fail_without_runtime(variant)
    so = _emulated.build(variant)
    env = _emulated.child_env(variant, so)
    report = tmp_path / "kernels.json"
    env["TENSOROPS_EMU_REPORT"] = str(report)
    # -s: a sanitizer report ends the child at once, so it must reach stderr uncaptured; -v: which test it was
    r = _run_child(variant, ["-m", "pytest", "-v", "-s", "-p", "no:cacheprovider", "-x", str(TESTS / "emulated")],
                   env, timeout=1500)
    out = r.stdout[-15000:] + "\n" + r.stderr[-15000:]
    assert r.returncode == 0, f"the emulated tests failed in the {variant} build (exit {r.returncode}):\n{out}"
    for bad in ("ERROR: AddressSanitizer", "runtime error:", "WARNING: ThreadSanitizer"):
        assert bad not in out, out
    summary = re.findall(r"^=+ (.*\d+ passed.*) =+$", r.stdout, re.M)
    assert summary, f"no pytest summary from the {variant} child:\n{out}"
    passed = int(re.search(r"(\d+) passed", summary[-1]).group(1))
    with capsys.disabled():  # the log says how many emulated tests each build ran
        print(f"\n[emulated {variant}] tests/emulated: {summary[-1]}", flush=True)
    assert passed >= 50, f"only {passed} emulated tests passed in the {variant} build: {summary[-1]}"
    ran = json.loads(report.read_text())
    missing = sorted(_emulated.cuda_kernels_in_source() - set(ran))
    assert not missing, f"CUDA kernels in csrc/ that no emulated test ran ({variant} build): {missing}"


# ---- broken kernels: the matching build must catch each ------------------------------------------------------
PROGRAM = r"""
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "tensorops/kernels/clamp.cuh"
#include "tensorops/kernels/foreach_clamp.cuh"
#include "tensorops/kernels/warp.cuh"

using namespace tensorops;

// a lane returns before its warp sums (warp_accumulate needs all 32 lanes)
__global__ void early_exit_kernel(float* sums) {
  if (threadIdx.x % 32 == 5) return;
  kernels::warp_accumulate(sums, 0, 1.0f);
}
// half of the block waits at one __syncthreads, half at another
__global__ void split_barrier_kernel(int* x) {
  if (threadIdx.x < 64) {
    x[threadIdx.x] = 1;
    __syncthreads();
  } else {
    __syncthreads();
    x[threadIdx.x] = 2;
  }
}

// half a warp shuffles while the rest of the block waits at __syncthreads: a GPU hangs
__global__ void hang_kernel(int* x) {
  int v = x[threadIdx.x];
  if (threadIdx.x >= 32 && threadIdx.x < 48)
    v = __shfl_sync(0xffffffffu, v, 0);
  else
    __syncthreads();
  x[threadIdx.x] = v;
}

int main(int argc, char** argv) {
  const std::string mode = argv[1];
  try {
    if (mode == "contig" || mode == "misaligned") {
      const int n = 1003;  // 62 vectors of 16 floats... plus a scalar tail
      float* buf = static_cast<float*>(aligned_alloc(16, 1024 * sizeof(float)));
      for (int i = 0; i < 1024; ++i) buf[i] = float(i);
      float* x = buf + (mode == "misaligned" ? 1 : 0);  // launch code that forgot its alignment check
      std::vector<float> out(1024);
      cuda::launch(kernels::clamp_scalar_contig_kernel<float, int, true, true>, 1, 256, 0, nullptr, out.data(), x,
                   mode == "contig" ? 1024 : n, 10.0f, 20.0f);
      std::printf("ok %g\n", out[0]);
      free(buf);
    } else if (mode == "tail") {
      std::vector<float> x(1003, 5.0f), y(1003);  // exactly n elements: the mutated loop reads x[n]
      cuda::launch(kernels::clamp_scalar_contig_kernel<float, int, true, true>, 1, 256, 0, nullptr, y.data(), x.data(),
                   1003, 0.0f, 1.0f);
      std::printf("ok %g\n", y[0]);
    } else if (mode == "foreach") {
      std::vector<float> a(3000, 3.0f), b(5000, -3.0f), ya(3000), yb(5000);
      std::vector<int64_t> table = {0, 3000, 8000, (int64_t)a.data(), (int64_t)b.data(), (int64_t)ya.data(),
                                    (int64_t)yb.data()};
      cuda::launch(kernels::foreach_clamp_kernel<float, true, true>, 4, 256, 0, nullptr, table.data(), 2, 8000,
                   -1.0f, 1.0f);
      std::printf("ok %g %g\n", ya[0], yb[4999]);
    } else if (mode == "early_exit") {
      float s = 0;
      cuda::launch(early_exit_kernel, 1, 64, 0, nullptr, &s);
      std::printf("ok %g\n", s);
    } else if (mode == "hang") {
      std::vector<int> x(64, 1);
      cuda::launch(hang_kernel, 1, 64, 0, nullptr, x.data());
      std::printf("ok\n");
    } else if (mode == "split_barrier") {
      std::vector<int> x(128);
      cuda::launch(split_barrier_kernel, 1, 128, 0, nullptr, x.data());
      std::printf("ok\n");
    }
  } catch (const std::exception& e) {
    std::printf("emulator: %s\n", e.what());
    return 3;
  }
  return 0;
}
"""


def mutated(tmp: Path, header: str, old: str, new: str) -> Path:
    """A copy of csrc/include/tensorops/<header> with `old` (which must occur exactly once) replaced by `new`, in an
    include directory searched before csrc/include."""
    text = (_emulated.CSRC / "include" / "tensorops" / header).read_text()
    assert text.count(old) == 1, f"{header} no longer holds the code this test breaks: {old!r}"
    dst = tmp / "tensorops" / header
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text.replace(old, new))
    return tmp


def run_program(variant: str, name: str, include_first, mode: str) -> subprocess.CompletedProcess:
    skip_or_fail_without_runtime(variant)
    exe = _emulated.build_program(variant, name, PROGRAM, include_first)
    env = _emulated.child_env(variant, exe)
    env.pop("LD_PRELOAD", None)  # the program is linked with its sanitizer runtime
    return subprocess.run([str(exe), mode], env=env, capture_output=True, text=True, timeout=300)


def test_vector_load_through_a_misaligned_pointer_is_caught():
    ok = run_program("asan", "probe_real", None, "contig")
    assert ok.returncode == 0 and ok.stdout.startswith("ok"), ok.stdout + ok.stderr  # the control: no report
    r = run_program("asan", "probe_real", None, "misaligned")
    assert r.returncode == 66, r.stdout + r.stderr
    assert "misaligned address" in r.stderr and "kernels/clamp.cuh" in r.stderr, r.stderr


def test_loop_bound_one_past_the_end_is_caught():
    with tempfile.TemporaryDirectory() as d:
        inc = mutated(Path(d), "kernels/clamp.cuh", "threadIdx.x; i < n; i += stride)",
                      "threadIdx.x; i <= n; i += stride)")
        r = run_program("asan", "probe_tail", inc, "tail")
    assert r.returncode == 66, r.stdout + r.stderr
    assert "heap-buffer-overflow" in r.stderr and "kernels/clamp.cuh" in r.stderr, r.stderr


def test_removed_syncthreads_is_caught():
    with tempfile.TemporaryDirectory() as d:
        inc = mutated(Path(d), "kernels/foreach_clamp.cuh",
                      "tile_seg = copy_table::find_segment(start, n, first);\n    __syncthreads();",
                      "tile_seg = copy_table::find_segment(start, n, first);")
        r = run_program("tsan", "probe_race", inc, "foreach")
    assert r.returncode == 66, r.stdout + r.stderr
    assert "WARNING: ThreadSanitizer: data race" in r.stderr and "kernels/foreach_clamp.cuh" in r.stderr, r.stderr


def test_real_foreach_kernel_is_race_free_under_tsan():
    r = run_program("tsan", "probe_real", None, "foreach")
    assert r.returncode == 0 and r.stdout.startswith("ok 1 -1"), r.stdout + r.stderr


@pytest.mark.parametrize("mode, message", [
    ("early_exit", "already left the kernel (full mask)"),
    ("split_barrier", "wait at different __syncthreads"),
    ("hang", "deadlock: all 64 live threads of the block wait at barriers that cannot open"),
])
def test_emulator_reports_divergent_collectives(mode, message):
    # the emulator's own checks: on the ASan+UBSan build, which the tier builds anyway (they do not depend on it)
    r = run_program("asan", "probe_real", None, mode)
    assert r.returncode == 3 and message in r.stdout, r.stdout + r.stderr
    assert re.search(r"\.(cuh|cpp):\d+", r.stdout), r.stdout  # the report names the source line
    assert f"{mode}_kernel" in r.stdout, r.stdout  # and the kernel
