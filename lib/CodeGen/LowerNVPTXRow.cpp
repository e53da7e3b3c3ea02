// Row kernels (OPT=5) on NVPTX: a block per row (docs/gpu.md "Row kernels"). The rest of the
// NVPTX lowering is in LowerNVPTX.cpp.
#include "LowerNVPTX.h"

namespace lazyjit {

using namespace llvm;

// One pass of every thread over its share of the row: the row's axes flattened, this thread's
// elements j = tid + it * threads (neighbouring threads read neighbouring elements), split back
// into the axes with // and %. `body` gets the per-axis indices and returns the next values of
// `carried`. When every thread has the same few elements (at most kRowRegisterSteps), the steps
// are unrolled: their loads are then cached for the whole kernel, so the row is read from memory
// once and the later passes find it in registers.
std::vector<Value *> NVPTXLowerer::rowPass(const std::vector<Value *> &carried, const RowBody &body) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), rs = k.rowStart;
  int64_t elems = rowElements(k), steps = std::max<int64_t>(1, (elems + rowThreads - 1) / rowThreads);
  std::string name = "ridx" + std::to_string(rs);
  auto at = [&](const SInt &j) {
    std::vector<NodeRef> ix = idxs;
    int64_t inner = 1;
    for (int a = n - 1; a > rs; --a) {
      ix[a] = mod(floordiv(j, SInt(inner)), full[a]).toNode();
      inner *= full[a].asInt();
    }
    if (rs < n) ix[rs] = floordiv(j, SInt(inner)).toNode();
    return ix;
  };
  bool uneven = elems % rowThreads != 0;
  if (!uneven && steps <= kRowRegisterSteps) {
    note("this thread's elements of the row: lidx + c * {} for c in [0, {}), unrolled", rowThreads, steps);
    std::vector<Value *> cur = carried;
    for (int64_t c = 0; c < steps; ++c) cur = body(at(SInt(tidNode) + SInt(c * rowThreads)), cur);
    return cur;
  }
  std::vector<NodeRef> ix = at(SInt(tidNode) + SInt(variable(name, 0, steps - 1)) * SInt(rowThreads));
  // this thread's steps: ceil((elems - tid) / threads), none for a thread past the row's end
  Value *trips;
  if (uneven) {
    trips = b.CreateUDiv(b.CreateSub(idxConst(elems + rowThreads - 1), varValues.at("lidx")), idxConst(rowThreads));
    if (trace) trace->names[trips] = fmt::format("({}-lidx)//{}", elems + rowThreads - 1, rowThreads);
  } else {
    trips = idxConst(steps);
  }
  note("this thread's elements of the row: lidx + {} * {}", name, rowThreads);
  return loop(name, idxConst(0), trips, uneven, carried, [&](Value *iv, const std::vector<Value *> &c) {
    varValues[name] = iv;
    return body(ix, c);
  });
}

GlobalVariable *NVPTXLowerer::sharedSlots(int64_t slots, const char *suffix) {
  auto *arrTy = ArrayType::get(b.getInt64Ty(), static_cast<uint64_t>(slots));
  auto *g = new GlobalVariable(m, arrTy, false, GlobalValue::InternalLinkage, UndefValue::get(arrTy), symbol + suffix,
                               nullptr, GlobalValue::NotThreadLocal, kNVPTXSharedAS);
  g->setAlignment(Align(16));
  return g;
}

void NVPTXLowerer::treeSteps(const char *stepName, const char *nextName,
                             const std::function<void(Value *, Value *)> &merge) {
  Value *tid = varValues.at("lidx");
  for (int64_t s = rowThreads / 2; s >= 1; s /= 2) {
    BasicBlock *step = BasicBlock::Create(ctx, stepName, fn), *next = BasicBlock::Create(ctx, nextName, fn);
    b.CreateCondBr(b.CreateICmpULT(tid, idxConst(s)), step, next);
    b.SetInsertPoint(step);
    merge(tid, b.CreateAdd(tid, idxConst(s)));
    b.CreateBr(next);
    b.SetInsertPoint(next);
    barrier();
  }
}

// Combines the block's partial results of one reduce: each thread stores its partial in the row's
// shared array, then log2(threads) steps each add the upper half onto the lower, with a barrier
// after each; every thread reads the result, and a last barrier frees the array for the next reduce.
Value *NVPTXLowerer::blockReduce(Op alu, DType rdt, Value *partial) {
  if (rowThreads <= 1) return partial;
  note("combine the threads' partial results through shared memory");
  Type *regTy = vb.regType(rdt);
  Type *elemTy = regTy->isIntegerTy(1) ? b.getInt8Ty() : regTy;
  if (!shared) shared = sharedSlots(rowThreads, "_row");
  Align align(elemTy->getPrimitiveSizeInBits() / 8);
  auto slot = [&](Value *i) { return b.CreateInBoundsGEP(elemTy, shared, i); };
  auto put = [&](Value *v, Value *i) {
    if (v->getType()->isIntegerTy(1)) v = b.CreateZExt(v, elemTy);
    b.CreateAlignedStore(v, slot(i), align);
  };
  auto get = [&](Value *i) -> Value * {
    Value *v = b.CreateAlignedLoad(elemTy, slot(i), align);
    return regTy->isIntegerTy(1) ? b.CreateICmpNE(v, ConstantInt::get(elemTy, 0)) : v;
  };
  Value *tid = varValues.at("lidx");
  put(partial, tid);
  barrier();
  treeSteps("tree.add", "tree.next", [&](Value *lo, Value *hi) {
    put(vb.alu(alu, {Val{get(lo), rdt}, Val{get(hi), rdt}}, rdt).v, lo);
  });
  Value *r = get(idxConst(0));
  barrier();
  return r;
}

