// The target-independent part of kernel lowering (see LowerCore.h).
#include "LowerCore.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace lazyjit {

using namespace llvm;

// No `contract`: whether a multiply and an add fuse into an FMA would then depend on the kernel
// around them, and an element-wise expression recomputed in two kernels (x in a max's forward
// kernel and in its backward's `x == max` mask) would round differently in each: the mask is then
// all 0 and the gradient 0/0. Only reduce accumulations contract (markAccumulate).
FastMathFlags referenceFastMath() {
  FastMathFlags f;
  f.setNoSignedZeros();
  f.setAllowReciprocal();
  f.setApproxFunc();
  f.setAllowReassoc();
  return f;
}


DType KernelEmitter::dtypeOf(const KernelOp &op) {
  const KernelOp *bad = nullptr;
  std::optional<DType> dt = kernelDTypeOf(op, &bad);
  LAZYJIT_INTERNAL_CHECK(dt.has_value(), "codegen: {} in a kernel AST", opName(bad->op));
  return *dt;
}


Value *KernelEmitter::asI64(Value *v) { return v->getType()->isIntegerTy(1) ? b.CreateZExt(v, b.getInt64Ty()) : v; }
Value *KernelEmitter::asIdx(Value *v) { return v->getType()->isIntegerTy(1) ? b.CreateZExt(v, idxTy) : v; }
Value *KernelEmitter::asI1(Value *v) {
  return v->getType()->isIntegerTy(1) ? v : b.CreateICmpNE(v, ConstantInt::get(v->getType(), 0));
}

std::string KernelEmitter::loadKey(size_t bi, const Node &idx, const Node &valid) {
  return std::to_string(bi) + "|" + idx.key() + "|" + valid.key();
}

namespace {

using Interval = std::pair<__int128, __int128>;

// The smallest / largest value of a bound that may itself be symbolic (a Variable's max `n-1`).
std::optional<__int128> lowest(const SInt &s) {
  SInt x = s;
  while (x.isNode()) {
    if (x.node()->isNum()) return x.node()->num;
    x = x.node()->min;
  }
  return x.asInt();
}
std::optional<__int128> highest(const SInt &s) {
  SInt x = s;
  while (x.isNode()) {
    if (x.node()->isNum()) return x.node()->num;
    x = x.node()->max;
  }
  return x.asInt();
}

__int128 magnitude(const Interval &i) { return std::max(i.first < 0 ? -i.first : i.first, i.second < 0 ? -i.second : i.second); }

// Bounds of a node's value by interval arithmetic over its variables' ranges. These bound every
// value render() computes for it, whatever the symbolic algebra's own (possibly symbolic) bounds.
std::optional<Interval> intervalOf(const Node &n) {
  auto ofB = [](const SInt &b) -> std::optional<Interval> {
    if (b.isInt()) return Interval{b.asInt(), b.asInt()};
    return intervalOf(*b.node());
  };
  switch (n.kind) {
  case NodeKind::Variable: {
    auto lo = lowest(n.min), hi = highest(n.max);
    if (!lo || !hi) return std::nullopt;
    return Interval{*lo, *hi};
  }
  case NodeKind::Num: return Interval{n.num, n.num};
  case NodeKind::Mul: {
    auto a = intervalOf(*n.a), c = ofB(n.b);
    if (!a || !c) return std::nullopt;
    __int128 p[] = {a->first * c->first, a->first * c->second, a->second * c->first, a->second * c->second};
    return Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
  }
  case NodeKind::Div:
  case NodeKind::Mod: {
    auto a = intervalOf(*n.a);
    if (!a) return std::nullopt;
    if (a->first >= 0 && n.b.isInt() && n.b.asInt() > 0) {
      __int128 d = n.b.asInt();
      if (n.kind == NodeKind::Div) return Interval{a->first / d, a->second / d};
      return Interval{0, std::min(a->second, d - 1)};
    }
    // C division and remainder never grow the magnitude of the dividend
    __int128 m = magnitude(*a);
    return Interval{-m, m};
  }
  case NodeKind::Lt:
  case NodeKind::And: return Interval{0, 1};
  case NodeKind::Sum: {
    Interval acc{0, 0};
    for (const auto &x : n.nodes) {
      auto i = intervalOf(*x);
      if (!i) return std::nullopt;
      acc = {acc.first + i->first, acc.second + i->second};
    }
    return acc;
  }
  }
  return std::nullopt;
}

bool fitsIn(const Node &n, __int128 limit) {
  auto i = intervalOf(n);
  if (!i || i->first < -limit || i->second >= limit) return false;
  if (n.a && !fitsIn(*n.a, limit)) return false;
  if (n.b.isNode() && !fitsIn(*n.b.node(), limit)) return false;
  Interval acc{0, 0};
  for (const auto &x : n.nodes) {
    if (!fitsIn(*x, limit)) return false;
    auto t = intervalOf(*x);
    acc = {acc.first + t->first, acc.second + t->second};
    if (acc.first < -limit || acc.second >= limit) return false;
  }
  return true;
}

} // namespace

