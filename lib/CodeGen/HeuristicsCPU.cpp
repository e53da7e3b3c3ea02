// CPU kernel optimizations, in the spirit of the reference's hand-coded heuristics (notes §8) but
// aimed at a CPU's vector units:
//  - a "vector axis": an output axis along which the output and every input are unit-stride or
//    broadcast. It is upcast by the vector width (LowerCPUVector.cpp emits it as one LLVM vector);
//  - a "tile axis" for reduces whose inputs are broadcast along different axes (matmul, conv): the
//    input that is broadcast along the vector axis varies along it, so each loaded vector is reused
//    by every row of the register tile;
//  - small reduce axes are unrolled;
//  - for matmul-like kernels the vector-axis tiles become the outermost loop, so a panel of the
//    right-hand side stays in cache while the left-hand side streams.
// Element-wise kernels and row reductions over a contiguous axis are left to LLVM's loop
// vectorizer, which handles them well, as are kernels with transcendental math; only large
// element-wise outputs are upcast by a cache line, to be written with streaming stores. Kernels
// without a clean vector axis (gathers, transposes, integer column reduces, short contiguous runs)
// take the tiles of HeuristicsCPUTiles.cpp, and dot products along the reduce axis those of
// HeuristicsCPUDot.cpp; packed panels are chosen in HeuristicsCPUPack.cpp.
#include "Heuristics.h"
#include "HeuristicsCPU.h"
#include "LoopNest.h"
#include "lazyjit/Graph/LazyOpWalk.h"

#include <algorithm>
#include <optional>

