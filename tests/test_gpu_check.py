"""benchmarks/gpu/gpu_check.sh's plumbing, tested without a GPU and (mostly) without compiling anything: argument
handling, one global deadline every step respects, every step running after a failed one, summary.json rewritten
after every step and after a SIGTERM, the build command (this GPU's arch only, MAX_JOBS, in place) and the
sanitizer steps, against a stand-in repository whose setup.py only records how it was called. The real
`--dry-run` (installed build, `-m cuda` collection) runs once, marked slow.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "gpu" / "gpu_check.sh"


def _env(env_extra=None, path_prepend=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("FORCE_CUDA", "MAX_JOBS", "TORCH_CUDA_ARCH_LIST", "GPU_CHECK_DEADLINE", "COMPUTE_SANITIZER")}
    env["PYTHON"] = sys.executable
    env["GPU_CHECK_MIN_S"] = "1"  # short deadlines in these tests: every step is worth starting with 1 s left
    if path_prepend:
        env["PATH"] = f"{path_prepend}{os.pathsep}{env.get('PATH', '')}"
    env.update(env_extra or {})
    return env


def _run_script(args, env_extra=None, path_prepend=None, script=SCRIPT, timeout=120):
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True,
                          env=_env(env_extra, path_prepend), timeout=timeout)


def _fake_bin(tmp_path: Path, name: str, body: str) -> Path:
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    f = d / name
    f.write_text("#!/usr/bin/env bash\n" + body)
    f.chmod(f.stat().st_mode | stat.S_IEXEC)
    return d


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _statuses(out: Path) -> dict:
    return {s["name"]: s["status"] for s in _summary(out)["steps"]}


GPU_ARCH_90 = '[[ "$*" == *compute_cap* ]] && { echo "9.0"; exit 0; }; echo "fake nvidia-smi"; exit 0\n'

FAKE_SETUP = """
import json, os, sys, time
keep = ("FORCE_CUDA", "MAX_JOBS", "TORCH_CUDA_ARCH_LIST")
with open("build_record.json", "w") as f:
    json.dump({"argv": sys.argv, "env": {k: os.environ.get(k) for k in keep}}, f)
if os.environ.get("FAKE_BUILD_SLEEP"):
    time.sleep(float(os.environ["FAKE_BUILD_SLEEP"]))
if os.environ.get("FAKE_BUILD_FAIL"):
    sys.exit("error: simulated compiler failure")
os.makedirs("tensorops", exist_ok=True)
cuda = os.environ.get("FORCE_CUDA") == "1"
with open("tensorops/__init__.py", "w") as f:
    f.write(f"def is_compiled(): return True\\ndef build_info(): return {{'compiled': True, 'cuda': {cuda}}}\\n")
