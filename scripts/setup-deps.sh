#!/usr/bin/env bash
# Installs the Debian 12 packages lazyjit needs, only those that are missing (idempotent).
#   scripts/setup-deps.sh           build + test dependencies
#   scripts/setup-deps.sh --bench   also the bench peers (Eigen, OpenBLAS, libtorch)
set -euo pipefail

pkgs=(cmake ninja-build ccache g++ lld python3
      llvm-19-dev llvm-19-tools libspdlog-dev libfmt-dev doctest-dev libcli11-dev libzstd-dev
      zlib1g-dev nlohmann-json3-dev graphviz dataset-fashion-mnist clang-19 libclang-rt-19-dev
      python3-onnx python3-numpy python3-torch python3-torchvision)
for arg in "$@"; do
  case "$arg" in
    --bench) pkgs+=(libeigen3-dev libopenblas-dev libtorch-dev) ;;
    *) echo "setup-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps: all ${#pkgs[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
