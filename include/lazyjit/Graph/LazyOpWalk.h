// One walk of an op DAG for every pass that computes something per node from its operands: kernel
// ASTs are as deep as a fused chain is long (no recursion) and share subtrees (`x * x` reads one
// node twice; each node is walked once).
#pragma once

#include "lazyjit/Graph/LazyOp.h"

#include <unordered_set>
#include <vector>

namespace lazyjit {

/// Walks the op nodes under `root` (LazyBuffer sources are not walked) without recursion, each
/// distinct node once: `enter(op)` when the walk first reaches it, returning whether to walk its
/// operands (false: `op` is a leaf of this walk), then `leave(op)` after the operands it walks
/// have been left. Operands are taken first to last, or last to first with `reversed` (the
/// reverse of lazyops()' preorder is the mirrored walk's post-order).
template <typename Enter, typename Leave>
void walkOps(const LazyOp &root, Enter &&enter, Leave &&leave, bool reversed = false) {
  struct Frame {
    const LazyOp *op;
    size_t next;
    bool descend;
  };
  std::unordered_set<const LazyOp *> seen{&root};
  std::vector<Frame> stack;
  stack.push_back({&root, 0, static_cast<bool>(enter(root))});
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.descend && f.next < f.op->src.size()) {
      size_t n = f.op->src.size(), i = f.next++;
      const LazySrc &s = f.op->src[reversed ? n - 1 - i : i];
      if (s.isBuffer() || !seen.insert(s.op.get()).second) continue;
      const LazyOp *x = s.op.get();
      bool descend = enter(*x); // (f may dangle once the stack grows)
      stack.push_back({x, 0, descend});
      continue;
    }
    const LazyOp *op = f.op;
    stack.pop_back();
    leave(*op);
  }
}

} // namespace lazyjit
