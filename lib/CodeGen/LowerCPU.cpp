// The CPU driver of kernel lowering: loops with explicit phis for the loop counters and
// accumulators, index/validity expressions from the ShapeTrackers rendered as i64 arithmetic,
// gated loads that never touch memory out of bounds, and stores cast to the buffer dtype.
//
// For a CPU target, a kernel `r_16_1024` over `out[i] = sum_j in[i*1024 + j]` becomes
//
//   define internal void @k.impl(ptr noalias %data0, ptr noalias %data1, i64 %start, i64 %end)
//   loop.gidx0:                             ; for gidx0 in [start, end)
//     %gidx0 = phi i64 [ %start, %entry ], [ %gidx0.next, %loop.ridx1.exit ]
//   loop.ridx1:                             ; for ridx1 in [0, 1024)
//     %ridx1 = phi i64 [ 0, %loop.gidx0 ], [ %ridx1.next, %loop.ridx1 ]
//     %acc0 = phi float [ 0.0, %loop.gidx0 ], [ %5, %loop.ridx1 ]
//     %4 = load float, ptr (gep %data1, gidx0*1024 + ridx1)
//     %5 = fadd reassoc nsz arcp contract afn float %4, %acc0
//   loop.ridx1.exit:
//     store float %5, ptr (gep %data0, %gidx0)
//
// plus the uniform entry point `@k(ptr %bufs, ptr %vars, i64 %start, i64 %end)` that loads the
// buffer pointers and variable values and calls the (inlined) implementation, and `@k_range`.
#include "LowerCore.h"
#include "LowerKernel.h"
#include "VectorMath.h"
#include "lazyjit/Support/Error.h"


#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/TargetParser/Triple.h>

#include <optional>
#include <set>

namespace lazyjit {

using namespace llvm;

namespace {

// CPU math: sqrt is an instruction; exp2/log2/sin are calls to the C library by name, marked as
// not touching memory, so that the loop vectorizer can replace them with glibc's vector variants
// (libmvec, mapped in Compiler.cpp) and the scalar remainder calls libm.
class CPUMath : public MathLowering {
public:
  Value *unary(IRBuilder<> &b, Op op, Value *x) override {
    if (op == Op::Sqrt) return b.CreateUnaryIntrinsic(Intrinsic::sqrt, x);
    bool dbl = x->getType()->isDoubleTy();
    const char *name = nullptr;
    switch (op) {
    case Op::Exp2: name = dbl ? "exp2" : "exp2f"; break;
    case Op::Log2: name = dbl ? "log2" : "log2f"; break;
    case Op::Sin: name = dbl ? "sin" : "sinf"; break;
    default: LAZYJIT_INTERNAL_CHECK(false, "codegen: {} is not a math op", opName(op));
    }
    Module *m = b.GetInsertBlock()->getModule();
    FunctionCallee f = m->getOrInsertFunction(name, FunctionType::get(x->getType(), {x->getType()}, false));
    if (auto *fn = dyn_cast<Function>(f.getCallee())) {
      fn->setDoesNotAccessMemory();
      fn->setDoesNotThrow();
      fn->addFnAttr(Attribute::WillReturn);
    }
    CallInst *call = b.CreateCall(f, {x});
    call->setDoesNotAccessMemory();
    return call;
  }
};

// The libmvec variant (VectorMath.h) of exp2/log2/sin for `lanes`-wide vectors: the widest
// register whose lane count divides `lanes`, as {name, lanes per call}.
std::optional<std::pair<std::string, int64_t>> vectorMathFn(Op op, DType dt, int64_t lanes, int vectorBits,
                                                           const Triple &triple) {
  if (!triple.isX86() || !triple.isOSLinux() || vectorBits < 256) return std::nullopt;
  if (dt != dtypes::float32 && dt != dtypes::float64) return std::nullopt;
  bool dbl = dt == dtypes::float64;
  const char *base = op == Op::Exp2 ? "exp2" : op == Op::Log2 ? "log2" : op == Op::Sin ? "sin" : nullptr;
  if (!base) return std::nullopt;
  auto fn = findVectorMathFn(std::string(base) + (dbl ? "" : "f"));
  if (!fn) return std::nullopt;
  for (bool zmm : {true, false}) {
    if (zmm && vectorBits < 512) continue;
    unsigned width = 0;
    std::string name = vectorMathName(*fn, zmm, &width);
    if (lanes % width == 0) return std::make_pair(name, static_cast<int64_t>(width));
  }
  return std::nullopt;
}

class CPULowerer : public KernelEmitter {
public:
  CPULowerer(const Kernel &k, Module &m) : KernelEmitter(k, m, math) {}
  Function *lower(const std::string &symbol);

private:
  CPUMath math;
  void emitBody(Value *start, Value *end);
  void emitRangeFunction(const std::string &symbol);

