// The target-independent part of kernel lowering (see LowerCore.h).
#include "LowerCore.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace lazyjit {

using namespace llvm;

FastMathFlags referenceFastMath() {
  FastMathFlags f;
  f.setNoSignedZeros();
  f.setAllowReciprocal();
  f.setAllowContract();
  f.setApproxFunc();
  f.setAllowReassoc();
  return f;
}


std::vector<std::vector<int64_t>> upcastCombos(const std::vector<int64_t> &sizes) {
  std::vector<std::vector<int64_t>> out{{}};
  for (int64_t s : sizes) {
    std::vector<std::vector<int64_t>> next;
    for (const auto &c : out)
      for (int64_t v = 0; v < s; ++v) {
        auto d = c;
        d.push_back(v);
        next.push_back(d);
      }
    out = std::move(next);
  }
  return out;
}

size_t KernelEmitter::bufIndex(const LazyOp *op) {
  auto it = bufIndexOf.find(op);
  if (it != bufIndexOf.end()) return it->second;
  for (size_t i = 0; i < k.bufs.size(); ++i)
    if (k.bufs[i]->op == op->op && argEqual(k.bufs[i]->arg, op->arg)) return bufIndexOf[op] = i;
  LAZYJIT_INTERNAL_CHECK(false, "codegen: buffer op not found in the kernel");
}

DType KernelEmitter::dtypeOf(const LazyOp &op) {
  if (auto it = dtypeMemo.find(&op); it != dtypeMemo.end()) return it->second;
  DType dt;
  switch (opTypeOf(op.op)) {
  case OpType::Buffer: dt = op.bufferDType(); break;
  case OpType::Unary: dt = op.op == Op::Cast ? std::get<CastArg>(op.arg).dtype : dtypeOf(*op.src[0].op); break;
  case OpType::Binary: dt = promote(dtypeOf(*op.src[0].op), dtypeOf(*op.src[1].op)); break;
  case OpType::Ternary: dt = promote(dtypeOf(*op.src[1].op), dtypeOf(*op.src[2].op)); break;
  case OpType::Reduce: dt = dtypeOf(*op.src[0].op); break;
  case OpType::Movement:
  case OpType::Load: LAZYJIT_INTERNAL_CHECK(false, "codegen: {} in a kernel AST", opName(op.op));
  }
  return dtypeMemo[&op] = dt;
}


Value *KernelEmitter::asI64(Value *v) { return v->getType()->isIntegerTy(1) ? b.CreateZExt(v, b.getInt64Ty()) : v; }
Value *KernelEmitter::asI1(Value *v) { return v->getType()->isIntegerTy(1) ? v : b.CreateICmpNE(v, i64(0)); }

Value *KernelEmitter::render(const Node &n) {
  auto renderB = [&](const SInt &x) { return x.isInt() ? i64(x.asInt()) : asI64(render(*x.node())); };
  switch (n.kind) {
  case NodeKind::Variable: {
    auto it = varValues.find(n.expr ? *n.expr : "None");
    LAZYJIT_INTERNAL_CHECK(it != varValues.end(), "codegen: unknown variable {}", n.key());
    return it->second;
  }
  case NodeKind::Num: return i64(n.num);
  case NodeKind::Mul: return b.CreateMul(asI64(render(*n.a)), renderB(n.b));
  case NodeKind::Div: return b.CreateSDiv(asI64(render(*n.a)), renderB(n.b));
  case NodeKind::Mod: return b.CreateSRem(asI64(render(*n.a)), renderB(n.b));
  case NodeKind::Lt: return b.CreateICmpSLT(asI64(render(*n.a)), renderB(n.b));
  case NodeKind::Sum: {
    Value *acc = nullptr;
    for (const auto &x : n.nodes) {
      Value *v = asI64(render(*x));
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

Value *KernelEmitter::renderSInt(const SInt &s) { return s.isInt() ? i64(s.asInt()) : asI64(render(*s.node())); }

Val KernelEmitter::loadLeaf(const LazyOp &op, const std::vector<NodeRef> &idxs) {
  size_t bi = bufIndex(&op);
  auto [idx, valid] = k.sts[bi].exprIdxs(idxs);
  DType dt = op.bufferDType();
  std::string key = std::to_string(bi) + "|" + idx->key() + "|" + valid->key();
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
    Value *ptr = bufPtrs.at(op.memBuffer().idx);
    if (alwaysValid) {
      out = vb.load(ptr, asI64(render(*idx)), dt);
    } else {
      // a gated load: the address is clamped to element 0 when invalid, so memory out of bounds
      // is never touched
      Value *gate = asI1(render(*valid));
      Value *safeIdx = b.CreateSelect(gate, asI64(render(*idx)), i64(0));
      Val v = vb.load(ptr, safeIdx, dt);
      out = {b.CreateSelect(gate, v.v, vb.constant(0, dt).v), dt};
    }
  }
  loadCache[key] = out;
  return out;
}

Val KernelEmitter::eval(const LazyOp &op, const std::vector<NodeRef> &idxs, const Val *acc) {
  switch (opTypeOf(op.op)) {
  case OpType::Buffer: return loadLeaf(op, idxs);
  case OpType::Reduce:
    LAZYJIT_INTERNAL_CHECK(acc, "codegen: reduce evaluated outside its accumulator");
    return *acc;
  default: break;
  }
  DType dt = dtypeOf(op);
  std::vector<Val> s;
  for (const auto &x : op.src) s.push_back(eval(*x.op, idxs, acc));
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

std::vector<Value *> KernelEmitter::loop(const std::string &name, Value *lo, Value *hi, bool maybeEmpty,
                          const std::vector<Value *> &carried,
                          const std::function<std::vector<Value *>(Value *, const std::vector<Value *> &)> &body) {
  BasicBlock *pre = b.GetInsertBlock();
  BasicBlock *head = BasicBlock::Create(ctx, "loop." + name, fn);
  BasicBlock *exit = BasicBlock::Create(ctx, "loop." + name + ".exit", fn);
  if (maybeEmpty)
    b.CreateCondBr(b.CreateICmpSLT(lo, hi), head, exit);
  else
    b.CreateBr(head);
  b.SetInsertPoint(head);
  PHINode *iv = b.CreatePHI(b.getInt64Ty(), 2, name);
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
  std::vector<Value *> next = body(iv, cur);
  loadCache = std::move(savedCache);
  Value *ivNext = b.CreateAdd(iv, i64(1), name + ".next", /*HasNUW=*/true, /*HasNSW=*/true);
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



void KernelEmitter::storeOutput(const std::vector<NodeRef> &idxs, Val v) {
  const LazyOp *store = k.bufs[0];
  DType outDt = store->memBuffer().dtype;
  auto [idx, valid] = k.sts[0].exprIdxs(idxs);
  if (valid->isNum() && valid->num == 0) return;
  if (valid->isNum()) {
    vb.store(bufPtrs[0], asI64(render(*idx)), v, outDt);
    return;
  }
  BasicBlock *then = BasicBlock::Create(ctx, "store", fn), *cont = BasicBlock::Create(ctx, "store.cont", fn);
  b.CreateCondBr(asI1(render(*valid)), then, cont);
  b.SetInsertPoint(then);
  vb.store(bufPtrs[0], asI64(render(*idx)), v, outDt);
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
}

void KernelEmitter::verify() {
  std::string err;
  raw_string_ostream os(err);
  if (verifyModule(m, &os)) {
    os.flush();
    throw CompileError("codegen: kernel " + k.name() + " does not verify: " + err);
  }
}

} // namespace lazyjit
