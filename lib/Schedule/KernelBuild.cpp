// The scheduler's last step for a kernel: the kernel IR of the fused lazy tree (the reference's
// _replace_bufferops), its inputs and its variables.
#include "KernelBuild.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Graph/WalkMarks.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/PtrSet.h"

#include <algorithm>
#include <unordered_map>

namespace lazyjit::schedule_detail {

void addVars(std::vector<NodeRef> &out, const ShapeTracker &st) {
  for (const auto &v : st.vars())
    if (std::none_of(out.begin(), out.end(), [&](const NodeRef &o) { return o->identity() == v->identity(); }))
      out.push_back(v);
}

Inputs inputsOf(const LazyOp &op) {
  Inputs in;
  for (LazyBuffer *x : op.buffers())
    if (!x->isUnrealizedConst()) in.add(x);
  return in;
}

void mergeVarVals(VarVals &out, const ShapeTracker &st) {
  for (auto &[name, vv] : st.varVals()) {
    auto [it, fresh] = out.emplace(name, vv);
    LAZYJIT_USER_CHECK(fresh || it->second.second == vv.second, Error,
                       "schedule: variable {} is bound to both {} and {}", name, it->second.second,
                       vv.second);
  }
}

ReplacedAst replaceBufferOps(const LazyOpRef &op, VarVals varVals) {
  // One pass over the leaves in buffers() order numbers the base buffers as inputsOf does and
  // collects the variables; then a post-order walk builds each distinct lazy node once. Its result
  // index is a mark in the lazy node (WalkMarks), and a leaf's node is built where the walk meets
  // it: equal leaves intern to one node, so a leaf met again (flagged) is built a second time and
  // kept in `repeated`, which holds only leaves read more than once. No table as large as the
  // tree: on a 200,000-op chain, probing two of them at random was a third of scheduling.
  const auto &bufs = op->buffers();
  Inputs in;
  std::vector<NodeRef> vars;
  for (LazyBuffer *x : bufs) {
    if (x->symbolicShape()) { // (a tracker without variables binds none)
      mergeVarVals(varVals, x->st);
      addVars(vars, x->st.simplify().unbind());
    }
    if (!x->isUnrealizedConst()) in.add(x);
  }
  auto build = [&](const LazyBuffer *x) {
    ShapeTracker st = x->st.simplify().unbind();
    if (x->isUnrealizedConst()) return KernelOp::constant(std::get<double>(x->base()->op->arg), x->dtype(), std::move(st));
    return KernelOp::load(in.idx.at(x->base()), x->dtype(), std::move(st));
  };
  WalkMarks marks;
  PtrMap<LazyBuffer, KernelOpRef> repeated;
  auto leaf = [&](const LazyBuffer *b) -> KernelOpRef {
    if (marks.flag(*b)) return build(b);
    auto [node, fresh] = repeated.emplace(b, nullptr);
    if (fresh) *node = build(b);
    return *node;
  };
  const LazyOp *root = op.get();
  if (op->op == Op::Reshape || op->op == Op::Contiguous) {
    const LazySrc &s = op->src[0];
    if (s.isBuffer()) return {leaf(s.buf.get()), std::move(in.bufs), std::move(vars), std::move(varVals)};
    root = s.op.get();
  }
  // (without recursion: a fused chain is as deep as it is long)
  std::vector<KernelOpRef> nodes;
  postorderOnce(*root, [&](const LazyOp &x) { return marks.of(x) != 0; }, [&](const LazyOp &x) {
    KernelOpRefs src;
    for (const LazySrc &s : x.src) src.push_back(s.isBuffer() ? leaf(s.buf.get()) : nodes[marks.of(*s.op) - 1]);
    nodes.push_back(KernelOp::make(x.op, std::move(src), x.arg));
    marks.set(x, static_cast<uint32_t>(nodes.size()));
  });
  return {std::move(nodes.back()), std::move(in.bufs), std::move(vars), std::move(varVals)};
}

} // namespace lazyjit::schedule_detail
