// Row kernels on the CPU (OPT=5), what the passes share (LowerCPURow.cpp lowers them): which
// values get a per-row scratch array, and the prefetch of the next row.
#include "Heuristics.h"
#include "LowerCPU.h"
#include "lazyjit/Graph/LazyOpWalk.h"

#include <llvm/IR/Intrinsics.h>

#include <array>
#include <unordered_set>

namespace lazyjit {

using namespace llvm;

void CPULowerer::planRowScratch(const std::vector<std::vector<const KernelOp *>> &passes) {
  // an element-wise node read by two or more passes that computes a transcendental function is
  // worth an L1-resident array per row (softmax's exp: computed by the sum's pass, read by the
  // output's); its operands are then not evaluated again, so only the outermost such node is kept
  if (!k.rowScratch) return;
  const Shape &full = k.fullShape();
  int64_t rowElems = 1;
  for (size_t a = static_cast<size_t>(k.rowStart); a < k.shapeLen(); ++a) {
    if (!full[a].isInt()) return;
    rowElems *= full[a].asInt();
  }
  std::unordered_map<const KernelOp *, int> uses;
  std::unordered_map<const KernelOp *, bool> costly;
  for (const auto &roots : passes) {
    std::unordered_set<const KernelOp *> inPass;
    for (const KernelOp *r : roots)
      for (const KernelOp *x : rowPassNodes(r))
        if (inPass.insert(x).second) ++uses[x];
  }
  // whether a transcendental function is computed at or below a node, within its pass
  auto isCostly = [&](const KernelOp *root) {
    walkOps(*root, [&](const KernelOp &x) { return rowPassDescends(x) && !costly.count(&x); }, [&](const KernelOp &x) {
      if (costly.count(&x)) return;
      bool c = isTranscendental(x.op);
      if (rowPassDescends(x))
        for (const auto &s : x.src) c = costly.at(s.get()) || c;
      costly.emplace(&x, c);
    });
    return costly.at(root);
  };
  std::vector<const KernelOp *> chosen;
  for (const auto &[x, n] : uses)
    if (n >= 2 && !isBufferOp(x->op) && !isReduceOp(x->op) && x->op != Op::Expand && isCostly(x) &&
        dtypeOf(*x).isFloating())
      chosen.push_back(x);
  // drop the nodes inside another chosen node (rowPassNodes(x) but x, for every x, each node's
  // operands walked once: a node met again had its own inside walked already)
  std::unordered_set<const KernelOp *> inner, walked;
  std::vector<const KernelOp *> stack;
  auto below = [&](const KernelOp *y) {
    if (rowPassDescends(*y))
      for (const auto &s : y->src) stack.push_back(s.get());
  };
  for (const KernelOp *x : chosen) {
    if (!walked.insert(x).second) continue;
    below(x);
    while (!stack.empty()) {
      const KernelOp *y = stack.back();
      stack.pop_back();
      inner.insert(y);
      if (walked.insert(y).second) below(y);
    }
  }
  int64_t bytes = 0;
  IRBuilderBase::InsertPointGuard guard(b);
  b.SetInsertPoint(&fn->getEntryBlock(), fn->getEntryBlock().begin());
  // (pipelined rows: two arrays, the row being computed and the row whose output is written)
  int64_t copies = k.rowPipelined ? 2 : 1;
  for (const KernelOp *x : chosen) {
    if (inner.count(x)) continue;
    Type *t = vb.regType(dtypeOf(*x));
    int64_t size = rowElems * static_cast<int64_t>(m.getDataLayout().getTypeAllocSize(t));
    if (bytes + copies * size > kMaxStackScratchBytes) continue;
    bytes += copies * size;
    std::array<Value *, 2> arrays{};
    for (int64_t c = 0; c < copies; ++c) {
      AllocaInst *a = b.CreateAlloca(ArrayType::get(t, static_cast<uint64_t>(rowElems)), nullptr, "row.scratch");
      a->setAlignment(Align(64));
      arrays[static_cast<size_t>(c)] = a;
    }
    rowScratch.emplace(x, RowScratch{arrays[0], t});
    if (copies == 2) scratchCopies.emplace(x, arrays);
  }
}

// While the output pass writes this row, the next row's inputs are fetched: the first pass of the
// next row then reads them from the cache instead of waiting on memory. One prefetch per vector of
// each input that is contiguous along the row (a cache line for 16 floats); an address past the
// last row is harmless, a prefetch never faults.
void CPULowerer::prefetchNextRow(const std::vector<NodeRef> &vix) {
  if (k.rowStart == 0) return;
  std::vector<NodeRef> next = vix;
  int outer = k.rowStart - 1;
  next[outer] = sumNodes({vix[outer], numNode(1)});
  for (size_t bi = 1; bi < k.bufs.size(); ++bi) {
    const KernelOp *x = k.bufs[bi];
    if (x->op != Op::Load) continue;
    NodeRef base;
    if (!contiguousInVidx(access(bi, vix).idx, &base)) continue;
    NodeRef nextBase;
    if (!contiguousInVidx(access(bi, next).idx, &nextBase)) continue;
    Type *et = vb.memType(x->memBuffer().dtype);
    Value *p = b.CreateGEP(et, bufPtrs.at(x->memBuffer().idx), asI64(render(*nextBase)));
    b.CreateIntrinsic(Intrinsic::prefetch, {p->getType()}, {p, b.getInt32(0), b.getInt32(3), b.getInt32(1)});
  }
}

} // namespace lazyjit
