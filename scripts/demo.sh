#!/usr/bin/env bash
# The main job: installs what is missing, builds lazyjit, and runs the MLP demo, which prints the
# fused kernels of an MLP forward pass, the time it took on the CPU JIT, and its result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target mlp
./build/examples/mlp