bool KernelEmitter::fitsInt32(const Node &n) { return fitsIn(n, static_cast<__int128>(1) << 31); }

bool KernelEmitter::nonNegative(const Node &n) {
  auto i = intervalOf(n);
  return i && i->first >= 0;
}

void KernelEmitter::noteIndexRange(const Node &n) {
  unsigned bits = idxTy->getBitWidth();
  if (bits >= 64 || indexMayOverflow) return;
  __int128 limit = static_cast<__int128>(1) << (bits - 1);
  auto fits = [&](const Interval &i) { return i.first >= -limit && i.second < limit; };
  auto i = intervalOf(n);
  if (!i || !fits(*i)) {
    indexMayOverflow = true;
    return;
  }
  if (n.kind != NodeKind::Sum) return;
  // the partial sums are values too
  Interval acc{0, 0};
  for (const auto &x : n.nodes) {
    auto t = intervalOf(*x);
    acc = {acc.first + t->first, acc.second + t->second};
    if (!fits(acc)) indexMayOverflow = true;
  }
}

Value *KernelEmitter::render(const Node &n) {
  auto renderB = [&](const SInt &x) { return x.isInt() ? idxConst(x.asInt()) : asIdx(render(*x.node())); };
  noteIndexRange(n);
  switch (n.kind) {
  case NodeKind::Variable: {
    auto it = varValues.find(n.expr ? *n.expr : "None");
    LAZYJIT_INTERNAL_CHECK(it != varValues.end(), "codegen: unknown variable {}", n.key());
    return it->second;
  }
  case NodeKind::Num: return idxConst(n.num);
  case NodeKind::Mul: return b.CreateMul(asIdx(render(*n.a)), renderB(n.b));
  case NodeKind::Div: return b.CreateSDiv(asIdx(render(*n.a)), renderB(n.b));
  case NodeKind::Mod: return b.CreateSRem(asIdx(render(*n.a)), renderB(n.b));
  case NodeKind::Lt: return b.CreateICmpSLT(asIdx(render(*n.a)), renderB(n.b));
  case NodeKind::Sum: {
    Value *acc = nullptr;
    for (const auto &x : n.nodes) {
      Value *v = asIdx(render(*x));
      acc = acc ? b.CreateAdd(acc, v) : v;
    }
    return acc;
  }
  case NodeKind::And: {
    Value *acc = nullptr;
    for (const auto &x : n.nodes) {
      Value *v = asI1(render(*x));
      acc = acc ? b.CreateAnd(acc, v) : v;
    }
    return acc;
  }
  }
  return nullptr;
}

Value *KernelEmitter::renderSInt(const SInt &s) {
  if (s.isInt()) {
    noteIndexRange(*numNode(s.asInt()));
    return idxConst(s.asInt());
  }
  Value *v = asIdx(render(*s.node()));
  if (trace) trace->names.emplace(v, s.render());
  return v;
}

