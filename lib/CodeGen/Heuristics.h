// The hand-coded kernel optimizations per target (the reference's hand_coded_optimizations,
// adapted): Kernel::handCodedOptimizations dispatches here.
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

namespace lazyjit {

/// The most stack one CPU kernel's scratch may take on the thread running it: a row kernel's
/// per-row arrays (LowerCPURow.cpp) and a reduce's packed panels (HeuristicsCPUPack.cpp).
inline constexpr int64_t kMaxStackScratchBytes = 256 * 1024;

/// CPU: register tiling of matmul-like kernels, unit-stride innermost axes, reduce unrolling.
void applyCPUHeuristics(Kernel &k);
/// CPU row kernels (OPT=5): vector stores of the output pass, streaming when the output is large.
void applyCPURowHeuristics(Kernel &k);
/// Row kernels, both targets: the sums of squared deviations the row's first pass computes from
/// its moments (Kernel::rowMoments; HeuristicsRow.cpp).
void chooseRowMoments(Kernel &k);
/// CPU row kernels: whether each row's output pass runs inside the next row's last pass
/// (Kernel::rowPipelined; HeuristicsRow.cpp).
void chooseRowPipelining(Kernel &k);
/// GPU row kernels (OPT=5): the threads of the block each row runs on.
void applyGPURowHeuristics(Kernel &k);
/// GPU: global/local sizes, grouped reductions through shared memory, upcasts.
void applyGPUHeuristics(Kernel &k);

} // namespace lazyjit
