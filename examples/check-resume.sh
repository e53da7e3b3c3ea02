#!/bin/sh
# A run stopped and resumed ends with the parameters of a run that never stopped: runs
# fashion_mnist with the given options three times (through, stopped at step 3 with --save, then
# --resume) and compares the parameter checksums the runs print.
#   check-resume.sh BINARY OPTION...
set -eu
bin=$1
shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
through=$("$bin" "$@" --quiet | sed -n 's/^parameter checksum: //p')
"$bin" "$@" --quiet --stop-at 3 --save "$dir" >/dev/null
resumed=$("$bin" "$@" --quiet --resume "$dir" | sed -n 's/^parameter checksum: //p')
echo "uninterrupted: $through; stopped at 3 and resumed: $resumed"
[ -n "$through" ] && [ "$through" = "$resumed" ] && echo "resume: bit-identical"
