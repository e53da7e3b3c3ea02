#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test through CTest.
#   scripts/test.sh                  sanitizer build of the unit tests (+ short fuzz runs, and the
#                                    threads stress test under ThreadSanitizer), then the full
#                                    build + all tests
#   scripts/test.sh --no-sanitize    only the full build + all tests
#   scripts/test.sh --sanitize       only the ASan+UBSan build of the unit tests and fuzz targets,
#                                    and the ThreadSanitizer build of the threads stress test
set -euo pipefail
cd "$(dirname "$0")/.."

mode=all
for arg in "$@"; do
  case "$arg" in
    --sanitize) mode=sanitize ;;
    --no-sanitize) mode=main ;;
    *) echo "test.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

bash scripts/setup-deps.sh --bench
jobs=$(nproc)
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"

if [ "$mode" != main ]; then
  # the unit tests under ASan + UBSan with the CPU kernels' bounds checks on; with clang-19, the
  # same build (the `fuzz` preset) also runs every fuzz target for a short time
  export LAZYJIT_BOUNDS=1
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  if command -v clang++-19 >/dev/null; then
    echo "== sanitizer build (clang-19, ASan + UBSan, fuzz targets): unit tests and short fuzz runs"
    cmake --preset fuzz >/dev/null
    cmake --build build-fuzz -j "$jobs" --target lazyjit-unittests lazyjit-fuzzers
    # (the -ref entries repeat numeric suites at OPT=2: the full build runs them)
    ctest --test-dir build-fuzz -L unit -LE ref --output-on-failure -j "$jobs"
    ctest --test-dir build-fuzz -L fuzz --output-on-failure -j "$jobs"
  else
    echo "== sanitizer build (ASan + UBSan) of the unit tests (clang-19 missing: no fuzz targets)"
    cmake --preset asan >/dev/null
    cmake --build build-asan -j "$jobs" --target lazyjit-unittests
    ctest --test-dir build-asan -L unit -LE ref --output-on-failure -j "$jobs"
  fi
  unset LAZYJIT_BOUNDS ASAN_OPTIONS UBSAN_OPTIONS
  if command -v clang++-19 >/dev/null; then
    # the threads stress test under ThreadSanitizer (the `tsan` preset): only its executable is
    # built. LLVM is not instrumented; tools/tsan.supp lists races reported inside it, if any.
    echo "== thread sanitizer build (clang-19): the threads stress test"
    cmake --preset tsan >/dev/null
    cmake --build build-tsan -j "$jobs" --target ThreadsTests
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp" \
      ctest --test-dir build-tsan -L threads --output-on-failure
  fi
fi

if [ "$mode" != sanitize ]; then
  echo "== full build and every test"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$jobs"
  rc=0
  # (label onnx-models: every exported architecture at batch 1 and 8, run by hand; CI checks the
  # smaller ones through onnx-models-small)
  ctest --test-dir build --output-on-failure -j "$jobs" -LE onnx-models 2>&1 | tee build/ctest-summary.log || rc=$?
  # CTest lists skipped tests (no GPU, no ptxas) without their output: say why each was skipped
  grep -h '^SKIPPED: ' build/Testing/Temporary/LastTest.log | sort -u || true
  # and end the run with CTest's summary line, as the README says
  grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' build/ctest-summary.log | tail -1 || true
  exit "$rc"
fi