"""


@pytest.fixture
def fake_repo(tmp_path):
    """A checkout whose setup.py only records how it was called, with the real script and summarizer."""
    repo = tmp_path / "repo"
    (repo / "benchmarks" / "gpu").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "benchmarks" / "gpu" / "gpu_check.sh")
    shutil.copy(REPO / "benchmarks" / "gpu" / "gpu_summary.py", repo / "benchmarks" / "gpu" / "gpu_summary.py")
    shutil.copy(REPO / "benchmarks" / "__init__.py", repo / "benchmarks" / "__init__.py")  # the rooms' __path__
    (repo / "setup.py").write_text(textwrap.dedent(FAKE_SETUP))
    return repo


def _fake_script(repo: Path) -> Path:
    return repo / "benchmarks" / "gpu" / "gpu_check.sh"


# ---- arguments ---------------------------------------------------------------------------------------------------
def test_script_without_outdir_is_a_usage_error():
    r = _run_script([])
    assert r.returncode == 2
    assert "missing OUTDIR" in r.stderr and "usage:" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["a", "b"], "only one OUTDIR"),
    (["--steps", "build,fly", "out"], "unknown step 'fly'"),
    (["--frobnicate", "out"], "unknown option"),
    (["out", "--steps"], "--steps needs a value"),
    (["--deadline", "soon", "out"], "--deadline must be a positive number"),
])
def test_script_rejects_bad_arguments(tmp_path, args, message):
    r = _run_script([a if a != "out" else str(tmp_path / "o") for a in args])
    assert r.returncode == 2 and message in r.stderr
    assert not (tmp_path / "o").exists(), "a usage error must not start any work"


def test_script_help():
    r = _run_script(["--help"])
    assert r.returncode == 0 and "usage:" in r.stdout and "--dry-run" in r.stdout and "memcheck" in r.stdout


def test_the_documented_path_runs_the_script_from_anywhere(tmp_path):
    # benchmarks/gpu_check.sh OUTDIR, as the README and a GPU session call it: the script, from any directory
    wrapper = REPO / "benchmarks" / "gpu_check.sh"
    r = subprocess.run(["bash", str(wrapper), "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 0 and r.stdout == _run_script(["--help"]).stdout
    r = subprocess.run(["bash", str(wrapper)], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert r.returncode == 2 and not any(tmp_path.iterdir())


# ---- build ---------------------------------------------------------------------------------------------------------
def test_build_for_the_local_gpu_arch_in_place(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    out = tmp_path / "out"
    r = _run_script(["--steps", "build", str(out)], env_extra={"MAX_JOBS": "3"}, path_prepend=fake,
                    script=_fake_script(fake_repo))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((fake_repo / "build_record.json").read_text())
    assert rec["argv"] == ["setup.py", "build_ext", "--inplace"]  # setup.py directly: pip downloads nothing
    assert rec["env"] == {"FORCE_CUDA": "1", "MAX_JOBS": "3", "TORCH_CUDA_ARCH_LIST": "9.0"}
    assert json.loads((out / "build_info.json").read_text()) == {"compiled": True, "cuda": True}
    assert _statuses(out) == {"build": "ok"}


def test_build_uses_every_core_by_default(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    r = _run_script(["--steps", "build", str(tmp_path / "out")], path_prepend=fake, script=_fake_script(fake_repo))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads((fake_repo / "build_record.json").read_text())
    assert int(rec["env"]["MAX_JOBS"]) == len(os.sched_getaffinity(0))  # nproc


@pytest.mark.skipif(torch.cuda.is_available(), reason="the fallback arch query would succeed on a GPU")
def test_build_without_a_readable_arch_fails_before_compiling(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", 'echo "[N/A]"\n')
    out = tmp_path / "out"
    r = _run_script(["--steps", "build", str(out)], path_prepend=fake, script=_fake_script(fake_repo))
    assert r.returncode == 1
    assert _statuses(out) == {"build": "failed"}
    assert "could not read the GPU's compute capability" in (out / "build.log").read_text()
    assert not (fake_repo / "build_record.json").exists(), "setup.py must not run without an arch"


# ---- every step runs; the deadline; the summary --------------------------------------------------------------------
def test_a_failed_step_does_not_stop_the_later_ones(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    out = tmp_path / "out"
    r = _run_script(["--steps", "build,tests,memcheck", str(out)], env_extra={"FAKE_BUILD_FAIL": "1"},
                    path_prepend=fake, script=_fake_script(fake_repo))
    assert r.returncode == 1
    st = _statuses(out)
    assert st["build"] == "failed" and "tests" in st and "memcheck" in st, st
    assert "simulated compiler failure" in (out / "build.log").read_text()
    assert "simulated compiler failure" in r.stdout  # the failing step's log tail is shown
    s = _summary(out)
    assert any("build failed" in p for p in s["problems"])
    assert "build" in (out / "summary.txt").read_text()


def test_one_global_deadline_stops_a_slow_step_and_the_rest_still_report(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    out = tmp_path / "out"
    t = time.monotonic()
    r = _run_script(["--deadline", "6", "--steps", "build,tests", str(out)], env_extra={"FAKE_BUILD_SLEEP": "60"},
                    path_prepend=fake, script=_fake_script(fake_repo))
    took = time.monotonic() - t
    assert took < 25, f"the 6 s deadline was not kept: {took:.0f} s"
    assert r.returncode == 1
    st = _statuses(out)
    assert st["build"] == "timeout", st
    assert st["tests"] in ("skipped", "timeout", "failed"), st  # recorded, whatever little time it had
    s = _summary(out)
    assert s["deadline_s"] == 6
    assert next(x for x in s["steps"] if x["name"] == "build")["seconds"] <= 8


def test_sigterm_stops_the_step_and_leaves_the_summary(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    out = tmp_path / "out"
    proc = subprocess.Popen(["bash", str(_fake_script(fake_repo)), "--steps", "build,tests", str(out)],
                            env=_env({"FAKE_BUILD_SLEEP": "60"}, fake), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (fake_repo / "build_record.json").exists():  # the build is running
            assert time.monotonic() < deadline, "the build step never started"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143
    assert "killed (SIGTERM) during step 'build'" in err
    st = _statuses(out)
    assert st == {"build": "killed"}, st
    assert "killed" in (out / "summary.txt").read_text()


def test_summary_exists_from_the_start(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    out = tmp_path / "out"
    r = _run_script(["--steps", "gpu", str(out)], path_prepend=fake, script=_fake_script(fake_repo))
    s = _summary(out)
    assert {"steps", "deadline_s", "cuda_tests_collected", "cuda_large_tests_collected", "tests_passed",
            "tests_failed", "sanitizer_errors", "pct_of_copy"} <= set(s)
    assert [x["name"] for x in s["steps"]] == ["gpu"]
    assert r.returncode == (0 if s["steps"][0]["status"] == "ok" else 1)


# ---- sanitizer -----------------------------------------------------------------------------------------------------
FAKE_SANITIZER = """
if [[ "$1" == --version ]]; then echo "Compute Sanitizer fake"; exit 0; fi
if [[ "$*" == *" -c "* ]]; then exit 0; fi   # the probe: works on this machine
echo "args: $*"
echo "caching: ${PYTORCH_NO_CUDA_MEMORY_CACHING:-unset}"
echo "========= Invalid __global__ read of size 4 bytes"
echo "========= ERROR SUMMARY: 3 errors"
exit 1
"""


def test_sanitizer_steps_command_errors_and_the_next_step_still_runs(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "compute-sanitizer", textwrap.dedent(FAKE_SANITIZER))
    out = tmp_path / "out"
    r = _run_script(["--steps", "memcheck,racecheck", str(out)], path_prepend=fake, script=_fake_script(fake_repo))
    assert r.returncode == 1
    assert _statuses(out) == {"memcheck": "failed", "racecheck": "failed"}
    log = (out / "memcheck.log").read_text()
    assert "args: --tool memcheck --error-exitcode 1" in log
    assert "-m benchmarks.sanitize_ops --device cuda" in log
    assert "caching: 1" in log  # no caching allocator: memcheck sees each tensor's own bounds
    assert _summary(out)["sanitizer_errors"] == {"memcheck": 3, "racecheck": 3}


def test_a_sanitizer_that_refuses_the_device_is_recorded_unavailable(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "compute-sanitizer", textwrap.dedent("""\
        if [[ "$1" == --version ]]; then echo "Compute Sanitizer fake"; exit 0; fi
        echo "========= Error: Target application terminated before first instrumented API call"; exit 1
        """))
    out = tmp_path / "out"
    r = _run_script(["--steps", "memcheck", str(out)], path_prepend=fake, script=_fake_script(fake_repo))
    assert r.returncode == 0, r.stdout + r.stderr
    assert _statuses(out) == {"memcheck": "unavailable"}
    s = _summary(out)
    assert s["ok"] and s["sanitizers"]["memcheck"]["unavailable"]


# ---- the real dry run ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_dry_run_collects_the_cuda_tests_and_exits_0(tmp_path):
    out = tmp_path / "out"
    t = time.monotonic()
    r = _run_script(["--dry-run", str(out)], env_extra={"GPU_CHECK_MIN_S": ""}, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert time.monotonic() - t < 180
    s = _summary(out)
    assert s["dry_run"] and s["deadline_s"] == 450
    assert [x["name"] for x in s["steps"]] == ["gpu", "build", "tests", "bench", "memcheck", "racecheck"]
    assert s["cuda_tests_collected"] > 100  # every device-parametrized test's cuda half, and the GPU-only files
    assert 0 < s["cuda_large_tests_collected"] < s["cuda_tests_collected"]


def test_a_test_run_stopped_at_the_deadline_still_counts_what_ran(fake_repo, tmp_path):
    (fake_repo / "tests").mkdir()
    (fake_repo / "tests" / "test_fake.py").write_text(textwrap.dedent("""\
        import time
        import pytest

        @pytest.mark.cuda
        def test_ok():
            pass

        @pytest.mark.cuda
        def test_broken():
            assert False

        @pytest.mark.cuda
        def test_hangs():
            time.sleep(120)

        def test_not_gpu():
            pass
        """))
    (fake_repo / "pytest.ini").write_text("[pytest]\nmarkers =\n    cuda: gpu\n")
    out = tmp_path / "out"
    r = _run_script(["--deadline", "20", "--steps", "tests", str(out)], script=_fake_script(fake_repo))
    assert r.returncode == 1
    assert _statuses(out) == {"tests": "timeout"}
    s = _summary(out)
    assert s["cuda_tests_collected"] == 3  # -m cuda: not test_not_gpu
    assert (s["tests_passed"], s["tests_failed"]) == (1, 1)
    assert s["tests"]["partial"] and any("did not finish" in p for p in s["problems"])
    assert "INCOMPLETE" in (out / "summary.txt").read_text()


# ---- the benchmark step: no torch.compile column, rows kept when it is killed ---------------------------------------
FAKE_BENCH_MAIN = """
import json, os, sys, time
out = sys.argv[sys.argv.index("--out") + 1]
with open(os.path.join(out, "argv_of_bench.json"), "w") as f:
    json.dump(sys.argv[1:], f)
