// Lowers a Kernel to LLVM IR with IRBuilder: loops with explicit phis for the loop counters and
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
#include "LowerKernel.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <unordered_map>

namespace lazyjit {

using namespace llvm;

namespace {

class CPUMath : public MathLowering {
public:
  Value *unary(IRBuilder<> &b, Op op, Value *x) override {
    Intrinsic::ID id = Intrinsic::not_intrinsic;
    switch (op) {
    case Op::Exp2: id = Intrinsic::exp2; break;
    case Op::Log2: id = Intrinsic::log2; break;
    case Op::Sin: id = Intrinsic::sin; break;
    case Op::Sqrt: id = Intrinsic::sqrt; break;
    default: LAZYJIT_INTERNAL_CHECK(false, "codegen: {} is not a math op", opName(op));
    }
    return b.CreateUnaryIntrinsic(id, x);
  }
};

// Fast-math flags as the reference uses them: no nnan/ninf, so NaN and inf stay exact.
FastMathFlags referenceFastMath() {
  FastMathFlags f;
  f.setNoSignedZeros();
  f.setAllowReciprocal();
  f.setAllowContract();
  f.setApproxFunc();
  f.setAllowReassoc();
  return f;
}

class Lowerer {
public:
  Lowerer(const Kernel &k, Module &m, const TargetSpec &target)
      : k(k), m(m), ctx(m.getContext()), b(ctx), vb(b, math), target(target) {}

  Function *lower(const std::string &symbol);

private:
  const Kernel &k;
  Module &m;
  LLVMContext &ctx;
  IRBuilder<> b;
  CPUMath math;
  ValueBuilder vb;
  const TargetSpec &target;

  Function *fn = nullptr;
  std::vector<Value *> bufPtrs;
  std::map<std::string, Value *> varValues; // index and kernel variables by name
  std::unordered_map<const LazyOp *, size_t> bufIndexOf;
  std::unordered_map<const LazyOp *, DType> dtypeMemo;
  std::map<std::string, Val> loadCache;

  // ---- helpers ----
  size_t bufIndex(const LazyOp *op) {
    auto it = bufIndexOf.find(op);
    if (it != bufIndexOf.end()) return it->second;
    for (size_t i = 0; i < k.bufs.size(); ++i)
      if (k.bufs[i]->op == op->op && argEqual(k.bufs[i]->arg, op->arg)) return bufIndexOf[op] = i;
    LAZYJIT_INTERNAL_CHECK(false, "codegen: buffer op not found in the kernel");
  }

  DType dtypeOf(const LazyOp &op) {
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

  Value *i64(int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); }

  Value *asI64(Value *v) { return v->getType()->isIntegerTy(1) ? b.CreateZExt(v, b.getInt64Ty()) : v; }
  Value *asI1(Value *v) { return v->getType()->isIntegerTy(1) ? v : b.CreateICmpNE(v, i64(0)); }

