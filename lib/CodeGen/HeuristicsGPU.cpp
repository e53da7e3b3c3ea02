// GPU kernel optimizations (see Heuristics.h): the reference's hand_coded_optimizations for CUDA,
// step by step, plus one step of our own (row reductions with many rows get a block per row).
//
//   1. MATVEC: a SUM of a MUL of two LOADs reading the first operand with unit stride along the
//      reduce gets GROUP(0,8), LOCAL(axis,4), UPCAST(axis,4) (8 threads per row, 4 rows).
//   2. Grouped reduce: at most 2048 outputs share the reduce across GROUPTOP(0,256) threads (at
//      most 32 outputs) or GROUPTOP(0,16). Beyond the reference, a unit-stride reduce of 256 or
//      more over more outputs is grouped too (256..8 threads per row), so a row softmax or
//      layernorm runs a block per row instead of one thread per row.
//   3. After grouping nothing else is done (the partials live in shared memory per thread).
//   4. Masked upcast: small padded axes (Tensor.stack/cat) are unrolled completely.
//   5. Upcasts of broadcast axes by 3 or 4 while there are >= 1024 outputs (register reuse).
//   6. Reduce unroll: the last reduce axis fully if <= 32, else by 4.
//   7. If nothing is upcast, the last axis by 4 (a unit-stride axis becomes a vector load).
//   8. Locals: up to three global axes, broadcast axes first, then the faster-varying ones, with
//      at most 128 threads per block. The last local axis launches on threadIdx.x, so the
//      fastest-varying output axis is the one that coalesces.
// Grid limits (y and z at most 65535 blocks) are handled by the launch mapping (GPULaunch.h).
#include "GPULaunch.h"
#include "Heuristics.h"
#include "lazyjit/Support/Logging.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace lazyjit {

namespace {

constexpr int64_t kMvBlockSize = 4, kMvThreadsPerRow = 8, kMvRowsPerThread = 4;

bool isIntEq(const std::optional<SInt> &s, int64_t v) { return s && s->isInt() && s->asInt() == v; }
bool intDivides(const SInt &s, int64_t d) { return s.isInt() && s.asInt() % d == 0; }

int unupcastedLen(const Kernel &k) { return static_cast<int>(k.shapeLen()) - k.upcasted; }

// The reference's float4_axis(i): upcast axes where buffer i has unit stride and a size % 4 == 0.
bool hasFloat4Axis(const Kernel &k, size_t i) {
  for (int64_t a : k.sts[i].unitStrideAxes())
    if (a >= unupcastedLen(k) && intDivides(k.sts[i].shape()[a], 4)) return true;
  return false;
}

bool hasExpandedAxis(const ShapeTracker &st) {
  auto strides = st.realStrides();
  for (size_t i = 0; i < strides.size(); ++i)
    if (st.shape()[i].isInt() && st.shape()[i].asInt() > 1 && isIntEq(strides[i], 0)) return true;
  return false;
}

void apply(Kernel &k, OptOp op, int64_t axis, int64_t amt) {
  k.applyOpt(Opt{op, axis, amt});
  LAZYJIT_LOG(CodeGen, 4, "gpu heuristics: {} -> {}", k.appliedOpts.back().str(), k.name());
}

bool matvec(Kernel &k) {
  if (!k.reduceop || k.reduceop->op != Op::Sum || k.shapeLen() < 2) return false;
  const KernelOp &mul = *k.reduceop->src[0];
  if (mul.op != Op::Mul || mul.src[0]->op != Op::Load || mul.src[1]->op != Op::Load) return false;
  size_t b0 = k.bufIndex(mul.src[0].get()), b1 = k.bufIndex(mul.src[1].get());
  int fr = k.firstReduce();
  if (!isIntEq(k.sts[b0].realStrides()[fr], 1)) return false;
  if (hasExpandedAxis(k.sts[b0]) && hasExpandedAxis(k.sts[b1])) return false;
  for (int g = 0; g < k.globalDims(); ++g) {
    if (!intDivides(k.fullShape()[fr], kMvThreadsPerRow) ||
        !intDivides(k.fullShape()[g], kMvBlockSize * kMvRowsPerThread))
      continue;
    apply(k, OptOp::Group, 0, kMvThreadsPerRow);
    apply(k, OptOp::Local, g, kMvBlockSize);
    apply(k, OptOp::Upcast, g, kMvRowsPerThread);
    return true;
  }
  return false;
}

// True if every buffer's dim at `axis` is divisible by `sz` (or is 1).
bool groupFits(const Kernel &k, int axis, int64_t sz) {
  for (const auto &st : k.sts) {
    const SInt &d = st.shape()[axis];
    if (!(intDivides(d, sz) || pyEq(d, 1))) return false;
  }
  return true;
}

void groupReduce(Kernel &k) {
  int fr = k.firstReduce();
  if (!k.reduceop || fr + 1 > static_cast<int>(k.shapeLen())) return;
  Shape outDims(k.sts[0].shape().begin(), k.sts[0].shape().begin() + fr);
  if (allInt(outDims) && !hasFloat4Axis(k, 0) && fr <= 2 && prodInt(outDims) <= 2048) {
    std::vector<int64_t> sizes = prodInt(outDims) <= 32 ? std::vector<int64_t>{256, 16} : std::vector<int64_t>{16};
    for (int64_t sz : sizes)
      if (groupFits(k, fr, sz)) {
        apply(k, OptOp::GroupTop, 0, sz);
        return;
      }
  }
  // many rows reduced along unit stride (softmax, layernorm): a block of threads per row
  const SInt &r = k.fullShape()[fr];
  if (!r.isInt() || r.asInt() < 256 || !isIntEq(k.sts[k.fullBufIndex].realStrides()[fr], 1)) return;
  for (int64_t sz : {256, 128, 64, 32, 16, 8})
    if (r.asInt() / sz >= 4 && groupFits(k, fr, sz)) {
      apply(k, OptOp::GroupTop, 0, sz);
      return;
    }
}

void maskedUpcast(Kernel &k) {
  int fr = k.firstReduce();
  int64_t upcastProd = 1;
  for (int a = unupcastedLen(k); a < static_cast<int>(k.shapeLen()); ++a) upcastProd *= k.fullShape()[a].asInt();
  std::vector<int> picked;
  int64_t pickedProd = 1;
  for (int a = 0; a < fr; ++a) {
    const SInt &s = k.fullShape()[a];
    if (!s.isInt() || s.asInt() > 7) continue;
    bool masked = std::any_of(k.sts.begin(), k.sts.end(), [&](const ShapeTracker &st) { return st.axisIsMasked(a); });
    if (masked && upcastProd * pickedProd * s.asInt() <= 49) {
      picked.push_back(a);
      pickedProd *= s.asInt();
    }
  }
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) apply(k, OptOp::Upcast, *it, 0);
}

