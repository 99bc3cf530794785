#!/usr/bin/env bash
# One call on a freshly started GPU machine turns tensorops' GPU readiness into measured facts, within one global
# deadline (default 450 s):
#
#   gpu        nvidia-smi and the software versions
#   build      python setup.py build_ext --inplace for this GPU's arch only, MAX_JOBS = cores (no pip, nothing
#              downloaded; in place, since the check runs on a copy of the repository), then the CUDA kernels load
#   tests      python -m pytest tests -m cuda (every GPU test; no -x)  ->  OUTDIR/junit.xml
#   bench      python -m benchmarks --quick --device cuda --no-compile (with the device's copy bandwidth; no
#              torch.compile column: its cold compiles alone would spend the step's budget)  ->
#              OUTDIR/bench_cuda_quick.json, rewritten after every row, so a bench killed at its budget keeps the
#              rows it finished (meta.partial says so); then python -m benchmarks.augment_cuda (the augment policies on
#              the device vs torchvision v2 there, 60 s at most) -> OUTDIR/bench_augment_cuda.json
#   memcheck, racecheck
#              compute-sanitizer over benchmarks/sanitizers/sanitize_ops.py (every kernel), when the sanitizer works on this
#              machine (else recorded as unavailable). Each has a fixed share of the deadline (SHARE_PCT: 15% and
#              10%), reserved from the start; sanitize_ops stops starting ops when its share runs out, and the step
#              is then recorded as partial (the ops not run named), or as skipped, with the reason, when too little
#              of its share is left to start. Neither counts as a failure: the sanitizers never make a correct build
#              miss the deadline.
#
# Every step runs, even when an earlier one failed, and each gets at most what is left of the deadline (less what
# the later steps need at least, or their fixed share); a step over its time is killed. After every step
# OUTDIR/summary.json and OUTDIR/summary.txt are rewritten (python -m benchmarks.gpu_summary), so a kill from outside
# still leaves them; SIGTERM/SIGINT stop the running step, record it as killed and rewrite them once more.
#
#   --dry-run   for a machine without a GPU: uses the installed build (no compile), collects the `-m cuda` tests
#               (counts into summary.json) instead of running them, skips the benchmark and the sanitizer runs
#               (but looks for the sanitizer), and exits 0 unless the plumbing itself broke.
#
# Exit code: 0 when every step that ran passed (steps skipped for the deadline count as passed only in --dry-run, or
# when they are sanitizer steps; unavailable tools and partial sanitizer runs count as passed), 1 otherwise, 2 for a
# usage error, 143/130 when killed.
# Environment: PYTHON (default python3), MAX_JOBS (default: nproc), COMPUTE_SANITIZER (path to the binary),
# GPU_CHECK_DEADLINE (seconds, default 450; --deadline overrides).
set -uo pipefail

ALL_STEPS="gpu build tests bench memcheck racecheck"

