// The CPU heuristics' packed panels (Kernel::packDepth, packedBufs, packBlock): which inputs of a
// register-tiled reduce are copied once into a contiguous panel, where the copy goes in the loop
// nest, and when the reduce runs in blocks whose panels fit the stack.
#include "Heuristics.h"
#include "HeuristicsCPU.h"
#include "LoopNest.h"
#include "lazyjit/Graph/LazyOpWalk.h"

#include <algorithm>
#include <cstdlib>

namespace lazyjit {

using cpu_heuristics::independentOf;
using cpu_heuristics::reduceInputs;
using cpu_heuristics::wholePanelShape;

namespace {

// A smaller panel stays in L1 as it is read, a line per reduce step: copying it gains nothing.
constexpr int64_t kMinPanelBytes = 16 * 1024;

// Whether the reduce can run in blocks whose partial results wait in the output buffer
// (Kernel::packBlock): a SUM or MAX of the output's dtype, stored without reading any buffer after
// it (the partial results are stored raw, and the element-wise ops after the reduce run on the
// last block only).
bool canBlockReduce(const Kernel &k) {
  if (!k.reduceop || (k.reduceop->op != Op::Sum && k.reduceop->op != Op::ReduceMax)) return false;
  auto rdt = k.reduceop->kernelDType();
  if (!rdt || !(*rdt == k.bufs[0]->bufferDType())) return false;
  // the partial sums wait in the output between blocks: exact only where memory holds what the
  // registers do (a float16 output would round each block's partial sum)
  if (rdt->isHalfWidth()) return false;
  bool reads = false;
  walkOps(*k.ast->src[0], [&](const KernelOp &op) {
    if (&op == k.reduceop) return false;
    reads = reads || op.op == Op::Load;
    return !reads;
  }, [](const KernelOp &) {});
  return !reads;
}

// A whole packed input's copy is read by every iteration of the global loops it does not move
// along; smaller than this, its reads stay in L2 as they are and copying it gains nothing; larger
// than the upper bound, the copy costs more memory than it is worth.
constexpr int64_t kMinWholePanelBytes = 512 * 1024, kMaxWholePanelBytes = int64_t(64) << 20;
// Read by fewer column blocks than this, the copy does not pay for itself: 512 x 256 A^T @ 160
// columns (5 blocks) ran 0.25 ms packed against 0.20 unpacked; with 16 or 32 blocks packing won
// 10-50% at every size measured (K 128-2048, M 256-2048).
constexpr int64_t kMinWholePanelReuse = 8;

// Kernel::wholePacked: the reduce's inputs read as one value per row of the register tile (they do
// not move along the vector axis, and do along a row axis) whose reads move a cache line or more
// per step of the innermost reduce loop. A of A^T @ B is one: an 8-row tile reads 32 bytes of a
// line one row of A after the last at every step, every line twice from L3 (once per tile half)
// for each column block, with no hardware prefetch across the page each step lands on; A^T @ B
// ran at half the speed of A @ B. Copied once (the threads splitting the copy) in the order the
// reduce reads it, each tile row is a sequential stream read by every column block: n = 1024 went
// from 165 to 327-367 GFLOP/s (A @ B: 389-415), n = 2048 from 147 to 370 (A @ B: 361-385).
void chooseWholePacking(Kernel &k, const LoopNest &nest, const std::vector<bool> &inReduce) {
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), firstUpcast = n - k.upcasted;
  const Shape &full = k.fullShape();
  if (fr == firstUpcast) return; // no reduce loop: a step of nothing
  int vecAxis = nest.vecAxis;
  const std::vector<int> &tileAxes = nest.outUp;
  int64_t total = 0;
  for (size_t i = 1; i < k.bufs.size(); ++i) {
    if (k.bufs[i]->op == Op::Const || !inReduce[i] ||
        std::find(k.packedBufs.begin(), k.packedBufs.end(), i) != k.packedBufs.end())
      continue;
    if (!independentOf(k, i, static_cast<size_t>(vecAxis)) ||
        std::all_of(tileAxes.begin(), tileAxes.end(), [&](int a) { return independentOf(k, i, static_cast<size_t>(a)); }))
      continue;
    auto rs = k.sts[i].realStrides(false);
    int64_t itemsize = k.bufs[i]->bufferDType().itemsize();
    const auto &inner = rs[static_cast<size_t>(firstUpcast - 1)];
    if (!inner || !inner->isInt() || std::abs(inner->asInt()) * itemsize < 64) continue;
    auto shape = wholePanelShape(k, nest, i);
    if (!shape) return;
    int64_t reuse = 1, bytes = shape->bytes;
    for (int a = 0; a < fr; ++a) reuse *= full[a].asInt();
    reuse /= shape->tiles;
    if (reuse < kMinWholePanelReuse || bytes < kMinWholePanelBytes || total + bytes > kMaxWholePanelBytes) continue;
    k.wholePacked.push_back(i);
    total += bytes;
  }
  k.wholePackBytes = total;
}

} // namespace

std::optional<int64_t> cpu_heuristics::reduceLoopSteps(const Kernel &k) {
  const Shape &full = k.fullShape();
  int64_t steps = 1;
  for (size_t a = static_cast<size_t>(k.firstReduce()); a < k.shapeLen() - static_cast<size_t>(k.upcasted); ++a) {
    if (!full[a].isInt()) return std::nullopt;
    steps *= full[a].asInt();
  }
  return steps;
}