void broadcastUpcasts(Kernel &k) {
  std::set<int> upcastedAxes;
  while (true) {
    int fr = k.firstReduce();
    Shape outDims(k.sts[0].shape().begin(), k.sts[0].shape().begin() + fr);
    if (!allInt(outDims) || prodInt(outDims) < 1024) return;
    std::optional<std::tuple<int64_t, int64_t, int, int64_t>> best;
    for (int a = 0; a < fr; ++a) {
      if (upcastedAxes.count(a) || !k.fullShape()[a].isInt()) continue;
      for (int64_t amt : {3, 4}) {
        if (k.fullShape()[a].asInt() % amt != 0) continue;
        bool candidate = false, symbolic = false;
        int64_t positive = 0, strideSum = 0;
        for (const auto &st : k.sts) {
          const SInt &s = st.views.back().strides[a];
          if (!s.isInt()) {
            symbolic = true;
            break;
          }
          positive += s.asInt() > 0;
          strideSum += s.asInt();
          if (s.asInt() != 0) continue;
          // a broadcast here, and none among this buffer's upcast axes yet
          auto rs = st.realStrides();
          bool upcastBroadcast = false;
          for (int u = unupcastedLen(k); u < static_cast<int>(k.shapeLen()); ++u) upcastBroadcast |= isIntEq(rs[u], 0);
          candidate |= !upcastBroadcast;
        }
        if (!candidate || symbolic) continue;
        auto key = std::make_tuple(positive, strideSum, a, amt);
        if (!best || key < *best) best = key;
      }
    }
    if (!best) return;
    apply(k, OptOp::Upcast, std::get<2>(*best), std::get<3>(*best));
    upcastedAxes.insert(std::get<2>(*best));
  }
}

