#!/usr/bin/env bash
# Packs the GPU test suite into a self-contained folder for a GPU host that has an NVIDIA driver
# but no LLVM and no build tools: builds the static-LLVM Release configuration, strips the GPU
# test, tool and bench binaries, compresses them (xz: each binary carries all of LLVM, ~50 MB,
# ~13 MB compressed, and the bundle must stay under 64 MiB to travel to a device machine), and
# copies them with the shared libraries a bare host may lack (spdlog 1.10, fmt 9, zlib, zstd)
# into the bundle, next to run-gpu-tests.sh, which unpacks them and runs the suite there.
#
#   scripts/pack-gpu-bundle.sh [--build-dir DIR] [--out DIR] [--no-build]
#     --build-dir DIR   the static build (default build-static)
#     --out DIR         the bundle (default .device/bundle; .device/ is git-ignored)
#     --no-build        pack what DIR already has
#
# On the GPU host:  <bundle>/run-gpu-tests.sh [--bench]
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-static
out=.device/bundle
do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    *) echo "pack-gpu-bundle.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

if [ "$do_build" = 1 ]; then
  # The bench's optional peers (Eigen with -march=native, OpenBLAS) are left out: the bundle must
  # not depend on this machine's CPU features or on libopenblas.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAZYJIT_STATIC_LLVM=ON \
        -DLAZYJIT_EIGEN_DIR=LAZYJIT_EIGEN_DIR-NOTFOUND -DLAZYJIT_OPENBLAS_LIB=LAZYJIT_OPENBLAS_LIB-NOTFOUND \
        >/dev/null
  targets=(lazyjit-unittests lazyjit-dump lazyjit-cache-probe)
  if ninja -C "$build" -t targets all 2>/dev/null | grep -q '^lazyjit-bench:'; then targets+=(lazyjit-bench); fi
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
fi

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/scripts"

# The GPU suite: RuntimeTests (CUDA device and differential tests), CodeGenTests (NVPTX lowering,
# ptxas, emulator), lazyjit-dump (--check on the GPU) and lazyjit-bench if it is built. The other
# unit tests do not touch the GPU and read files of the source tree, so they stay here.
bins=()
for f in "$build"/unittests/Runtime/RuntimeTests "$build"/unittests/CodeGen/CodeGenTests \
         "$build"/tools/lazyjit-dump/lazyjit-dump "$build"/bench/lazyjit-bench; do
  [ -x "$f" ] && [ -f "$f" ] && bins+=("$f")
