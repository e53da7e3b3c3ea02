// Vector mode of the CPU lowering: one upcast axis of the kernel emitted as one LLVM vector, with
// vector loads, splats, masked loads and gathers for its inputs, vector accumulators, and masked or
// streaming vector stores (its math, libmvec calls and the inline exp2: LowerCPUMath.cpp).
#include "HeuristicsCPU.h"
#include "LowerCPU.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>

#include <optional>

namespace lazyjit {

using namespace llvm;

namespace {
/// `n`'s operands when it is a `kind` node (a sum's terms, an AND's conjuncts), else `n` alone.
std::vector<NodeRef> operandsOf(const NodeRef &n, NodeKind kind) {
  return n->kind == kind ? n->nodes : std::vector<NodeRef>{n};
}
} // namespace


// When the kernel's last output-upcast axis (size 4..64) is unit-stride in the output, the whole
// per-element computation is emitted once on <lanes x float> values instead of once per lane:
// inputs contiguous along the axis become one vector load (masked where padding makes lanes
// invalid), inputs broadcast along it a scalar load and a splat, anything else a masked gather.
// Accumulators are vectors too, so a matmul tile keeps rows x lanes sums in registers.

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

Value *CPULowerer::zeroSlot() {
  if (!zeros) {
    auto *t = llvm::ArrayType::get(b.getInt8Ty(), 2 * kZeroReach);
    zeros = new llvm::GlobalVariable(m, t, true, llvm::GlobalValue::PrivateLinkage, llvm::Constant::getNullValue(t),
                                     "zeros");
    zeros->setAlignment(Align(64));
  }
  return b.CreateConstGEP1_64(b.getInt8Ty(), zeros, kZeroReach);
}

bool CPULowerer::usesReduceIndex(const Node &n) {
  for (const auto &v : n.vars())
    if (v->expr && v->expr->rfind("ridx", 0) == 0) return true;
  return false;
}

// The per-lane validity of a (non-constant) valid expression as <lanes x i1>.
Value *CPULowerer::maskFor(const NodeRef &valid) {
  if (usesVidx(*valid)) return renderVec(*valid, vecIndexType(*valid));
  return splat(asI1(render(*valid)));
}

// Each lane's address: one scalar address for the lane-invariant terms of the index, plus per-lane
// offsets (32-bit when they fit); gathers and a scattered output (Kernel::scatterOutput) use it.
Value *CPULowerer::laneAddresses(int memIdx, Value *ptr, Type *et, const NodeRef &idx, Value *mask) {
  std::vector<NodeRef> terms = operandsOf(idx, NodeKind::Sum);
  std::vector<NodeRef> inv, var;
  for (const auto &t : terms) (usesVidx(*t) ? var : inv).push_back(t);
  NodeRef offsets = sumNodes(var);
  Value *p = inv.empty() ? ptr : b.CreateGEP(et, ptr, asI64(render(*sumNodes(inv))));
  Value *offsetVec = renderVec(*offsets, vecIndexType(*offsets));
  if (boundsReport) {
    Value *lanesIdx = b.CreateSExt(offsetVec, VectorType::get(b.getInt64Ty(), static_cast<unsigned>(lanes), false));
    if (!inv.empty()) lanesIdx = b.CreateAdd(lanesIdx, b.CreateVectorSplat(static_cast<unsigned>(lanes), asI64(render(*sumNodes(inv)))));
    checkAccess(memIdx, lanesIdx, mask);
  }
  return b.CreateGEP(et, p, offsetVec);
}

// A vector load under `valid`: its lane-invariant conjuncts guard the whole load with a branch,
// and `load` gets the conjuncts that vary across the lanes (null when none) for its mask:
//
//   br i1 %invariantValid, label %gather, label %gather.cont
//   gather:       %g = call <N x float> @llvm.masked.gather(... %laneMask ...)
//   gather.cont:  %v = phi <N x float> [ zeroinitializer, %entry ], [ %g, %gather ]
//
// A gather with no lane on still costs most of a full one, and a masked load with no lane on whose
// address lies outside the buffer (the other input's rows of a concatenation) takes a microcode
// assist on every vector: cat of two [2048, 1024] along axis 0 ran 36 ms, against 0.85 along axis 1.
Value *CPULowerer::guardedLoad(const NodeRef &valid, Type *vt, const char *name,
                               const std::function<Value *(const NodeRef &laneValid)> &load) {
  std::vector<NodeRef> conj = operandsOf(valid, NodeKind::And);
  std::vector<NodeRef> invValid, varValid;
  if (!valid->isNum())
    for (const auto &c : conj) (usesVidx(*c) ? varValid : invValid).push_back(c);
  NodeRef laneValid = varValid.empty() ? nullptr : andNodes(varValid);
  if (invValid.empty()) return load(laneValid);
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *body = BasicBlock::Create(ctx, name, fn);
  BasicBlock *cont = BasicBlock::Create(ctx, std::string(name) + ".cont", fn);
  b.CreateCondBr(asI1(render(*andNodes(invValid))), body, cont);
  b.SetInsertPoint(body);
  Value *v = load(laneValid);
  BasicBlock *end = b.GetInsertBlock();
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
  PHINode *phi = b.CreatePHI(vt, 2);
  phi->addIncoming(Constant::getNullValue(vt), pre);
  phi->addIncoming(v, end);
  return phi;
}

// A gather from laneAddresses, guarded (guardedLoad).
Value *CPULowerer::gather(int memIdx, Value *ptr, Type *et, const NodeRef &idx, const NodeRef &valid) {
  Align align(std::max<unsigned>(1, et->getScalarSizeInBits() / 8));
  Type *vt = VectorType::get(et, static_cast<unsigned>(lanes), false);
  return guardedLoad(valid, vt, "gather", [&](const NodeRef &laneValid) -> Value * {
    Value *mask = laneValid ? maskFor(laneValid) : splat(b.getTrue());
    Value *ptrs = laneAddresses(memIdx, ptr, et, idx, laneValid ? mask : nullptr);
    return b.CreateMaskedGather(vt, ptrs, align, mask, Constant::getNullValue(vt));
  });
}

Val CPULowerer::laneLeaf(const KernelOp &op, const std::vector<NodeRef> &idxs, int64_t n) {
  LAZYJIT_INTERNAL_CHECK(n == lanes, "codegen: a leaf on {} lanes in vector mode of {}", n, lanes);
  size_t bi = bufIndex(&op);
  DType dt = op.bufferDType();
  if (panelReads)
    if (auto panel = panels.find(bi); panel != panels.end()) {
      std::string key = fmt::format("p{}|{}", bi, panelCombo);
      if (auto it = loadCache.find(key); it != loadCache.end()) return it->second;
      Type *vt = VectorType::get(panel->second.type, static_cast<unsigned>(lanes), false);
      Val out{b.CreateAlignedLoad(vt, panelAddress(panel->second, panelStep, panelCombo), panelAlign(dt)), dt};
      loadCache[key] = out;
      return out;
    }
  if (panelReads)
    if (wholePanels.count(bi)) {
      std::string key = fmt::format("w{}|{}|{}", bi, panelCombo, panelOutCombo);
      if (auto it = loadCache.find(key); it != loadCache.end()) return it->second;
      Type *t = wholePanels.at(bi).type;
      Val out{splat(b.CreateAlignedLoad(t, wholeAddress(bi, "gidx", wholeStep, panelCombo, panelOutCombo),
                                        Align(t->getPrimitiveSizeInBits() / 8))),
              dt};
      loadCache[key] = out;
      return out;
    }
  auto [idx, valid] = access(bi, idxs);
  std::string key = "v" + std::to_string(bi) + "|" + idx->key() + "|" + valid->key();
  if (auto it = loadCache.find(key); it != loadCache.end()) return it->second;
  Val out{nullptr, dt};
  bool alwaysValid = valid->isNum() && valid->num != 0;
  Type *et = vb.memType(dt); // (vector loads read memory's type; fromMemory makes registers of it)
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
      } else if (!usesVidx(*valid)) {
        // valid in every lane or in none: the value is read from its address where valid, and
        // from a block of zeros in the module where not. Values at constant distances from one
        // address (a padded convolution's row of broadcast inputs) share one select of that
        // address: the conjuncts that change inside the reduce loops (the row's) choose between it
        // and the zeros' middle, the constant distance applies after, and the conjuncts fixed
        // across the loops (the columns') select per value. (A select of the index to 0 and of the
        // value to zero made each value an induction variable of its own: the convolution's ten
        // per step were spilled, 8-13 ms where the padded copy's kernel ran in 6.)
        if (boundsReport) checkAccess(mi, asI64(render(*idx)), asI1(render(*valid)));
        std::vector<NodeRef> terms = operandsOf(idx, NodeKind::Sum);
        int64_t c = 0;
        std::vector<NodeRef> varTerms;
        for (const auto &t : terms) {
          if (t->isNum()) c += t->num;
          else varTerms.push_back(t);
        }
        Type *mt = vb.memType(dt);
        Value *base = b.CreateGEP(mt, ptr, varTerms.empty() ? i64(0) : asI64(render(*sumNodes(varTerms))));
        std::vector<NodeRef> conj = operandsOf(valid, NodeKind::And);
        std::vector<NodeRef> inner, outer;
        for (const auto &x : conj) (usesReduceIndex(*x) ? inner : outer).push_back(x);
        Value *p;
        if (std::abs(c) * dt.itemsize() + dt.itemsize() <= kZeroReach) {
          Value *row = inner.empty() ? base : b.CreateSelect(asI1(render(*andNodes(inner))), base, zeroSlot());
          p = b.CreateGEP(mt, row, i64(c));
          if (!outer.empty()) p = b.CreateSelect(asI1(render(*andNodes(outer))), p, zeroSlot());
        } else {
          p = b.CreateSelect(asI1(render(*valid)), b.CreateGEP(mt, base, i64(c)), zeroSlot());
        }
        out.v = splat(vb.load(p, i64(0), dt).v);
      } else {
        Value *mask = maskFor(valid);
        Value *any = b.CreateOrReduce(mask);
        checkAccess(mi, asI64(render(*idx)), any);
        Value *safe = b.CreateSelect(any, asI64(render(*idx)), i64(0));
        out.v = b.CreateSelect(mask, splat(vb.load(ptr, safe, dt).v), vecZero(dt));
      }
    } else if (contiguousInVidx(idx, &base)) {
      Type *vt = VectorType::get(et, static_cast<unsigned>(lanes), false);
      out.v = vb.fromMemory(guardedLoad(valid, vt, "load", [&](const NodeRef &laneValid) -> Value * {
        // (the first lane's address may be out of bounds when it is masked off: no inbounds then)
        Value *p = laneValid ? b.CreateGEP(et, ptr, asI64(render(*base))) : b.CreateInBoundsGEP(et, ptr, asI64(render(*base)));
        if (boundsReport) checkAccess(mi, laneIndices(asI64(render(*base)), lanes), laneValid ? maskFor(laneValid) : nullptr);
        if (!laneValid) return b.CreateAlignedLoad(vt, p, align);
        return b.CreateMaskedLoad(vt, p, align, maskFor(laneValid), Constant::getNullValue(vt));
      }), dt).v;
    } else if (Value *rows = alwaysValid ? transposedLoad(bi, idxs, dt) : nullptr) {
      out.v = rows;
    } else {
      out.v = vb.fromMemory(gather(mi, ptr, et, idx, valid), dt).v;
    }
  }
  loadCache[key] = out;
  return out;
}

