#!/usr/bin/env bash
# One-shot validation of tensorops on a freshly started GPU machine (issue 5), in about 5 minutes:
#
#   gpu    record nvidia-smi and the software versions; check torch sees the GPU
#   build  FORCE_CUDA=1 python setup.py build_ext --inplace, for this GPU's arch only, MAX_JOBS=$(nproc)
#          (no pip: nothing is downloaded), then check the CUDA kernels loaded
#   tests  python -m pytest tests -k cuda  ->  OUTDIR/junit.xml
#   memcheck, racecheck
#          compute-sanitizer over benchmarks/sanitize_ops.py (every kernel, forward and backward, awkward sizes)
#   bench  python -m benchmarks --quick --device cuda (with the device's copy bandwidth)  ->  OUTDIR/bench_cuda_quick.{json,png}
#   summary  tests passed/failed, sanitizer errors, each op's % of copy bandwidth  ->  OUTDIR/summary.txt
#
# Every step logs to OUTDIR/<step>.log. The first step that fails stops the run with a non-zero exit and a
# message naming it; what was produced so far stays in OUTDIR (and the summary of it is printed).
#
# Environment: PYTHON (default python3), MAX_JOBS (default: nproc), COMPUTE_SANITIZER (path to the binary),
# FORCE_CUDA=0 (build the CPU kernels only and skip the arch query: lets the build step run on a machine
# without a GPU, which the test suite does).
set -euo pipefail
shopt -s inherit_errexit

ALL_STEPS="gpu build tests memcheck racecheck bench summary"

usage() {
    cat <<EOF
usage: $(basename "$0") [--steps STEP,STEP,...] OUTDIR

Builds tensorops for this machine's GPU, runs the CUDA tests, compute-sanitizer (memcheck, racecheck) and the
quick CUDA benchmarks, and writes logs, junit XML, JSON, PNG and nvidia-smi output into OUTDIR.
Steps (default: all, in this order): ${ALL_STEPS// /,}
EOF
}

die_usage() {
    echo "error: $1" >&2
    usage >&2
    exit 2
}

STEPS="$ALL_STEPS"
OUTDIR=""
while (($# > 0)); do
    case "$1" in
        -h | --help)
            usage
            exit 0
            ;;
        --steps)
            (($# >= 2)) || die_usage "--steps needs a value"
            STEPS="${2//,/ }"
            shift 2
            ;;
        --steps=*)
            STEPS="${1#--steps=}"
            STEPS="${STEPS//,/ }"
            shift
            ;;
        -*) die_usage "unknown option: $1" ;;
        *)
            [[ -z "$OUTDIR" ]] || die_usage "only one OUTDIR, got '$OUTDIR' and '$1'"
            OUTDIR="$1"
            shift
            ;;
    esac
done
[[ -n "$OUTDIR" ]] || die_usage "missing OUTDIR"
for s in $STEPS; do
    [[ " $ALL_STEPS " == *" $s "* ]] || die_usage "unknown step '$s' (steps: ${ALL_STEPS// /,})"
done

PYTHON="${PYTHON:-python3}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
cd "$REPO"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export MAX_JOBS="${MAX_JOBS:-$(nproc)}"
CPU_ONLY=0
if [[ "${FORCE_CUDA:-}" == "0" ]]; then
    CPU_ONLY=1
fi

STEP="start"
T0=$SECONDS
# The script's own stdout/stderr, kept on fds 3/4: when a step fails, `set -e` exits while that step's
# output is still redirected into its log, and the failure message must reach the terminal.
exec 3>&1 4>&2

on_exit() {
    local rc=$?
    if ((rc != 0)); then
        {
            echo
            if ((rc == 124 || rc == 137)); then
                echo "gpu_check: FAILED at step '$STEP': timed out (exit code $rc, after $((SECONDS - T0)) s in total)"
            else
                echo "gpu_check: FAILED at step '$STEP' (exit code $rc, after $((SECONDS - T0)) s in total)"
            fi
            if [[ -f "$OUTDIR/$STEP.log" ]]; then
                echo "---- last lines of $OUTDIR/$STEP.log ----"
                tail -n 30 "$OUTDIR/$STEP.log"
                echo "----"
            fi
            echo "gpu_check: everything produced so far is in $OUTDIR"
        } >&4
        echo "$STEP FAILED rc=$rc" >>"$OUTDIR/steps.txt"
        if [[ "$STEP" != "summary" && "$STEP" != "build" && "$STEP" != "gpu" ]]; then
            "$PYTHON" -m benchmarks.gpu_summary "$OUTDIR" >&4 2>&4 || true
        fi
    fi
}
trap on_exit EXIT

# run_step NAME FUNCTION: FUNCTION's output goes to OUTDIR/NAME.log. Not called from an `if`, so `set -e`
# stays in force inside FUNCTION and its first failing command ends the run (reported by on_exit).
run_step() {
    STEP="$1"
    local t=$SECONDS
    echo "== [$((SECONDS - T0)) s] $STEP (log: $OUTDIR/$STEP.log)"
    "$2" >"$OUTDIR/$STEP.log" 2>&1
    echo "$STEP ok $((SECONDS - t))s" >>"$OUTDIR/steps.txt"
    local last
    last="$(tail -n 1 "$OUTDIR/$STEP.log")" || last=""
    echo "   ok in $((SECONDS - t)) s: $last"
}

