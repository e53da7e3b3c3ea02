// Row kernels on the CPU (OPT=5): the kernel's reduces all run over its trailing row axes and are
// broadcast back with EXPAND, so for each outer index the lowering emits
//
//   for o in outer axes (the first split across threads):
//     r0 = reduce over the row of src0(o, j)            ; one loop per distinct reduce, inner first
//     e0 = (tree of the first EXPAND)(o, 0)             ; the EXPAND's row value, once per row
//     r1 = reduce over the row of src1(o, j, e0)        ; a later pass reads the earlier values
//     ...
//     for j in row axes: out[o, j] = top(o, j, e0, e1, ...)
//
// The first pass reads the row from memory, the others from the cache. Passes run in vectors of the
// last row axis (Kernel::rowLanes) with independent partial results, else as scalar loops the loop
// vectorizer widens. A reduce of squared deviations from an earlier row value has no loop: the
// first pass keeps Welford moments of its value (Kernel::rowMoments). Scratch arrays and the
// prefetch of the next row: LowerCPURowPlan.cpp.
//
// Pipelined rows (Kernel::rowPipelined) have no output pass of their own: row o's last pass over
// its row also writes row o-1's output, vector for vector in the same loop, from row o-1's row
// values and scratch arrays (kept in stack slots and a second copy of each array); the thread's
// first row runs that loop without it, and its last row's output is written after the loop.
#include "lazyjit/Graph/LazyOpWalk.h"
#include "Heuristics.h"
#include "LowerCPU.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>

#include <optional>
#include <unordered_set>