// A transpose tile (HeuristicsCPUTiles.cpp) with the output's axis as the vector: the input moves
// by S along the lanes and by 1 along the other upcast axis t, so the vector of combination t = j
// is column j of the lanes x lanes block whose rows (one per lane) are contiguous. The rows are
// loaded once and transposed by log2(lanes) stages of two-source shuffles (each stage swaps the
// off-diagonal blocks of half the size: 24 shuffles for 8 lanes, which x86 lowers to unpacks,
// shufps and vperm2f128), where each combination's gather read the input element by element.
Value *CPULowerer::transposedLoad(size_t bi, const std::vector<NodeRef> &idxs, DType dt) {
  // (a row kernel's passes are vectors of its row lanes, not of an upcast axis: vecAxis is -1)
  if (vecAxis < 0 || vecReduce || (lanes & (lanes - 1)) != 0 || lanes > 16) return nullptr;
  // the other output-upcast axis of `lanes` elements along which the input is contiguous
  int t = -1;
  for (int a : nest.outUp)
    if (a != vecAxis && idxs[a]->isNum() && k.fullShape()[a].isInt() && k.fullShape()[a].asInt() == lanes &&
        cpu_heuristics::readsTransposed(k, bi, static_cast<size_t>(vecAxis), static_cast<size_t>(a))) {
      t = a;
      break;
    }
  if (t < 0) return nullptr;
  int64_t sv = *cpu_heuristics::strideOf(k, bi, static_cast<size_t>(vecAxis));
  std::vector<NodeRef> at = idxs;
  at[t] = numNode(0);
  at[vecAxis] = numNode(0);
  Value *start = asI64(render(*access(bi, at).idx));
  int mi = k.bufs[bi]->memBuffer().idx;
  Type *et = vb.memType(dt);
  Type *vt = VectorType::get(et, static_cast<unsigned>(lanes), false);
  note("load buffer {}: {} rows of {} lanes, transposed in registers", mi, lanes, lanes);
  std::vector<Value *> rows;
  for (int64_t i = 0; i < lanes; ++i) {
    Value *first = b.CreateAdd(start, i64(i * sv));
    if (boundsReport) checkAccess(mi, laneIndices(first, lanes), nullptr);
    rows.push_back(b.CreateAlignedLoad(vt, b.CreateInBoundsGEP(et, bufPtrs.at(mi), first), Align(dt.itemsize())));
  }
  transposeSquare(rows);
  for (Value *&r : rows) r = vb.fromMemory(r, dt).v;
  // every combination's vector, under the key laneLeaf looks it up by
  for (int64_t j = 0; j < lanes; ++j) {
    at = idxs;
    at[t] = numNode(j);
    auto [idx, valid] = access(bi, at);
    loadCache["v" + std::to_string(bi) + "|" + idx->key() + "|" + valid->key()] = Val{rows[j], dt};
  }
  return rows[idxs[t]->num];
}

