// The expression evaluator of kernel lowering (see LowerCore.h): a kernel's element-wise tree at
// given indices, for one element or a vector of lanes, from its leaves (loads and constants), the
// row values computed before a pass, and the row scratch arrays.
#include "LowerCore.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Support/Error.h"

#include <unordered_map>

namespace lazyjit {

using namespace llvm;

Val KernelEmitter::loadLeaf(const KernelOp &op, const std::vector<NodeRef> &idxs) {
  size_t bi = bufIndex(&op);
  auto [idx, valid] = access(bi, idxs);
  DType dt = op.bufferDType();
  std::string key = loadKey(bi, *idx, *valid);
  if (auto it = loadCache.find(key); it != loadCache.end()) return it->second;
  Val out;
  bool alwaysValid = valid->isNum() && valid->num != 0;
  bool neverValid = valid->isNum() && valid->num == 0;
  if (neverValid) {
    out = vb.constant(0, dt);
  } else if (op.op == Op::Const) {
    Val c = vb.constant(op.constBuffer().val, dt);
    out = alwaysValid ? c : Val{b.CreateSelect(asI1(render(*valid)), c.v, vb.constant(0, dt).v), dt};
  } else {
    int mi = op.memBuffer().idx;
    Value *ptr = bufPtrs.at(mi);
    if (alwaysValid) {
      Value *ix = asIdx(render(*idx));
      checkAccess(mi, ix, nullptr);
      out = vb.load(ptr, ix, dt);
    } else {
      // a gated load: the address is clamped to element 0 when invalid, so memory out of bounds
      // is never touched
      Value *gate = asI1(render(*valid));
      checkAccess(mi, asIdx(render(*idx)), gate);
      Value *safeIdx = b.CreateSelect(gate, asIdx(render(*idx)), idxConst(0));
      Val v = vb.load(ptr, safeIdx, dt);
      out = {b.CreateSelect(gate, v.v, vb.constant(0, dt).v), dt};
    }
  }
  loadCache[key] = out;
  return out;
}

Value *KernelEmitter::shiftedValue(Value *x, Value *shift) {
  llvm::IRBuilderBase::FastMathFlagGuard strict(b);
  b.setFastMathFlags(llvm::FastMathFlags());
  return b.CreateFSub(x, shift);
}

void KernelEmitter::welfordStep(Value *value, Value *&mean, Value *&m2, Value *inv) {
  // delta = v - mean; mean += delta / n; m2 += delta * (v - mean') = delta^2 * (1 - 1/n): two
  // multiply-adds (fmuladd lets the backend fuse them), a multiply and a subtraction, without reassoc
  // (shiftedValue; with it a row of 1e4 + U(-1, 1) lost 2 digits of its variance)
  llvm::IRBuilderBase::FastMathFlagGuard strict(b);
  b.setFastMathFlags(llvm::FastMathFlags());
  llvm::Type *t = value->getType();
  Value *delta = b.CreateFSub(value, mean);
  mean = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {delta, inv, mean});
  Value *keep = b.CreateFSub(llvm::ConstantFP::get(t, 1.0), inv);
  m2 = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t}, {b.CreateFMul(delta, keep), delta, m2});
}

std::vector<Value *> KernelEmitter::startRowMoments(const std::vector<NodeRef> &idxs, std::vector<Value *> &carried,
                                                   size_t copies, int64_t lanes) {
  size_t nm = k.rowMoments.size();
  note("and the running mean and squared deviations of {} value{} (Welford){}, shifted by the median of the row's "
       "first, middle and last", nm, nm == 1 ? "" : "s", lanes ? ", per lane" : "");
  // The shift keeps Welford's running mean near 0, where its rounding is small against the
  // spread. The row's first element alone was not enough: an outlier there put the shifted mean
  // at -1000 in a row of U(-1, 1), and its rounding cost 2.5 ulp of layernorm's largest output on
  // 8 lanes (0.5 ulp for three kernels). The median of three is an outlier only if two are.
  std::vector<NodeRef> at[3] = {idxs, idxs, idxs};
  const Shape &full = k.fullShape();
  for (size_t a = static_cast<size_t>(k.rowStart); a < idxs.size(); ++a) {
    int64_t n = full[a].isInt() ? full[a].asInt() : 1;
    at[0][a] = numNode(0);
    at[1][a] = numNode(n / 2);
    at[2][a] = numNode(std::max<int64_t>(n - 1, 0));
  }
  std::vector<Value *> shifts;
  for (const auto &mo : k.rowMoments) {
    DType dt = dtypeOf(*mo.reduce);
    Value *v[3];
    for (int i = 0; i < 3; ++i) v[i] = vb.convert(eval(*mo.value, at[i], nullptr), dt, false).v;
    // max(min(a, b), min(max(a, b), c)); (a NaN among them: the row's moments are NaN anyway)
    shifts.push_back(b.CreateMaxNum(b.CreateMinNum(v[0], v[1]), b.CreateMinNum(b.CreateMaxNum(v[0], v[1]), v[2])));
    Value *zero = vb.constant(0.0, dt).v;
    carried.insert(carried.end(), 2 * copies, lanes ? b.CreateVectorSplat(static_cast<unsigned>(lanes), zero) : zero);
  }
  carried.push_back(vb.constant(0.0, dtypeOf(*k.rowMoments[0].reduce)).v);
  return shifts;
}

