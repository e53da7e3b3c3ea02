// The hand-coded kernel optimizations per target (the reference's hand_coded_optimizations,
// adapted): Kernel::handCodedOptimizations dispatches here.
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

#include <optional>
#include <string>

namespace lazyjit {

/// The most stack one CPU kernel's scratch may take on the thread running it: a row kernel's
/// per-row arrays (LowerCPURow.cpp) and a reduce's packed panels (HeuristicsCPUPack.cpp).
inline constexpr int64_t kMaxStackScratchBytes = 256 * 1024;

/// Why Kernel::applyOpt refuses `opt` on `k` (the message of the UnsupportedError it throws), or
/// nullopt where `opt` applies. The heuristics try an opt by asking this, not by catching the error.
std::optional<std::string> optRefusal(const Kernel &k, const Opt &opt);
/// Applies `opt` unless it is refused; returns the refusal (`k` then unchanged), or nullopt.
inline std::optional<std::string> applyOrRefuse(Kernel &k, const Opt &opt) {
  std::optional<std::string> why = optRefusal(k, opt);
  if (!why) k.applyOpt(opt);
  return why;
}
/// Applies `opt` where it applies; returns whether it did (`k` unchanged where it did not).
inline bool tryApplyOpt(Kernel &k, const Opt &opt) { return !applyOrRefuse(k, opt); }

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