done
[ ${#bins[@]} -gt 0 ] || { echo "pack-gpu-bundle.sh: nothing built in $build" >&2; exit 1; }
for f in "${bins[@]}"; do
  cp "$f" "$out/bin/"
  strip --strip-all "$out/bin/$(basename "$f")"
done
[ -x "$out/bin/lazyjit-bench" ] || echo "pack-gpu-bundle.sh: lazyjit-bench is not built; packing without it"

for lib in libspdlog.so.1.10 libfmt.so.9; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" "$out/lib/"
done

# Every library the binaries load must be in the bundle or be a base system library; LLVM must
# not be among them (it is linked statically).
missing=0
for f in "$out"/bin/*; do
  while read -r name _ path _; do
    case "$name" in
      libLLVM*) echo "pack-gpu-bundle.sh: $f links $name dynamically" >&2; missing=1 ;;
      libspdlog.so.1.10|libfmt.so.9) ;;
      linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libpthread.so.*|libdl.so.*|librt.so.*) ;;
      libz.so.*|libzstd.so.*|libtinfo.so.*)
        [ -f "$out/lib/$name" ] || cp -L "$path" "$out/lib/" ;;
      *) echo "pack-gpu-bundle.sh: $(basename "$f") needs $name ($path), which is not packed" >&2; missing=1 ;;
    esac
  done < <(LD_LIBRARY_PATH="$out/lib" ldd "$f" | grep '=>' || true)
done
[ "$missing" = 0 ] || exit 1
for f in "$out"/bin/*; do xz -T0 -6 "$f"; done

# A small script for the tool's --check run on the GPU (every kernel against the interpreter).
cat > "$out/scripts/softmax-layernorm.lj" <<'EOF'
a = Tensor.randn(512, 768)
b = a.softmax()
c = a.layernorm()
d = a.sum(axis=0)
e = Tensor.randn(1, 256) @ Tensor.randn(256, 256)
out b, c, d, e
EOF

cat > "$out/run-gpu-tests.sh" <<'EOF'
#!/usr/bin/env bash
# Runs lazyjit's GPU test suite from this bundle: the CUDA device and differential tests, the
# NVPTX code generation tests, and lazyjit-dump --check of a few programs on the GPU. Tests that
# need things this host lacks (no GPU, no ptxas) say so and skip. Exit status: 0 all passed, 1 some
# failed, 3 no usable GPU (nothing GPU-specific ran).
#   run-gpu-tests.sh [--bench]    --bench also runs lazyjit-bench (if packed)
set -u
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bench=0
[ "${1:-}" = "--bench" ] && bench=1

# unpack the binaries (xz, else Python's lzma) outside the bundle, so it stays small
bin="${TMPDIR:-/tmp}/lazyjit-gpu-bundle-$(id -u)"
mkdir -p "$bin"
export LAZYJIT_CACHE="${LAZYJIT_CACHE:-$bin/kernel-cache}"
for z in "$here"/bin/*.xz; do
  [ -e "$z" ] || continue
  b="$bin/$(basename "${z%.xz}")"
  [ -x "$b" ] && [ "$b" -nt "$z" ] && continue
  if command -v xz >/dev/null; then xz -dc "$z" > "$b.tmp"
  elif command -v python3 >/dev/null; then python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$z" "$b.tmp"
  else echo "run-gpu-tests.sh: need xz or python3 to unpack $z" >&2; exit 2; fi
  chmod +x "$b.tmp" && mv "$b.tmp" "$b"
done

command -v nvidia-smi >/dev/null && nvidia-smi -L
# Without a usable GPU the unit tests skip their GPU cases (saying why); this run then fails.
gpu=1
if ! "$bin/lazyjit-dump" "$here/scripts/softmax-layernorm.lj" --device=CUDA --emit=schedule -o /dev/null; then
  echo "== no usable CUDA device: the GPU tests below skip, and this run fails"
  gpu=0
fi
failed=()
run() {
  local name="$1"; shift
  echo "== $name: $*"
  local t0=$SECONDS
  if "$@"; then echo "== $name: passed ($((SECONDS - t0)) s)"; else echo "== $name: FAILED ($((SECONDS - t0)) s)"; failed+=("$name"); fi
}

run cuda-device    "$bin/RuntimeTests" --test-case='CUDA:*' --no-intro
run cuda-diff      "$bin/RuntimeTests" --test-case='CUDA differential*' --no-intro
run cpu-diff       "$bin/RuntimeTests" --test-case='Differential*' --no-intro
run nvptx-codegen  "$bin/CodeGenTests" --test-case='NVPTX*' --no-intro
[ "$gpu" = 1 ] && run dump-check     "$bin/lazyjit-dump" "$here/scripts/softmax-layernorm.lj" --device=CUDA --check --emit=values -o /dev/null
[ "$gpu" = 1 ] && run dump-check-opt5 "$bin/lazyjit-dump" "$here/scripts/softmax-layernorm.lj" --device=CUDA --opt=5 --check --emit=values -o /dev/null
[ "$gpu" = 1 ] && run dump-ptx       "$bin/lazyjit-dump" "$here/scripts/softmax-layernorm.lj" --device=CUDA --emit=ptx -o "$bin/softmax-layernorm.ptx"
if [ "$bench" = 1 ] && [ -x "$bin/lazyjit-bench" ]; then
  run bench "$bin/lazyjit-bench"
fi

if [ "$gpu" = 0 ]; then echo "== no GPU: nothing GPU-specific ran${failed:+ (and failed: ${failed[*]})}"; exit 3; fi
if [ ${#failed[@]} -eq 0 ]; then echo "== all passed"; exit 0; fi
echo "== failed: ${failed[*]}"
exit 1
EOF
chmod +x "$out/run-gpu-tests.sh"

echo "pack-gpu-bundle.sh: $(du -sh "$out" | cut -f1) in $out:"
ls -l "$out/bin" "$out/lib" | sed 's/^/  /'
size=$(du -sb "$out" | cut -f1)
if [ "$size" -gt $((64 << 20)) ]; then
  echo "pack-gpu-bundle.sh: warning: the bundle is $size bytes, more than the 64 MiB a device run can carry" >&2
fi