Value *KernelEmitter::countRowElement(Value *count, Value *&inv) {
  Value *one = ConstantFP::get(count->getType(), 1.0);
  count = b.CreateFAdd(count, one);
  inv = b.CreateFDiv(one, count);
  return count;
}

void KernelEmitter::rowMomentSteps(const std::vector<NodeRef> &ix, const std::vector<Value *> &shifts, Value *inv,
                                   const std::vector<Value *> &cur, size_t at, size_t copies, size_t u,
                                   int64_t lanes, std::vector<Value *> &next) {
  auto spread = [&](Value *x) { return lanes ? b.CreateVectorSplat(static_cast<unsigned>(lanes), x) : x; };
  DType cdt = dtypeOf(*k.rowMoments[0].reduce);
  for (size_t j = 0; j < k.rowMoments.size(); ++j) {
    DType dt = dtypeOf(*k.rowMoments[j].reduce);
    size_t i = at + 2 * j * copies + u;
    Value *mean = cur[i], *m2 = cur[i + copies];
    Value *v = shiftedValue(vb.convert(eval(*k.rowMoments[j].value, ix, nullptr, lanes), dt, false).v, spread(shifts[j]));
    welfordStep(v, mean, m2, spread(vb.convert(Val{inv, cdt}, dt, false).v));
    next[i] = mean;
    next[i + copies] = m2;
  }
}

Val KernelEmitter::squaredDeviations(Value *mean, Value *m2, Value *count, Value *shift, const Val &center, DType dt) {
  Value *c = vb.convert(center, dt, false).v;
  // (all without reassoc or nsz: InstCombine would turn mean - (c - s) into mean + (s - c) with
  // the outer flags, and reassociation could then form (mean + s) - c)
  IRBuilderBase::FastMathFlagGuard strict(b);
  b.setFastMathFlags(FastMathFlags());
  Value *d = b.CreateFSub(mean, shiftedValue(c, shift)); // (the mean is of the shifted values)
  Value *r = b.CreateFAdd(m2, b.CreateFMul(count, b.CreateFMul(d, d)));
  Value *zero = vb.constant(0.0, dt).v;
  return Val{b.CreateSelect(b.CreateFCmpOGT(count, zero), r, zero), dt};
}

const Val *KernelEmitter::rowValue(const KernelOp &op) const {
  auto v = rowValues.find(&op);
  return v == rowValues.end() ? nullptr : &v->second;
}

void KernelEmitter::setRowValue(const KernelOp &expand, const std::vector<NodeRef> &idxs) {
  std::vector<NodeRef> atRowStart = idxs;
  for (size_t a = static_cast<size_t>(k.rowStart); a < atRowStart.size(); ++a) atRowStart[a] = numNode(0);
  rowValues[&expand] = eval(*expand.src[0], atRowStart, nullptr);
}

