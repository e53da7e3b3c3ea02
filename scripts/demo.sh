#!/usr/bin/env bash
# The main job: installs what is missing, builds lazyjit, and trains the reference's
# beautiful_mnist CNN on Fashion-MNIST on the CPU JIT. It lists the fused kernels of the first
# training step (forward, backward and Adam update) as they run, then prints loss, test accuracy
# and ms/step.
#   scripts/demo.sh [STEPS]   training steps of batch 512 (default 100; 350 reaches ~88-89%)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-100}
bash scripts/setup-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target fashion_mnist
./build/examples/fashion_mnist --kernels --steps "$steps" --eval-every 50
