#!/usr/bin/env bash
# The CPU kernels under AddressSanitizer + UndefinedBehaviorSanitizer: tensorops' CPU extension built with
# -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer at -O1 (.ci/asan_build.py: setup.py's
# sources and flags, ninja, torch's headers precompiled once) into a copy of the tree, then the tests that reach
# every CPU kernel path, with the sanitizer runtime preloaded (python itself is not instrumented, and ASan must be
# the first library loaded). Any report fails the run, and so does a run of fewer than ASAN_MIN_PASSED tests.
#
#   bash .ci/asan_cpu.sh [PYTHON]      (default: python3 on PATH, e.g. the CI venv's; it needs torch and pytest)
#
# Environment: ASAN_TESTS (the test files, default below), ASAN_PYTEST_ARGS (extra pytest arguments),
# ASAN_MIN_PASSED (default 600), MAX_JOBS (default: nproc), ASAN_DIR (the copy and its logs, default .ci/asan).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY="${1:-python3}"
DIR="${ASAN_DIR:-$ROOT/.ci/asan}"
START=$(date +%s)
say() { printf '[asan %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }

# Every CPU kernel path: each op family's test file, the ISA builds (AVX-512, AVX2, baseline loops), the tiny-input
# routes and the lean C++ entries, the index-width helpers, the bad-input catalogue (the checks in csrc/host),
# concurrency (threads sharing the parallel policy). The torch.compile and opcheck tests are deselected by exact
# function name (.ci/asan_select.py: minutes of Inductor and tracing in uninstrumented code, calling the kernels the
# eager tests call); the tests proving the compiled kernel ran (test_compiled_kernel_ran) stay.
DEFAULT_TESTS="tests/test_clamp.py tests/test_normalize.py tests/test_cat_split.py tests/test_crop_mirror_normalize.py
  tests/test_resized_crop_mirror_normalize.py
  tests/test_foreach_clamp.py tests/test_stack_chunk.py tests/test_cpu_isa.py tests/test_tiny_routes.py
  tests/test_index_width.py tests/test_fast_divide.py tests/test_copy_units.py tests/test_bad_input.py
  tests/test_concurrency.py tests/test_decode.py::test_fuzzed_jpegs_never_crash
  tests/test_decode.py::test_bad_data_is_a_value_error_naming_the_sample
  tests/test_decode.py::test_decompression_bomb_header_is_refused_before_decoding tests/test_decode_damaged.py
  tests/test_augment_functional.py"
TESTS="${ASAN_TESTS:-$DEFAULT_TESTS}"
MIN_PASSED="${ASAN_MIN_PASSED:-600}"

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
ASAN_LIB="$(g++ -print-file-name=libasan.so)"
UBSAN_LIB="$(g++ -print-file-name=libubsan.so)"
for lib in "$ASAN_LIB" "$UBSAN_LIB"; do
  [[ "$lib" == /* && -e "$lib" ]] || { echo "asan_cpu: the sanitizer runtime is not installed ($lib)" >&2; exit 2; }
done

say "copy of the tree in $DIR/src"
rm -rf "$DIR"
mkdir -p "$DIR/src"
# the sources and tests, without build outputs, venvs or .ci (its venvs, clones and caches)
tar -C "$ROOT" --exclude=./.venv --exclude=./.ci --exclude=./build --exclude='*.so' \
    --exclude=.git --exclude=.hypothesis --exclude=__pycache__ -cf - . | tar -C "$DIR/src" -xf -

say "build (.ci/asan_build.py: -O1 $SAN, CPU kernels only)"
if ! MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$PY" "$ROOT/.ci/asan_build.py" "$DIR/src" "$DIR/build" >"$DIR/build.log" 2>&1; then
  tail -n 60 "$DIR/build.log"
  echo "asan_cpu: the sanitizer build failed (full log: $DIR/build.log)" >&2
  exit 1
fi
tail -n 1 "$DIR/build.log"

# detect_leaks=0: CPython and torch keep allocations for the process's life; alloc_dealloc_mismatch=0: torch's
# uninstrumented code frees what the instrumented allocator handed out (and back) through different operators.
ASAN_OPTIONS="detect_leaks=0:alloc_dealloc_mismatch=0:abort_on_error=1:print_summary=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export ASAN_OPTIONS
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:print_summary=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
say "the extension loads under the sanitizers"
(cd "$DIR/src" && LD_PRELOAD="$ASAN_LIB:$UBSAN_LIB" PYTHONPATH="$DIR/src" "$PY" -c '
import tensorops
info = tensorops.build_info()
assert tensorops.is_compiled(), info
print("build_info:", info)
')

say "tests: $(echo $TESTS | wc -w) files, torch.compile/opcheck tests deselected by name (.ci/asan_select.py)"
set +e
# shellcheck disable=SC2086
(cd "$DIR/src" && LD_PRELOAD="$ASAN_LIB:$UBSAN_LIB" PYTHONPATH="$DIR/src:$ROOT/.ci" \
    "$PY" -m pytest -q -p no:cacheprovider -p asan_select -x ${ASAN_PYTEST_ARGS:-} $TESTS) 2>&1 | tee "$DIR/tests.log"
rc=${PIPESTATUS[0]}
set -e
summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|deselected|errors?)\b.* in [0-9.]+s' "$DIR/tests.log" | tail -n 1 || true)
passed=$(sed -nE 's/^(.*[ =])?([0-9]+) passed.*/\2/p' <<<"$summary")
say "tests run: ${summary:-no pytest summary}"
if ((${passed:-0} < MIN_PASSED)); then
  echo "asan_cpu: only ${passed:-0} tests passed under the sanitizers (at least $MIN_PASSED expected)" >&2
  rc=1
fi
REPORT="ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer"
if grep -qE "$REPORT" "$DIR/tests.log"; then
  echo "asan_cpu: the sanitizers reported errors (see $DIR/tests.log):" >&2
  grep -E -A3 "ERROR: AddressSanitizer|runtime error:" "$DIR/tests.log" | head -n 40 >&2
  rc=1
fi
say "done (pytest exit $rc)"
exit "$rc"
