// CPU tiles of dot products along the reduce axis, for reduces whose inputs are contiguous along
// it and broadcast along different output axes: x @ w.T (nn.Linear) as a block of outputs sharing
// each loaded vector, and a convolution's weight gradient, whose short reduce axis becomes the
// vector (the lowering's dot-product mode). applyCPUHeuristics (HeuristicsCPU.cpp) tries them;
// each returns whether it applied.
#include "Heuristics.h"
#include "HeuristicsCPU.h"

namespace lazyjit {

using namespace cpu_heuristics;

// A reduce whose inputs are all contiguous along the last reduce axis, over two output axes that
// each input is broadcast along one of (x @ w.T, which is what nn.Linear computes): a block of
// rows x cols outputs shares each loaded vector of the reduce loop, which the loop vectorizer
// then turns into rows*cols vector accumulators. Returns whether it applied.
bool cpu_heuristics::tileDotProducts(Kernel &k, bool wide) {
  int fr = k.firstReduce();
  int lastRed = static_cast<int>(k.shapeLen()) - k.upcasted - 1;
  if (!k.reduceop || lastRed < fr || !isIntSize(k, lastRed) || k.fullShape()[lastRed].asInt() < 16) return false;
  bool anyUnit = false;
  if (!unitOrBroadcastAlong(k, static_cast<size_t>(lastRed), &anyUnit) || !anyUnit) return false;
  // output axes a < b: one input of the reduce varies along a only, another along b only, none
  // along both (buffers read after the reduce, once per output, may vary along both: the relu mask
  // a backward pass multiplies its input gradient with)
  std::vector<bool> inReduce = reduceInputs(k);
  int64_t rows = wide ? 4 : 2, cols = 4;
  for (int b = fr - 1; b >= 1; --b)
    for (int a = b - 1; a >= 0; --a) {
      if (!isIntSize(k, a) || !isIntSize(k, b) || k.fullShape()[a].asInt() % rows != 0 ||
          k.fullShape()[b].asInt() % cols != 0)
        continue;
      bool alongA = false, alongB = false, ok = true;
      for (size_t i = 1; i < k.bufs.size() && ok; ++i) {
        if (k.bufs[i]->op == Op::Const || !inReduce[i]) continue;
        auto sa = strideOf(k, i, a), sb = strideOf(k, i, b);
        if (!sa || !sb || (*sa != 0 && *sb != 0)) ok = false;
        else if (strideOf(k, i, lastRed) == 1) {
          alongA = alongA || *sa != 0;
          alongB = alongB || *sb != 0;
        }
      }
      if (!ok || !alongA || !alongB) continue;
      // the later axis first, so that upcasting it (which may remove it) leaves `a` in place
      k.applyOpt({OptOp::Upcast, b, cols});
      k.applyOpt({OptOp::Upcast, a, rows});
      return true;
    }
  return false;
}

// Dot products along a short reduce axis that every input reads contiguously or not at all (a
// conv's weight gradient: outputs [cout, cin, kh, kw] over the batch and the image, whose only
// output vector axis, kw, has 3 or 5 elements, while ow is contiguous in both inputs). The reduce
// axis becomes the vector (the lowering's dot-product mode: vector partial sums reduced once per
// output), padded with zeros to the vector width (PADTO: a SUM of ops that keep 0 at 0), and a
// register tile of rows x cols outputs over two axes that each move one input only shares every
// loaded vector. Returns whether it applied.
bool cpu_heuristics::reduceVectorize(Kernel &k) {
  int fr = k.firstReduce();
  int lastRed = static_cast<int>(k.shapeLen()) - k.upcasted - 1;
  if (!k.reduceop || k.reduceop->op != Op::Sum || lastRed < fr || !isIntSize(k, lastRed)) return false;
  int64_t r = k.fullShape()[lastRed].asInt();
  bool anyUnit = false;
  if (!unitOrBroadcastAlong(k, static_cast<size_t>(lastRed), &anyUnit) || !anyUnit) return false;
  // the vector: the fewest registers per row of the reduce axis, then the least padding
  int64_t width = 0, padded = 0, regs = 0;
  for (int64_t w : {8, 16, 32}) {
    int64_t p = (r + w - 1) / w * w, n = p / w * std::max<int64_t>(1, w * 32 / k.opts.vectorBits);
    if (p - r >= r) continue;
    if (width == 0 || n < regs || (n == regs && p < padded)) {
      width = w;
      padded = p;
      regs = n;
    }
  }
  if (width == 0) return false;
  int64_t regsPerAcc = std::max<int64_t>(1, width * 32 / k.opts.vectorBits);
  // the tile: cols along a short output axis (the innermost such), rows along another, where no
  // input moves along both (each loaded vector is then reused across the other axis)
  auto moves = [&](size_t i, int a) {
    auto sa = strideOf(k, i, a);
    return !sa || *sa != 0;
  };
  auto disjoint = [&](int a, int b) {
    bool alongA = false, alongB = false;
    for (size_t i = 1; i < k.bufs.size(); ++i) {
      if (k.bufs[i]->op == Op::Const) continue;
      if (moves(i, a) && moves(i, b)) return false;
      alongA = alongA || moves(i, a);
      alongB = alongB || moves(i, b);
    }
    return alongA && alongB;
  };
  int colAxis = -1, rowAxis = -1;
  for (int b = fr - 1; b >= 0 && rowAxis < 0; --b) {
    if (!isIntSize(k, b) || k.fullShape()[b].asInt() < 2 || k.fullShape()[b].asInt() > 8) continue;
    for (int a = fr - 1; a >= 0 && rowAxis < 0; --a)
      if (a != b && isIntSize(k, a) && k.fullShape()[a].asInt() >= 2 && disjoint(a, b)) {
        colAxis = b;
        rowAxis = a;
      }
  }
  if (colAxis < 0) return false;
  int64_t cols = k.fullShape()[colAxis].asInt(), rows = 1;
  // accumulators plus the rows' and cols' loaded vectors stay within the registers: AVX-512 has 32
  // (two kept for addresses and the loop); AVX2's 16 fit a tile of 2 x 5 (17 counted: not every
  // loaded vector lives at once), which ran W10's second weight gradient at 75-79 GFLOP/s against
  // 41 for 1 x 5 and 18-41 for 4 x 5 (spilled)
  int64_t registers = k.opts.vectorBits >= 512 ? 30 : 17;
  for (int64_t c : {8, 6, 4, 3, 2, 1})
    if (k.fullShape()[rowAxis].asInt() % c == 0 && (c * cols + c + cols) * regsPerAcc <= registers) {
      rows = c;
      break;
    }
  if (rows * cols < 4) return false;
  // on a copy: PADTO refuses a reduce it cannot pad with zeros
  Kernel t = k;
  // the later axis first, so that upcasting it whole (which removes it) leaves the other in place
  // (a tile of one row, AVX2's 16 registers with 5 columns, upcasts the columns only)
  int hi = std::max(colAxis, rowAxis), lo = std::min(colAxis, rowAxis);
  int64_t hiAmt = hi == colAxis ? cols : rows, loAmt = lo == colAxis ? cols : rows;
  if (hiAmt > 1 && !tryApplyOpt(t, {OptOp::Upcast, hi, hiAmt})) return false;
  if (loAmt > 1 && !tryApplyOpt(t, {OptOp::Upcast, lo, loAmt})) return false;
  int red = static_cast<int>(t.shapeLen()) - t.upcasted - 1;
  if (padded != r && !tryApplyOpt(t, {OptOp::PadTo, red, width})) return false;
  if (!tryApplyOpt(t, {OptOp::Unroll, red - t.firstReduce(), width})) return false;
  k = std::move(t);
  return true;
}

} // namespace lazyjit
