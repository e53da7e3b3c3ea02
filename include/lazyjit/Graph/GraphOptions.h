// The options the lazy graph is built and scheduled under. The graph, the scheduler and the code
// generator read no configuration themselves: their caller passes these (the Tensor layer reads
// the process configuration once per op, as the reference reads its environment variables at
// each op; tools and tests pass their own).
#pragma once

#include <cstdint>

namespace lazyjit {

struct Config;

/// The fusion flags of an OPT level (lazy.py). Levels 0-4 are the reference's; level 5 is level 2
/// plus `rowFusion` (Schedule.cpp: reductions over a row and the element-wise work between them in
/// one kernel), on devices that lower such kernels, and `convLayouts` (TensorConv.cpp: a
/// convolution's padded input written out once, its input gradient as one transposed convolution
/// instead of a window-sized intermediate summed back by a second kernel, and its weight gradient
/// over the output's gradient written out channels-last) and `scanLayouts` (TensorReduce.cpp: a
/// cumsum along an axis other than the last sums a copy with that axis moved last).
struct FusionFlags {
  bool removeMovementNops, mergeElementwiseIntoReduce, shuffleMovementOps, mergeElementwiseOps;
  bool mergeOneReduceIntoElementwise, shufflePadOps, pushPermutes, pushContiguous, pushReshapes;
  bool rowFusion, convLayouts, scanLayouts;
  /// The flags of OPT level `opt` (every Tensor op asks a few times: inline, no call). Level 5 is
  /// row fusion over level 2's decisions: the movement-op pushing of levels 3 and 4 gives the
  /// CPU's convolution kernels layouts they run 1.6x slower (W10: 782 vs 482 ms/step).
  static constexpr FusionFlags forLevel(int l) {
    bool push = l == 3 || l == 4;
    return FusionFlags{l >= 1, l >= 1, l >= 1, l >= 1, l >= 2, l >= 2, push, push, l == 4, l >= 5, l >= 5, l >= 5};
  }
  bool operator==(const FusionFlags &) const = default;
};

/// What every op of the lazy graph is built under.
struct GraphOptions {
  FusionFlags fusion = FusionFlags::forLevel(2); ///< OPT
  bool lazyCache = true;                         ///< LAZYCACHE: dedup identical lazy ops
  bool mergeView = true;                         ///< MERGE_VIEW: fold reshapes into the last view
  int64_t reduceSplitThreshold = 32768;          ///< REDUCEOP_SPLIT_THRESHOLD

  /// The defaults with the fusion flags of OPT level `opt`.
  static GraphOptions forLevel(int opt);
  /// What a configuration asks for (OPT, LAZYCACHE, MERGE_VIEW, REDUCEOP_SPLIT_THRESHOLD).
  static GraphOptions from(const Config &c);
  bool operator==(const GraphOptions &) const = default;
};

} // namespace lazyjit
