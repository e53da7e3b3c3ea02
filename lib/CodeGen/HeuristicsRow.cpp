// Heuristics of row kernels (OPT=5): the reduces both targets fold into the row's first pass
// (Kernel::rowMoments), and the CPU's vector stores of the output pass, streaming stores and
// scratch arrays. (The GPU's block size: HeuristicsGPU.cpp.)
#include "Heuristics.h"
#include "HeuristicsCPU.h"
#include "LoopNest.h"

#include <algorithm>

namespace lazyjit {

using cpu_heuristics::allFloat;
using cpu_heuristics::kStreamingStoreBytes;
using cpu_heuristics::outputBytes;

namespace {

// Whether a node that `pred` holds for is at or below `x`.
template <typename Pred> bool anyBelow(const KernelOp &x, Pred pred) {
  auto ops = x.uniqueOps();
  return std::any_of(ops.begin(), ops.end(), [&](const KernelOp *y) { return pred(*y); });
}

bool isFloat(const std::optional<DType> &dt) { return dt && (*dt == dtypes::float32 || *dt == dtypes::float64); }

} // namespace

// The reduces over the row that are sums of squared deviations `(e - m)^2` from a row value `m`
// computed from an earlier reduce, with `e` reading no row value: the first pass over the row (an
// earlier reduce's) computes them from `e`'s running moments. Written by the tensor API as
// `y = x - x.mean(); (y * y).mean()` (layernorm's variance, a row value; var and std, the
// kernel's own reduce): `y * y` is one MUL of one node, the kernel IR being hash-consed.
void chooseRowMoments(Kernel &k) {
  // (the values are shifted by a median of three of the row's: every row has them; the count of
  // elements is kept in the reduces' dtype, exact below 2^24 in float32)
  int64_t elems = 1;
  for (size_t a = static_cast<size_t>(k.rowStart); a < k.shapeLen(); ++a) {
    if (!k.fullShape()[a].isInt() || k.fullShape()[a].asInt() < 1) return;
    elems *= k.fullShape()[a].asInt();
  }
  if (elems >= (int64_t(1) << 24)) return;
  std::unordered_set<const KernelOp *> inRows = expandedSubtrees(*k.ast);
  for (const KernelOp *x : k.ast->uniqueOps()) {
    // (a row reduce, or the kernel's own reduce over the rows: var and std)
    if (x->op != Op::Sum || !(inRows.count(x) || x == k.reduceop) || !isFloat(x->kernelDType())) continue;
    const KernelOp &sq = *x->src[0];
    if (sq.op != Op::Mul || sq.src[0] != sq.src[1] || sq.src[0]->op != Op::Sub) continue;
    const KernelOp &d = *sq.src[0];
    int m = d.src[0]->op == Op::Expand ? 0 : d.src[1]->op == Op::Expand ? 1 : -1;
    if (m < 0) continue;
    const KernelOp &e = *d.src[1 - m], &mean = *d.src[m];
    // `m` comes from an earlier reduce (whose pass takes the moments), `e` from no row value (a
    // reduce or an EXPAND)
    bool earlierReduce = anyBelow(mean, [](const KernelOp &y) { return isReduceOp(y.op); });
    bool readsRowValue = anyBelow(e, [](const KernelOp &y) { return isReduceOp(y.op) || y.op == Op::Expand; });
    if (!earlierReduce || readsRowValue || !isFloat(e.kernelDType())) continue;
    // one count for every folded reduce: of one dtype
    if (!k.rowMoments.empty() && !(*k.rowMoments[0].reduce->kernelDType() == *x->kernelDType())) continue;
    k.rowMoments.push_back({x, &e, &mean});
  }
}

void applyCPURowHeuristics(Kernel &k) {
  k.rowScratch = true;
  // the output pass stores whole vectors of the last row axis, written past the caches when the
  // output is large (it is not read again by this kernel; the row's inputs are) and its rows are
  // whole cache lines: one vector per line on AVX-512, two on AVX2 (consecutive stores, which the
  // write-combining buffer merges into one line)
  // (float16 and bfloat16 rows too: their lanes are float32 registers, as many as float32's)
  DType out = k.bufs[0]->bufferDType();
  if (!allFloat(k, true)) return;
  const SInt &last = k.fullShape().back();
  int64_t lanes = std::min<int64_t>(k.opts.vectorBits / 8, 64) / cpu_heuristics::registerBytes(out);
  if (static_cast<int>(k.shapeLen()) <= k.rowStart || !last.isInt() || last.asInt() < lanes) return;
  // a single row axis may end in a scalar tail; the last of several must be whole vectors
  bool whole = last.asInt() % lanes == 0;
  if (!whole && static_cast<int>(k.shapeLen()) - k.rowStart != 1) return;
  k.rowLanes = lanes;
  k.streamingStores = whole && 64 % (lanes * out.itemsize()) == 0 && last.asInt() * out.itemsize() % 64 == 0 &&
                      outputBytes(k) >= kStreamingStoreBytes;
  // (in vectors only: a scalar pass would pay a division per element for the pass it saves)
  chooseRowMoments(k);
  chooseRowPipelining(k);
}

// Rows are pipelined (Kernel::rowPipelined) when the output goes to memory with streaming stores
// (a store-bound output pass is what the next row's arithmetic can hide), the kernel has no reduce
// of its own (its final pass accumulates instead of storing), the output pass and the last pass
// over the row both run in vectors (one loop runs both), and two copies of a row's scratch arrays
// fit half the stack budget. Softmax 4096 x 4096: the exp of the sum's pass had run after the
// previous row's stores instead of beside them (docs/architecture.md "Pipelined rows").
void chooseRowPipelining(Kernel &k) {
  k.rowPipelined = false;
  if (!k.streamingStores || k.reduceop || !k.rowScratch) return;
  int64_t rowBytes = cpu_heuristics::registerBytes(k.bufs[0]->bufferDType()); // (the scratch holds registers)
  for (size_t a = static_cast<size_t>(k.rowStart); a < k.shapeLen(); ++a) {
    if (!k.fullShape()[a].isInt()) return;
    rowBytes *= k.fullShape()[a].asInt();
  }
  if (2 * rowBytes > kMaxStackScratchBytes / 2) return;
  std::vector<const KernelOp *> passes = rowPasses(k);
  if (passes.empty()) return;
  const KernelOp *last = passes.back();
  auto lastDt = last->kernelDType();
  if (!lastDt || !lastDt->isFloating() || !rowPassInVectors(k, last->src[0].get())) return;
  if (!rowPassInVectors(k, k.bufs[0]->src[0].get())) return;
  // the first pass also keeps the folded reduces' moments, in vectors as well
  if (passes.size() == 1)
    for (const auto &mo : k.rowMoments)
      if (!rowPassInVectors(k, mo.value)) return;
  k.rowPipelined = true;
}

} // namespace lazyjit
