#!/usr/bin/env bash
# Runs the libFuzzer targets of fuzz/ (script, ast, symbolic, files) with ASan + UBSan.
#   scripts/fuzz.sh [SECONDS] [TARGET...]   each target for SECONDS (default 60), all by default
# Builds the `fuzz` CMake preset (clang-19) in build-fuzz/. New corpus entries go to
# build-fuzz/corpus/<target>/ (the seeds in fuzz/corpus/<target>/ are only read), crashes to
# build-fuzz/artifacts/<target>/, and each target's output to build-fuzz/logs/<target>.log.
# Exits 1 when a target finds a crash, a leak or a sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."

secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(script ast symbolic files)

if ! command -v clang++-19 >/dev/null; then
  echo "fuzz.sh: clang++-19 is not installed (scripts/setup-deps.sh installs clang-19 and libclang-rt-19-dev)" >&2
  exit 2
fi
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
cmake --preset fuzz >/dev/null
cmake --build build-fuzz --target lazyjit-fuzzers

status=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t" build-fuzz/logs
  log="build-fuzz/logs/$t.log"
  echo "== fuzz-$t for ${secs}s"
  # stdout (the tool's values) is closed; stderr (user-error messages, reports) goes to the log
  if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "./build-fuzz/fuzz/fuzz-$t" "build-fuzz/corpus/$t" "fuzz/corpus/$t" \
       -max_total_time="$secs" -rss_limit_mb=4096 -timeout=60 -close_fd_mask=1 \
       -artifact_prefix="build-fuzz/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^Done" "$log" | tr '\n' ' '
    echo
  else
    echo "fuzz-$t FAILED; the end of $log:"
    tail -40 "$log"
    status=1
  fi
done
exit $status