# the harness's row-by-row file: two rows done of five, then a bench that runs past its budget
row = {"device": "cuda", "op": "clamp", "times": "clamp", "series": "s", "case": "c", "shape": "(8,)",
       "dtype": "float32", "layout": "contiguous", "check": "ok", "pct_of_copy": 90.0, "bytes": 64, "tensorops_s": 1e-6}
meta = {"partial": True, "rows_done": 2, "rows_planned": 5}
with open(os.path.join(out, "bench_cuda_quick.json"), "w") as f:
    json.dump({"meta": meta, "rows": [row, dict(row, case="d")], "files": {}}, f)
time.sleep(float(os.environ.get("FAKE_BENCH_SLEEP", "0")))
"""


def test_bench_step_runs_without_compile_and_a_killed_bench_keeps_its_rows(fake_repo, tmp_path):
    (fake_repo / "benchmarks" / "__main__.py").write_text(textwrap.dedent(FAKE_BENCH_MAIN))
    out = tmp_path / "out"
    r = _run_script(["--deadline", "8", "--steps", "bench", str(out)], env_extra={"FAKE_BENCH_SLEEP": "60"},
                    script=_fake_script(fake_repo))
    assert r.returncode == 1  # a bench killed at its budget is not a pass...
    argv = json.loads((out / "argv_of_bench.json").read_text())
    assert "--no-compile" in argv and argv[:4] == ["--quick", "--device", "cuda", "--no-compile"], argv
    assert _statuses(out) == {"bench": "timeout"}
    s = _summary(out)  # ...but the rows it finished are in the summary, marked incomplete
    assert s["bench_partial"] == "2 of 5 rows"
    assert any("benchmarks did not finish" in p for p in s["problems"])
    assert "INCOMPLETE: 2 of 5 rows" in (out / "summary.txt").read_text()


def test_harness_writes_each_row_as_it_finishes(tmp_path, monkeypatch):
    from benchmarks import harness

    calls = []

    def fake_run_case(case, dev, grid, *args, **kwargs):
        calls.append(case)
        if len(calls) == 2:  # the run is stopped from outside during its second row
            raise KeyboardInterrupt
        from benchmarks.timing import ROW_KEYS

        return {**dict.fromkeys(ROW_KEYS), "device": dev.type, "op": case.op, "times": case.times,
                "case": case.case, "check": "ok", "compile_error": "not run"}

    monkeypatch.setattr(harness, "run_case", fake_run_case)
    with pytest.raises(KeyboardInterrupt):
        harness.run(devices=["cpu"], grid="smoke", ops=["clamp", "cat"], out_dir=str(tmp_path), do_compile=False,
                    progress=False, say=lambda m: None)
    data = json.loads((tmp_path / "bench_cpu_smoke.json").read_text())
    assert [r["case"] for r in data["rows"]] == [calls[0].case]
    assert data["meta"]["partial"] is True and data["meta"]["rows_done"] == 1
    assert data["meta"]["rows_planned"] >= 2 and data["meta"]["compile"] is False
    assert not list(tmp_path.glob("*.tmp")), "the file is replaced atomically"


# ---- the sanitizer steps: a fixed share of the deadline --------------------------------------------------------------
FAKE_SANITIZER_RECORDING = """
if [[ "$1" == --version ]]; then echo "Compute Sanitizer fake"; exit 0; fi
if [[ "$*" == *" -c "* ]]; then exit 0; fi   # the probe: works on this machine
echo "args: $*"
echo "========= ERROR SUMMARY: 0 errors"
if [[ -n "${FAKE_SANITIZE_PARTIAL:-}" ]]; then
    echo "sanitize_ops: 12 calls ok on cuda; stopped at the 40 s limit after 2 of 7 ops, not run: split, cat"
    exit 5