std::optional<cpu_heuristics::WholePanelShape> cpu_heuristics::wholePanelShape(const Kernel &k, const LoopNest &nest,
                                                                               size_t buf) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), firstUpcast = n - k.upcasted;
  WholePanelShape w;
  std::optional<int64_t> steps = reduceLoopSteps(k);
  if (!steps) return std::nullopt;
  w.steps = *steps;
  for (int a = 0; a < std::min(fr, firstUpcast); ++a) {
    if (!full[a].isInt()) return std::nullopt;
    if (!independentOf(k, buf, static_cast<size_t>(a))) {
      w.axes.push_back(a);
      w.tiles *= full[a].asInt();
    }
  }
  int64_t values = w.tiles * static_cast<int64_t>(nest.outCombos.size()) * w.steps * static_cast<int64_t>(nest.redCombos.size());
  w.bytes = (values * registerBytes(k.bufs[buf]->bufferDType()) + 63) / 64 * 64;
  return w;
}

// Packed panels (Kernel::packDepth) for a register-tiled reduce: the reduce's inputs that move
// along the vector axis and not along the tile's rows (the right-hand side B of A @ B, the image
// of a convolution) are copied once per value of the global axes they depend on, and the copy is
// read by every iteration of the global loops inside those (the row blocks of A @ B, the output
// channels of a convolution). Needs the packed values of every reduce step to fit the stack
// budget and the copy to be read at least 4 times.
void cpu_heuristics::choosePanelPacking(Kernel &k) {
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), firstUpcast = n - k.upcasted;
  const Shape &full = k.fullShape();
  if (fr == 0 || !k.reduceop) return;
  for (int a = firstUpcast; a < n; ++a)
    if (!full[a].isInt()) return;
  // the lowering's own decisions, not a second reading of the upcasts: its vector axis (recorded
  // now, and again by the pass list once the heuristics are done; the swaps below move only global
  // axes), the tile's rows (the other output upcasts) and the reduce's unrolled combinations
  chooseVectorAxis(k);
  LoopNest nest = LoopNest::of(k);
  if (nest.vecAxis < 0 || nest.vecReduce || nest.outUp.empty()) return;
  int vecAxis = nest.vecAxis;
  const std::vector<int> &tileAxes = nest.outUp;
  int64_t combos = static_cast<int64_t>(nest.redCombos.size());
  std::optional<int64_t> reduceSteps = reduceLoopSteps(k);
  if (!reduceSteps) return;
  int64_t steps = *reduceSteps;
  std::vector<bool> inReduce = reduceInputs(k);
  std::vector<size_t> packed;
  int64_t bytes = 0;
  for (size_t i = 1; i < k.bufs.size(); ++i) {
    if (k.bufs[i]->op == Op::Const || !inReduce[i] || independentOf(k, i, static_cast<size_t>(vecAxis))) continue;
    if (std::any_of(tileAxes.begin(), tileAxes.end(), [&](int a) { return !independentOf(k, i, static_cast<size_t>(a)); }))
      continue;
    packed.push_back(i);
    bytes += steps * combos * full[vecAxis].asInt() * registerBytes(k.bufs[i]->bufferDType());
  }
  // (a scattered output's channel vector reads the weights across it: packed is the only way they
  // load as vectors, so a small panel is packed all the same: ResNet's first convolution, 64 x 3 x
  // 7 x 7 weights, a 9 KB panel)
  if (packed.empty() || (bytes < kMinPanelBytes && !k.scatterOutput)) return;
  // too large a panel: the first reduce axis in blocks whose panels fit, where it can be blocked
  int64_t block = 0;
  if (bytes > kMaxStackScratchBytes) {
    if (fr == firstUpcast || !canBlockReduce(k)) return;
    int64_t outer = full[fr].asInt(), perStep = bytes / outer;
    for (int64_t b = outer / 2; b >= 1 && !block; --b)
      if (outer % b == 0 && b * perStep <= kMaxStackScratchBytes) block = b;
    if (block == 0 || block * perStep < kMinPanelBytes) return;
  }
  auto dependent = [&](int a) {
    return std::any_of(packed.begin(), packed.end(), [&](size_t i) { return !independentOf(k, i, static_cast<size_t>(a)); });
  };
  // the panel is read once per iteration of the global axes the packed buffers do not move along:
  // those become the innermost global loops and the panel is packed before the first of them.
  // Axis 0 stays first: the threads share it, and the order of the loops around the panel decides
  // what of the other inputs stays in cache (moving a conv's batch axis inward for a 4 KB panel of
  // its weights re-read the output gradient from memory once per input channel: 50 -> 130 ms)
  std::vector<int> order{0}, inner;
  for (int a = 1; a < fr; ++a) (dependent(a) ? order : inner).push_back(a);
  if (order.size() == 1 && !dependent(0)) order.clear(), inner.insert(inner.begin(), 0);
  auto extent = [&](int a) { return full[a].isInt() ? full[a].asInt() : 0; };
  int depth = static_cast<int>(order.size());
  int64_t reuse = 1;
  for (int a : inner) reuse *= extent(a);
  if (reuse < 4) return;
  order.insert(order.end(), inner.begin(), inner.end());
  // the permutation as swaps: where each original axis is now
  std::vector<int> at(static_cast<size_t>(fr));
  for (int a = 0; a < fr; ++a) at[static_cast<size_t>(a)] = a;
  for (int pos = 0; pos < fr; ++pos) {
    int cur = at[static_cast<size_t>(order[static_cast<size_t>(pos)])];
    if (cur == pos) continue;
    k.applyOpt({OptOp::Swap, pos, cur});
    for (int &p : at)
      if (p == pos) p = cur;
      else if (p == cur) p = pos;
  }
  k.packDepth = depth;
  k.packedBufs = std::move(packed);
  k.packBlock = block;
  chooseWholePacking(k, nest, inReduce);
}

} // namespace lazyjit