void CPULowerer::transposeSquare(std::vector<Value *> &rows) {
  auto n = static_cast<int64_t>(rows.size());
  for (int64_t d = n / 2; d >= 1; d /= 2) {
    llvm::SmallVector<int, 16> lo, hi;
    for (int64_t l = 0; l < n; ++l) {
      bool inLow = (l & d) == 0;
      lo.push_back(static_cast<int>(inLow ? l : n + l - d));
      hi.push_back(static_cast<int>(inLow ? l + d : n + l));
    }
    for (int64_t r = 0; r < n; ++r) {
      if (r & d) continue;
      Value *x = rows[r], *y = rows[r + d];
      rows[r] = b.CreateShuffleVector(x, y, lo);
      rows[r + d] = b.CreateShuffleVector(x, y, hi);
    }
  }
}

void CPULowerer::storeOutputs(const std::vector<NodeRef> &idxs, const std::vector<Val> &accs, const KernelOp &top) {
  auto P = static_cast<int64_t>(nest.outCombos.size());
  // (P rounded up to a power of two: the rows past P are padding, and each store is masked to P)
  int64_t Pp = 2;
  while (Pp < P) Pp *= 2;
  bool shape = vecAxis >= 0 && !vecReduce && k.scatterOutput && P >= 2 && Pp <= 16 && Pp <= lanes && lanes % Pp == 0;
  // each combination's output index: combination j must be combination 0's plus j, every lane
  // valid, and the lanes a constant stride apart
  std::vector<std::vector<NodeRef>> ixs;
  int64_t stride = 0;
  NodeRef first;
  if (shape) {
    forEachOutput(idxs, {}, [&](const std::vector<NodeRef> &ix, const Val *) { ixs.push_back(ix); });
    auto [idx0, valid0] = access(0, ixs[0]);
    NodeRef at0 = idx0->substitute({{vidx->key(), numNode(0)}});
    // (an SInt difference may come back as a NumNode)
    auto number = [](const SInt &x) -> std::optional<int64_t> {
      if (x.isInt()) return x.asInt();
      if (x.node()->isNum()) return x.node()->num;
      return std::nullopt;
    };
    std::optional<int64_t> s = number(SInt(idx0->substitute({{vidx->key(), numNode(1)}})) - SInt(at0));
    shape = valid0->isNum() && valid0->num != 0 && s && *s > 0;
    if (shape) {
      SInt linear = SInt(at0) + SInt(vidx) * SInt(*s); // (the index is linear in the lane)
      shape = !linear.isInt() && linear.node()->key() == idx0->key();
    }
    if (shape) stride = *s, first = at0;
    for (int64_t j = 1; shape && j < P; ++j) {
      auto [idx, valid] = access(0, ixs[static_cast<size_t>(j)]);
      SInt next = SInt(idx0) + SInt(j);
      shape = valid->isNum() && valid->num != 0 && !next.isInt() && next.node()->key() == idx->key();
    }
  }
  if (!shape) {
    KernelEmitter::storeOutputs(idxs, accs, top);
    return;
  }
  DType outDt = k.bufs[0]->memBuffer().dtype;
  note("unrolled: {} outputs", P);
  note("store buffer 0: {} lanes x {} consecutive {}, transposed in registers ({} stores of {}{})", lanes, P,
       outDt.name(), lanes, P, Pp == P ? "" : ", masked");
  std::vector<Value *> vals;
  for (int64_t j = 0; j < P; ++j) {
    const std::vector<NodeRef> &ix = ixs[static_cast<size_t>(j)];
    vals.push_back(vb.toMemory(eval(top, ix, accs.empty() ? nullptr : &accs[static_cast<size_t>(j)], lanes), outDt));
  }
  Type *et = vb.memType(outDt);
  Value *start = asI64(render(*first));
  Value *storeMask = nullptr;
  if (Pp != P) {
    std::vector<Constant *> m;
    for (int64_t l = 0; l < Pp; ++l) m.push_back(b.getInt1(l < P));
    storeMask = ConstantVector::get(m);
  }
  for (int64_t blk = 0; blk < lanes / Pp; ++blk) {
    llvm::SmallVector<int, 16> part;
    for (int64_t l = 0; l < Pp; ++l) part.push_back(static_cast<int>(blk * Pp + l));
    std::vector<Value *> rows;
    for (Value *v : vals) rows.push_back(b.CreateShuffleVector(v, v, part));
    while (static_cast<int64_t>(rows.size()) < Pp) rows.push_back(PoisonValue::get(rows[0]->getType()));
    transposeSquare(rows);
    for (int64_t l = 0; l < Pp; ++l) {
      Value *at = b.CreateAdd(start, i64((blk * Pp + l) * stride));
      if (boundsReport) checkAccess(0, laneIndices(at, P), nullptr);
      Value *ptr = b.CreateInBoundsGEP(et, bufPtrs[0], at);
      if (storeMask) b.CreateMaskedStore(rows[static_cast<size_t>(l)], ptr, Align(outDt.itemsize()), storeMask);
      else b.CreateAlignedStore(rows[static_cast<size_t>(l)], ptr, Align(outDt.itemsize()));
    }
  }
}