  // ---- vector mode: the last output-upcast axis as one LLVM vector (see VectorLowering) ----
  int vecAxis = -1;
  int64_t lanes = 0;
  bool streamed = false; // a streaming store was emitted: fence before returning
  NodeRef vidx;
  bool vecReduce = false; // the vector axis is a reduce axis (dot products)
  bool canVectorize(int axis, bool reduceAxis);
  bool usesVidx(const Node &n) const;
  bool contiguousInVidx(const NodeRef &idx, NodeRef *base) const;
  Value *splat(Value *x) { return x->getType()->isVectorTy() ? x : b.CreateVectorSplat(static_cast<unsigned>(lanes), x); }
  Value *renderVec(const Node &n, llvm::IntegerType *et);
  llvm::IntegerType *vecIndexType(const Node &n);
  Value *maskFor(const NodeRef &valid);
  Val vecLoadLeaf(const LazyOp &op, const std::vector<NodeRef> &idxs);
  Value *gather(int memIdx, Value *ptr, Type *et, const NodeRef &idx, const NodeRef &valid);
  Val vecConvert(Val x, DType to);
  Val vecEval(const LazyOp &op, const std::vector<NodeRef> &idxs, const Val *acc);
  void vecStore(const std::vector<NodeRef> &idxs, Val v);
  Value *vecZero(DType dt) { return Constant::getNullValue(VectorType::get(vb.regType(dt), static_cast<unsigned>(lanes), false)); }
};

// ---- vector mode ------------------------------------------------------------------------------------
//
// When the kernel's last output-upcast axis (size 4..64) is unit-stride in the output, the whole
// per-element computation is emitted once on <lanes x float> values instead of once per lane:
// inputs contiguous along the axis become one vector load (masked where padding makes lanes
// invalid), inputs broadcast along it a scalar load and a splat, anything else a masked gather.
// Accumulators are vectors too, so a matmul tile keeps rows x lanes sums in registers.

bool CPULowerer::usesVidx(const Node &n) const {
  for (const auto &v : n.vars())
    if (v->expr && *v->expr == "vidx") return true;
  return false;
}

// True when idx == base + vidx for a base without vidx.
bool CPULowerer::contiguousInVidx(const NodeRef &idx, NodeRef *base) const {
  NodeRef b0 = idx->substitute({{vidx->key(), numNode(0)}});
  if (usesVidx(*b0)) return false;
  if (sumNodes({b0, vidx})->key() != idx->key()) return false;
  if (base) *base = b0;
  return true;
}

bool CPULowerer::canVectorize(int axis, bool reduceAxis) {
  static const std::set<Op> ok = {Op::Load, Op::Const, Op::Store, Op::Add,  Op::Sub,   Op::Mul,  Op::Div,
                                  Op::Max,  Op::CmpLt, Op::Where, Op::Neg,  Op::Sqrt,  Op::Recip, Op::Sum,
                                  Op::ReduceMax, Op::Cast};
  for (const LazyOp *x : k.ast->lazyops()) {
    if (x->op == Op::Exp2 || x->op == Op::Log2 || x->op == Op::Sin) {
      if (!vectorMathFn(x->op, dtypeOf(*x), lanes, k.opts.vectorBits, Triple(m.getTargetTriple()))) return false;
      continue;
    }
    if (!ok.count(x->op)) return false;
    if (x->op == Op::Cast) {
      const auto &ca = std::get<CastArg>(x->arg);
      if (ca.bitcast || !(ca.dtype == dtypes::float32 || ca.dtype == dtypes::float64)) return false;
    }
    if (isBufferOp(x->op) && !(x->bufferDType() == dtypes::float32 || x->bufferDType() == dtypes::float64))
      return false;
  }
  // dot products: the vector partial sums must be float (a reduction of i1 lanes would not be)
  if (reduceAxis) return k.reduceop && dtypeOf(*k.reduceop).isFloating();
  // the output must be contiguous along the axis
  std::vector<NodeRef> ix;
  for (size_t a = 0; a < k.shapeLen(); ++a)
    ix.push_back(static_cast<int>(a) == axis ? vidx : variable("ax" + std::to_string(a), 0, k.fullShape()[a] - 1));
  return contiguousInVidx(access(0, ix).idx, nullptr);
}

// Renders an index or validity node per lane: integer arithmetic in `et` (i32 when every value
// fits, which makes division by a constant and gathers cheaper), i1 for comparisons and ands.
// Lane-invariant subexpressions are computed once as scalars and splat.
Value *CPULowerer::renderVec(const Node &n, IntegerType *et) {
  auto lanesOf = [&](Type *t) { return VectorType::get(t, static_cast<unsigned>(lanes), false); };
  auto isBoolVec = [](Value *v) { return v->getType()->getScalarType()->isIntegerTy(1); };
  auto asInt = [&](Value *v) { return isBoolVec(v) ? b.CreateZExt(v, lanesOf(et)) : v; };
  auto asBool = [&](Value *v) { return isBoolVec(v) ? v : b.CreateICmpNE(v, Constant::getNullValue(v->getType())); };
  if (!usesVidx(n)) {
    Value *v = render(n);
    if (v->getType()->isIntegerTy(1)) return splat(v);
    return splat(b.CreateSExtOrTrunc(v, et));
  }
  auto operand = [&](const SInt &x) -> Value * {
    return x.isInt() ? splat(ConstantInt::getSigned(et, x.asInt())) : asInt(renderVec(*x.node(), et));
  };
  // floor and C division agree for a non-negative dividend; a positive constant divisor then
  // allows the unsigned forms, which need no sign fix-up
  bool unsignedOk = (n.kind == NodeKind::Div || n.kind == NodeKind::Mod) && n.b.isInt() && n.b.asInt() > 0 &&
                    nonNegative(*n.a);
  switch (n.kind) {
  case NodeKind::Variable: {
    std::vector<Constant *> lanesC;
    for (int64_t i = 0; i < lanes; ++i) lanesC.push_back(ConstantInt::get(et, static_cast<uint64_t>(i)));
    return ConstantVector::get(lanesC);
  }
  case NodeKind::Mul: return b.CreateMul(asInt(renderVec(*n.a, et)), operand(n.b));
  case NodeKind::Div:
    return unsignedOk ? b.CreateUDiv(asInt(renderVec(*n.a, et)), operand(n.b))
                      : b.CreateSDiv(asInt(renderVec(*n.a, et)), operand(n.b));
  case NodeKind::Mod:
    return unsignedOk ? b.CreateURem(asInt(renderVec(*n.a, et)), operand(n.b))
                      : b.CreateSRem(asInt(renderVec(*n.a, et)), operand(n.b));
  case NodeKind::Lt: return b.CreateICmpSLT(asInt(renderVec(*n.a, et)), operand(n.b));
  case NodeKind::Sum: {
    // the lane-invariant terms first, as one scalar sum
    std::vector<NodeRef> inv, var;
    for (const auto &x : n.nodes) (usesVidx(*x) ? var : inv).push_back(x);
    Value *acc = inv.empty() ? nullptr : renderVec(*sumNodes(inv), et);
    for (const auto &x : var) {
      Value *v = asInt(renderVec(*x, et));
      acc = acc ? b.CreateAdd(acc, v) : v;
    }
    return acc;
  }
  case NodeKind::And: {
    std::vector<NodeRef> inv, var;
    for (const auto &x : n.nodes) (usesVidx(*x) ? var : inv).push_back(x);
    Value *acc = inv.empty() ? nullptr : renderVec(*andNodes(inv), et);
    for (const auto &x : var) {
      Value *v = asBool(renderVec(*x, et));
      acc = acc ? b.CreateAnd(acc, v) : v;
    }
    return acc;
  }
  case NodeKind::Num: break;
  }
  return splat(b.CreateSExtOrTrunc(render(n), et));
}

IntegerType *CPULowerer::vecIndexType(const Node &n) { return fitsInt32(n) ? b.getInt32Ty() : b.getInt64Ty(); }

// The per-lane validity of a (non-constant) valid expression as <lanes x i1>.
Value *CPULowerer::maskFor(const NodeRef &valid) {
  if (usesVidx(*valid)) return renderVec(*valid, vecIndexType(*valid));
  return splat(asI1(render(*valid)));
}

// A gather from one scalar address (the lane-invariant terms of the index) plus per-lane offsets,
// 32-bit when they fit. The lane-invariant conjuncts of the valid guard the whole gather with a
// branch (a gather with no lane on still costs most of a full one):
//
//   br i1 %invariantValid, label %gather, label %gather.cont
//   gather:       %g = call <N x float> @llvm.masked.gather(... %laneMask ...)
//   gather.cont:  %v = phi <N x float> [ zeroinitializer, %entry ], [ %g, %gather ]
Value *CPULowerer::gather(int memIdx, Value *ptr, Type *et, const NodeRef &idx, const NodeRef &valid) {
  Align align(et->getScalarSizeInBits() / 8);
  Type *vt = VectorType::get(et, static_cast<unsigned>(lanes), false);
  std::vector<NodeRef> conj = valid->kind == NodeKind::And ? valid->nodes : std::vector<NodeRef>{valid};
  std::vector<NodeRef> invValid, varValid;
  if (!valid->isNum())
    for (const auto &c : conj) (usesVidx(*c) ? varValid : invValid).push_back(c);
  BasicBlock *pre = nullptr, *cont = nullptr;
  if (!invValid.empty()) {
    pre = b.GetInsertBlock();
    BasicBlock *body = BasicBlock::Create(ctx, "gather", fn);
    cont = BasicBlock::Create(ctx, "gather.cont", fn);
    b.CreateCondBr(asI1(render(*andNodes(invValid))), body, cont);
    b.SetInsertPoint(body);
  }
  std::vector<NodeRef> terms = idx->kind == NodeKind::Sum ? idx->nodes : std::vector<NodeRef>{idx};
  std::vector<NodeRef> inv, var;
  for (const auto &t : terms) (usesVidx(*t) ? var : inv).push_back(t);
  NodeRef offsets = sumNodes(var);
  Value *p = inv.empty() ? ptr : b.CreateGEP(et, ptr, asI64(render(*sumNodes(inv))));
  Value *offsetVec = renderVec(*offsets, vecIndexType(*offsets));
  Value *ptrs = b.CreateGEP(et, p, offsetVec);
  Value *mask = varValid.empty() ? splat(b.getTrue()) : maskFor(andNodes(varValid));
  if (boundsReport) {
    Value *lanesIdx = b.CreateSExt(offsetVec, VectorType::get(b.getInt64Ty(), static_cast<unsigned>(lanes), false));
    if (!inv.empty()) lanesIdx = b.CreateAdd(lanesIdx, b.CreateVectorSplat(static_cast<unsigned>(lanes), asI64(render(*sumNodes(inv)))));
    checkAccess(memIdx, lanesIdx, varValid.empty() ? nullptr : mask);
  }
  Value *g = b.CreateMaskedGather(vt, ptrs, align, mask, Constant::getNullValue(vt));
  if (!cont) return g;
  BasicBlock *body = b.GetInsertBlock();
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
  PHINode *phi = b.CreatePHI(vt, 2);
  phi->addIncoming(Constant::getNullValue(vt), pre);
  phi->addIncoming(g, body);
  return phi;
}

Val CPULowerer::vecLoadLeaf(const LazyOp &op, const std::vector<NodeRef> &idxs) {
  size_t bi = bufIndex(&op);
  auto [idx, valid] = access(bi, idxs);
  DType dt = op.bufferDType();
  std::string key = "v" + std::to_string(bi) + "|" + idx->key() + "|" + valid->key();
  if (auto it = loadCache.find(key); it != loadCache.end()) return it->second;
  Val out{nullptr, dt};
  bool alwaysValid = valid->isNum() && valid->num != 0;
  Type *et = vb.regType(dt);
  Align align(dt.itemsize());
  if (valid->isNum() && valid->num == 0) {
    out.v = vecZero(dt);
  } else if (op.op == Op::Const) {
    Value *c = splat(vb.constant(op.constBuffer().val, dt).v);
    out.v = alwaysValid ? c : b.CreateSelect(maskFor(valid), c, vecZero(dt));
  } else {
    int mi = op.memBuffer().idx;
    Value *ptr = bufPtrs.at(mi);
    NodeRef base;
    if (!usesVidx(*idx)) {
      if (alwaysValid) {
        checkAccess(mi, asI64(render(*idx)), nullptr);
        out.v = splat(vb.load(ptr, asI64(render(*idx)), dt).v);
      } else {
        Value *mask = maskFor(valid);
        Value *any = b.CreateOrReduce(mask);
        checkAccess(mi, asI64(render(*idx)), any);
        Value *safe = b.CreateSelect(any, asI64(render(*idx)), i64(0));
        out.v = b.CreateSelect(mask, splat(vb.load(ptr, safe, dt).v), vecZero(dt));
      }
    } else if (contiguousInVidx(idx, &base)) {
      // (the first lane's address may be out of bounds when it is masked off: no inbounds then)
      Value *p = alwaysValid ? b.CreateInBoundsGEP(et, ptr, asI64(render(*base)))
                             : b.CreateGEP(et, ptr, asI64(render(*base)));
      Type *vt = VectorType::get(et, static_cast<unsigned>(lanes), false);
      if (boundsReport) checkAccess(mi, laneIndices(asI64(render(*base)), lanes), alwaysValid ? nullptr : maskFor(valid));
      if (alwaysValid) out.v = b.CreateAlignedLoad(vt, p, align);
      else out.v = b.CreateMaskedLoad(vt, p, align, maskFor(valid), vecZero(dt));
    } else {
      out.v = gather(mi, ptr, et, idx, valid);
    }
  }
  loadCache[key] = out;
  return out;
}

Val CPULowerer::vecConvert(Val x, DType to) {
  if (x.dt == to) return x;
  Type *vt = VectorType::get(vb.regType(to), static_cast<unsigned>(lanes), false);
  if (x.dt.isBool()) return {b.CreateUIToFP(x.v, vt), to};
  if (to.isBool()) return {b.CreateFCmpUNE(x.v, Constant::getNullValue(x.v->getType())), to};
  return {to == dtypes::float64 ? b.CreateFPExt(x.v, vt) : b.CreateFPTrunc(x.v, vt), to};
}

Val CPULowerer::vecEval(const LazyOp &op, const std::vector<NodeRef> &idxs, const Val *acc) {
  if (isBufferOp(op.op)) return vecLoadLeaf(op, idxs);
  if (isReduceOp(op.op)) return *acc;
  DType dt = dtypeOf(op);
  std::vector<Val> s;
  for (const auto &x : op.src) s.push_back(vecEval(*x.op, idxs, acc));
  if (op.op == Op::Cast) return vecConvert(s[0], std::get<CastArg>(op.arg).dtype);
  if (op.op == Op::Where) {
    Value *c = s[0].dt.isBool() ? s[0].v : b.CreateFCmpUNE(s[0].v, Constant::getNullValue(s[0].v->getType()));
    return {b.CreateSelect(c, vecConvert(s[1], dt).v, vecConvert(s[2], dt).v), dt};
  }
  for (auto &v : s) v = vecConvert(v, dt);
  Value *a = s[0].v, *c = s.size() > 1 ? s[1].v : nullptr;
  switch (op.op) {
  case Op::Add: return {b.CreateFAdd(a, c), dt};
  case Op::Sub: return {b.CreateFSub(a, c), dt};
  case Op::Mul: return {b.CreateFMul(a, c), dt};
  case Op::Div: return {b.CreateFDiv(a, c), dt};
  case Op::Max: return {b.CreateBinaryIntrinsic(Intrinsic::maximum, a, c), dt};
  case Op::CmpLt: return {b.CreateFCmpULT(a, c), dtypes::boolean};
  case Op::Neg: return {b.CreateFNeg(a), dt};
  case Op::Sqrt: return {b.CreateUnaryIntrinsic(Intrinsic::sqrt, a), dt};
  case Op::Recip: return {b.CreateFDiv(ConstantFP::get(a->getType(), 1.0), a), dt};
  case Op::Exp2:
  case Op::Log2:
  case Op::Sin: {
    auto fn = vectorMathFn(op.op, dt, lanes, k.opts.vectorBits, Triple(m.getTargetTriple()));
    LAZYJIT_INTERNAL_CHECK(fn.has_value(), "codegen: no vector {} for {} lanes", opName(op.op), lanes);
    auto [name, width] = *fn;
    Type *part = VectorType::get(a->getType()->getScalarType(), static_cast<unsigned>(width), false);
    FunctionCallee f = m.getOrInsertFunction(name, FunctionType::get(part, {part}, false));
    if (auto *fnDecl = dyn_cast<Function>(f.getCallee())) {
      fnDecl->setDoesNotAccessMemory();
      fnDecl->setDoesNotThrow();
      fnDecl->addFnAttr(Attribute::WillReturn);
    }
    // one call per `width` lanes, the pieces put back together
    Value *out = PoisonValue::get(a->getType());
    for (int64_t lo = 0; lo < lanes; lo += width) {
      SmallVector<int, 16> pick, put;
      for (int64_t i = 0; i < width; ++i) pick.push_back(static_cast<int>(lo + i));
      Value *piece = width == lanes ? a : b.CreateShuffleVector(a, pick);
      CallInst *call = b.CreateCall(f, {piece});
      call->setDoesNotAccessMemory();
      if (width == lanes) return {call, dt};
      for (int64_t i = 0; i < lanes; ++i) put.push_back(i >= lo && i < lo + width ? static_cast<int>(lanes + i - lo) : static_cast<int>(i));
      Value *wide = b.CreateShuffleVector(call, PoisonValue::get(part), [&] {
        SmallVector<int, 64> grow;
        for (int64_t i = 0; i < lanes; ++i) grow.push_back(i < width ? static_cast<int>(i) : -1);
        return grow;
      }());
      out = b.CreateShuffleVector(out, wide, put);
    }
    return {out, dt};
  }
  default: break;
  }
  LAZYJIT_INTERNAL_CHECK(false, "codegen: {} in vector mode", opName(op.op));
  return {};
}

void CPULowerer::vecStore(const std::vector<NodeRef> &idxs, Val v) {
  DType outDt = k.bufs[0]->memBuffer().dtype;
  auto [idx, valid] = access(0, idxs);
  if (valid->isNum() && valid->num == 0) return;
  NodeRef base;
  LAZYJIT_INTERNAL_CHECK(contiguousInVidx(idx, &base), "codegen: vector store is not contiguous");
  Val x = vecConvert(v, outDt);
  if (boundsReport) checkAccess(0, laneIndices(asI64(render(*base)), lanes), valid->isNum() ? nullptr : maskFor(valid));
  Value *p = b.CreateInBoundsGEP(vb.regType(outDt), bufPtrs[0], asI64(render(*base)));
  Align align(outDt.itemsize());
  // a streaming store needs a whole, aligned cache line: buffers are 64-byte aligned, so the
  // first lane's index must be a multiple of the lane count
  int64_t lineBytes = lanes * outDt.itemsize();
  SInt rem = mod(SInt(base), SInt(lanes));
  bool aligned = rem.isInt() ? rem.asInt() == 0 : rem.node()->isNum() && rem.node()->num == 0;
  if (k.streamingStores && valid->isNum() && lineBytes == 64 && aligned) {
    StoreInst *st = b.CreateAlignedStore(x.v, p, Align(64));
    st->setMetadata(LLVMContext::MD_nontemporal, MDNode::get(ctx, ConstantAsMetadata::get(b.getInt32(1))));
    streamed = true;
    return;
  }
  if (valid->isNum()) b.CreateAlignedStore(x.v, p, align);
  else b.CreateMaskedStore(x.v, p, align, maskFor(valid));
}

void CPULowerer::emitBody(Value *start, Value *end) {
  const Shape &full = k.fullShape();
  const Shape &outShape = k.outputShape();
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), up = k.upcasted;
  int firstUpcast = n - up;

