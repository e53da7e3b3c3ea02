// What the CPU heuristics' files share (HeuristicsCPU.cpp, HeuristicsCPUPack.cpp,
// HeuristicsCPUTiles.cpp, HeuristicsCPUDot.cpp).
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

namespace lazyjit {
struct LoopNest;
}

namespace lazyjit::cpu_heuristics {

/// Per buffer, whether the kernel's reduce reads it (every buffer when there is no reduce): only
/// those decide the register tile and the panels.
std::vector<bool> reduceInputs(const Kernel &k);

/// Whether every buffer is float32 or float64 (or, with `half`, float16 or bfloat16 too).
bool allFloat(const Kernel &k, bool half = false);

/// The bytes of one of `dt`'s values in a register, and so in a packed panel: float16 and
/// bfloat16 are computed as float32 (LowerValues.h), other dtypes as stored.
inline int64_t registerBytes(DType dt) {
  return dt.isHalfWidth() ? 4 : dt.itemsize();
}

/// The output's size in bytes (0 when symbolic).
int64_t outputBytes(const Kernel &k);

/// Element-wise outputs at least this large are written with streaming stores: they exceed what
/// the last-level cache of a core's share holds, so caching them only evicts the inputs, and
/// streaming saves the read-for-ownership of every output line (20 -> 16 bytes per element of
/// relu(a*b+c)). A fixed size rather than the host's cache size keeps the code a function of the
/// AST and the target only (it is cached on disk).
constexpr int64_t kStreamingStoreBytes = int64_t(16) << 20;

/// The steps of the reduce loops: the product of the reduce axes that are not unrolled (from the
/// first reduce to the first upcast); nullopt where one is symbolic.
std::optional<int64_t> reduceLoopSteps(const Kernel &k);

/// Whether neither the index nor the validity of buffer `buf` moves along `axis`.
bool independentOf(const Kernel &k, size_t buf, size_t axis);

/// The stride of buffer `buf` along `axis` when it is exact and an integer (ignoring validity).
std::optional<int64_t> strideOf(const Kernel &k, size_t buf, size_t axis);
/// Whether buffer `buf` is read across `across` (an exact stride other than 0 and 1) and
/// contiguously along `along`, through one unmasked view (its index is then affine): a transposed
/// input, which the lowering loads as rows and transposes in registers (transposedLoad).
bool readsTransposed(const Kernel &k, size_t buf, size_t across, size_t along);
/// Whether every input (constants aside) reads along `axis` with stride 1 or 0 (contiguous or
/// broadcast); `anyUnit` (optional) tells whether one of them has stride 1.
bool unitOrBroadcastAlong(const Kernel &k, size_t axis, bool *anyUnit = nullptr);
/// Whether the size of `axis` is an integer (not symbolic).
bool isIntSize(const Kernel &k, size_t axis);
/// An output axis along which the store is unit-stride and every input is unit-stride or
/// broadcast, with at least one unit-stride input; prefers the innermost. An axis shorter than
/// `minSize` does not qualify.
std::optional<size_t> findVectorAxis(const Kernel &k, int64_t minSize);
/// The first of `options` that divides `n` (1 when none does).
int64_t largestDivisor(int64_t n, std::initializer_list<int64_t> options);

/// The tiles of HeuristicsCPUTiles.cpp for kernels without a clean vector axis; each returns
/// whether it applied.
bool gatherVectorize(Kernel &k); ///< a reduce read through a view stack: gathered vectors
bool transposeTile(Kernel &k);   ///< an element-wise transpose: an unrolled 8 x 8 tile
bool columnTile(Kernel &k);      ///< a non-float column reduce: the output axis upcast in scalars
bool blockRowRuns(Kernel &k);    ///< a reduce over short contiguous runs: 8 outputs' runs in a row

/// The dot-product tiles of HeuristicsCPUDot.cpp; each returns whether it applied.
bool tileDotProducts(Kernel &k, bool wide); ///< x @ w.T: rows x cols outputs share each loaded vector
bool reduceVectorize(Kernel &k);            ///< a short contiguous reduce axis as the vector (a weight gradient)

/// Packed panels for a register-tiled reduce (HeuristicsCPUPack.cpp): the reduce's inputs that move
/// along the vector axis and not along the tile's rows are copied once per value of the global
/// axes they depend on, and read by every iteration of the global loops inside those.
void choosePanelPacking(Kernel &k);

/// The copy of a whole-packed input (Kernel::wholePacked) in the scratch block: the global axes it
/// moves along (its tiles), the steps of the reduce loops, and its size, laid out
/// [tile][row combination][step][reduce combination] and rounded up to 64 bytes. One reading for
/// the heuristic that sizes the scratch and the lowering that fills and reads it (nullopt where
/// an axis is symbolic).
struct WholePanelShape {
  std::vector<int> axes;
  int64_t tiles = 1, steps = 1, bytes = 0;
};
std::optional<WholePanelShape> wholePanelShape(const Kernel &k, const LoopNest &nest, size_t buf);

} // namespace lazyjit::cpu_heuristics