fi
exit 0
"""


def test_sanitizer_shares_are_reserved_from_the_start_and_passed_as_a_time_limit(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "compute-sanitizer", textwrap.dedent(FAKE_SANITIZER_RECORDING))
    _fake_bin(tmp_path, "nvidia-smi", GPU_ARCH_90)
    out = tmp_path / "out"
    r = _run_script(["--deadline", "400", "--steps", "build,memcheck,racecheck", str(out)], path_prepend=fake,
                    script=_fake_script(fake_repo))
    assert r.returncode == 0, r.stdout + r.stderr
    # the build leaves memcheck's 15% (60 s) and racecheck's 10% (40 s) of the 400 s deadline
    assert "build (budget 240 s of" in r.stdout
    lines = {ln.split()[3]: ln for ln in r.stdout.splitlines() if ln.startswith("== [")}
    assert "(budget 60 s of" in lines["memcheck"] and "(budget 40 s of" in lines["racecheck"], lines
    for tool, share in (("memcheck", 60), ("racecheck", 40)):
        args = (out / f"{tool}.log").read_text().split("args: ", 1)[1].splitlines()[0]
        stop = float(args.split("--stop-after ", 1)[1].split()[0])
        assert 5 <= stop <= share - 15, (tool, args)  # sanitize_ops stops starting ops inside the share
    assert _statuses(out) == {"build": "ok", "memcheck": "ok", "racecheck": "ok"}


def test_a_sanitizer_stopped_at_its_share_is_partial_not_failed(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "compute-sanitizer", textwrap.dedent(FAKE_SANITIZER_RECORDING))
    out = tmp_path / "out"
    r = _run_script(["--deadline", "400", "--steps", "memcheck", str(out)], env_extra={"FAKE_SANITIZE_PARTIAL": "1"},
                    path_prepend=fake, script=_fake_script(fake_repo))
    assert r.returncode == 0, r.stdout + r.stderr
    s = _summary(out)
    step = s["steps"][0]
    assert step["status"] == "partial" and "not run: split, cat" in step["note"], step
    assert s["ok"] and s["sanitizer_errors"] == {"memcheck": 0, "racecheck": None}


def test_a_sanitizer_share_too_short_is_skipped_with_its_reason_and_passes(fake_repo, tmp_path):
    fake = _fake_bin(tmp_path, "compute-sanitizer", textwrap.dedent(FAKE_SANITIZER_RECORDING))
    out = tmp_path / "out"
    # 10% of 100 s = 10 s for racecheck: after the 15 s kept for the tool's exit nothing is left to start an op
    r = _run_script(["--deadline", "100", "--steps", "racecheck", str(out)], path_prepend=fake,
                    script=_fake_script(fake_repo))
    assert r.returncode == 0, r.stdout + r.stderr
    s = _summary(out)
    step = s["steps"][0]
    assert step["status"] == "skipped" and "deadline" in step["note"], step
    assert "args:" not in (out / "racecheck.log").read_text(), "the sanitizer must not start without time"
    assert s["ok"], s["problems"]


def test_sanitize_ops_stops_starting_ops_after_its_time_limit():
    r = subprocess.run([sys.executable, "-m", "benchmarks.sanitize_ops", "--device", "cpu", "--stop-after", "0"],
                       capture_output=True, text=True, cwd=REPO, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 5, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert "stopped at the 0 s limit after 0 of" in last and "not run: normalize" in last, last