usage() {
    cat <<EOF
usage: $(basename "$0") [--dry-run] [--deadline SECONDS] [--steps STEP,STEP,...] OUTDIR

Builds tensorops for this machine's GPU, runs the CUDA tests (-m cuda), the quick CUDA benchmark and
compute-sanitizer (memcheck, racecheck), all within one deadline, and writes logs, junit XML, JSON and
summary.json / summary.txt into OUTDIR. Steps (default: all, in this order): ${ALL_STEPS// /,}
EOF
}

die_usage() {
    echo "error: $1" >&2
    usage >&2
    exit 2
}

STEPS="$ALL_STEPS"
OUTDIR=""
DRY_RUN=0
DEADLINE="${GPU_CHECK_DEADLINE:-450}"
while (($# > 0)); do
    case "$1" in
        --deadline=* | --steps=*)  # --opt=value is --opt value
            set -- "${1%%=*}" "${1#*=}" "${@:2}"
            continue
            ;;
        --deadline | --steps)
            (($# >= 2)) || die_usage "$1 needs a value"
            if [[ "$1" == --deadline ]]; then DEADLINE="$2"; else STEPS="${2//,/ }"; fi
            shift 2
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        --dry-run)
            DRY_RUN=1
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
[[ "$DEADLINE" =~ ^[0-9]+$ ]] && ((DEADLINE > 0)) || die_usage "--deadline must be a positive number of seconds, got '$DEADLINE'"
for s in $STEPS; do
    [[ " $ALL_STEPS " == *" $s "* ]] || die_usage "unknown step '$s' (steps: ${ALL_STEPS// /,})"
done

PYTHON="${PYTHON:-python3}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"  # benchmarks/gpu/ -> the checkout
mkdir -p "$OUTDIR" || exit 1
OUTDIR="$(cd "$OUTDIR" && pwd)"
cd "$REPO" || exit 1
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export MAX_JOBS="${MAX_JOBS:-$(nproc)}"
export GPU_CHECK_OUTDIR="$OUTDIR"

T0=$SECONDS
END=$((T0 + DEADLINE))
STEPS_FILE="$OUTDIR/steps.tsv"  # name <TAB> status <TAB> seconds <TAB> note, one line per finished step
: >"$STEPS_FILE"
rm -f "$OUTDIR/summary.json" "$OUTDIR/summary.txt"

# At least this many seconds for a step to be worth starting, and at most this many for it.
declare -A MIN_S=([gpu]=3 [build]=20 [tests]=20 [bench]=15 [memcheck]=15 [racecheck]=15)
if [[ -n "${GPU_CHECK_MIN_S:-}" ]]; then  # the plumbing tests use short deadlines: one minimum for every step
    for s in "${!MIN_S[@]}"; do MIN_S[$s]=$GPU_CHECK_MIN_S; done
fi
declare -A MAX_S=([gpu]=30 [build]=240 [tests]=200 [bench]=150 [memcheck]=120 [racecheck]=120)
# The sanitizer steps' fixed shares of the deadline (percent): reserved from the start (earlier steps leave them),
# and the most each gets.
declare -A SHARE_PCT=([memcheck]=15 [racecheck]=10)
SANITIZER_STEPS=" memcheck racecheck "

reserve() {  # reserve STEP: the seconds the steps before STEP leave for it
    local s="$1"
    if [[ -n "${SHARE_PCT[$s]:-}" ]]; then
        local share=$((DEADLINE * ${SHARE_PCT[$s]} / 100))
        ((share > ${MIN_S[$s]})) && echo "$share" || echo "${MIN_S[$s]}"
    else
        echo "${MIN_S[$s]}"
    fi
}

CURRENT=""
CHILD=""
CHILD_T=0

summarize() {
    # Rewrites summary.json and summary.txt from what OUTDIR holds; never fails the script.
    local extra=()
    ((DRY_RUN)) && extra=(--dry-run)
    "$PYTHON" -m benchmarks.gpu_summary "$OUTDIR" --steps-file "$STEPS_FILE" --deadline "$DEADLINE" \
        --elapsed "$((SECONDS - T0))" "${extra[@]}" \
        >"$OUTDIR/summary.log" 2>&1 || true
    if [[ ! -s "$OUTDIR/summary.json" ]]; then  # the summarizer itself broke: a minimal summary from bash
        {
            printf '{"deadline_s": %s, "dry_run": %s, "summary_error": "see summary.log", "steps": [' "$DEADLINE" \
                "$( ((DRY_RUN)) && echo true || echo false)"
            local first=1 name status secs note
            while IFS=$'\t' read -r name status secs note; do
                ((first)) || printf ', '
                first=0
                printf '{"name": "%s", "status": "%s", "seconds": %s}' "$name" "$status" "${secs:-0}"
            done <"$STEPS_FILE"
            printf ']}\n'
        } >"$OUTDIR/summary.json"
    fi
}

record() {  # record NAME STATUS SECONDS NOTE
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >>"$STEPS_FILE"
    printf '   %s: %s in %s s%s\n' "$1" "$2" "$3" "${4:+ ($4)}"
}

on_signal() {
    local sig="$1"
    trap - TERM INT
    if [[ -n "$CHILD" ]]; then
        kill -TERM -- "-$CHILD" 2>/dev/null || kill -TERM "$CHILD" 2>/dev/null
        sleep 1
        kill -KILL -- "-$CHILD" 2>/dev/null || true
    fi
    [[ -n "$CURRENT" ]] && record "$CURRENT" killed "$((SECONDS - CHILD_T))" "SIG$sig from outside"
    summarize
    echo "gpu_check: killed (SIG$sig) during step '${CURRENT:-none}'; summary in $OUTDIR/summary.json" >&2
    [[ "$sig" == INT ]] && exit 130
    exit 143
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT

# run_step NAME: runs step_NAME in the background (its own process group, output in OUTDIR/NAME.log) and waits
# for it, killing it at its budget; records the status and rewrites the summary.
run_step() {
    local name="$1" later=0 after=0 s
    for s in $STEPS; do  # what the steps after this one need at least
        ((after)) && later=$((later + $(reserve "$s")))
        [[ "$s" == "$name" ]] && after=1
    done
    local left=$((END - SECONDS))
    local budget=$((left - later))
    ((budget > ${MAX_S[$name]})) && budget=${MAX_S[$name]}
    if [[ -n "${SHARE_PCT[$name]:-}" ]]; then  # a sanitizer: its fixed share at most
        local share=$((DEADLINE * ${SHARE_PCT[$name]} / 100))
        ((budget > share)) && budget=$share
    fi
    ((budget > left)) && budget=$left
    echo "== [$((SECONDS - T0)) s] $name (budget $budget s of $left s left; log: $OUTDIR/$name.log)"
    if ((budget < ${MIN_S[$name]})); then
        record "$name" skipped 0 "deadline: ${budget} s left for it, needs ${MIN_S[$name]} s"
        summarize
        return
    fi
    CURRENT="$name"
    CHILD_T=$SECONDS
    STEP_END=$((SECONDS + budget))  # the step's own end, for steps that stop themselves in time (sanitize)
    set -m  # the step gets its own process group, so a timeout or a signal stops everything it started
    "step_$name" >"$OUTDIR/$name.log" 2>&1 </dev/null &
    CHILD=$!
    set +m
    local timed_out=0
    while kill -0 "$CHILD" 2>/dev/null; do
        if ((SECONDS - CHILD_T >= budget)); then
            timed_out=1
            kill -TERM -- "-$CHILD" 2>/dev/null
            sleep 2
            kill -KILL -- "-$CHILD" 2>/dev/null
            break
        fi
        sleep 0.5
    done
    wait "$CHILD" 2>/dev/null
    local rc=$?
    local secs=$((SECONDS - CHILD_T)) status note=""
    CHILD=""
    CURRENT=""
    if ((timed_out)); then
        status=timeout
        note="killed at its budget of $budget s"
    elif ((rc == 0)); then
        status=ok
    elif ((rc == 3)); then
        status=unavailable
        note="$(tail -n 1 "$OUTDIR/$name.log")"
    elif ((rc == 4)); then
        status=skipped
        note="$(tail -n 1 "$OUTDIR/$name.log")"
    elif ((rc == 5)); then
        status=partial
        note="$(tail -n 1 "$OUTDIR/$name.log")"
    else
        status=failed
        note="exit code $rc"
    fi
    record "$name" "$status" "$secs" "$note"
    if [[ "$status" == failed || "$status" == timeout ]]; then
        echo "---- last lines of $OUTDIR/$name.log ----"
        tail -n 15 "$OUTDIR/$name.log"
        echo "----"
    fi
    summarize
}

step_gpu() {
    uname -a
    nvcc --version || echo "nvcc not on PATH (setup.py looks for the toolkit elsewhere too)"
    if ((DRY_RUN)); then
        echo "dry run: no GPU query"
    else
        nvidia-smi | tee "$OUTDIR/nvidia-smi.txt" || return 1
    fi
    "$PYTHON" - "$DRY_RUN" <<'EOF'
import sys
import torch
print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda})")
if sys.argv[1] != "1" and not torch.cuda.is_available():
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
        cap="$("$PYTHON" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability(0))' 2>/dev/null)" || cap=""
    fi
    [[ "$cap" =~ ^[0-9]+\.[0-9]+$ ]] || { echo "could not read the GPU's compute capability (got '$cap')" >&2; return 1; }
    echo "$cap"
}

check_build() {
    WANT_CUDA="$1" "$PYTHON" - "$OUTDIR/build_info.json" <<'EOF'
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

step_build() {
    if ((DRY_RUN)); then
        echo "dry run: the installed build, not compiled"
        check_build 0
        return
    fi
    local arch
    arch="$(gpu_arch)" || return 1
    echo "TORCH_CUDA_ARCH_LIST=$arch (this GPU only), MAX_JOBS=$MAX_JOBS"
    FORCE_CUDA=1 TORCH_CUDA_ARCH_LIST="$arch" "$PYTHON" setup.py build_ext --inplace || return 1
    check_build 1
}

step_tests() {
    # benchmarks.gpu_summary is also a pytest plugin: it writes OUTDIR/collected.json (the -m cuda counts) and
    # OUTDIR/test_progress.jsonl (each outcome as it comes: what a run stopped at the deadline leaves)
    rm -f "$OUTDIR/test_progress.jsonl" "$OUTDIR/junit.xml"
    if ((DRY_RUN)); then
        "$PYTHON" -m pytest tests -m cuda --collect-only -q -p no:cacheprovider -p benchmarks.gpu_summary
    else
        "$PYTHON" -m pytest tests -m cuda -q -rfEs -p no:cacheprovider -p benchmarks.gpu_summary \
            --junitxml="$OUTDIR/junit.xml"
    fi
}

step_bench() {
    if ((DRY_RUN)); then
        echo "dry run: no GPU benchmark"
        return 4
    fi
    "$PYTHON" -m benchmarks --quick --device cuda --no-compile --out "$OUTDIR" --no-progress
    local rc=$?
    # tensorops.augment's policies on the device against torchvision v2 there, each checked against the CPU
    # kernels (OUTDIR/bench_augment_cuda.json); at most 60 s, and never what fails the step
    timeout 60 "$PYTHON" -m benchmarks.augment_cuda --device cuda --out "$OUTDIR" ||
        echo "benchmarks.augment_cuda did not finish (its rows are missing from bench_augment_cuda.json)"
    return $rc
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
    local c
    for c in ${CUDA_HOME:+"$CUDA_HOME/bin/compute-sanitizer"} /usr/local/cuda/bin/compute-sanitizer \
        /usr/local/cuda/compute-sanitizer/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
        if [[ -x "$c" ]]; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# Step exit codes: 0 ok, 3 unavailable, 4 skipped (dry run, deadline), 5 partial (sanitize_ops stopped at its time
# limit), anything else failed.
# Exit code 3 = unavailable (no sanitizer, or it refuses this device); the summary records that, not a failure.
sanitize() {
    local tool="$1" san version
    san="$(find_sanitizer)" || { echo "unavailable: compute-sanitizer not found (set COMPUTE_SANITIZER)"; return 3; }
    version="$("$san" --version 2>&1 | tail -n 1)" || { echo "unavailable: $san --version failed"; return 3; }
    echo "$san --tool $tool ($version)"
    if ((DRY_RUN)); then
        echo "dry run: found, not run"
        return 0
    fi
    # Does it work on this machine at all? (Some refuse the device.) A trivial CUDA call under the tool.
    if ! "$san" --tool "$tool" --error-exitcode 1 "$PYTHON" -c 'import torch; torch.ones(1, device="cuda").sum().item()' \
        >"$OUTDIR/$tool.probe.log" 2>&1; then
        tail -n 5 "$OUTDIR/$tool.probe.log"
        echo "unavailable: compute-sanitizer --tool $tool does not run on this machine (see $tool.probe.log)"
        return 3
    fi
    # What is left of the step's share after the probe, less 15 s for the last op and the tool's exit: sanitize_ops
    # starts no op after that (exit 5, the ops not run named), so the step ends inside its share.
    local stop=$((STEP_END - SECONDS - 15))
    if ((stop < 5)); then
        echo "skipped: deadline: ${stop} s of the ${tool} share left after the probe"
        return 4
    fi
    # No caching allocator: each tensor is its own allocation, so an access just past a tensor faults.
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 "$san" --tool "$tool" --error-exitcode 1 --print-limit 50 \
        "$PYTHON" -m benchmarks.sanitize_ops --device cuda --stop-after "$stop"
}

step_memcheck() { sanitize memcheck; }
step_racecheck() { sanitize racecheck; }

echo "gpu_check: repo $REPO, output $OUTDIR, steps: $STEPS, deadline $DEADLINE s$( ((DRY_RUN)) && echo ', DRY RUN')"
summarize
for s in $STEPS; do
    run_step "$s"
done
cat "$OUTDIR/summary.txt" 2>/dev/null
bad="$(awk -F'\t' -v dry="$DRY_RUN" -v san="$SANITIZER_STEPS" '$2 == "failed" || $2 == "timeout" || $2 == "killed" ||
    (dry == 0 && $2 == "skipped" && index(san, " " $1 " ") == 0) { print $1 }' "$STEPS_FILE" | tr '\n' ' ')"
echo "gpu_check: done in $((SECONDS - T0)) s (deadline $DEADLINE s); results in $OUTDIR"
if [[ -n "$bad" ]]; then
    echo "gpu_check: steps not passed: $bad" >&2
    exit 1
fi
exit 0
