#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test through CTest.
#   scripts/test.sh                  sanitizer build of the unit tests, then the full build + all tests
#   scripts/test.sh --no-sanitize    only the full build + all tests
#   scripts/test.sh --sanitize       only the ASan+UBSan build of the unit tests
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
  echo "== sanitizer build (ASan + UBSan) of the unit tests"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DLAZYJIT_SANITIZE=ON \
        -DLAZYJIT_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j "$jobs" --target lazyjit-unittests
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan -L unit --output-on-failure -j "$jobs"
fi

if [ "$mode" != sanitize ]; then
  echo "== full build and every test"
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j "$jobs"
  ctest --test-dir build --output-on-failure -j "$jobs"
fi