SimplifiedIndex KernelEmitter::access(size_t bi, const std::vector<NodeRef> &idxs) {
  auto [idx, valid] = k.sts[bi].exprIdxs(idxs);
  std::string key = idx->key() + "|" + valid->key();
  if (auto it = accessMemo.find(key); it != accessMemo.end()) return it->second;
  return accessMemo[key] = simplifyUnderValid(idx, valid);
}

void LoopTrace::note(const std::string &line) {
  std::string indented = std::string(2 * static_cast<size_t>(depth) + 2, ' ') + line;
  if (!lines.empty() && lines.back() == indented) {
    ++repeats.back();
    return;
  }
  lines.push_back(std::move(indented));
  repeats.push_back(1);
}

std::string LoopTrace::text(const llvm::Value *v) const {
  if (auto it = names.find(v); it != names.end()) return it->second;
  if (const auto *c = llvm::dyn_cast<llvm::ConstantInt>(v)) return std::to_string(c->getSExtValue());
  if (v->hasName()) return v->getName().str();
  return "?";
}

std::string LoopTrace::str() const {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i)
    out += lines[i] + (repeats[i] > 1 ? fmt::format(" (x{})", repeats[i]) : "") + "\n";
  return out;
}

KernelEmitter::LoopRange KernelEmitter::reduceRange(int axis) {
  const SInt &extent = k.fullShape()[axis];
  return {idxConst(0), renderSInt(extent), extent - 1, mayBeEmpty(extent)};
}

std::vector<Value *> KernelEmitter::reduceLoops(int from, int to, std::vector<NodeRef> &idxs,
                                                const std::vector<Value *> &cur,
                                                const std::function<std::vector<Value *>(const std::vector<Value *> &)> &innermost) {
  if (from >= to) return innermost(cur);
  std::string name = "ridx" + std::to_string(from);
  LoopRange r = reduceRange(from);
  idxs[from] = variable(name, 0, r.last);
  return loop(name, r.lo, r.hi, r.maybeEmpty, cur, [&, from, name](Value *iv, const std::vector<Value *> &c) {
    varValues[name] = iv;
    return reduceLoops(from + 1, to, idxs, c, innermost);
  });
}

std::vector<Value *> KernelEmitter::accumulateCombos(const std::vector<NodeRef> &idxs, const std::vector<Value *> &cur,
                                                     int64_t lanes, const std::function<void(size_t, size_t)> &beforeCombo) {
  DType rdt = dtypeOf(*k.reduceop);
  Op alu = reduceAlu(k.reduceop->op);
  const KernelOp &src = *k.reduceop->src[0];
  std::vector<Value *> next = cur;
  for (size_t o = 0; o < nest.outCombos.size(); ++o)
    for (size_t c = 0; c < nest.redCombos.size(); ++c) {
      std::vector<NodeRef> ix = idxs;
      setUpcast(ix, nest.outCombos[o], &nest.redCombos[c]);
      if (beforeCombo) beforeCombo(o, c);
      next[o] = accumulate(alu, eval(src, ix, nullptr, lanes), next[o], rdt);
    }
  return next;
}

void KernelEmitter::forEachOutput(const std::vector<NodeRef> &idxs, const std::vector<Val> &accs,
                                  const std::function<void(const std::vector<NodeRef> &, const Val *)> &each) {
  for (size_t o = 0; o < nest.outCombos.size(); ++o) {
    std::vector<NodeRef> ix = idxs;
    setUpcast(ix, nest.outCombos[o], nullptr);
    each(ix, accs.empty() ? nullptr : &accs[o]);
  }
}

void KernelEmitter::storeOutputs(const std::vector<NodeRef> &idxs, const std::vector<Val> &accs, const KernelOp &top) {
  if (nest.outCombos.size() > 1) note("unrolled: {} outputs", nest.outCombos.size());
  forEachOutput(idxs, accs, [&](const std::vector<NodeRef> &ix, const Val *acc) { storeResult(ix, top, acc); });
}

