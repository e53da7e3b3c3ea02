// CPU tiles for kernels without a clean vector axis, each found by a sweep of common ops against a
// copy (bench/RESULTS.md): reduces read through a view stack (gathered vectors), transposes (an
// unrolled 8 x 8 tile), integer column reduces (a scalar upcast), and multi-axis reduces over
// short contiguous runs (the runs of 8 outputs read back to back). applyCPUHeuristics
// (HeuristicsCPU.cpp) tries them in turn; each checks its own preconditions and returns whether it
// applied.
#include "Heuristics.h"
#include "HeuristicsCPU.h"
#include "lazyjit/Graph/LazyOpWalk.h"

namespace lazyjit {

using namespace cpu_heuristics;

// A reduce whose inputs have no vector axis because some of them are read through a view stack
// (the backward of the reference's pool trick, col2im): vectorize the innermost output axis
// anyway when the output is contiguous along it, gathering what is not. Gathers cost per lane, so
// the width wastes the fewest lanes (then the widest). Returns whether it applied.
bool cpu_heuristics::gatherVectorize(Kernel &k) {
  int fr = k.firstReduce();
  int lastRed = static_cast<int>(k.shapeLen()) - k.upcasted - 1;
  if (!k.reduceop || fr == 0 || lastRed < fr) return false;
  int a = fr - 1;
  if (!isIntSize(k, a) || k.fullShape()[a].asInt() < 4 || strideOf(k, 0, a) != 1) return false;
  bool gathers = false, contiguousReduce = true;
  for (size_t i = 1; i < k.bufs.size(); ++i) {
    if (k.bufs[i]->op == Op::Const) continue;
    gathers = gathers || !strideOf(k, i, a);
    auto r = strideOf(k, i, lastRed);
    contiguousReduce = contiguousReduce && r && (*r == 0 || *r == 1);
  }
  if (!gathers || contiguousReduce) return false;
  int64_t size = k.fullShape()[a].asInt(), width = 0, padded = 0;
  for (int64_t w : {16, 8}) {
    int64_t p = (size + w - 1) / w * w;
    if (p - size < size && (width == 0 || p < padded)) {
      width = w;
      padded = p;
    }
  }
  if (width == 0) return false;
  if (padded != size) k.applyOpt({OptOp::PadTo, a, width});
  k.applyOpt({OptOp::Upcast, a, width});
  return true;
}

// An element-wise kernel with no vector axis because an input is read across the output's
// contiguous axis (a transpose: x.T.contiguous(), NCHW <-> NHWC, x.T + x): a tile of 8 x 8 over
// the output's contiguous axis and the axis that input reads contiguously, unrolled, so that each
// input line the tile reads serves 8 outputs in one iteration instead of one output per pass
// down a column. Measured on AVX2 (2 threads, times the copy of x * c in the same process):
// 2048 x 2048 transposed 20x -> 2.6x; [16, 64, 64, 64] permuted (0, 2, 3, 1) 8.1x -> 2.0x and
// (0, 3, 1, 2) 4.1x -> 2.0x; x.T + x 20x -> 3.2x (unrolled in scalars; vectorizing the output's
// axis with gathers ran 1.6-4.0x, and 8 x 4 or 4 x 8 tiles 2.0-5.1x). Square tiles now transpose
// in registers (below).
bool cpu_heuristics::transposeTile(Kernel &k) {
  if (k.reduceop || !varsFromAst(*k.ast).empty()) return false;
  int n = static_cast<int>(k.shapeLen()) - k.upcasted;
  int o = -1;
  for (int a = n - 1; a >= 0 && o < 0; --a)
    if (strideOf(k, 0, a) == 1 && k.fullShape()[a].asInt() >= 4) o = a;
  if (o < 0) return false;
  int along = -1;
  for (size_t i = 1; i < k.bufs.size() && along < 0; ++i) {
    if (k.bufs[i]->op == Op::Const) continue;
    auto so = strideOf(k, i, o);
    if (so && (*so == 0 || *so == 1)) continue;
    for (int a = n - 1; a >= 0 && along < 0; --a)
      if (a != o && strideOf(k, i, a) == 1 && k.fullShape()[a].asInt() >= 4) along = a;
  }
  if (along < 0) return false;
  int64_t ro = largestDivisor(k.fullShape()[o].asInt(), {8, 4});
  int64_t ra = largestDivisor(k.fullShape()[along].asInt(), {8, 4});
  if (ro < 4 || ra < 4) return false;
  // A square tile of floats (of any width) whose inputs are each read along the output's axis (contiguously or
  // broadcast) or through one unmasked view contiguously along the other axis makes the output's
  // axis the vector (upcast last): the lowering loads the block's rows of each transposed input
  // and transposes them in registers (CPULowerer::transposedLoad). 2048 x 2048 transposed: 2.8-3.9x
  // a copy -> 2.2-2.5x; NCHW -> NHWC 3.3-4.0x -> 2.4x. Elsewhere both axes are unrolled in scalars
  // (a vector there would gather the input lane by lane).
  bool square = ro == ra;
  for (size_t i = 0; i < k.bufs.size() && square; ++i) {
    DType dt = k.bufs[i]->bufferDType();
    square = dt == dtypes::float32 || dt == dtypes::float64 || dt.isHalfWidth();
    if (!square || i == 0 || k.bufs[i]->op == Op::Const) continue;
    auto so = strideOf(k, i, static_cast<size_t>(o));
    if (so && (*so == 0 || *so == 1)) continue;
    square = readsTransposed(k, i, static_cast<size_t>(o), static_cast<size_t>(along));
  }
  int first = square ? along : o, second = square ? o : along;
  int64_t firstAmt = square ? ra : ro, secondAmt = square ? ro : ra;
  // (an axis upcast whole disappears, moving the later ones down)
  bool removed = firstAmt == k.fullShape()[first].asInt();
  k.applyOpt({OptOp::Upcast, first, firstAmt});
  if (removed && first < second) --second;
  k.applyOpt({OptOp::Upcast, second, secondAmt});
  return true;
}

// A reduce over a buffer that is not float (an integer or bool input or output, which the vector
// lowering does not take: argmax's index buffer, a count of matches) down the columns of its
// input: the output axis that every input reads contiguously or not at all is upcast, unrolled in
// scalars, so that each step of the reduce reads a run of a row instead of one element per row.
// argmax along axis 0 of 2048 x 2048: 18 -> 7.1 ms (a plain column max, vectorized, takes 1).
// Returns whether it applied.
bool cpu_heuristics::columnTile(Kernel &k) {
  if (!k.reduceop || !varsFromAst(*k.ast).empty()) return false;
  auto vec = findVectorAxis(k, 4);
  if (!vec) return false;
  size_t lastRed = k.shapeLen() - k.upcasted - 1;
  if (static_cast<int>(lastRed) < k.firstReduce() || unitOrBroadcastAlong(k, lastRed)) return false;
  int64_t w = largestDivisor(k.fullShape()[*vec].asInt(), {16, 8, 4});
  if (w < 4) return false;
  k.applyOpt({OptOp::Upcast, static_cast<int64_t>(*vec), w});
  return true;
}

// A reduce over several axes whose last, of 8 to 32 elements, every input reads contiguously or
// not at all, with the output's innermost axis right after it in some input (x.sum((0, 2)) over
// [64, 2048, 32], batchnorm's statistics over [N, C, L]): each output's inner loop read one run of
// the row and the next reduce step jumped to another row, 32 floats per jump. Upcasting the output
// axis and unrolling the run whole makes each step read the runs of 8 outputs back to back, as dot
// products along the run (the lowering's dot-product vector mode). Summed over (0, 2):
// [64, 2048, 32] 4.2 -> 0.33 ms, [256, 2048, 8] 4.7 -> 0.30 ms (a copy of the input: 0.8). Runs of
// 64 already read a line per output (0.45 ms). Returns whether it applied.
bool cpu_heuristics::blockRowRuns(Kernel &k) {
  if (!k.reduceop || k.upcasted || !varsFromAst(*k.ast).empty()) return false;
  int fr = k.firstReduce(), lastRed = static_cast<int>(k.shapeLen()) - 1, o = fr - 1;
  if (o < 0 || lastRed <= fr || !isIntSize(k, lastRed) || !isIntSize(k, o)) return false;
  int64_t run = k.fullShape()[lastRed].asInt();
  if (run < 8 || run > 32 || !unitOrBroadcastAlong(k, static_cast<size_t>(lastRed))) return false;
  bool adjacent = false;
  for (size_t i = 1; i < k.bufs.size(); ++i) {
    if (k.bufs[i]->op == Op::Const) continue;
    auto so = strideOf(k, i, static_cast<size_t>(o)), sr = strideOf(k, i, static_cast<size_t>(lastRed));
    if (!so || !sr) return false;
    adjacent = adjacent || (*sr == 1 && *so == run);
  }
  int64_t u = largestDivisor(k.fullShape()[o].asInt(), {8, 4});
  if (!adjacent || u < 4) return false;
  Kernel t = k;
  if (!tryApplyOpt(t, {OptOp::Upcast, o, u}) || !tryApplyOpt(t, {OptOp::Unroll, lastRed - t.firstReduce(), 0}))
    return false;
  k = std::move(t);
  return true;
}

} // namespace lazyjit