std::optional<CPULowerer::OutputVector> CPULowerer::outputVector(const std::vector<NodeRef> &idxs) {
  auto [idx, valid] = access(0, idxs);
  if (valid->isNum() && valid->num == 0) return std::nullopt;
  NodeRef base;
  if (!contiguousInVidx(idx, &base)) {
    // Kernel::scatterOutput: the lanes' addresses (a store per output combination, after the reduce)
    LAZYJIT_INTERNAL_CHECK(k.scatterOutput, "codegen: the output's vector is not contiguous");
    Value *mask = valid->isNum() ? nullptr : maskFor(valid);
    return OutputVector{nullptr, nullptr, valid, laneAddresses(0, bufPtrs[0], vb.memType(k.bufs[0]->memBuffer().dtype), idx, mask)};
  }
  if (boundsReport) checkAccess(0, laneIndices(asI64(render(*base)), lanes), valid->isNum() ? nullptr : maskFor(valid));
  Value *p = b.CreateInBoundsGEP(vb.memType(k.bufs[0]->memBuffer().dtype), bufPtrs[0], asI64(render(*base)));
  return OutputVector{p, base, valid};
}

Val CPULowerer::vecLoadOutput(const std::vector<NodeRef> &idxs) {
  DType dt = k.bufs[0]->memBuffer().dtype;
  auto out = outputVector(idxs);
  if (!out) return Val{vecZero(dt), dt};
  Type *vt = VectorType::get(vb.memType(dt), static_cast<unsigned>(lanes), false);
  Align align(dt.itemsize());
  Constant *zero = Constant::getNullValue(vt);
  if (out->lanePtrs)
    return vb.fromMemory(b.CreateMaskedGather(vt, out->lanePtrs, align, out->valid->isNum() ? splat(b.getTrue()) : maskFor(out->valid), zero), dt);
  if (out->valid->isNum()) return vb.fromMemory(b.CreateAlignedLoad(vt, out->ptr, align), dt);
  return vb.fromMemory(b.CreateMaskedLoad(vt, out->ptr, align, maskFor(out->valid), zero), dt);
}