namespace lazyjit {

using namespace cpu_heuristics;

// Which of the kernel's buffers its reduce reads (the others are read after it, once per output
// element: a backward pass's relu mask): only those decide the register tile.
std::vector<bool> cpu_heuristics::reduceInputs(const Kernel &k) {
  std::vector<bool> in(k.bufs.size(), !k.reduceop);
  if (!k.reduceop) return in;
  for (const KernelOp *x : k.reduceop->uniqueOps())
    if (isBufferOp(x->op)) in[k.bufIndex(x)] = true;
  return in;
}

namespace {
// Whether buffer `buf`'s validity (not only its index) moves along `axis`.
bool maskedAlong(const Kernel &k, size_t buf, size_t axis) {
  return !k.sts[buf].realStrides(false)[axis] && k.sts[buf].realStrides(true)[axis];
}
} // namespace

// Whether neither the index nor the validity of buffer `buf` moves along `axis`.
bool cpu_heuristics::independentOf(const Kernel &k, size_t buf, size_t axis) {
  auto rs = k.sts[buf].realStrides(false);
  return rs[axis] && rs[axis]->isInt() && rs[axis]->asInt() == 0;
}

bool cpu_heuristics::allFloat(const Kernel &k, bool half) {
  for (const KernelOp *b : k.bufs) {
    DType dt = b->bufferDType();
    if (dt != dtypes::float32 && dt != dtypes::float64 && !(half && dt.isHalfWidth())) return false;
  }
  return true;
}

int64_t cpu_heuristics::outputBytes(const Kernel &k) {
  int64_t n = 1;
  for (const auto &d : k.outputShape()) {
    if (!d.isInt()) return 0;
    n *= d.asInt();
  }
  return n * k.bufs[0]->bufferDType().itemsize();
}

// (strideOf .. largestDivisor are shared with HeuristicsCPUTiles.cpp: HeuristicsCPU.h says what
// each returns)
std::optional<int64_t> cpu_heuristics::strideOf(const Kernel &k, size_t buf, size_t axis) {
  auto rs = k.sts[buf].realStrides(true);
  if (!rs[axis] || !rs[axis]->isInt()) return std::nullopt;
  return rs[axis]->asInt();
}

bool cpu_heuristics::readsTransposed(const Kernel &k, size_t buf, size_t across, size_t along) {
  const ShapeTracker &st = k.sts[buf];
  if (st.views.size() != 1 || st.views.back().mask) return false;
  auto s = strideOf(k, buf, across);
  return s && *s != 0 && *s != 1 && strideOf(k, buf, along) == 1;
}

bool cpu_heuristics::unitOrBroadcastAlong(const Kernel &k, size_t axis, bool *anyUnit) {
  bool unit = false;
  for (size_t i = 1; i < k.bufs.size(); ++i) {
    if (k.bufs[i]->op == Op::Const) continue;
    auto s = strideOf(k, i, axis);
    if (!s || (*s != 0 && *s != 1)) return false;
    unit = unit || *s == 1;
  }
  if (anyUnit) *anyUnit = unit;
  return true;
}

bool cpu_heuristics::isIntSize(const Kernel &k, size_t axis) { return k.fullShape()[axis].isInt(); }

std::optional<size_t> cpu_heuristics::findVectorAxis(const Kernel &k, int64_t minSize) {
  int fr = k.firstReduce();
  for (int a = fr - 1; a >= 0; --a) {
    if (!isIntSize(k, a) || k.fullShape()[a].asInt() < minSize) continue;
    auto st = strideOf(k, 0, a);
    if (!st || *st != 1) continue;
    bool ok = true, anyUnit = false;
    for (size_t i = 1; i < k.bufs.size() && ok; ++i) {
      if (k.bufs[i]->op == Op::Const) continue;
      auto s = strideOf(k, i, a);
      ok = s && (*s == 0 || *s == 1);
      anyUnit = anyUnit || (s && *s == 1);
    }
    if (ok && anyUnit) return static_cast<size_t>(a);
  }
  return std::nullopt;
}

int64_t cpu_heuristics::largestDivisor(int64_t n, std::initializer_list<int64_t> options) {
  for (int64_t o : options)
    if (o <= n && n % o == 0) return o;
  return 1;
}

namespace {

bool hasTranscendental(const KernelOp &ast) {
  for (const KernelOp *x : ast.uniqueOps())
    if (isTranscendental(x->op)) return true;
  return false;
}

// Whether the kernel's transcendental math is where it decides the kernel's speed: anywhere in an
// element-wise kernel, inside the reduce of a reduce kernel. Math after the reduce (a matmul's
// exact GELU, its erf built on exp2) runs once per output, which the reduce's hundreds of steps
// amortize; it must not keep the matmul from its register tile (ViT-B/16's MLP, x @ W1 + b then
// GELU: 2.5 GFLOP/s untiled).
bool transcendentalMatters(const Kernel &k) {
  if (!k.reduceop) return hasTranscendental(*k.ast);
  for (const KernelOpRef &src : k.reduceop->src)
    if (hasTranscendental(*src)) return true;
  return false;
}

// For a reduce over inputs broadcast along different axes: an output axis along which an input
// that is broadcast along the vector axis varies, and every input that varies along the vector
// axis is broadcast.
std::optional<size_t> findTileAxis(const Kernel &k, size_t vec) {
  int fr = k.firstReduce();
  std::optional<size_t> best;
  std::vector<bool> inReduce = reduceInputs(k);
  for (int a = 0; a < fr; ++a) {
    if (static_cast<size_t>(a) == vec || !isIntSize(k, a) || k.fullShape()[a].asInt() < 2) continue;
    bool reuse = true, someVaries = false;
    for (size_t i = 1; i < k.bufs.size() && reuse; ++i) {
      if (k.bufs[i]->op == Op::Const || !inReduce[i]) continue;
      auto sv = strideOf(k, i, vec), sa = strideOf(k, i, a);
      if (!sv || !sa) {
        // a masked input (padding): treat it by its raw view strides
        reuse = false;
        break;
      }
      if (*sv != 0 && *sa != 0) reuse = false; // varies along both: no reuse
      if (*sv == 0 && *sa != 0) someVaries = true;
    }
    if (reuse && someVaries) best = static_cast<size_t>(a);
  }
  return best;
}

// The vector width for an axis of `size` elements of `bits` each: the fewest vector instructions
// per row of the axis (an instruction covers up to one register), then the least padding, then
// the widest. With AVX-512's masked loads and stores a size that no power of two divides is padded
// (PADTO) to a multiple of the width; `padded` returns the padded size (== size when none).
int64_t chooseWidth(int64_t size, int64_t bits, int vectorBits, bool allowPad, int64_t *padded) {
  int64_t best = 1, bestOps = 0, bestPad = 0;
  *padded = size;
  for (int64_t w : {32, 16, 8, 4}) {
    if (w > 64 || (!allowPad && size % w != 0)) continue;
    int64_t p = (size + w - 1) / w * w;
    if (p - size >= size) continue; // PADTO refuses to double the work
    int64_t ops = p / w * std::max<int64_t>(1, w * bits / vectorBits);
    if (best == 1 || ops < bestOps || (ops == bestOps && p < bestPad)) {
      best = w;
      bestOps = ops;
      bestPad = p;
    }
  }
  if (best > 1) *padded = bestPad;
  return best;
}

// The vector axis `vec` of a kernel, padded (PADTO) to whole vectors where it can be, and for a
// reduce with a tile axis the register tile of A @ B: rows of `tile` x the vector, the reduce
// unrolled, the vector-axis blocks outermost, packed panels where they pay (choosePanelPacking).
// Returns the refusal of the first opt that does not apply (`k` then holds the ones before it), or
// nullopt.
std::optional<std::string> applyVectorTile(Kernel &k, size_t vec, std::optional<size_t> tile) {
  bool wide = k.opts.vectorBits >= 512;
  int64_t vsize = k.fullShape()[vec].asInt();
  int64_t padded = vsize;
  bool canPad = wide && varsFromAst(*k.ast).empty();
  int64_t width = canPad ? chooseWidth(vsize, k.bufs[0]->bufferDType().itemsize() * 8, k.opts.vectorBits, true, &padded)
                       : largestDivisor(vsize, {16, 8, 4});
  // AVX2, a scattered output whose pixel rows only 7 divides (14 x 14, 7 x 7): one register of
  // channels per row, so that 7 rows of accumulators fit its 16 registers
  bool sevenRows = !wide && k.scatterOutput && tile && k.fullShape()[*tile].asInt() % 7 == 0 &&
                   k.fullShape()[*tile].asInt() % 4 != 0 && k.fullShape()[*tile].asInt() % 6 != 0 &&
                   vsize % 8 == 0;
  if (sevenRows) width = 8;
  if (width < 4) return std::nullopt;
  if (padded != vsize) {
    if (auto no = applyOrRefuse(k, {OptOp::PadTo, static_cast<int64_t>(vec), width})) return no;
    vsize = padded;
  }
  int64_t rows = 1;
  if (tile) {
    int64_t regsPerRow = std::max<int64_t>(1, width * 32 / k.opts.vectorBits);
    int64_t tsize = k.fullShape()[*tile].asInt();
    // accumulator registers: AVX-512 16 of its 32, AVX2 8 of its 16
    int64_t maxRows = std::max<int64_t>(1, (wide ? 16 : 8) / regsPerRow);
    for (int64_t r : {8, 6, 4, 3, 2})
      if (r <= maxRows && tsize % r == 0) {
        rows = r;
        break;
      }
    // where no tile fits: 5 rows (on AVX2 of 16 lanes, 10 accumulators, with a row's two loaded
    // vectors and a broadcast value 13 registers; on AVX-512 of up to 48 lanes). A convolution's
    // weight gradient with kw = 5 as the tile (TensorConv.cpp at OPT=5) ran on AVX2 at 191 GFLOP/s
    // against 25 without a tile, on AVX-512 (32 lanes) at 262 against 37; where 4 or 2 rows fit,
    // 5 ran 5-10% slower than they do.
    if (rows == 1 && tsize % 5 == 0 && 5 * regsPerRow <= (wide ? 16 : 10)) rows = 5;
    // a tile axis no tile divides (a prime: ViT's 197 tokens) is padded to whole tiles: the padded
    // rows read masked broadcast values and are never stored. x @ W for 197 x 768 @ 768 x 3072 ran
    // untiled at 2.5 GFLOP/s.
    if (rows == 1 && tsize >= (k.scatterOutput ? 12 : 16) && varsFromAst(*k.ast).empty())
      for (int64_t r : {8, 6, 4})
        if (r <= maxRows && (tsize + r - 1) / r * r - tsize <= tsize / (k.scatterOutput ? 4 : 8)) {
          if (auto no = applyOrRefuse(k, {OptOp::PadTo, static_cast<int64_t>(*tile), r})) return no;
          rows = r;
          break;
        }
    // a scattered output's tile of pixels (scatterTile) where only 2 or 3 rows divide: 7 or 5 on
    // AVX-512
    for (int64_t r : {7, 5})
      if ((wide || sevenRows) && k.scatterOutput && rows < 4 && tsize % r == 0 && r * regsPerRow <= (wide ? 16 : 8)) {
        rows = r;
        break;
      }
  }
  // upcast the tile axis first so that the vector axis ends up last (the lowering vectorizes the
  // last output upcast axis); an axis upcast by its whole size disappears (simplify_ones)
  int64_t vecAxis = static_cast<int64_t>(vec);
  if (rows > 1) {
    bool removed = rows == k.fullShape()[*tile].asInt();
    if (auto no = applyOrRefuse(k, {OptOp::Upcast, static_cast<int64_t>(*tile), rows})) return no;
    if (removed && static_cast<int64_t>(*tile) < vecAxis) --vecAxis;
  }
  bool vecRemains = width < vsize;
  if (auto no = applyOrRefuse(k, {OptOp::Upcast, vecAxis, width})) return no;
  // unroll a small last reduce axis, or a long one by 4. On AVX-512 a 5-wide one too: a padded
  // 5 x 5 convolution's window columns, unrolled, read a row of broadcast values whose masks are
  // fixed across the reduce loops (LowerCPUVector.cpp, laneLeaf): [512, 32, 24, 24] with padding 2
  // 56-60 -> 46.6 ms, unpadded unchanged; on AVX2 (16 registers) the transposed convolution over its
  // padded copy ran 5-10% slower unrolled, so there it stays at 4.
  if (k.reduceop) {
    int fr = k.firstReduce();
    int lastRed = static_cast<int>(k.shapeLen()) - k.upcasted - 1;
    if (lastRed >= fr && isIntSize(k, lastRed)) {
      int64_t r = k.fullShape()[lastRed].asInt();
      std::optional<std::string> no;
      if (r <= (wide ? 5 : 4)) no = applyOrRefuse(k, {OptOp::Unroll, lastRed - fr, 0});
      else if (r % 4 == 0 && r >= 64) no = applyOrRefuse(k, {OptOp::Unroll, lastRed - fr, 4});
      if (no) return no;
    }
  }
  // matmul-like: the vector-axis tiles become the outermost (and threaded) loop
  if (tile && vecRemains && vecAxis != 0 && vecAxis < k.globalDims())
    if (auto no = applyOrRefuse(k, {OptOp::Swap, 0, vecAxis})) return no;
  if (tile) choosePanelPacking(k);
  return std::nullopt;
}

// A reduce with no vector axis because the input that moves along the output's contiguous axis is
// read across it (B of A @ B^T: nn.Linear's x @ W.T, its weight read by columns): the register
// tile of A @ B all the same, when that input's lanes are gathered once per panel (packed,
// Kernel::packDepth) instead of in the reduce loop. Tried on a copy; returns whether it applied.
bool gatherPackedTile(Kernel &k) {
  if (!k.reduceop || !varsFromAst(*k.ast).empty()) return false;
  int fr = k.firstReduce();
  std::vector<bool> inReduce = reduceInputs(k);
  for (int v = fr - 1; v >= 0; --v) {
    if (!isIntSize(k, static_cast<size_t>(v)) || k.fullShape()[v].asInt() < 16 || strideOf(k, 0, static_cast<size_t>(v)) != 1)
      continue;
    for (int t = fr - 1; t >= 0; --t) {
      if (t == v || !isIntSize(k, static_cast<size_t>(t)) || k.fullShape()[t].asInt() < 2) continue;
      // every input of the reduce moves along one of the two axes at most: A along the tile's rows
      // (read as one value per row), B along the vector (packed)
      bool ok = true, rowsSide = false, vecSide = false;
      for (size_t i = 1; i < k.bufs.size() && ok; ++i) {
        if (k.bufs[i]->op == Op::Const || !inReduce[i]) continue;
        bool indV = independentOf(k, i, static_cast<size_t>(v)), indT = independentOf(k, i, static_cast<size_t>(t));
        ok = indV || indT;
        rowsSide = rowsSide || (indV && !indT);
        vecSide = vecSide || (!indV && indT);
      }
      if (!ok || !rowsSide || !vecSide) continue;
      Kernel c = k;
      // (an opt refused, or no packed panels)
      if (applyVectorTile(c, static_cast<size_t>(v), static_cast<size_t>(t)).has_value() || c.packDepth < 0) continue;
      k = std::move(c);
      return true;
    }
  }
  return false;
}

// Whether an input of the reduce that moves along the vector axis is also moved by a reduce axis
// less than a vector's span: a convolution's window sliding over its input rows (stride and
// dilation included), as opposed to B of A @ B, which a reduce step moves by a whole row.
bool slidingWindow(const Kernel &k, size_t vec, int64_t lanes) {
  std::vector<bool> inReduce = reduceInputs(k);
  for (size_t i = 1; i < k.bufs.size(); ++i) {
    if (k.bufs[i]->op == Op::Const || !inReduce[i]) continue;
    auto sv = strideOf(k, i, vec);
    if (!sv || *sv == 0) continue;
    for (size_t r = static_cast<size_t>(k.firstReduce()); r < k.shapeLen(); ++r) {
      auto sr = strideOf(k, i, r);
      if (sr && *sr != 0 && std::abs(*sr) < std::abs(*sv) * lanes) return true;
    }
  }
  return false;
}

// A convolution in NCHW: the output's contiguous axis (its rows, 56 wide) would be padded to whole
// vectors, wasting lanes in every multiply-add, while the tile's axis (the output channels, a
// multiple of 16) needs no padding. The two swap roles: the vector runs along the channels (the
// weights, read across it, packed into panels), the rows become the tile, and each output
// combination is scattered once after the reduce (Kernel::scatterOutput), which its hundreds of
// steps amortize. A C++ model of the layout ran W7 at 331-369 GFLOP/s against 271-273 for the padded
// one (bench/RESULTS.md).
//
// On AVX2 it also pays where the rows fill whole vectors, when no input is masked and the input
// read along the rows slides with the window (slidingWindow): a convolution over a window of 3 or
// 5 reads the input at a sliding offset, and the channel vector (8 or 16 of 32 or 64 channels)
// reuses each broadcast value more than the rows' vector reuses each weight. Measured on AVX2
// (GFLOP/s, scattered vs rows as the vector): W10's transposed convolutions, rows of 24 and of 8,
// 158-161 vs 43-63 and 141-143 vs 61-123; W7 without its padding 114-150 vs 103; but W7 padded
// 63-75 vs 95-101 (each broadcast value is then a gated load). Rows of 10, which AVX2 cannot pad
// to a vector, 93 vs 8 unvectorized. A @ B, whose B moves a whole row per reduce step, runs faster
// with N as the vector: W6 (B = 256) 6.5-6.6 vs 7.3-7.9 ms. Tried on a copy; returns whether it
// applied.
bool scatterTile(Kernel &k, size_t vec, size_t tile, bool strided = false) {
  if (!k.reduceop || !varsFromAst(*k.ast).empty() || (k.bufs[0]->bufferDType() != dtypes::float32 && !k.bufs[0]->bufferDType().isHalfWidth()))
    return false;
  bool wide = k.opts.vectorBits >= 512;
  int64_t lanes = k.opts.vectorBits / 32;
  int64_t vsize = k.fullShape()[vec].asInt(), tsize = k.fullShape()[tile].asInt();
  bool masked = std::any_of(k.sts.begin(), k.sts.end(), [](const ShapeTracker &st) {
    return std::any_of(st.views.begin(), st.views.end(), [](const View &v) { return v.hasMask(); });
  });
  if (vsize % lanes == 0 && (wide || masked || !slidingWindow(k, vec, lanes))) return false;
  // (and 4 to 8 rows per tile: with 2, a tile's accumulators do not hide the multiply-adds'
  // latency and the gathered panel costs more than the padding saves; x @ W for 10 outputs ran 3x
  // slower scattered, W10's second convolution, rows of 20 in tiles of 4, 1.6x faster; on AVX2, 10
  // rows in tiles of 2 all the same, for want of padding)
  // (AVX-512 also takes rows of 7, 14 accumulators of two registers: a 14-wide row, as a strided
  // convolution's downsampled 28 x 28 has, divides by no 8, 6 or 4; and rows of 5 where the rows
  // are strided, which leaves no other vector layout: 15 wide from 29 x 29)
  bool rowsDivide = vsize % 8 == 0 || vsize % 6 == 0 || vsize % 4 == 0 || ((!wide || strided) && vsize % 5 == 0) ||
                    vsize % 7 == 0;
  // (rows no tile divides, 13 or 27 wide as SqueezeNet's, are padded to whole tiles by
  // applyVectorTile: the padded pixels read masked inputs and are never stored)
  if (tsize % lanes != 0 || (!rowsDivide && vsize < 12)) return false;
  std::optional<int64_t> steps = cpu_heuristics::reduceLoopSteps(k);
  if (!steps || *steps < 64) return false;
  Kernel c = k;
  c.scatterOutput = true;
  if (applyVectorTile(c, tile, vec).has_value()) return false; // an opt was refused
  // (the weights packed along the vector, and rows of the tile along the old vector axis)
  if (c.packDepth < 0 || c.upcasted < 2) return false;
  k = std::move(c);
  return true;
}

// A strided convolution: the output's rows are contiguous, but the input moves along them by the
// stride, so they are no vector axis (findVectorAxis) and the kernel ran as a scalar loop (3 x 3,
// stride 2, 128 channels, 28 x 28 -> 14 x 14: 8 GFLOP/s). The channel-vector layout (scatterTile)
// reads the rows' inputs as broadcast values, so their stride does not matter: the output channels
// become the vector, a tile of the row's pixels the register tile (120-158 GFLOP/s). Tried on a
// copy; returns whether it applied.
bool stridedScatter(Kernel &k) {
  int fr = k.firstReduce();
  for (int o = fr - 1; o >= 0; --o) {
    if (!isIntSize(k, static_cast<size_t>(o)) || strideOf(k, 0, static_cast<size_t>(o)) != 1) continue;
    // the output's contiguous axis is the tile's rows; scatterTile takes another output axis of
    // whole vectors as the vector (and refuses kernels without a reduce or with symbolic sizes)
    for (int t = 0; t < fr; ++t)
      if (t != o && scatterTile(k, static_cast<size_t>(o), static_cast<size_t>(t), true)) return true;
    return false;
  }
  return false;
}

} // namespace

void applyCPUHeuristics(Kernel &k) {
  if (k.shapeLen() == 0) return;
  bool transcendental = transcendentalMatters(k);
  // float16 and bfloat16 kernels, computed in float32 lanes, take the float kernels' tiles (a
  // 1024^3 float16 matmul 5.5 -> 96 GFLOP/s), but with exp2/log2/sin they keep the column tile,
  // whose loops LLVM vectorizes at a copy's speed (2048 x 2048 float16 exp: 0.9 ms, x * 2: 0.6)
  if (!allFloat(k, !transcendental)) {
    columnTile(k);
    return;
  }
  bool wide = k.opts.vectorBits >= 512;
  bool concrete = varsFromAst(*k.ast).empty(); // no symbolic sizes
  auto vec = findVectorAxis(k, wide && k.reduceop && concrete ? 3 : 4);
  // kernels with exp2/log2/sin are left to the loop vectorizer, except for streaming stores
  if (transcendental && (!vec || k.reduceop || *vec + 1 != static_cast<size_t>(k.firstReduce()))) return;
  if (!vec) {
    // AVX2: a vector axis of 3 (a 3x3 conv's weight gradient, kw) as AVX-512 takes it, for dot
    // products along the reduce axis (W10's fourth weight gradient: 600 ms a step unvectorized)
    if (!wide && k.reduceop && !transcendental && concrete && findVectorAxis(k, 3) &&
        reduceVectorize(k))
      return;
    if (stridedScatter(k)) return;
    if (gatherPackedTile(k)) return;
    if (tileDotProducts(k, wide)) return;
    if (!transcendental && concrete && gatherVectorize(k)) return;
    if (!transcendental && concrete && blockRowRuns(k)) return;
    if (transposeTile(k)) return;
    // no vector axis: unroll a small last reduce axis, as the reference does
    if (k.reduceop && k.firstReduce() < static_cast<int>(k.shapeLen()) - k.upcasted) {
      size_t last = k.shapeLen() - k.upcasted - 1;
      if (isIntSize(k, last) && k.fullShape()[last].asInt() <= 4)
        k.applyOpt({OptOp::Unroll, static_cast<int64_t>(last) - k.firstReduce(), 0});
    }
    return;
  }
  int64_t vsize = k.fullShape()[*vec].asInt();
  // an output vector of fewer than 8 lanes: dot products along the reduce axis instead, if it can
  if (k.reduceop && vsize < 8 && !transcendental && concrete && reduceVectorize(k))
    return;
  // element-wise kernels are vectorized well by LLVM over their innermost loop; a large one also
  // streams its output past the caches (a cache-line-wide vector store per iteration)
  if (!k.reduceop && *vec + 1 == static_cast<size_t>(k.firstReduce())) {
    DType out = k.bufs[0]->bufferDType();
    int64_t lanes = 64 / out.itemsize();
    if (outputBytes(k) >= kStreamingStoreBytes && vsize % lanes == 0) {
      k.applyOpt({OptOp::Upcast, static_cast<int64_t>(*vec), lanes});
      k.streamingStores = true;
    }
    return;
  }
  // a row reduction over a contiguous axis is vectorized by LLVM along the reduce loop, unless
  // that axis is shorter than a vector (a depthwise convolution's window: the output's axis is the
  // vector then; 3 x 3 over [32, 64, 56, 56] with padding 1 13.3 -> 1.6-1.8 ms, 5 x 5 67 -> 10-12)
  // or an input's validity changes along it (a window sliding over padding: cumsum's pool, where
  // LLVM kept the reduce loop scalar; the output's axis as the vector reads it with masked loads)
  // (the tile axis is found before padding: a second mask on a padded input hides its strides)
  std::optional<size_t> tile = k.reduceop ? findTileAxis(k, *vec) : std::nullopt;
  if (k.reduceop) {
    size_t lastRed = k.shapeLen() - k.upcasted - 1;
    bool contiguousReduce = unitOrBroadcastAlong(k, lastRed);
    bool shortReduce = isIntSize(k, lastRed) && k.fullShape()[lastRed].asInt() < 8;
    bool maskedReduce = false;
    for (size_t i = 1; i < k.bufs.size(); ++i)
      maskedReduce = maskedReduce || (k.bufs[i]->op != Op::Const && maskedAlong(k, i, lastRed));
    if (contiguousReduce && !tile && !shortReduce && !maskedReduce) return;
  }

  if (tile && scatterTile(k, *vec, *tile)) return;
  // (a refused opt fails the compile with the UnsupportedError applyOpt throws)
  if (std::optional<std::string> no = applyVectorTile(k, *vec, tile)) throw UnsupportedError(*no);
}

} // namespace lazyjit