// Combines the threads' moments of one value through a shared array of 3 x threads slots (means,
// M2s, counts): each of log2(threads) steps merges the upper half's into the lower's by Chan's
// formula, which takes unequal counts (a row that does not divide among the threads; a thread past
// its end has none), with a barrier after each; every thread reads the result.
NVPTXLowerer::RowMoments NVPTXLowerer::blockMoments(RowMoments part, DType dt) {
  if (rowThreads <= 1) return part;
  note("combine the threads' moments through shared memory (Chan's formula)");
  Type *t = vb.regType(dt);
  // (8-byte slots: one array serves every folded reduce, of float32 or float64)
  if (!sharedMoments) sharedMoments = sharedSlots(3 * rowThreads, "_moments");
  Align align(t->getPrimitiveSizeInBits() / 8);
  auto slot = [&](int64_t part, Value *i) {
    return b.CreateInBoundsGEP(t, sharedMoments, b.CreateAdd(i, idxConst(part * rowThreads)));
  };
  auto put = [&](const RowMoments &v, Value *i) {
    b.CreateAlignedStore(v.mean, slot(0, i), align);
    b.CreateAlignedStore(v.m2, slot(1, i), align);
    b.CreateAlignedStore(v.count, slot(2, i), align);
  };
  auto get = [&](Value *i) {
    return RowMoments{b.CreateAlignedLoad(t, slot(0, i), align), b.CreateAlignedLoad(t, slot(1, i), align),
                      b.CreateAlignedLoad(t, slot(2, i), align)};
  };
  Value *tid = varValues.at("lidx");
  put(part, tid);
  barrier();
  treeSteps("moments.merge", "moments.next", [&](Value *lo, Value *hi) {
    // n = na + nb; delta = mb - ma; mean = ma + delta * nb/n; M2 = M2a + M2b + delta^2 * na * nb/n
    IRBuilderBase::FastMathFlagGuard strict(b);
    b.setFastMathFlags(FastMathFlags());
    RowMoments x = get(lo), y = get(hi);
    Value *n = b.CreateFAdd(x.count, y.count), *zero = ConstantFP::get(t, 0.0);
    Value *f = b.CreateSelect(b.CreateFCmpOGT(n, zero), b.CreateFDiv(y.count, n), zero);
    Value *delta = b.CreateFSub(y.mean, x.mean);
    Value *mean = b.CreateIntrinsic(Intrinsic::fmuladd, {t}, {delta, f, x.mean});
    Value *m2 = b.CreateIntrinsic(Intrinsic::fmuladd, {t},
                                  {b.CreateFMul(delta, delta), b.CreateFMul(x.count, f), b.CreateFAdd(x.m2, y.m2)});
    put(RowMoments{mean, m2, n}, lo);
  });
  RowMoments r = get(idxConst(0));
  barrier();
  return r;
}