  // upcast axes: split into output-upcast and reduce-unroll axes
  std::vector<int> outUp, redUp;
  for (int a = firstUpcast; a < n; ++a) {
    LAZYJIT_INTERNAL_CHECK(full[a].isInt(), "codegen: upcast axis {} is symbolic", a);
    (pyEq(full[a], outShape[a]) ? outUp : redUp).push_back(a);
  }
  // vector mode: one upcast axis becomes one LLVM vector when everything allows it. A last upcast
  // axis that is a reduce axis of 8 to 64 elements is vectorized as vector partial sums, each
  // reduced to one value before the store (dot products); otherwise the last output-upcast axis,
  // with vector accumulators and vector stores.
  if (up > 0 && !redUp.empty() && redUp.back() == n - 1 && full[n - 1].asInt() >= 8 &&
      full[n - 1].asInt() <= 64) {
    int64_t size = full[n - 1].asInt();
    vidx = variable("vidx", 0, size - 1);
    lanes = size;
    if (canVectorize(n - 1, true)) {
      vecAxis = n - 1;
      vecReduce = true;
      redUp.pop_back();
    } else {
      lanes = 0;
    }
  }
  if (vecAxis < 0 && !outUp.empty()) {
    int cand = outUp.back();
    int64_t size = full[cand].asInt();
    vidx = variable("vidx", 0, size - 1);
    lanes = size;
    if (size >= 4 && size <= 64 && canVectorize(cand, false)) {
      vecAxis = cand;
      outUp.pop_back();
    } else {
      lanes = 0;
    }
  }
  std::vector<int64_t> outSizes, redSizes;
  for (int a : outUp) outSizes.push_back(full[a].asInt());
  for (int a : redUp) redSizes.push_back(full[a].asInt());
  auto outCombos = upcastCombos(outSizes), redCombos = upcastCombos(redSizes);

