#!/usr/bin/env python3
# Runs a command and fails unless it exits with the given code (lit's `not` only checks for a
# nonzero one). The command's output passes through unchanged.
import subprocess
import sys

want = int(sys.argv[1])
rc = subprocess.call(sys.argv[2:])
if rc != want:
    print(f"expect-exit: expected exit code {want}, got {rc}", file=sys.stderr)
    sys.exit(1)