void CPULowerer::vecStore(const std::vector<NodeRef> &idxs, Val v) {
  DType outDt = k.bufs[0]->memBuffer().dtype;
  auto out = outputVector(idxs);
  if (!out) return;
  const NodeRef &valid = out->valid;
  Value *p = out->ptr;
  Value *x = vb.toMemory(v, outDt);
  Align align(outDt.itemsize());
  if (out->lanePtrs) {
    note("store buffer 0: <{} x {}>, scattered", lanes, outDt.name());
    b.CreateMaskedScatter(x, out->lanePtrs, align, valid->isNum() ? splat(b.getTrue()) : maskFor(valid));
    return;
  }
  // a streaming store writes an aligned part of a cache line whose other parts the same loop
  // writes next (whole lines: HeuristicsRow.cpp, HeuristicsCPU.cpp): buffers are 64-byte aligned,
  // so the first lane's index must be a multiple of the lane count
  int64_t lineBytes = lanes * outDt.itemsize();
  SInt rem = mod(SInt(out->base), SInt(lanes));
  bool aligned = rem.isInt() ? rem.asInt() == 0 : rem.node()->isNum() && rem.node()->num == 0;
  bool streaming = k.streamingStores && valid->isNum() && 64 % lineBytes == 0 && aligned;
  note("store buffer 0: <{} x {}>{}", lanes, outDt.name(), streaming ? ", streaming" : valid->isNum() ? "" : ", masked");
  if (streaming) {
    StoreInst *st = b.CreateAlignedStore(x, p, Align(lineBytes));
    st->setMetadata(LLVMContext::MD_nontemporal, MDNode::get(ctx, ConstantAsMetadata::get(b.getInt32(1))));
    streamed = true;
    return;
  }
  if (valid->isNum()) b.CreateAlignedStore(x, p, align);
  else b.CreateMaskedStore(x, p, align, maskFor(valid));
}

} // namespace lazyjit