void KernelEmitter::storeResult(const std::vector<NodeRef> &ix, const KernelOp &top, const Val *acc) {
  storeOutput(ix, eval(top, ix, acc));
}

std::vector<Value *> KernelEmitter::loop(const std::string &name, Value *lo, Value *hi, bool maybeEmpty,
                          const std::vector<Value *> &carried,
                          const std::function<std::vector<Value *>(Value *, const std::vector<Value *> &)> &body) {
  if (trace)
    note("for {} in [{}, {}){}", name, trace->text(lo), trace->text(hi),
         carried.empty() ? "" : fmt::format(" carrying {}", carried.size()));
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *head = BasicBlock::Create(ctx, "loop." + name, fn);
  BasicBlock *exit = BasicBlock::Create(ctx, "loop." + name + ".exit", fn);
  if (maybeEmpty)
    b.CreateCondBr(b.CreateICmpSLT(lo, hi), head, exit);
  else
    b.CreateBr(head);
  b.SetInsertPoint(head);
  PHINode *iv = b.CreatePHI(lo->getType(), 2, name);
  iv->addIncoming(lo, pre);
  std::vector<PHINode *> phis;
  std::vector<Value *> cur;
  for (size_t i = 0; i < carried.size(); ++i) {
    PHINode *p = b.CreatePHI(carried[i]->getType(), 2, "acc" + std::to_string(i));
    p->addIncoming(carried[i], pre);
    phis.push_back(p);
    cur.push_back(p);
  }
  auto savedCache = loadCache;
  loadCache.clear();
  std::vector<Value *> next;
  {
    TraceIndent inLoop(trace);
    next = body(iv, cur);
  }
  loadCache = std::move(savedCache);
  Value *ivNext = b.CreateAdd(iv, ConstantInt::get(lo->getType(), 1), name + ".next", /*HasNUW=*/true,
                              /*HasNSW=*/true);
  BasicBlock *latch = b.GetInsertBlock();
  b.CreateCondBr(b.CreateICmpSLT(ivNext, hi), head, exit);
  iv->addIncoming(ivNext, latch);
  for (size_t i = 0; i < phis.size(); ++i) phis[i]->addIncoming(next[i], latch);
  b.SetInsertPoint(exit);
  if (!maybeEmpty) return next;
  std::vector<Value *> out;
  for (size_t i = 0; i < carried.size(); ++i) {
    PHINode *p = b.CreatePHI(carried[i]->getType(), 2, "acc" + std::to_string(i) + ".out");
    p->addIncoming(carried[i], pre);
    p->addIncoming(next[i], latch);
    out.push_back(p);
  }
  return out;
}



