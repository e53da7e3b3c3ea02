// The scheduler's last step for a kernel: the kernel IR of the fused lazy tree (the reference's
// _replace_bufferops), its inputs and its variables.
#include "KernelBuild.h"
#include "lazyjit/Graph/LazyOpWalk.h"
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
  // `nodes` holds the node built for each leaf and each lazy op, found through two address maps
  // (a lookup costs the same for a chain of any length). A leaf that is not an unrealized
  // constant loads its base, numbered in the order first met (inputsOf)
  const auto &bufs = op->buffers();
  Inputs in;
  std::vector<KernelOpRef> nodes;
  nodes.reserve(bufs.size() * 2);
  PtrMap<LazyBuffer, uint32_t> leafOf;
  leafOf.reserve(bufs.size());
  std::vector<NodeRef> vars;
  for (LazyBuffer *x : bufs) {
    mergeVarVals(varVals, x->st);
    ShapeTracker st = x->st.simplify().unbind();
    addVars(vars, st);
    leafOf.emplace(x, static_cast<uint32_t>(nodes.size()));
    if (x->isUnrealizedConst()) {
      nodes.push_back(KernelOp::constant(std::get<double>(x->base()->op->arg), x->dtype(), std::move(st)));
      continue;
    }
    nodes.push_back(KernelOp::load(in.add(x), x->dtype(), std::move(st)));
  }
  auto leaf = [&](const LazyBuffer *b) -> const KernelOpRef & {
    const uint32_t *i = leafOf.find(b);
    LAZYJIT_INTERNAL_CHECK(i != nullptr, "schedule: a leaf was not replaced");
    return nodes[*i];
  };
  const LazyOp *root = op.get();
  if (op->op == Op::Reshape || op->op == Op::Contiguous) {
    const LazySrc &s = op->src[0];
    if (s.isBuffer()) return {leaf(s.buf.get()), std::move(in.bufs), std::move(vars), std::move(varVals)};
    root = s.op.get();
  }
  // each distinct node of the lazy tree once, sources first, without recursion (a fused chain is as
  // deep as it is long)
  PtrMap<LazyOp, uint32_t> built;
  postorderOnce(*root, [&](const LazyOp &x) { return built.find(&x) != nullptr; }, [&](const LazyOp &x) {
    KernelOpRefs src;
    for (const LazySrc &s : x.src) src.push_back(s.isBuffer() ? leaf(s.buf.get()) : nodes[*built.find(s.op.get())]);
    built.emplace(&x, static_cast<uint32_t>(nodes.size()));
    nodes.push_back(KernelOp::make(x.op, std::move(src), x.arg));
  });
  return {nodes[*built.find(root)], std::move(in.bufs), std::move(vars), std::move(varVals)};
}

} // namespace lazyjit::schedule_detail