// A row kernel: per block, each reduce of the row in order (a pass of every thread, then the tree),
// each EXPAND's row value (its tree at the row's first element, in every thread), then the output
// pass. A kernel with a reduce outside its EXPANDs runs a block per output element: loops over the
// reduced axes before the row carry each thread's partial through every row's passes, the final
// pass accumulates it, and after the last row the tree combines the partials and thread 0 stores.
void NVPTXLowerer::emitRowBody() {
  int n = static_cast<int>(k.shapeLen()), rs = k.rowStart;
  rowThreads = std::max<int64_t>(1, k.rowThreads);
  if (rowThreads > 1) {
    Value *v = b.CreateIntrinsic(Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}, nullptr, "lidx");
    varValues["lidx"] = b.CreateZExtOrTrunc(v, idxTy);
    tidNode = variable("lidx", 0, rowThreads - 1);
  } else {
    varValues["lidx"] = idxConst(0);
    tidNode = numNode(0);
  }
  note("row: {} thread{} per block", rowThreads, rowThreads == 1 ? "" : "s");
  std::vector<const KernelOp *> order = rowNodes(k);
  const KernelOp &top = *k.bufs[0]->src[0];
  const KernelOp *topReduce = k.reduceop;
  int fr = topReduce ? k.firstReduce() : rs;

  // Kernel::rowMoments: the reduces the first pass computes from moments it keeps of their values
  // (each thread a Welford step per element, shifted by a median of three of the row's values), by reduce
  struct Moments {
    RowMoments row;
    Value *shift;
  };
  std::unordered_map<const KernelOp *, Moments> moments;
  auto fromMoments = [&](const KernelOp &x) {
    const Moments &mo = moments.at(&x);
    return squaredDeviations(mo.row.mean, mo.row.m2, mo.row.count, mo.shift, *rowValue(*k.rowMomentsOf(&x)->center), dtypeOf(x));
  };

  // a pass of every thread accumulating `reduce`'s source over its elements from `acc`: the
  // thread's partial result; `withMoments`: also the moments of the folded reduces' values
  auto reducePass = [&](const KernelOp &reduce, Value *acc, bool withMoments) {
    DType rdt = dtypeOf(reduce);
    Op alu = reduceAlu(reduce.op);
    TraceIndent inPass(trace);
    size_t nm = withMoments ? k.rowMoments.size() : 0;
    // [acc, (mean, m2) per folded reduce, count]
    std::vector<Value *> init{acc}, shifts;
    if (nm) shifts = startRowMoments(idxs, init, 1, 0);
    std::vector<Value *> out = rowPass(init, [&](const std::vector<NodeRef> &ix, const std::vector<Value *> &cur) {
      note("accumulate");
      std::vector<Value *> next = cur;
      next[0] = accumulate(alu, eval(*reduce.src[0], ix, nullptr), cur[0], rdt);
      if (!nm) return next;
      note("Welford step{}", nm == 1 ? "" : "s");
      Value *inv;
      next.back() = countRowElement(cur.back(), inv);
      rowMomentSteps(ix, shifts, inv, cur, 1, 1, 0, 0, next);
      return next;
    });
    for (size_t j = 0; j < nm; ++j) {
      DType dt = dtypeOf(*k.rowMoments[j].reduce);
      RowMoments part{out[1 + 2 * j], out[2 + 2 * j], vb.convert(Val{out.back(), dtypeOf(*k.rowMoments[0].reduce)}, dt, false).v};
      moments[k.rowMoments[j].reduce] = Moments{blockMoments(part, dt), shifts[j]};
    }
    return out[0];
  };
  auto row = [&](Value *acc) -> Value * {
    rowValues.clear();
    moments.clear();
    bool first = true;
    for (const KernelOp *x : order) {
      if (x->op == Op::Expand) {
        note("row value (EXPAND): once per row, in every thread");
        setRowValue(*x, idxs);
        continue;
      }
      if (k.rowMomentsOf(x)) {
        note("row value ({} of squared deviations): from the first pass's moments", opName(x->op));
        rowValues[x] = fromMoments(*x);
        continue;
      }
      DType rdt = dtypeOf(*x);
      note("pass: {} over the row", opName(x->op));
      Value *part = reducePass(*x, vb.reduceInit(x->op, rdt).v, first);
      first = false;
      rowValues[x] = Val{blockReduce(reduceAlu(x->op), rdt, part), rdt};
    }
    if (k.rowMomentsOf(topReduce)) {
      // every thread has the row's value: thread 0's partial takes it, the tree adds the partials
      note("final reduce ({} of squared deviations): from the first pass's moments, in thread 0's partial",
           opName(topReduce->op));
      DType rdt = dtypeOf(*topReduce);
      Val v = fromMoments(*topReduce);
      Value *mine = b.CreateSelect(b.CreateICmpEQ(varValues.at("lidx"), idxConst(0)), v.v, vb.constant(0.0, rdt).v);
      return accumulate(Op::Add, Val{mine, rdt}, acc, rdt);
    }
    if (topReduce) {
      note("final pass: {} over the row", opName(topReduce->op));
      return reducePass(*topReduce, acc, false);
    }
    note("output pass");
    TraceIndent inPass(trace);
    rowPass({}, [&](const std::vector<NodeRef> &ix, const std::vector<Value *> &) {
      storeOutput(ix, eval(top, ix, nullptr));
      return std::vector<Value *>{};
    });
    return nullptr;
  };

  if (!topReduce) {
    row(nullptr);
    return;
  }
  DType rdt = dtypeOf(*topReduce);
  Op alu = reduceAlu(topReduce->op);
  auto rows = [&](const std::vector<Value *> &c) { return std::vector<Value *>{row(c[0])}; };
  Value *part = reduceLoops(fr, rs, idxs, {vb.reduceInit(topReduce->op, rdt).v}, rows)[0];
  Val total{blockReduce(alu, rdt, part), rdt};
  std::vector<NodeRef> out = idxs;
  for (int a = fr; a < n; ++a) out[a] = numNode(0);
  BasicBlock *done = nullptr;
  if (rowThreads > 1) {
    BasicBlock *first = BasicBlock::Create(ctx, "row.store", fn);
    done = BasicBlock::Create(ctx, "row.done", fn);
    b.CreateCondBr(b.CreateICmpEQ(varValues.at("lidx"), idxConst(0)), first, done);
    b.SetInsertPoint(first);
    note("thread 0 stores");
  }
  storeOutput(out, eval(top, out, &total));
  if (done) {
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }
}

} // namespace lazyjit
