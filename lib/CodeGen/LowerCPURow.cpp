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
// The first pass reads the row from memory, the others from the cache. Each loop is a plain
// scalar loop with fast-math reductions, which LLVM's loop vectorizer widens (libmvec for exp2/log2).
#include "LowerCPU.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>

namespace lazyjit {

using namespace llvm;

void CPULowerer::outerLoops(int axis, int endAxis, std::vector<NodeRef> &idxs, Value *start, Value *stop,
                            const std::function<void()> &body) {
  if (axis >= endAxis) {
    body();
    return;
  }
  const Shape &full = k.fullShape();
  std::string name = "gidx" + std::to_string(axis);
  idxs[axis] = variable(name, 0, full[axis] - 1);
  Value *lo = i64(0), *hi = renderSInt(full[axis]);
  if (axis == 0) {
    // the launcher's chunk, clamped to the axis (see emitBody)
    lo = b.CreateBinaryIntrinsic(Intrinsic::smax, start, lo, nullptr, "start.c");
    hi = b.CreateBinaryIntrinsic(Intrinsic::smin, stop, hi, nullptr, "end.c");
  }
  loop(name, lo, hi, axis == 0 || mayBeEmpty(full[axis]), {}, [&](Value *iv, const std::vector<Value *> &) {
    varValues[name] = iv;
    outerLoops(axis + 1, endAxis, idxs, start, stop, body);
    return std::vector<Value *>{};
  });
}

void CPULowerer::emitRowBody(Value *start, Value *end) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), rs = k.rowStart;
  std::vector<NodeRef> idxs(n);
  std::vector<const LazyOp *> order = rowNodes();
  const LazyOp &top = *k.bufs[0]->src[0].op;

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

  auto row = [&] {
    rowValues.clear();
    std::vector<NodeRef> atRowStart = idxs;
    for (int a = rs; a < n; ++a) atRowStart[a] = numNode(0);
    for (const LazyOp *x : order) {
      if (x->op == Op::Expand) {
        // the row value: the EXPAND's tree (over the row shape) at the row's first element
        rowValues[x] = eval(*x->src[0].op, atRowStart, nullptr);
        continue;
      }
      DType rdt = dtypeOf(*x);
      Op alu = x->op == Op::Sum ? Op::Add : Op::Max;
      std::vector<NodeRef> ix = idxs;
      std::vector<Value *> acc = rowLoops(rs, ix, {vb.reduceInit(x->op, rdt).v}, [&](const std::vector<Value *> &cur) {
        Val v = vb.convert(eval(*x->src[0].op, ix, nullptr), rdt, false);
        return std::vector<Value *>{markAccumulate(vb.alu(alu, {v, Val{cur[0], rdt}}, rdt).v)};
      });
      rowValues[x] = Val{acc[0], rdt};
    }
    std::vector<NodeRef> ix = idxs;
    rowLoops(rs, ix, {}, [&](const std::vector<Value *> &) {
      storeOutput(ix, eval(top, ix, nullptr));
      return std::vector<Value *>{};
    });
  };

  if (rs == 0) {
    // a single row: the body runs once, for the range [0, 1)
    BasicBlock *body = BasicBlock::Create(ctx, "once", fn), *done = BasicBlock::Create(ctx, "once.exit", fn);
    b.CreateCondBr(b.CreateICmpSLT(start, end), body, done);
    b.SetInsertPoint(body);
    row();
    b.CreateBr(done);
    b.SetInsertPoint(done);
  } else {
    outerLoops(0, rs, idxs, start, end, row);
  }
}

} // namespace lazyjit