  // Renders a symbolic node as IR: i64 arithmetic, i1 for comparisons and ands.
  Value *render(const Node &n) {
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

  Value *renderSInt(const SInt &s) { return s.isInt() ? i64(s.asInt()) : asI64(render(*s.node())); }

  // Loads buffer `op` (LOAD or CONST) at per-axis indices, gated by its validity.
  Val loadLeaf(const LazyOp &op, const std::vector<NodeRef> &idxs) {
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

  // Evaluates an AST node at per-axis indices. The reduce node evaluates to `acc`.
  Val eval(const LazyOp &op, const std::vector<NodeRef> &idxs, const Val *acc) {
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

  // ---- loops ----
  // Emits `for iv in [lo, hi)` carrying `carried` values; `body` returns their next values.
  std::vector<Value *> loop(const std::string &name, Value *lo, Value *hi, bool maybeEmpty,
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

  bool mayBeEmpty(const SInt &extent) const { return !extent.isInt(); }

  void emitBody(Value *start, Value *end);
  void emitRangeFunction(const std::string &symbol);
};

std::vector<std::vector<int64_t>> combos(const std::vector<int64_t> &sizes) {
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

void Lowerer::emitBody(Value *start, Value *end) {
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
  std::vector<int64_t> outSizes, redSizes;
  for (int a : outUp) outSizes.push_back(full[a].asInt());
  for (int a : redUp) redSizes.push_back(full[a].asInt());
  auto outCombos = combos(outSizes), redCombos = combos(redSizes);

  std::vector<NodeRef> idxs(n);
  const LazyOp *store = k.bufs[0];
  const LazyOp &top = *store->src[0].op;

  auto setUpcast = [&](std::vector<NodeRef> &ix, const std::vector<int64_t> &oc, const std::vector<int64_t> *rc) {
    for (size_t i = 0; i < outUp.size(); ++i) ix[outUp[i]] = numNode(oc[i]);
    for (size_t i = 0; i < redUp.size(); ++i) ix[redUp[i]] = numNode(rc ? (*rc)[i] : 0);
  };

  // the innermost part: accumulate (if there is a reduce) and store every output-upcast element
  std::function<void(int)> globals = [&](int axis) {
    if (axis < fr) {
      std::string name = "gidx" + std::to_string(axis);
      idxs[axis] = variable(name, 0, full[axis] - 1);
      Value *lo = axis == 0 ? start : i64(0);
      Value *hi = axis == 0 ? end : renderSInt(full[axis]);
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
      for (size_t o = 0; o < outCombos.size(); ++o) init.push_back(vb.reduceInit(rop, rdt).v);
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
            Val v = vb.convert(eval(src, ix, nullptr), rdt, false);
            next[o] = vb.alu(alu, {v, Val{next[o], rdt}}, rdt).v;
          }
        return next;
      };
      std::vector<Value *> finals = reduceLoops(fr, init);
      for (auto *v : finals) accs.push_back(Val{v, rdt});
    }
    // late buffers are read with the reduce indices zeroed
    for (int a = fr; a < firstUpcast; ++a) idxs[a] = numNode(0);
    DType outDt = store->memBuffer().dtype;
    for (size_t o = 0; o < outCombos.size(); ++o) {
      std::vector<NodeRef> ix = idxs;
      setUpcast(ix, outCombos[o], nullptr);
      Val v = eval(top, ix, accs.empty() ? nullptr : &accs[o]);
      auto [idx, valid] = k.sts[0].exprIdxs(ix);
      bool alwaysValid = valid->isNum() && valid->num != 0;
      if (valid->isNum() && valid->num == 0) continue;
      if (alwaysValid) {
        vb.store(bufPtrs[0], asI64(render(*idx)), v, outDt);
      } else {
        BasicBlock *then = BasicBlock::Create(ctx, "store", fn), *cont = BasicBlock::Create(ctx, "store.cont", fn);
        b.CreateCondBr(asI1(render(*valid)), then, cont);
        b.SetInsertPoint(then);
        vb.store(bufPtrs[0], asI64(render(*idx)), v, outDt);
        b.CreateBr(cont);
        b.SetInsertPoint(cont);
      }
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

void Lowerer::emitRangeFunction(const std::string &symbol) {
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

Function *Lowerer::lower(const std::string &symbol) {
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

  BasicBlock *entry = BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  emitBody(start, end);
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
  eb.CreateCall(fn, args);
  eb.CreateRetVoid();

  emitRangeFunction(symbol);

  std::string err;
  raw_string_ostream os(err);
  if (verifyModule(m, &os)) {
    os.flush();
    throw CompileError("codegen: kernel " + k.name() + " does not verify: " + err);
  }
  return entryFn;
}

} // namespace

Function *lowerKernel(const Kernel &k, Module &m, const std::string &symbol, const TargetSpec &target) {
  LAZYJIT_USER_CHECK(target.kind == TargetSpec::Kind::CPU, UnsupportedError,
                     "codegen: this target is not supported by the CPU lowering");
  Lowerer l(k, m, target);
  return l.lower(symbol);
}

} // namespace lazyjit