void reduceUnroll(Kernel &k) {
  int fr = k.firstReduce();
  if (fr >= unupcastedLen(k)) return;
  // shape_offsets of the full buffer, and whether one of its upcast axes is a reduce
  int64_t offsets = 1, upcastProd = 1;
  bool upcastReduce = false;
  for (int a = unupcastedLen(k); a < static_cast<int>(k.shapeLen()); ++a) {
    offsets *= k.sts[k.fullBufIndex].shape()[a].asInt();
    upcastProd *= k.fullShape()[a].asInt();
    upcastReduce |= pyNe(k.sts[0].shape()[a], k.fullShape()[a]);
  }
  if (!(offsets <= 4 || !upcastReduce) || !(k.upcasted == 0 || upcastProd < 64)) return;
  const SInt s = k.fullShape()[unupcastedLen(k) - 1]; // a copy: apply() rebuilds the shapes
  if (s.isInt() && s.asInt() <= 32) {
    apply(k, OptOp::Unroll, unupcastedLen(k) - 1 - fr, 0);
    if (fr < unupcastedLen(k) && s.asInt() <= 3) {
      const SInt s2 = k.fullShape()[unupcastedLen(k) - 1];
      if (s2.isInt() && s2.asInt() <= 3) apply(k, OptOp::Unroll, unupcastedLen(k) - 1 - fr, 0);
    }
  } else if (intDivides(s, 4)) {
    apply(k, OptOp::Unroll, unupcastedLen(k) - 1 - fr, 4);
  }
}

void defaultUpcast(Kernel &k) {
  int last = unupcastedLen(k) - 1;
  if (k.upcasted == 0 && last >= 0 && last < k.firstReduce() && intDivides(k.fullShape()[last], 4))
    apply(k, OptOp::Upcast, last, 4);
}

void locals(Kernel &k) {
  int fr = k.firstReduce();
  // broadcast axes first, then the higher (faster-varying) axes
  std::vector<std::pair<bool, int>> ranking;
  for (int a = 0; a < fr; ++a) {
    bool expand = std::any_of(k.sts.begin(), k.sts.end(), [&](const ShapeTracker &st) {
      const SInt &s = st.views.back().strides[a];
      return s.isInt() && s.asInt() == 0;
    });
    ranking.push_back({expand, a});
  }
  std::sort(ranking.begin(), ranking.end(),
            [](const auto &x, const auto &y) { return std::make_pair(!x.first, -x.second) < std::make_pair(!y.first, -y.second); });
  std::vector<std::pair<int, int64_t>> toLocal;
  int64_t threads = 1;
  for (const auto &[expand, a] : ranking) {
    std::vector<int64_t> cands = {16, 8, 4, 3, 2};
    if (a == 0) cands.insert(cands.begin(), 32);
    for (int64_t c : cands)
      if (intDivides(k.fullShape()[a], c) && threads * c <= 128) {
        toLocal.push_back({a, c});
        threads *= c;
        break;
      }
  }
  if (toLocal.size() > 3) toLocal.resize(3);
  std::sort(toLocal.begin(), toLocal.end());
  int deleted = 0;
  for (auto [a, sz] : toLocal) {
    int axis = a - deleted;
    bool whole = pyEq(k.fullShape()[axis], sz);
    apply(k, OptOp::Local, axis, sz);
    deleted += whole;
  }
}

} // namespace

void applyGPURowHeuristics(Kernel &k) {
  // enough threads that each reads a few of the row's elements, as a power of two for the tree
  // that combines their partials; 256 keeps 8 warps per row, as the grouped reduces do
  constexpr int64_t kRowThreads = 256;
  int64_t elems = rowElements(k), t = 1;
  while (t < kRowThreads && t < elems) t *= 2;
  k.rowThreads = t;
  // moments only where each pass re-reads the row from memory: a row held in registers (every
  // thread the same steps, at most kRowRegisterSteps: LowerNVPTXRow.cpp rowPass) keeps its
  // variance pass, which reads no memory there, rather than pay a division per element for it
  if (elems % t != 0 || elems / t > kRowRegisterSteps) chooseRowMoments(k);
}

void applyGPUHeuristics(Kernel &k) {
  if (k.shapeLen() == 0) return;
  if (k.opts.hasShared && matvec(k)) return;
  if (k.opts.hasShared) groupReduce(k);
  if (!k.groupForReduce.empty()) return;
  maskedUpcast(k);
  broadcastUpcasts(k);
  reduceUnroll(k);
  defaultUpcast(k);
  locals(k);
}

} // namespace lazyjit