step_gpu() {
    nvidia-smi | tee "$OUTDIR/nvidia-smi.txt"
    nvidia-smi -q >"$OUTDIR/nvidia-smi-q.txt"
    uname -a
    nvcc --version || echo "nvcc not on PATH (setup.py looks for the toolkit elsewhere too)"
    "$PYTHON" -m pip list 2>/dev/null | grep -i -E '^(torch|triton|numpy|pytest|ninja|setuptools|matplotlib|tqdm) ' || true
    "$PYTHON" - <<'EOF'
import sys
import torch
print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda})")
if not torch.cuda.is_available():
    sys.exit("torch sees no CUDA GPU")
for i in range(torch.cuda.device_count()):
    print(f"cuda:{i} {torch.cuda.get_device_name(i)} sm_{''.join(map(str, torch.cuda.get_device_capability(i)))}")
EOF
}

gpu_arch() {
    # The local GPU's compute capability, e.g. "9.0" for an H100/H200 (first GPU; all of one kind here).
    local cap
    cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | sed -n '1p' | tr -d '[:space:]')" || cap=""
    if [[ ! "$cap" =~ ^[0-9]+\.[0-9]+$ ]]; then
        cap="$("$PYTHON" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability(0))')" || cap=""
    fi
    [[ "$cap" =~ ^[0-9]+\.[0-9]+$ ]] || { echo "could not read the GPU's compute capability (got '$cap')" >&2; return 1; }
    echo "$cap"
}

step_build() {
    local force=1
    if ((CPU_ONLY)); then
        force=0
        echo "FORCE_CUDA=0: building the CPU kernels only (no arch query)"
    else
        TORCH_CUDA_ARCH_LIST="$(gpu_arch)"
        export TORCH_CUDA_ARCH_LIST
        echo "TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST (this GPU only)"
    fi
    echo "MAX_JOBS=$MAX_JOBS"
    FORCE_CUDA="$force" timeout -k 20 420 "$PYTHON" setup.py build_ext --inplace
    WANT_CUDA="$((1 - CPU_ONLY))" "$PYTHON" - "$OUTDIR/build_info.json" <<'EOF'
import json, os, sys
import tensorops
info = tensorops.build_info()
with open(sys.argv[1], "w") as f:
    json.dump(info, f, indent=1)
print("build_info:", json.dumps(info))
if not tensorops.is_compiled():
    sys.exit(f"the extension did not load: {info.get('error')}")
if os.environ["WANT_CUDA"] == "1" and not info.get("cuda"):
    sys.exit("the extension loaded but has no CUDA kernels")
EOF
}

step_tests() {
    timeout -k 20 300 "$PYTHON" -m pytest tests -k cuda -q -rfEs -p no:cacheprovider --junitxml="$OUTDIR/junit.xml"
}

find_sanitizer() {
    if [[ -n "${COMPUTE_SANITIZER:-}" ]]; then
        echo "$COMPUTE_SANITIZER"
        return 0
    fi
    if command -v compute-sanitizer >/dev/null; then
        command -v compute-sanitizer
        return 0
    fi
    local home c
    home="$("$PYTHON" -c 'import setup; print(setup.find_cuda_home()[0] or "")' | tail -n 1)"
    for c in ${home:+"$home/bin/compute-sanitizer" "$home/compute-sanitizer/compute-sanitizer"} \
        /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
        /usr/local/cuda-*/bin/compute-sanitizer; do
        if [[ -x "$c" ]]; then
            echo "$c"
            return 0
        fi
    done
    echo "compute-sanitizer not found (set COMPUTE_SANITIZER, or put it on PATH)" >&2
    return 1
}

sanitize() {
    local san version
    san="$(find_sanitizer)"
    version="$("$san" --version | tail -n 1)" || version="version unknown"
    echo "$san --tool $1 ($version)"
    # No caching allocator: each tensor is its own allocation, so an access just past a tensor faults.
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 timeout -k 20 300 "$san" --tool "$1" --error-exitcode 1 --print-limit 50 \
        "$PYTHON" -m benchmarks.sanitize_ops --device cuda
}

step_memcheck() { sanitize memcheck; }
step_racecheck() { sanitize racecheck; }

step_bench() {
    timeout -k 20 300 "$PYTHON" -m benchmarks --quick --device cuda --out "$OUTDIR" --no-progress
}

step_summary() {
    "$PYTHON" -m benchmarks.gpu_summary "$OUTDIR"
}

echo "gpu_check: repo $REPO, output $OUTDIR, steps: $STEPS"
: >"$OUTDIR/steps.txt"
for s in $STEPS; do
    run_step "$s" "step_$s"
done
if [[ " $STEPS " == *" summary "* ]]; then
    cat "$OUTDIR/summary.txt"
fi
STEP="done"
echo "gpu_check: all steps passed in $((SECONDS - T0)) s; results in $OUTDIR"
if ((SECONDS - T0 > 360)); then
    echo "gpu_check: warning: over the 6-minute budget; per-step times are in $OUTDIR/steps.txt"
fi