Val KernelEmitter::eval(const KernelOp &root, const std::vector<NodeRef> &idxs, const Val *acc, int64_t lanes) {
  // A row value is one per row: on lanes, the same in each.
  auto spread = [&](const Val &v) {
    if (!lanes || v.v->getType()->isVectorTy()) return v;
    return Val{b.CreateVectorSplat(static_cast<unsigned>(lanes), v.v), v.dt};
  };
  // The value of a node that needs no operands evaluated: a leaf, a row value, the accumulator, an
  // element a scratch array holds.
  auto direct = [&](const KernelOp &op) -> std::optional<Val> {
    if (isBufferOp(op.op)) return lanes ? laneLeaf(op, idxs, lanes) : loadLeaf(op, idxs);
    if (const Val *v = rowValue(op)) return spread(*v);
    if (isReduceOp(op.op)) {
      LAZYJIT_INTERNAL_CHECK(acc, "codegen: reduce evaluated outside its accumulator");
      return *acc;
    }
    LAZYJIT_INTERNAL_CHECK(opTypeOf(op.op) != OpType::Movement, "codegen: {} evaluated before its row value",
                           opName(op.op));
    return scratchLoad(op, lanes);
  };
  // operands left to right (the order of the instructions), each node once
  std::unordered_map<const KernelOp *, Val> done;
  std::vector<Val> operands;
  walkOps(root, [&](const KernelOp &op) {
    std::optional<Val> v = direct(op);
    if (v) done.emplace(&op, *v);
    return !v;
  }, [&](const KernelOp &op) {
    if (done.count(&op)) return;
    operands.clear();
    for (const auto &x : op.src) operands.push_back(done.at(x.get()));
    Val v = evalAlu(op, operands);
    scratchStore(op, lanes, v);
    done.emplace(&op, v);
  });
  return done.at(&root);
}

Val KernelEmitter::laneLeaf(const KernelOp &op, const std::vector<NodeRef> &, int64_t lanes) {
  LAZYJIT_INTERNAL_CHECK(false, "codegen: {} on {} lanes in a driver without a vector mode", opName(op.op), lanes);
  return {};
}

KernelEmitter::RowScratch *KernelEmitter::scratchOf(const KernelOp &op) {
  if (!rowIndex || rowScratch.empty()) return nullptr;
  auto it = rowScratch.find(&op);
  return it == rowScratch.end() ? nullptr : &it->second;
}

Value *KernelEmitter::scratchAddress(const RowScratch &sc, int64_t lanes, llvm::Type *&t, llvm::Align &align) {
  t = lanes ? llvm::VectorType::get(sc.type, static_cast<unsigned>(lanes), false) : sc.type;
  const llvm::DataLayout &dl = m.getDataLayout();
  align = lanes ? llvm::Align(std::min<uint64_t>(dl.getTypeAllocSize(t), 64)) : dl.getABITypeAlign(sc.type);
  return b.CreateInBoundsGEP(sc.type, sc.ptr, rowIndex);
}

std::optional<Val> KernelEmitter::scratchLoad(const KernelOp &op, int64_t lanes) {
  RowScratch *sc = scratchOf(op);
  if (!sc || !sc->filled) return std::nullopt;
  llvm::Type *t;
  llvm::Align align;
  Value *at = scratchAddress(*sc, lanes, t, align);
  return Val{b.CreateAlignedLoad(t, at, align), dtypeOf(op)};
}

void KernelEmitter::scratchStore(const KernelOp &op, int64_t lanes, const Val &v) {
  RowScratch *sc = scratchOf(op);
  if (!sc) return;
  llvm::Type *t;
  llvm::Align align;
  Value *at = scratchAddress(*sc, lanes, t, align);
  // the array holds dtypeOf(op), what scratchLoad reads back (a CMPLT's value is a bool)
  b.CreateAlignedStore(vb.convert(v, dtypeOf(op), false).v, at, align);
  rowScratchStored.push_back(&op);
}

Val KernelEmitter::evalAlu(const KernelOp &op, std::vector<Val> s) {
  DType dt = dtypeOf(op);
  if (op.op == Op::Cast) {
    const auto &ca = std::get<CastArg>(op.arg);
    return ca.bitcast ? vb.bitcast(s[0], ca.dtype) : vb.convert(s[0], ca.dtype, true);
  }
  if (op.op == Op::Where) {
    Value *c = vb.truthy(s[0]);
    Val y = vb.convert(s[1], dt, false), z = vb.convert(s[2], dt, false);
    return {b.CreateSelect(c, y.v, z.v), dt};
  }
  for (auto &v : s) v = vb.convert(v, dt, false);
  return vb.alu(op.op, s, dt);
}

} // namespace lazyjit