  std::vector<NodeRef> idxs(n);
  const LazyOp *store = k.bufs[0];
  const LazyOp &top = *store->src[0].op;

  auto setUpcast = [&](std::vector<NodeRef> &ix, const std::vector<int64_t> &oc, const std::vector<int64_t> *rc) {
    for (size_t i = 0; i < outUp.size(); ++i) ix[outUp[i]] = numNode(oc[i]);
    for (size_t i = 0; i < redUp.size(); ++i) ix[redUp[i]] = numNode(rc ? (*rc)[i] : 0);
    // (a vector reduce axis is zeroed, as every reduce axis, where the reduce is done)
    if (vecAxis >= 0) ix[vecAxis] = vecReduce && !rc ? numNode(0) : vidx;
  };
  bool vec = vecAxis >= 0;

  // the innermost part: accumulate (if there is a reduce) and store every output-upcast element
  std::function<void(int)> globals = [&](int axis) {
    if (axis < fr) {
      std::string name = "gidx" + std::to_string(axis);
      idxs[axis] = variable(name, 0, full[axis] - 1);
      Value *lo = i64(0), *hi = renderSInt(full[axis]);
      if (axis == 0) {
        // the launcher's chunk, clamped to the axis: besides keeping a bad range in bounds, this
        // gives LLVM the loop's maximum trip count, so a 2-iteration outer loop is not
        // vectorized 32 wide with runtime checks and epilogues (a 77-line kernel became 2,700)
        lo = b.CreateBinaryIntrinsic(Intrinsic::smax, start, lo, nullptr, "start.c");
        hi = b.CreateBinaryIntrinsic(Intrinsic::smin, end, hi, nullptr, "end.c");
      }
      loop(name, lo, hi, axis == 0 || mayBeEmpty(full[axis]), {}, [&](Value *iv, const std::vector<Value *> &) {
        varValues[name] = iv;
        globals(axis + 1);
        return std::vector<Value *>{};
      });
      return;
    }
    std::vector<Val> accs;
    if (k.reduceop) {
      DType rdt = dtypeOf(*k.reduceop);
      Op rop = k.reduceop->op;
      std::vector<Value *> init;
      for (size_t o = 0; o < outCombos.size(); ++o)
        init.push_back(vec ? splat(vb.reduceInit(rop, rdt).v) : vb.reduceInit(rop, rdt).v);
      std::function<std::vector<Value *>(int, const std::vector<Value *> &)> reduceLoops =
          [&](int axis2, const std::vector<Value *> &cur) -> std::vector<Value *> {
        if (axis2 < firstUpcast) {
          std::string name = "ridx" + std::to_string(axis2);
          idxs[axis2] = variable(name, 0, full[axis2] - 1);
          return loop(name, i64(0), renderSInt(full[axis2]), mayBeEmpty(full[axis2]), cur,
                      [&, axis2](Value *iv, const std::vector<Value *> &c) {
                        varValues[name] = iv;
                        return reduceLoops(axis2 + 1, c);
                      });
        }
        std::vector<Value *> next = cur;
        const LazyOp &src = *k.reduceop->src[0].op;
        Op alu = rop == Op::Sum ? Op::Add : Op::Max;
        for (size_t o = 0; o < outCombos.size(); ++o)
          for (const auto &rc : redCombos) {
            std::vector<NodeRef> ix = idxs;
            setUpcast(ix, outCombos[o], &rc);
            if (vec) {
              Val v = vecConvert(vecEval(src, ix, nullptr), rdt);
              next[o] = alu == Op::Add ? markAccumulate(b.CreateFAdd(v.v, next[o]))
                                       : b.CreateBinaryIntrinsic(Intrinsic::maximum, v.v, next[o]);
              continue;
            }
            Val v = vb.convert(eval(src, ix, nullptr), rdt, false);
            next[o] = markAccumulate(vb.alu(alu, {v, Val{next[o], rdt}}, rdt).v);
          }
        return next;
      };
      std::vector<Value *> finals = reduceLoops(fr, init);
      for (auto *v : finals) {
        if (vecReduce) // the lanes' partial results, combined (in any order: reassoc)
          v = rop == Op::Sum ? b.CreateFAddReduce(ConstantFP::getNegativeZero(v->getType()->getScalarType()), v)
                             : b.CreateFPMaximumReduce(v);
        accs.push_back(Val{v, rdt});
      }
    }
    // late buffers are read with the reduce indices zeroed
    for (int a = fr; a < firstUpcast; ++a) idxs[a] = numNode(0);
    for (size_t o = 0; o < outCombos.size(); ++o) {
      std::vector<NodeRef> ix = idxs;
      setUpcast(ix, outCombos[o], nullptr);
      if (vec && !vecReduce) vecStore(ix, vecEval(top, ix, accs.empty() ? nullptr : &accs[o]));
      else storeOutput(ix, eval(top, ix, accs.empty() ? nullptr : &accs[o]));
    }
  };