void KernelEmitter::checkAccess(int memIdx, Value *idx, Value *active) {
  if (!boundsReport) return;
  auto *vt = dyn_cast<VectorType>(idx->getType());
  Type *i64t = b.getInt64Ty();
  Type *wide = vt ? static_cast<Type *>(VectorType::get(i64t, vt->getElementCount())) : i64t;
  Value *ix = idx->getType() == wide ? idx : b.CreateSExtOrTrunc(idx, wide);
  Value *size = bufSizes.at(static_cast<size_t>(memIdx));
  if (vt) size = b.CreateVectorSplat(vt->getElementCount(), size);
  // unsigned: a negative index is as far out as one past the end
  Value *bad = b.CreateICmpUGE(ix, size);
  if (active) bad = b.CreateAnd(bad, active);
  Value *any = vt ? b.CreateOrReduce(bad) : bad;
  BasicBlock *fail = BasicBlock::Create(ctx, "oob", fn), *ok = BasicBlock::Create(ctx, "inbounds", fn);
  MDBuilder md(ctx);
  b.CreateCondBr(any, fail, ok, md.createUnlikelyBranchWeights());
  b.SetInsertPoint(fail);
  Value *badIdx = ix;
  if (vt) {
    // the first lane out of bounds
    unsigned n = static_cast<unsigned>(vt->getElementCount().getFixedValue());
    Value *bits = b.CreateBitCast(bad, b.getIntNTy(n));
    Value *lane = b.CreateBinaryIntrinsic(Intrinsic::cttz, bits, b.getTrue());
    badIdx = b.CreateExtractElement(ix, lane);
  }
  // the first violation wins; the others return without writing
  auto *cx = b.CreateAtomicCmpXchg(boundsReport, b.getInt64(0), b.getInt64(1), MaybeAlign(8),
                                   AtomicOrdering::Monotonic, AtomicOrdering::Monotonic);
  BasicBlock *record = BasicBlock::Create(ctx, "oob.record", fn), *out = BasicBlock::Create(ctx, "oob.ret", fn);
  b.CreateCondBr(b.CreateExtractValue(cx, 1), record, out);
  b.SetInsertPoint(record);
  auto field = [&](int i) { return b.CreateConstInBoundsGEP1_64(i64t, boundsReport, i); };
  b.CreateAlignedStore(b.getInt64(static_cast<uint64_t>(memIdx)), field(1), Align(8));
  b.CreateAlignedStore(badIdx, field(2), Align(8));
  b.CreateAlignedStore(bufSizes.at(static_cast<size_t>(memIdx)), field(3), Align(8));
  b.CreateBr(out);
  b.SetInsertPoint(out);
  b.CreateRetVoid();
  b.SetInsertPoint(ok);
}

Value *KernelEmitter::laneIndices(Value *base, int64_t lanes) {
  std::vector<Constant *> steps;
  for (int64_t i = 0; i < lanes; ++i) steps.push_back(b.getInt64(static_cast<uint64_t>(i)));
  Value *splat = b.CreateVectorSplat(static_cast<unsigned>(lanes), b.CreateSExtOrTrunc(base, b.getInt64Ty()));
  return b.CreateAdd(splat, ConstantVector::get(steps));
}

void KernelEmitter::storeOutput(const std::vector<NodeRef> &idxs, Val v) {
  const KernelOp *store = k.bufs[0];
  DType outDt = store->memBuffer().dtype;
  auto [idx, valid] = access(0, idxs);
  if (valid->isNum() && valid->num == 0) return;
  note("store buffer 0{}", valid->isNum() ? "" : " where valid");
  if (valid->isNum()) {
    checkAccess(0, asIdx(render(*idx)), nullptr);
    vb.store(bufPtrs[0], asIdx(render(*idx)), v, outDt);
    return;
  }
  BasicBlock *then = BasicBlock::Create(ctx, "store", fn), *cont = BasicBlock::Create(ctx, "store.cont", fn);
  b.CreateCondBr(asI1(render(*valid)), then, cont);
  b.SetInsertPoint(then);
  checkAccess(0, asIdx(render(*idx)), nullptr);
  vb.store(bufPtrs[0], asIdx(render(*idx)), v, outDt);
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
}

void KernelEmitter::contractAccumulates() {
  for (const auto &vh : accumulates) {
    auto *add = dyn_cast_or_null<BinaryOperator>(static_cast<Value *>(vh));
    if (!add || add->getOpcode() != Instruction::FAdd) continue;
    for (Value *op : add->operands())
      if (auto *mul = dyn_cast<BinaryOperator>(op); mul && mul->getOpcode() == Instruction::FMul) {
        add->setHasAllowContract(true);
        mul->setHasAllowContract(true);
      }
  }
  accumulates.clear();
}

void KernelEmitter::verify() {
  contractAccumulates();
  std::string err;
  raw_string_ostream os(err);
  if (verifyModule(m, &os)) {
    os.flush();
    throw CompileError("codegen: kernel " + k.name() + " does not verify: " + err);
  }
}

} // namespace lazyjit
