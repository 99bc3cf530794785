#!/usr/bin/env bash
# The CPU kernels under AddressSanitizer + UndefinedBehaviorSanitizer: tensorops built from a copy of the tree
# (FORCE_CUDA=0, the build in place untouched) with -fsanitize=address,undefined -fno-sanitize-recover=all
# -fno-omit-frame-pointer, then the tests that reach every CPU kernel path, with the sanitizer runtime preloaded
# (python itself is not instrumented, and ASan must be the first library loaded). Any report fails the run.
#
#   bash .ci/asan_cpu.sh [PYTHON]      (default: python3 on PATH, e.g. the CI venv's; it needs torch and pytest)
#
# Flags reach the extension through CFLAGS/LDFLAGS, which setuptools puts into every compile and link command
# (torch's ninja build included). They come before setup.py's own cxx flags, so setup.py's -O3 would win over an
# -O1 here: DEBUG=1 makes setup.py's flags -O0 -g instead, the fastest to build on a 2-core machine and the most
# precise reports. (With a TENSOROPS_EXTRA_CFLAGS hook in setup.py this could be -O1.)
# Environment: ASAN_TESTS (the pytest selection, default below), ASAN_PYTEST_ARGS (extra pytest arguments),
# MAX_JOBS (default: nproc), ASAN_DIR (the copy and its logs, default .ci/asan).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY="${1:-python3}"
DIR="${ASAN_DIR:-$ROOT/.ci/asan}"
START=$(date +%s)
say() { printf '[asan %4ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }

# Every CPU kernel path: each op family's test file, the ISA builds (AVX-512, AVX2, baseline loops), the tiny-input
# routes and the lean C++ entries, the index-width helpers, the bad-input catalogue (the checks in csrc/host),
# concurrency (threads sharing the parallel policy). torch.compile tests are left out (minutes of Inductor on
# uninstrumented code, and they call the same kernels as the eager tests), and the large hypothesis runs.
DEFAULT_TESTS="tests/test_clamp.py tests/test_normalize.py tests/test_cat_split.py tests/test_crop_mirror_normalize.py
  tests/test_resized_crop_mirror_normalize.py
  tests/test_foreach_clamp.py tests/test_stack_chunk.py tests/test_cpu_isa.py tests/test_tiny_routes.py
  tests/test_index_width.py tests/test_fast_divide.py tests/test_copy_units.py tests/test_bad_input.py
  tests/test_concurrency.py"
TESTS="${ASAN_TESTS:-$DEFAULT_TESTS}"
DESELECT="${ASAN_DESELECT:-compile or opcheck or hypothesis or property}"

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
ASAN_LIB="$(g++ -print-file-name=libasan.so)"
UBSAN_LIB="$(g++ -print-file-name=libubsan.so)"
for lib in "$ASAN_LIB" "$UBSAN_LIB"; do
  [[ "$lib" == /* && -e "$lib" ]] || { echo "asan_cpu: the sanitizer runtime is not installed ($lib)" >&2; exit 2; }
done

say "copy of the tree in $DIR/src"
rm -rf "$DIR"
mkdir -p "$DIR/src"
tar -C "$ROOT" --exclude=./.venv --exclude='./.ci/torch-*' --exclude=./.ci/asan --exclude=./.ci/emu-cache --exclude=./build \
    --exclude='*.so' \
    --exclude=.git --exclude=.hypothesis --exclude=__pycache__ -cf - . | tar -C "$DIR/src" -xf -

say "build (FORCE_CUDA=0 DEBUG=1, $SAN)"
if ! (cd "$DIR/src" && FORCE_CUDA=0 DEBUG=1 MAX_JOBS="${MAX_JOBS:-$(nproc)}" CFLAGS="$SAN" LDFLAGS="$SAN" \
        "$PY" setup.py build_ext --inplace >"$DIR/build.log" 2>&1); then
  tail -n 60 "$DIR/build.log"
  echo "asan_cpu: the sanitizer build failed (full log: $DIR/build.log)" >&2
  exit 1
fi
if ! grep -q -- "-fsanitize=address,undefined" "$DIR/build.log"; then
  echo "asan_cpu: the sanitizer flags did not reach the compiler (see $DIR/build.log)" >&2
  exit 1
fi

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

say "tests: $(echo $TESTS | wc -w) files, deselected: $DESELECT"
set +e
# shellcheck disable=SC2086
(cd "$DIR/src" && LD_PRELOAD="$ASAN_LIB:$UBSAN_LIB" PYTHONPATH="$DIR/src" \
    "$PY" -m pytest -q -p no:cacheprovider -x -k "not ($DESELECT)" ${ASAN_PYTEST_ARGS:-} $TESTS) 2>&1 | tee "$DIR/tests.log"
rc=${PIPESTATUS[0]}
set -e
REPORT="ERROR: AddressSanitizer|runtime error:|SUMMARY: (Address|UndefinedBehavior)Sanitizer"
if grep -qE "$REPORT" "$DIR/tests.log"; then
  echo "asan_cpu: the sanitizers reported errors (see $DIR/tests.log):" >&2
  grep -E -A3 "ERROR: AddressSanitizer|runtime error:" "$DIR/tests.log" | head -n 40 >&2
  rc=1
fi
say "done (pytest exit $rc)"
exit "$rc"