namespace lazyjit {

using namespace llvm;

void CPULowerer::emitRowBody(Value *start, Value *end) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), rs = k.rowStart;
  std::vector<NodeRef> idxs(n);
  std::vector<const KernelOp *> order = rowNodes(k);
  const KernelOp &top = *k.bufs[0]->src[0];
  // a row kernel with a reduce outside its EXPANDs: the final pass accumulates it
  const KernelOp *topReduce = k.reduceop;
  int fr = topReduce ? k.firstReduce() : rs;
  const KernelOp &finalRoot = topReduce ? *topReduce->src[0] : top;
  // Kernel::rowMoments: reduces computed from the first pass's moments instead of a pass
  const std::vector<const KernelOp *> passRoots = rowPasses(k);
  {
    std::vector<std::vector<const KernelOp *>> passes;
    for (const KernelOp *x : passRoots) passes.push_back({x->src[0].get()});
    if (!passes.empty())
      for (const auto &mo : k.rowMoments) passes[0].push_back(mo.value);
    if (!k.rowMomentsOf(topReduce)) passes.push_back({&finalRoot});
    planRowScratch(passes);
  }
  // the element's index within its row, for the scratch arrays
  auto setRowIndex = [&] {
    Value *j = i64(0);
    for (int a = rs; a < n; ++a) j = b.CreateAdd(b.CreateMul(j, renderSInt(full[a])), varValues.at("ridx" + std::to_string(a)));
    rowIndex = j;
  };
  auto endPass = [&] {
    for (const KernelOp *x : rowScratchStored) rowScratch.at(x).filled = true;
    rowScratchStored.clear();
    rowIndex = nullptr;
  };

  // nested loops over the row axes [axis, n) carrying `carried`; `inner` gives the next values
  std::function<std::vector<Value *>(int, std::vector<NodeRef> &, const std::vector<Value *> &,
                                     const std::function<std::vector<Value *>(const std::vector<Value *> &)> &)>
      rowLoops = [&](int axis, std::vector<NodeRef> &ix, const std::vector<Value *> &carried,
                     const std::function<std::vector<Value *>(const std::vector<Value *> &)> &inner) {
        if (axis >= n) return inner(carried);
        std::string name = "ridx" + std::to_string(axis);
        ix[axis] = variable(name, 0, full[axis] - 1);
        return loop(name, i64(0), renderSInt(full[axis]), mayBeEmpty(full[axis]), carried,
                    [&, axis, name](Value *iv, const std::vector<Value *> &c) {
                      varValues[name] = iv;
                      return rowLoops(axis + 1, ix, c, inner);
                    });
      };

  // a pass in vectors of `lanes` elements of the last row axis (the heuristics chose a width that
  // divides it): loops over the other row axes, then over the vectors; `inner` gets the per-axis
  // indices (the last one `rvec*lanes + vidx`) and the carried values. rowIndex is the vector's
  // first element within the row.
  auto vecPass = [&](const std::vector<Value *> &carried, int64_t unroll,
                     const std::function<std::vector<Value *>(const std::vector<NodeRef> &, int64_t,
                                                              const std::vector<Value *> &)> &inner) {
    int64_t last = full[n - 1].asInt(), step = lanes * unroll;
    vidx = variable("vidx", 0, lanes - 1);
    NodeRef rvec = variable("rvec", 0, last / step - 1);
    std::vector<NodeRef> vix = idxs;
    std::function<std::vector<Value *>(int, const std::vector<Value *> &)> loops = [&](int axis, const std::vector<Value *> &cur) {
      if (axis < n - 1) {
        std::string name = "ridx" + std::to_string(axis);
        vix[axis] = variable(name, 0, full[axis] - 1);
        return loop(name, i64(0), renderSInt(full[axis]), mayBeEmpty(full[axis]), cur,
                    [&, axis, name](Value *iv, const std::vector<Value *> &c) {
                      varValues[name] = iv;
                      return loops(axis + 1, c);
                    });
      }
      return loop("rvec", i64(0), i64(last / step), false, cur, [&](Value *iv, const std::vector<Value *> &c) {
        varValues["rvec"] = iv;
        Value *j = i64(0);
        for (int a = rs; a < n - 1; ++a)
          j = b.CreateAdd(b.CreateMul(j, renderSInt(full[a])), varValues.at("ridx" + std::to_string(a)));
        Value *first = b.CreateAdd(b.CreateMul(j, i64(last)), b.CreateMul(iv, i64(step)));
        std::vector<Value *> next = c;
        for (int64_t u = 0; u < unroll; ++u) {
          vix[n - 1] = sumNodes({(SInt(rvec) * SInt(step)).node(), numNode(u * lanes), vidx});
          rowIndex = b.CreateAdd(first, i64(u * lanes));
          next = inner(vix, u, next);
        }
        return next;
      });
    };
    return loops(rs, carried);
  };
  // whether a pass evaluating `root` per element can run in vectors
  // a row of one axis that is not a whole number of vectors ends in a scalar tail loop over the
  // last `last % lanes` elements (gathers and masks would cost more than the few scalar ones)
  int64_t tailStart = 0, last = full[n - 1].isInt() ? full[n - 1].asInt() : 0;
  if (k.rowLanes > 0) tailStart = last / k.rowLanes * k.rowLanes;
  auto tailLoop = [&](const std::vector<Value *> &carried,
                      const std::function<std::vector<Value *>(const std::vector<NodeRef> &, const std::vector<Value *> &)> &inner) {
    if (tailStart >= last) return carried;
    std::string name = "ridx" + std::to_string(n - 1);
    std::vector<NodeRef> ix = idxs;
    ix[n - 1] = variable(name, tailStart, last - 1);
    return loop(name + ".tail", i64(tailStart), i64(last), false, carried, [&](Value *iv, const std::vector<Value *> &c) {
      varValues[name] = iv;
      if (!rowScratch.empty()) setRowIndex();
      return inner(ix, c);
    });
  };
  // (the heuristics set rowLanes only where every vector pass is whole vectors or a single row axis
  // ends in a tail)
  auto vectorPass = [&](const KernelOp *root) { return rowPassInVectors(k, root); };

  // Kernel::rowPipelined: a row's output pass runs in the next row's pass over `mergeInto`, or
  // after the thread's last row. Per thread, in stack slots (which mem2reg makes registers):
  // whether a row's output is pending, that row's outer indices and row values, and the parity
  // that picks each scratch array's copy (the row computed uses copy `parity`, the pending row
  // the other).
  const KernelOp *mergeInto = k.rowPipelined && !passRoots.empty() ? passRoots.back() : nullptr;
  LAZYJIT_INTERNAL_CHECK(!k.rowPipelined || (mergeInto && !topReduce && vectorPass(&top) && tailStart == last),
                         "codegen: pipelined rows without a vector last pass and output pass");
  struct Pending {
    Value *pending = nullptr, *parity = nullptr;
    std::vector<Value *> idx;                             // per outer axis
    std::unordered_map<const KernelOp *, Value *> values; // per row value
  } pend;
  // a pending row's outer indices, row values and scratch arrays, loaded where it is written
  struct RowContext {
    std::vector<Value *> idx;
    std::unordered_map<const KernelOp *, Val> values;
    std::unordered_map<const KernelOp *, Value *> scratch;
  };
  Value *rowParity = nullptr; // the current row's
  if (mergeInto) {
    IRBuilderBase::InsertPoint here = b.saveIP();
    b.SetInsertPoint(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    pend.pending = b.CreateAlloca(b.getInt1Ty(), nullptr, "row.pending");
    pend.parity = b.CreateAlloca(b.getInt1Ty(), nullptr, "row.parity");
    for (int a = 0; a < rs; ++a) pend.idx.push_back(b.CreateAlloca(idxTy, nullptr, "pending.gidx" + std::to_string(a)));
    for (const KernelOp *x : order) pend.values[x] = b.CreateAlloca(vb.regType(dtypeOf(*x)), nullptr, "pending.value");
    b.restoreIP(here);
    b.CreateStore(b.getFalse(), pend.pending);
    b.CreateStore(b.getFalse(), pend.parity);
  }
  auto loadPending = [&](Value *parity) {
    RowContext c;
    for (int a = 0; a < rs; ++a) c.idx.push_back(b.CreateLoad(idxTy, pend.idx[static_cast<size_t>(a)]));
    for (const KernelOp *x : order) c.values[x] = Val{b.CreateLoad(vb.regType(dtypeOf(*x)), pend.values.at(x)), dtypeOf(*x)};
    for (const auto &[x, arrays] : scratchCopies) c.scratch[x] = b.CreateSelect(parity, arrays[0], arrays[1]);
    return c;
  };
  // emits `f` as if at the pending row: its outer indices, row values and (filled) scratch arrays
  auto atRow = [&](const RowContext &c, const std::function<void()> &f) {
    auto savedVars = varValues;
    auto savedRow = rowValues;
    auto savedScratch = rowScratch;
    auto savedCache = std::move(loadCache);
    loadCache.clear(); // (the same index keys name the other row's elements)
    for (int a = 0; a < rs; ++a) varValues["gidx" + std::to_string(a)] = c.idx[static_cast<size_t>(a)];
    rowValues = c.values;
    for (auto &[x, sc] : rowScratch) {
      sc.ptr = c.scratch.at(x);
      sc.filled = true;
    }
    f();
    varValues = std::move(savedVars);
    rowValues = std::move(savedRow);
    rowScratch = std::move(savedScratch);
    loadCache = std::move(savedCache);
  };
  // the pending row's output, a vector of it at the pass's indices
  auto storePendingVector = [&](const RowContext &c, const std::vector<NodeRef> &vix) {
    atRow(c, [&] {
      note("at the pending row:");
      vecStore(vix, eval(top, vix, nullptr, lanes));
    });
  };
  std::optional<RowContext> pendingRow; // set while the pass over `mergeInto` also writes it
  // the pass over `mergeInto`, emitted twice: for the thread's first row (no row pending), and with
  // pendingRow set for the later ones; its carried results joined
  auto eitherRow = [&](const std::function<std::vector<Value *>()> &emit) {
    Value *isPending = b.CreateLoad(b.getInt1Ty(), pend.pending, "pending");
    BasicBlock *firstBB = BasicBlock::Create(ctx, "row.first", fn), *laterBB = BasicBlock::Create(ctx, "row.later", fn);
    BasicBlock *join = BasicBlock::Create(ctx, "row.pass", fn);
    b.CreateCondBr(isPending, laterBB, firstBB);
    b.SetInsertPoint(firstBB);
    note("the thread's first row:");
    std::vector<Value *> a = emit();
    BasicBlock *aEnd = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(laterBB);
    note("a later row: the same loop, also writing the previous row's output");
    pendingRow = loadPending(rowParity);
    std::vector<Value *> c = emit();
    pendingRow.reset();
    BasicBlock *cEnd = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    std::vector<Value *> out;
    for (size_t i = 0; i < a.size(); ++i) {
      PHINode *p = b.CreatePHI(a[i]->getType(), 2);
      p->addIncoming(a[i], aEnd);
      p->addIncoming(c[i], cEnd);
      out.push_back(p);
    }
    return out;
  };

  // Kernel::rowMoments, per folded reduce: its value's mean and M2 over the row so far, and the
  // number of elements they cover (of the reduce's dtype), carried by the first pass after its
  // own accumulators. The values are shifted by a median of three of the row's (startRowMoments):
  // Welford's running mean then stays near 0, where its rounding is small against the spread
  // (unshifted, the variance of a row of 1e4 + U(-1, 1) was off by 3.5e-5 relative, the two-pass
  // variance's by 5e-8; shifted 2e-7).
  struct Moments {
    Value *mean, *m2, *count, *shift;
  };
  std::unordered_map<const KernelOp *, Moments> moments;
  size_t nm = k.rowMoments.size();
  std::vector<Value *> shifts;
  // a scalar Welford step of every folded reduce's value at `ix`, into the moments carried after
  // the pass's own accumulator
  auto scalarMoments = [&](const std::vector<NodeRef> &ix, const std::vector<Value *> &cur, std::vector<Value *> &next) {
    Value *inv;
    next.back() = countRowElement(cur.back(), inv);
    rowMomentSteps(ix, shifts, inv, cur, 1, 1, 0, 0, next);
  };
  // the moments a pass carried from `at` (startRowMoments' layout, one copy) at its end
  auto momentsEnd = [&](const std::vector<Value *> &carried, size_t at) {
    for (size_t j = 0; j < nm; ++j)
      moments[k.rowMoments[j].reduce] = Moments{carried[at + 2 * j], carried[at + 2 * j + 1], carried[at + 2 * nm], shifts[j]};
  };

  // a folded reduce over this row, from the first pass's moments
  auto fromMoments = [&](const KernelOp &x) {
    const Moments &mo = moments.at(&x);
    DType dt = dtypeOf(x);
    Value *count = vb.convert(Val{mo.count, dtypeOf(*k.rowMoments[0].reduce)}, dt, false).v;
    return squaredDeviations(mo.mean, mo.m2, count, mo.shift, *rowValue(*k.rowMomentsOf(&x)->center), dt);
  };

  std::function<Value *(Value *)> row = [&](Value *acc) -> Value * {
    rowValues.clear();
    moments.clear();
    if (mergeInto) {
      rowParity = b.CreateLoad(b.getInt1Ty(), pend.parity, "parity");
      for (const auto &[x, arrays] : scratchCopies) rowScratch.at(x).ptr = b.CreateSelect(rowParity, arrays[1], arrays[0]);
    }
    int pass = 0; // the second pass prefetches the next row, behind this row's work
    for (const KernelOp *x : order) {
      if (x->op == Op::Expand) {
        note("row value (EXPAND): once per row");
        setRowValue(*x, idxs);
        continue;
      }
      DType rdt = dtypeOf(*x);
      Op alu = reduceAlu(x->op);
      const KernelOp &src = *x->src[0];
      if (k.rowMomentsOf(x)) {
        note("row value ({} of squared deviations): from pass 1's moments", opName(x->op));
        rowValues[x] = fromMoments(*x);
        continue;
      }
      bool first = pass == 0;
      size_t withMoments = first ? nm : 0;
      // (pipelined rows have no output pass of their own: a first pass that is also the last
      // prefetches)
      bool prefetch = pass == 1 || (x == mergeInto && pass == 0);
      ++pass;
      note("pass {}: {} over the row{}", pass, opName(x->op), prefetch ? ", prefetching the next row" : "");
      TraceIndent inPass(trace);
      bool vec = rdt.isFloating() && vectorPass(&src);
      for (size_t j = 0; j < withMoments; ++j) vec = vec && vectorPass(k.rowMoments[j].value);
      if (vec) {
        // independent partial results per unrolled vector, so that the accumulation's latency
        // does not serialize the pass; combined (in any order: reassoc) after the row. A pass
        // computing a transcendental per element (softmax's exp, ~20 instructions a vector on
        // AVX2) spends far longer on each vector than an add's latency, so with AVX2's 16
        // registers it keeps one partial result: the three others took the registers the exp's
        // constants need (4 partial results spilled and reloaded the polynomial from memory every
        // vector; W3 at OPT=5 ran ~7% faster with one, ~15% with the inline exp2's NaN select
        // gone too). AVX-512's 32 registers hold both.
        lanes = k.rowLanes;
        int64_t vectors = full[n - 1].asInt() / lanes, unroll = vectors % 4 == 0 ? 4 : vectors % 2 == 0 ? 2 : 1;
        size_t U = static_cast<size_t>(unroll);
        size_t P = !withMoments && k.opts.vectorBits < 512 && rowPassTranscendental(&src) ? 1 : U;
        std::vector<Value *> init(P, splat(vb.reduceInit(x->op, rdt).v));
        if (P == U) note("<{} x {}> vectors, {} partial results", lanes, rdt.name(), unroll);
        else note("<{} x {}> vectors unrolled {}, 1 partial result", lanes, rdt.name(), unroll);
        if (withMoments) shifts = startRowMoments(idxs, init, U, lanes); // (the count: the elements each lane has seen)
        Value *inv = nullptr;
        auto step = [&](const std::vector<NodeRef> &vix, int64_t u, const std::vector<Value *> &cur) {
          if (prefetch) prefetchNextRow(vix);
          note("accumulate a vector");
          std::vector<Value *> next = cur;
          size_t su = static_cast<size_t>(u);
          next[su % P] = accumulate(alu, eval(src, vix, nullptr, lanes), cur[su % P], rdt);
          if (withMoments) {
            // (every lane of every partial result has seen as many elements: one count)
            if (u == 0) next.back() = countRowElement(cur.back(), inv);
            note("Welford step{}", nm == 1 ? "" : "s");
            rowMomentSteps(vix, shifts, inv, cur, U, U, su, lanes, next);
          }
          if (pendingRow) storePendingVector(*pendingRow, vix);
          return next;
        };
        std::vector<Value *> acc = x == mergeInto ? eitherRow([&] { return vecPass(init, unroll, step); })
                                                  : vecPass(init, unroll, step);
        Value *all = acc[0];
        for (size_t u = 1; u < P; ++u) all = vb.alu(alu, {Val{all, rdt}, Val{acc[u], rdt}}, rdt).v;
        Value *r = alu == Op::Add ? b.CreateFAddReduce(ConstantFP::getNegativeZero(all->getType()->getScalarType()), all)
                                  : b.CreateFPMaximumReduce(all);
        std::vector<Value *> tailInit{r};
        if (withMoments) {
          // the U * lanes streams of equal counts combined (Chan et al.): the mean of their means,
          // and M2 = sum of their M2s + count * sum of (stream mean - mean)^2
          DType cdt = dtypeOf(*k.rowMoments[0].reduce);
          Value *perLane = acc.back();
          for (size_t j = 0; j < nm; ++j) {
            DType mdt = dtypeOf(*k.rowMoments[j].reduce);
            Value *zero = ConstantFP::getNegativeZero(vb.regType(mdt));
            Value *means = acc[U + 2 * j * U], *m2s = acc[U + 2 * j * U + U];
            for (size_t u = 1; u < U; ++u) {
              means = b.CreateFAdd(means, acc[U + 2 * j * U + u]);
              m2s = b.CreateFAdd(m2s, acc[U + 2 * j * U + U + u]);
            }
            Value *mean = b.CreateFDiv(b.CreateFAddReduce(zero, means), vb.constant(static_cast<double>(U) * static_cast<double>(lanes), mdt).v);
            Value *dev = nullptr;
            for (size_t u = 0; u < U; ++u) {
              Value *d = b.CreateFSub(acc[U + 2 * j * U + u], splat(mean));
              dev = dev ? b.CreateFAdd(dev, b.CreateFMul(d, d)) : b.CreateFMul(d, d);
            }
            Value *m2 = b.CreateFAdd(b.CreateFAddReduce(zero, m2s),
                                     b.CreateFMul(vb.convert(Val{perLane, cdt}, mdt, false).v, b.CreateFAddReduce(zero, dev)));
            tailInit.push_back(mean);
            tailInit.push_back(m2);
          }
          tailInit.push_back(b.CreateFMul(perLane, vb.constant(static_cast<double>(U) * static_cast<double>(lanes), cdt).v));
        }
        lanes = 0;
        std::vector<Value *> done = tailLoop(tailInit, [&](const std::vector<NodeRef> &ix, const std::vector<Value *> &cur) {
          note("accumulate");
          std::vector<Value *> next = cur;
          next[0] = accumulate(alu, eval(src, ix, nullptr), cur[0], rdt);
          if (withMoments) scalarMoments(ix, cur, next);
          return next;
        });
        if (withMoments) momentsEnd(done, 1);
        endPass();
        rowValues[x] = Val{done[0], rdt};
        continue;
      }
      std::vector<NodeRef> ix = idxs;
      std::vector<Value *> init{vb.reduceInit(x->op, rdt).v};
      if (withMoments) shifts = startRowMoments(idxs, init, 1, 0);
      std::vector<Value *> acc = rowLoops(rs, ix, init, [&](const std::vector<Value *> &cur) {
        if (!rowScratch.empty()) setRowIndex();
        note("accumulate");
        std::vector<Value *> next = cur;
        next[0] = accumulate(alu, eval(src, ix, nullptr), cur[0], rdt);
        if (withMoments) scalarMoments(ix, cur, next);
        return next;
      });
      if (withMoments) momentsEnd(acc, 1);
      endPass();
      rowValues[x] = Val{acc[0], rdt};
    }
    std::vector<NodeRef> ix = idxs;
    bool vecOut = !topReduce && vectorPass(&top), finalFolded = topReduce && k.rowMomentsOf(topReduce);
    if (mergeInto) note("output pass: in the next row's pass {}, or after the thread's last row", pass);
    else if (finalFolded) note("final reduce ({} of squared deviations): from pass 1's moments", opName(topReduce->op));
    else if (topReduce) note("final pass: {} over the row", opName(topReduce->op));
    else note("output pass{}", vecOut && pass == 1 ? ", prefetching the next row" : "");
    TraceIndent inPass(trace);
    if (mergeInto) {
      // this row's output is pending: the next row's pass or the end of the thread's rows writes it
      for (int a = 0; a < rs; ++a) b.CreateStore(varValues.at("gidx" + std::to_string(a)), pend.idx[static_cast<size_t>(a)]);
      for (const KernelOp *x : order) b.CreateStore(vb.convert(rowValues.at(x), dtypeOf(*x), false).v, pend.values.at(x));
      b.CreateStore(b.getTrue(), pend.pending);
      b.CreateStore(b.CreateNot(rowParity), pend.parity);
    } else if (finalFolded) {
      // the kernel's reduce over this row comes from the moments: no final pass
      acc = accumulate(Op::Add, fromMoments(*topReduce), acc, dtypeOf(*topReduce));
    } else if (topReduce) {
      // the final pass accumulates the kernel's reduce over the row (a scalar loop)
      DType rdt = dtypeOf(*topReduce);
      Op alu = reduceAlu(topReduce->op);
      std::vector<Value *> next = rowLoops(rs, ix, {acc}, [&](const std::vector<Value *> &cur) {
        if (!rowScratch.empty()) setRowIndex();
        note("accumulate");
        return std::vector<Value *>{accumulate(alu, eval(finalRoot, ix, nullptr), cur[0], rdt)};
      });
      acc = next[0];
    } else if (vecOut) {
      // row values are splat, scratch arrays read a vector at a time
      lanes = k.rowLanes;
      bool prefetch = pass == 1;
      vecPass({}, 1, [&](const std::vector<NodeRef> &vix, int64_t, const std::vector<Value *> &) {
        if (prefetch) prefetchNextRow(vix);
        vecStore(vix, eval(top, vix, nullptr, lanes));
        return std::vector<Value *>{};
      });
      lanes = 0;
      tailLoop({}, [&](const std::vector<NodeRef> &tix, const std::vector<Value *> &) {
        storeOutput(tix, eval(top, tix, nullptr));
        return std::vector<Value *>{};
      });
    } else {
      rowLoops(rs, ix, {}, [&](const std::vector<Value *> &) {
        if (!rowScratch.empty()) setRowIndex();
        storeOutput(ix, eval(top, ix, nullptr));
        return std::vector<Value *>{};
      });
    }
    lanes = 0;
    endPass();
    for (auto &[x, sc] : rowScratch) sc.filled = false; // the next row computes them again
    return acc;
  };

  if (!topReduce) {
    globalLoops(rs, idxs, start, end, [&] { row(nullptr); });
    if (!mergeInto) return;
    note("after the thread's last row: its output pass");
    TraceIndent inPass(trace);
    Value *isPending = b.CreateLoad(b.getInt1Ty(), pend.pending, "pending");
    BasicBlock *lastBB = BasicBlock::Create(ctx, "row.last", fn), *done = BasicBlock::Create(ctx, "row.done", fn);
    b.CreateCondBr(isPending, lastBB, done);
    b.SetInsertPoint(lastBB);
    RowContext c = loadPending(b.CreateLoad(b.getInt1Ty(), pend.parity, "parity"));
    lanes = k.rowLanes;
    vecPass({}, 1, [&](const std::vector<NodeRef> &vix, int64_t, const std::vector<Value *> &) {
      storePendingVector(c, vix);
      return std::vector<Value *>{};
    });
    lanes = 0;
    b.CreateBr(done);
    b.SetInsertPoint(done);
    return;
  }
  // a row kernel with a reduce: per output element, loops over the reduced outer axes [fr, rs)
  // carry the accumulator through every row's passes
  auto body = [&] {
    DType rdt = dtypeOf(*topReduce);
    auto rows = [&](const std::vector<Value *> &c) { return std::vector<Value *>{row(c[0])}; };
    Val acc{reduceLoops(fr, rs, idxs, {vb.reduceInit(topReduce->op, rdt).v}, rows)[0], rdt};
    std::vector<NodeRef> out = idxs;
    for (int a = fr; a < n; ++a) out[a] = numNode(0);
    storeOutput(out, eval(top, out, &acc));
  };
  globalLoops(fr, idxs, start, end, body);
}

} // namespace lazyjit
