#!/usr/bin/env bash
# Installs ONNX Runtime for lazyjit-bench's W12 rows (a bench-only peer, never a build or test
# dependency): the npm package onnxruntime-node, whose prebuilt CPU libonnxruntime.so the bench
# drives through bench/ort_peer.js. Idempotent.
#   scripts/setup-bench-onnxruntime.sh [BUILD_DIR]     (default: build; installs into BUILD_DIR/bench-ort)
# --ignore-scripts skips the package's install script, which would fetch GPU binaries; the CPU
# library ships in the package itself.
set -euo pipefail

build="${1:-build}"
dir="$build/bench-ort"
version="${ORT_NODE_VERSION:-1.31.1}"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup-bench-onnxruntime: node and npm are needed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
mkdir -p "$dir"
if [ -f "$dir/node_modules/onnxruntime-node/package.json" ] &&
   (cd "$dir" && node -e "process.exit(require('onnxruntime-node/package.json').version === '$version' ? 0 : 1)"); then
  echo "setup-bench-onnxruntime: onnxruntime-node $version already in $dir"
  exit 0
fi
[ -f "$dir/package.json" ] || echo '{"name": "lazyjit-bench-ort", "private": true}' > "$dir/package.json"
(cd "$dir" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$version")
(cd "$dir" && node -e "const ort = require('onnxruntime-node'); console.log('setup-bench-onnxruntime: onnxruntime-node', require('onnxruntime-node/package.json').version, 'in', process.cwd())")
