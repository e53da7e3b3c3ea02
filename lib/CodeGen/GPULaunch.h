// How a kernel's thread axes become a CUDA launch: the global axes become the grid (blocks), the
// local and group-reduce axes the block (threads). Both the NVPTX lowering (which reads the
// indices from ctaid/tid) and describeKernel (which tells the runtime the launch dimensions) use
// this one mapping, so they cannot disagree.
//
// The axes of one kind are grouped as the reference's get_grouped_dims does: with up to 3 axes each
// gets a hardware dimension; with more, the first two keep theirs and the rest are merged into
// the third (and split back with `%` and `//`). The LAST group goes on `.x`, so the fastest-
// varying axis is on threadIdx.x / blockIdx.x. A grid whose y or z would exceed its limit is
// merged entirely into x instead.
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

#include <cstdint>
#include <vector>

namespace lazyjit {

/// One hardware dimension: the kernel axes merged into it (outermost first) and their product.
struct GPUDim {
  std::vector<int> axes;
  SInt size;
};

struct GPULaunch {
  std::vector<GPUDim> grid;  ///< [x, y, z], as many as used (none: a single block)
  std::vector<GPUDim> block; ///< [x, y, z]; the local axes, then the group-reduce axes
  int64_t threads = 1;       ///< threads per block
  int64_t sharedBytes = 0;   ///< static shared memory of the group reduce
};

/// CUDA's limits (also in KernelOptions for the heuristics).
inline constexpr int64_t kMaxThreadsPerBlock = 1024;
inline constexpr int64_t kMaxStaticSharedBytes = 48 * 1024;

/// GPU row kernels (OPT=5) run a block per row (per output element when the kernel has a reduce
/// outside its EXPANDs). The row axes (ints: the scheduler fuses only rows of a known length) are
/// flattened and their elements dealt round-robin to the block's threads. This is their number.
int64_t rowElements(const Kernel &k);
/// The shared memory of a GPU row kernel: one array of `threads` 8-byte slots, which each reduce
/// of the row uses in turn (and one of 3 x `threads` for Kernel::rowMoments).
inline constexpr int64_t kRowSharedSlotBytes = 8;
/// A GPU row kernel's pass is unrolled, and the row kept in registers across passes, when every
/// thread has the same number of elements and at most this many (LowerNVPTXRow.cpp rowPass).
inline constexpr int64_t kRowRegisterSteps = 32;

/// The launch mapping of a kernel built for an NVPTX target. Throws UnsupportedError if its block
/// exceeds CUDA's limits (the heuristics never produce one; hand-applied opts can) or its grid
/// cannot fit them.
GPULaunch gpuLaunch(const Kernel &k);

/// The largest value a dimension can take: the int itself, or a symbolic dim's upper bound.
int64_t maxBound(const SInt &s);

/// Bytes one accumulator takes in shared memory: its register type (float16/bfloat16 accumulate
/// in float32, bool in a byte).
int64_t sharedElementBytes(DType dt);

} // namespace lazyjit
