// One walk of an op DAG for every pass that computes something per node from its operands: kernel
// ASTs are as deep as a fused chain is long (no recursion) and share subtrees (`x * x` reads one
// node twice; each node is walked once). It walks both trees: the lazy graph's LazyOp (whose
// LazyBuffer sources are not walked) and the kernel IR's KernelOp (Schedule/KernelOp.h).
#pragma once

#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Support/StridePrefetch.h"

#include <unordered_set>
#include <vector>

namespace lazyjit {

/// Walks the op nodes under `root` without recursion, each distinct node once: `enter(op)` when
/// the walk first reaches it, returning whether to walk its operands (false: `op` is a leaf of
/// this walk), then `leave(op)` after the operands it walks have been left. Operands are taken
/// first to last, or last to first with `reversed` (the reverse of lazyops()' preorder is the
/// mirrored walk's post-order). `srcOp(source)` names the node of a source (null: not walked).
template <typename NodeT, typename Enter, typename Leave>
void walkOps(const NodeT &root, Enter &&enter, Leave &&leave, bool reversed = false) {
  struct Frame {
    const NodeT *op;
    size_t next;
    bool descend;
  };
  std::unordered_set<const NodeT *> seen{&root};
  std::vector<Frame> stack;
  stack.push_back({&root, 0, static_cast<bool>(enter(root))});
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.descend && f.next < f.op->src.size()) {
      size_t n = f.op->src.size(), i = f.next++;
      const NodeT *x = srcOp(f.op->src[reversed ? n - 1 - i : i]);
      if (!x || !seen.insert(x).second) continue;
      bool descend = enter(*x); // (f may dangle once the stack grows)
      stack.push_back({x, 0, descend});
      continue;
    }
    const NodeT *op = f.op;
    stack.pop_back();
    leave(*op);
  }
}

/// Post-order over the op nodes under `root`, without recursion, for passes that rebuild a tree
/// node by node: `done(op)` says whether `op` was left already (the caller's map of results is the
/// walk's visited set, so the walk keeps no set of its own), and `leave(op)` runs once per node,
/// after the nodes of its operands.
template <typename NodeT, typename Done, typename Leave>
void postorderOnce(const NodeT &root, Done &&done, Leave &&leave) {
  struct Frame {
    const NodeT *op;
    size_t next;
  };
  std::vector<Frame> stack{{&root, 0}};
  StridePrefetch ahead; // (a chain's walk goes down one node per step)
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.next < f.op->src.size()) {
      const NodeT *x = srcOp(f.op->src[f.next++]);
      if (x && !done(*x)) {
        ahead.visit(x);
        stack.push_back({x, 0}); // (f may dangle now)
      }
      continue;
    }
    const NodeT *op = f.op;
    stack.pop_back();
    leave(*op);
  }
}

/// Every node under `root` in preorder, each occurrence (the reference's get_lazyops: a subtree
/// shared n times appears n times), without recursion.
template <typename NodeT> std::vector<const NodeT *> preorderOps(const NodeT &root) {
  std::vector<const NodeT *> out;
  std::vector<const NodeT *> stack{&root};
  while (!stack.empty()) {
    const NodeT *n = stack.back();
    stack.pop_back();
    out.push_back(n);
    for (size_t i = n->src.size(); i-- > 0;)
      if (const NodeT *x = srcOp(n->src[i])) stack.push_back(x);
  }
  return out;
}

/// Each distinct node under `root` once, in the order of its first occurrence in preorderOps: the
/// walk enters a node at its first occurrence, and a node met again had its whole subtree walked.
template <typename NodeT> std::vector<const NodeT *> uniqueOpsOf(const NodeT &root) {
  std::vector<const NodeT *> out;
  walkOps(root, [&](const NodeT &op) {
    out.push_back(&op);
    return true;
  }, [](const NodeT &) {});
  return out;
}

} // namespace lazyjit
