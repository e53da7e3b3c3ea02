// The CPU driver of kernel lowering: loops with explicit phis for the loop counters and
// accumulators, index/validity expressions from the ShapeTrackers rendered as i64 arithmetic,
// gated loads that never touch memory out of bounds, and stores cast to the buffer dtype.
//
// For a CPU target, a kernel `r_16_1024` over `out[i] = sum_j in[i*1024 + j]` becomes
//
//   define internal void @k.impl(ptr noalias %data0, ptr noalias %data1, i64 %start, i64 %end)
//   (no noalias on an output and an input it may be written over: inPlaceInputs)
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
// buffer pointers and variable values and calls the (inlined) implementation over [start, end) of
// the outer range (Kernel::outerRange, which the launcher evaluates and splits across threads).
// Vector mode (one upcast axis as one LLVM vector) is in LowerCPUVector.cpp.
#include "HeuristicsCPU.h"
#include "LowerCPU.h"
#include "LowerKernel.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/TargetParser/Triple.h>

namespace lazyjit {

using namespace llvm;

Value *CPUMath::unary(IRBuilder<> &b, Op op, Value *x) {
  if (op == Op::Sqrt) return b.CreateUnaryIntrinsic(Intrinsic::sqrt, x);
  if (x->getType()->isVectorTy()) return vectorCall(b, op, x);
  // the C library's function (Ops.def's libm column): exp2 for float64, exp2f for float32
  std::string_view libm = opLibm(op);
  LAZYJIT_INTERNAL_CHECK(!libm.empty(), "codegen: {} is not a math op", opName(op));
  std::string name = std::string(libm) + (x->getType()->isDoubleTy() ? "" : "f");
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

void CPULowerer::emitBody(Value *start, Value *end) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce();
  int firstUpcast = n - k.upcasted;

  // the loop nest: the unrolled axes and their combinations, and the vector axis the code
  // generator chose (Kernel::vectorAxis)
  const auto &outCombos = nest.outCombos, &redCombos = nest.redCombos;
  if (nest.vecAxis >= 0) {
    vecAxis = nest.vecAxis;
    lanes = nest.lanes;
    vecReduce = nest.vecReduce;
    vidx = variable("vidx", 0, lanes - 1);
    note("vector: axis {} as {} lanes{}", vecAxis, lanes, vecReduce ? " of partial sums, added up before the store" : "");
  }

  std::vector<NodeRef> idxs(n);
  const KernelOp *store = k.bufs[0];
  const KernelOp &top = *store->src[0];

  bool vec = vecAxis >= 0;

  // packed panels (Kernel::packDepth, LowerCPUPack.cpp)
  if (vec && !vecReduce && k.reduceop && k.packDepth >= 0 && k.packDepth < fr && !k.packedBufs.empty()) packPanels(idxs);

  // the innermost part: accumulate (if there is a reduce) and store every output-upcast element
  auto inner = [&] {
    std::vector<Val> accs;
    if (k.reduceop) {
      DType rdt = dtypeOf(*k.reduceop);
      Op rop = k.reduceop->op;
      std::vector<Value *> init;
      for (size_t o = 0; o < nest.accumulators(); ++o)
        init.push_back(vec ? splat(vb.reduceInit(rop, rdt).v) : vb.reduceInit(rop, rdt).v);
      note("{} accumulator{} ({}){}", init.size(), init.size() == 1 ? "" : "s", opName(rop),
           kBlock ? ", from buffer 0 after the first block" : "");
      if (kBlock) {
        // a blocked reduce continues from the sums the blocks before stored in the output
        Value *first = b.CreateICmpEQ(kBlock, i64(0));
        std::vector<NodeRef> zeroed = idxs;
        for (int a = fr; a < firstUpcast; ++a) zeroed[a] = numNode(0);
        size_t o = 0;
        forEachOutput(zeroed, {}, [&](const std::vector<NodeRef> &ix, const Val *) {
          init[o] = b.CreateSelect(first, init[o], vb.convert(vecLoadOutput(ix), rdt, false).v);
          ++o;
        });
      }
      auto step = [&](const std::vector<Value *> &cur) {
        note("accumulate {} value{}{}{}", outCombos.size() * redCombos.size(),
             outCombos.size() * redCombos.size() == 1 ? "" : "s (unrolled)", vec ? ", vectors" : "",
             panels.empty() && wholePanels.empty() ? "" : ", packed buffers from their panels");
        if (!panels.empty() || !wholePanels.empty()) {
          panelReads = true;
          if (!panels.empty()) panelStep = reduceStep("ridx", fr, firstUpcast);
          if (!wholePanels.empty()) wholeStep = reduceStep("ridx", fr, firstUpcast, false);
        }
        std::vector<Value *> next = accumulateCombos(idxs, cur, vec ? lanes : 0, [&](size_t o, size_t c) {
          panelOutCombo = static_cast<int64_t>(o);
          panelCombo = static_cast<int64_t>(c);
        });
        panelReads = false;
        return next;
      };
      std::vector<Value *> finals = reduceLoops(fr, firstUpcast, idxs, init, step);
      for (auto *v : finals) {
        if (vecReduce) // the lanes' partial results, combined (in any order: reassoc)
          v = rop == Op::Sum ? b.CreateFAddReduce(ConstantFP::getNegativeZero(v->getType()->getScalarType()), v)
                             : b.CreateFPMaximumReduce(v);
        accs.push_back(Val{v, rdt});
      }
    }
    // late buffers are read with the reduce indices zeroed
    for (int a = fr; a < firstUpcast; ++a) idxs[a] = numNode(0);
    BasicBlock *blockDone = nullptr;
    if (kBlock) {
      // a block before the last stores its sums as they are; the last one stores the result
      BasicBlock *partial = BasicBlock::Create(ctx, "kblock.partial", fn), *last = BasicBlock::Create(ctx, "kblock.last", fn);
      blockDone = BasicBlock::Create(ctx, "kblock.stored", fn);
      b.CreateCondBr(b.CreateICmpEQ(kBlock, i64(full[fr].asInt() / k.packBlock - 1)), last, partial);
      b.SetInsertPoint(partial);
      note("blocks before the last:");
      {
        TraceIndent partialStores(trace);
        auto saved = loadCache;
        forEachOutput(idxs, accs, [&](const std::vector<NodeRef> &ix, const Val *acc) { vecStore(ix, *acc); });
        loadCache = std::move(saved);
      }
      b.CreateBr(blockDone);
      b.SetInsertPoint(last);
      note("the last block:");
    }
    TraceIndent lastStores(kBlock ? trace : nullptr);
    storeOutputs(idxs, accs, top);
    if (blockDone) {
      loadCache.clear(); // (values of the last block's branch do not dominate what follows)
      b.CreateBr(blockDone);
      b.SetInsertPoint(blockDone);
    }
  };

  if (!k.wholePacked.empty()) {
    // whole packed inputs: the launcher first calls the kernel to copy them (the phase argument
    // set, its range over the first reduce axis), then to compute
    LAZYJIT_INTERNAL_CHECK(vec && !vecReduce && k.reduceop, "codegen: whole packed inputs without a register tile");
    BasicBlock *packBB = BasicBlock::Create(ctx, "pack", fn), *computeBB = BasicBlock::Create(ctx, "compute", fn),
               *done = BasicBlock::Create(ctx, "phase.done", fn);
    b.CreateCondBr(b.CreateICmpNE(phase, i64(0)), packBB, computeBB);
    b.SetInsertPoint(packBB);
    note("phase 1: pack (the first reduce axis in [start, end))");
    {
      TraceIndent packing(trace);
      packWhole(idxs, start, end);
    }
    b.CreateBr(done);
    b.SetInsertPoint(computeBB);
    note("phase 0: compute");
    TraceIndent computing(trace);
    globalLoops(fr, idxs, start, end, inner);
    b.CreateBr(done);
    b.SetInsertPoint(done);
    return;
  }
  globalLoops(fr, idxs, start, end, inner);
}

// In vector mode (a vector axis that is not a reduce's partial sums) each output combination is
// one vector store.
void CPULowerer::storeResult(const std::vector<NodeRef> &ix, const KernelOp &top, const Val *acc) {
  if (vecAxis >= 0 && !vecReduce) vecStore(ix, eval(top, ix, acc, lanes));
  else KernelEmitter::storeResult(ix, top, acc);
}

void CPULowerer::globalLoops(int count, std::vector<NodeRef> &idxs, Value *start, Value *stop,
                             const std::function<void()> &body) {
  if (count > 0) {
    outerLoops(0, count, idxs, start, stop, body);
    return;
  }
  // no global axis: the body runs once, for the range [0, 1)
  note("once (no global axis)");
  BasicBlock *bb = BasicBlock::Create(ctx, "once", fn), *done = BasicBlock::Create(ctx, "once.exit", fn);
  b.CreateCondBr(b.CreateICmpSLT(start, stop), bb, done);
  b.SetInsertPoint(bb);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

void CPULowerer::outerLoops(int axis, int endAxis, std::vector<NodeRef> &idxs, Value *start, Value *stop,
                            const std::function<void()> &body) {
  if (axis == globalHookAxis && globalHook) {
    auto hook = std::move(globalHook);
    globalHook = nullptr;
    hook([&] { outerLoops(axis, endAxis, idxs, start, stop, body); });
    return;
  }
  if (axis >= endAxis) {
    body();
    return;
  }
  const Shape &full = k.fullShape();
  std::string name = "gidx" + std::to_string(axis);
  idxs[axis] = variable(name, 0, full[axis] - 1);
  Value *lo = i64(0), *hi = renderSInt(full[axis]);
  if (axis == 0) {
    // the launcher's chunk, clamped to the axis: besides keeping a bad range in bounds, this
    // gives LLVM the loop's maximum trip count, so a 2-iteration outer loop is not
    // vectorized 32 wide with runtime checks and epilogues (a 77-line kernel became 2,700)
    lo = b.CreateBinaryIntrinsic(Intrinsic::smax, start, lo, nullptr, "start.c");
    hi = b.CreateBinaryIntrinsic(Intrinsic::smin, stop, hi, nullptr, "end.c");
    if (trace) { // this thread's part of the axis
      trace->names[lo] = "start";
      trace->names[hi] = fmt::format("min(end, {})", full[axis].render());
    }
  }
  loop(name, lo, hi, axis == 0 || mayBeEmpty(full[axis]), {}, [&](Value *iv, const std::vector<Value *> &) {
    varValues[name] = iv;
    outerLoops(axis + 1, endAxis, idxs, start, stop, body);
    return std::vector<Value *>{};
  });
}

KernelEmitter::LoopRange CPULowerer::reduceRange(int axis) {
  int fr = k.firstReduce();
  auto [lo, hi] = reduceAxisBounds(axis, fr);
  const SInt &extent = k.fullShape()[axis];
  return {lo, hi, extent - 1, !(axis == fr && kBlockStart) && mayBeEmpty(extent)};
}

std::pair<Value *, Value *> CPULowerer::reduceAxisBounds(int axis, int fr) {
  if (axis != fr || !kBlockStart) return {i64(0), renderSInt(k.fullShape()[axis])};
  // this block of the first reduce axis
  Value *end = b.CreateAdd(kBlockStart, i64(k.packBlock), "kblock.end");
  if (trace) trace->names[end] = fmt::format("kblock*{}+{}", k.packBlock, k.packBlock);
  return {kBlockStart, end};
}

Value *CPULowerer::reduceStep(const std::string &prefix, int fr, int firstUpcast, bool inBlock) {
  Value *step = i64(0);
  for (int a = fr; a < firstUpcast; ++a) {
    Value *iv = asI64(varValues.at(prefix + std::to_string(a)));
    if (a == fr && kBlockStart && inBlock) iv = b.CreateSub(iv, kBlockStart);
    step = b.CreateAdd(b.CreateMul(step, i64(k.fullShape()[a].asInt())), iv);
  }
  return step;
}

Value *CPULowerer::panelAddress(const Panel &p, Value *step, int64_t combo) {
  Value *off = b.CreateAdd(b.CreateMul(step, i64(panelCombos * lanes)), i64(combo * lanes));
  return b.CreateInBoundsGEP(p.type, p.ptr, off);
}

Align CPULowerer::panelAlign(DType dt) const {
  // a vector's offset in its panel is a multiple of its size; the panel is 64-byte aligned
  uint64_t bytes = static_cast<uint64_t>(lanes * cpu_heuristics::registerBytes(dt));
  return Align(std::min<uint64_t>(64, bytes & (~bytes + 1)));
}

Function *CPULowerer::lower(const std::string &symbol) {
  b.setFastMathFlags(referenceFastMath());
  Type *ptrTy = PointerType::getUnqual(ctx);
  auto vars = varsFromAst(*k.ast);
  int numBufs = 0;
  for (const KernelOp *x : k.bufs)
    if (x->op != Op::Const) numBufs = std::max(numBufs, x->memBuffer().idx + 1);

  // the implementation: one pointer per buffer, the variables, the outer range
  std::vector<Type *> params(numBufs, ptrTy);
  params.insert(params.end(), vars.size(), b.getInt64Ty());
  params.push_back(b.getInt64Ty());
  params.push_back(b.getInt64Ty());
  // bounds mode: the BoundsReport and each buffer's size in elements
  if (k.boundsCheck) {
    params.push_back(ptrTy);
    params.insert(params.end(), numBufs, b.getInt64Ty());
  }
  // the scratch block of whole packed inputs, and the phase (1: pack, 0: compute)
  if (!k.wholePacked.empty()) {
    params.push_back(ptrTy);
    params.push_back(b.getInt64Ty());
  }
  fn = Function::Create(FunctionType::get(b.getVoidTy(), params, false), GlobalValue::InternalLinkage,
                        symbol + ".impl", &m);
  fn->addFnAttr(Attribute::AlwaysInline);
  fn->addFnAttr(Attribute::NoUnwind);
  fn->addFnAttr("no-nans-fp-math", "false");
  // (not the output and the inputs the runtime may write it over: inPlaceInputs)
  std::vector<int> shared = inPlaceInputs(*k.ast);
  if (!shared.empty()) shared.push_back(0);
  for (int i = 0; i < numBufs; ++i) {
    if (std::find(shared.begin(), shared.end(), i) == shared.end()) fn->addParamAttr(i, Attribute::NoAlias);
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
  if (!k.wholePacked.empty()) {
    scratch = fn->getArg(static_cast<unsigned>(params.size() - 2));
    scratch->setName("scratch");
    fn->addParamAttr(static_cast<unsigned>(params.size() - 2), Attribute::NoAlias);
    phase = fn->getArg(static_cast<unsigned>(params.size() - 1));
    phase->setName("phase");
  }

  BasicBlock *entry = BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  if (k.rowKernel) emitRowBody(start, end);
  else emitBody(start, end);
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
  // the i-th value of the `vars` array: the variables, then the bounds-check values, the scratch
  // block and the phase
  auto slot = [&](size_t i, const std::string &name = "") {
    return eb.CreateAlignedLoad(eb.getInt64Ty(), eb.CreateConstInBoundsGEP1_64(eb.getInt64Ty(), entryFn->getArg(1), i),
                                Align(8), name);
  };
  for (size_t i = 0; i < vars.size(); ++i) args.push_back(slot(i, *vars[i]->expr));
  args.push_back(entryFn->getArg(2));
  args.push_back(entryFn->getArg(3));
  if (k.boundsCheck) {
    // after the variables: the report's address, then each buffer's size in bytes, which is
    // divided here by the size of the dtype the kernel accesses it as
    args.push_back(eb.CreateIntToPtr(slot(vars.size()), ptrTy, "bounds"));
    for (int i = 0; i < numBufs; ++i) {
      int64_t itemsize = 1;
      for (const KernelOp *x : k.bufs)
        if (x->op != Op::Const && x->memBuffer().idx == i) itemsize = x->memBuffer().dtype.itemsize();
      args.push_back(eb.CreateUDiv(slot(vars.size() + 1 + i), eb.getInt64(static_cast<uint64_t>(itemsize)),
                                   "size" + std::to_string(i)));
    }
  }
  if (!k.wholePacked.empty()) { // after the variables and the bounds-check values: the scratch block, the phase
    size_t at = vars.size() + (k.boundsCheck ? 1 + static_cast<size_t>(numBufs) : 0);
    args.push_back(eb.CreateIntToPtr(slot(at), ptrTy, "scratch"));
    args.push_back(slot(at + 1));
  }
  eb.CreateCall(fn, args);
  eb.CreateRetVoid();

  verify();
  return entryFn;
}

Function *lowerKernelCPU(const Kernel &k, const LoopNest &nest, Module &m, const std::string &symbol,
                         LoopTrace *trace) {
  CPULowerer l(k, nest, m);
  l.traceInto(trace);
  return l.lower(symbol);
}

} // namespace lazyjit