  if (fr == 0) {
    // no global axis: the body runs once, for the range [0, 1)
    BasicBlock *body = BasicBlock::Create(ctx, "once", fn), *done = BasicBlock::Create(ctx, "once.exit", fn);
    b.CreateCondBr(b.CreateICmpSLT(start, end), body, done);
    b.SetInsertPoint(body);
    globals(0);
    b.CreateBr(done);
    b.SetInsertPoint(done);
  } else {
    globals(0);
  }
}

void CPULowerer::emitRangeFunction(const std::string &symbol) {
  Type *ptrTy = PointerType::getUnqual(ctx);
  Function *rf = Function::Create(FunctionType::get(b.getInt64Ty(), {ptrTy}, false),
                                  GlobalValue::ExternalLinkage, symbol + "_range", &m);
  BasicBlock *bb = BasicBlock::Create(ctx, "entry", rf);
  IRBuilder<> rb(bb);
  std::map<std::string, Value *> saved = varValues;
  auto vars = varsFromAst(*k.ast);
  for (size_t i = 0; i < vars.size(); ++i)
    varValues[*vars[i]->expr] =
        rb.CreateAlignedLoad(rb.getInt64Ty(), rb.CreateConstInBoundsGEP1_64(rb.getInt64Ty(), rf->getArg(0), i), Align(8));
  Value *extent;
  if (k.firstReduce() == 0) {
    extent = rb.getInt64(1);
  } else {
    IRBuilderBase::InsertPointGuard guard(b);
    b.SetInsertPoint(bb);
    extent = renderSInt(k.fullShape()[0]);
  }
  rb.SetInsertPoint(bb);
  rb.CreateRet(extent);
  varValues = std::move(saved);
}

Function *CPULowerer::lower(const std::string &symbol) {
  b.setFastMathFlags(referenceFastMath());
  Type *ptrTy = PointerType::getUnqual(ctx);
  auto vars = varsFromAst(*k.ast);
  int numBufs = 0;
  for (const LazyOp *x : k.bufs)
    if (x->op != Op::Const) numBufs = std::max(numBufs, x->memBuffer().idx + 1);

  // the implementation: one noalias pointer per buffer, the variables, the outer range
  std::vector<Type *> params(numBufs, ptrTy);
  params.insert(params.end(), vars.size(), b.getInt64Ty());
  params.push_back(b.getInt64Ty());
  params.push_back(b.getInt64Ty());
  // bounds mode: the BoundsReport and each buffer's size in elements
  if (k.boundsCheck) {
    params.push_back(ptrTy);
    params.insert(params.end(), numBufs, b.getInt64Ty());
  }
  fn = Function::Create(FunctionType::get(b.getVoidTy(), params, false), GlobalValue::InternalLinkage,
                        symbol + ".impl", &m);
  fn->addFnAttr(Attribute::AlwaysInline);
  fn->addFnAttr(Attribute::NoUnwind);
  fn->addFnAttr("no-nans-fp-math", "false");
  for (int i = 0; i < numBufs; ++i) {
    fn->addParamAttr(i, Attribute::NoAlias);
    fn->getArg(i)->setName("data" + std::to_string(i));
    bufPtrs.push_back(fn->getArg(i));
  }
  for (size_t i = 0; i < vars.size(); ++i) {
    Argument *a = fn->getArg(numBufs + i);
    a->setName(*vars[i]->expr);
    varValues[*vars[i]->expr] = a;
  }
  Argument *start = fn->getArg(numBufs + vars.size()), *end = fn->getArg(numBufs + vars.size() + 1);
  start->setName("start");
  end->setName("end");
  if (k.boundsCheck) {
    size_t first = numBufs + vars.size() + 2;
    boundsReport = fn->getArg(static_cast<unsigned>(first));
    boundsReport->setName("bounds");
    for (int i = 0; i < numBufs; ++i) {
      bufSizes.push_back(fn->getArg(static_cast<unsigned>(first + 1 + i)));
      bufSizes.back()->setName("size" + std::to_string(i));
    }
  }

  BasicBlock *entry = BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  emitBody(start, end);
  if (streamed) {
    // streaming stores are weakly ordered: make them visible before the launcher's join publishes
    // the buffer to other threads
    if (Triple(m.getTargetTriple()).isX86()) b.CreateIntrinsic(Intrinsic::x86_sse_sfence, {}, {});
    else b.CreateFence(AtomicOrdering::Release);
  }
  b.CreateRetVoid();

  // the uniform entry point
  Function *entryFn = Function::Create(
      FunctionType::get(b.getVoidTy(), {ptrTy, ptrTy, b.getInt64Ty(), b.getInt64Ty()}, false),
      GlobalValue::ExternalLinkage, symbol, &m);
  entryFn->addFnAttr(Attribute::NoUnwind);
  entryFn->getArg(0)->setName("bufs");
  entryFn->getArg(1)->setName("vars");
  IRBuilder<> eb(BasicBlock::Create(ctx, "entry", entryFn));
  std::vector<Value *> args;
  for (int i = 0; i < numBufs; ++i)
    args.push_back(eb.CreateAlignedLoad(ptrTy, eb.CreateConstInBoundsGEP1_64(ptrTy, entryFn->getArg(0), i), Align(8),
                                        "data" + std::to_string(i)));
  for (size_t i = 0; i < vars.size(); ++i)
    args.push_back(eb.CreateAlignedLoad(eb.getInt64Ty(),
                                        eb.CreateConstInBoundsGEP1_64(eb.getInt64Ty(), entryFn->getArg(1), i),
                                        Align(8), *vars[i]->expr));
  args.push_back(entryFn->getArg(2));
  args.push_back(entryFn->getArg(3));
  if (k.boundsCheck) {
    // after the variables: the report's address, then each buffer's size in bytes, which is
    // divided here by the size of the dtype the kernel accesses it as
    auto slot = [&](size_t i) {
      return eb.CreateAlignedLoad(eb.getInt64Ty(), eb.CreateConstInBoundsGEP1_64(eb.getInt64Ty(), entryFn->getArg(1), i),
                                  Align(8));
    };
    args.push_back(eb.CreateIntToPtr(slot(vars.size()), ptrTy, "bounds"));
    for (int i = 0; i < numBufs; ++i) {
      int64_t itemsize = 1;
      for (const LazyOp *x : k.bufs)
        if (x->op != Op::Const && x->memBuffer().idx == i) itemsize = x->memBuffer().dtype.itemsize();
      args.push_back(eb.CreateUDiv(slot(vars.size() + 1 + i), eb.getInt64(static_cast<uint64_t>(itemsize)),
                                   "size" + std::to_string(i)));
    }
  }
  eb.CreateCall(fn, args);
  eb.CreateRetVoid();

  emitRangeFunction(symbol);

  verify();
  return entryFn;
}

} // namespace

Function *lowerKernelCPU(const Kernel &k, Module &m, const std::string &symbol) {
  CPULowerer l(k, m);
  return l.lower(symbol);
}

} // namespace lazyjit
