// The scheduler's last step for a kernel: the kernel IR of the fused lazy tree (the reference's
// _replace_bufferops), its inputs and its variables.
#include "KernelBuild.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/NodePool.h"

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
  for (LazyBuffer *x : op.buffers()) {
    if (x->isUnrealizedConst()) continue;
    LazyBufferRef b = x->baseShared();
    if (in.idx.emplace(b.get(), static_cast<int>(in.bufs.size()) + 1).second) in.bufs.push_back(std::move(b));
  }
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
  // each leaf's node, sorted by buffer for lookup (a hash map would allocate per leaf); a leaf that
  // is not an unrealized constant loads its base, numbered in the order first met (inputsOf)
  const auto &bufs = op->buffers();
  Inputs in;
  std::vector<std::pair<const LazyBuffer *, KernelOpRef>> leaves;
  leaves.reserve(bufs.size());
  std::vector<NodeRef> vars;
  for (LazyBuffer *x : bufs) {
    mergeVarVals(varVals, x->st);
    ShapeTracker st = x->st.simplify().unbind();
    addVars(vars, st);
    if (x->isUnrealizedConst()) {
      leaves.emplace_back(x, KernelOp::constant(std::get<double>(x->base()->op->arg), x->dtype(), std::move(st)));
      continue;
    }
    auto [it, fresh] = in.idx.emplace(x->base(), static_cast<int>(in.bufs.size()) + 1);
    if (fresh) in.bufs.push_back(x->baseShared());
    leaves.emplace_back(x, KernelOp::load(it->second, x->dtype(), std::move(st)));
  }
  std::sort(leaves.begin(), leaves.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  auto leaf = [&](const LazyBuffer *b) -> const KernelOpRef & {
    auto it = std::lower_bound(leaves.begin(), leaves.end(), b, [](const auto &e, const LazyBuffer *k) { return e.first < k; });
    LAZYJIT_INTERNAL_CHECK(it != leaves.end() && it->first == b, "schedule: a leaf was not replaced");
    return it->second;
  };
  const LazyOp *root = op.get();
  if (op->op == Op::Reshape || op->op == Op::Contiguous) {
    const LazySrc &s = op->src[0];
    if (s.isBuffer()) return {leaf(s.buf.get()), std::move(in.bufs), std::move(vars), std::move(varVals)};
    root = s.op.get();
  }
  // each distinct node of the lazy tree once, sources first, without recursion (a fused chain is as
  // deep as it is long)
  // (its entries from the node pool: a malloc per node was one of a chain's two per op)
  using Entry = std::pair<const LazyOp *const, KernelOpRef>;
  std::unordered_map<const LazyOp *, KernelOpRef, std::hash<const LazyOp *>, std::equal_to<>,
                     NodePoolAllocator<Entry>>
      built;
  postorderOnce(*root, [&](const LazyOp &x) { return built.count(&x) != 0; }, [&](const LazyOp &x) {
    KernelOpRefs src;
    for (const LazySrc &s : x.src) src.push_back(s.isBuffer() ? leaf(s.buf.get()) : built.at(s.op.get()));
    built.emplace(&x, KernelOp::make(x.op, std::move(src), x.arg));
  });
  return {built.at(root), std::move(in.bufs), std::move(vars), std::move(varVals)};
}

} // namespace lazyjit::schedule_detail
