// Building a kernel's IR from the fused lazy tree the scheduler chose (the reference's
// _replace_bufferops), and what it reads: internal to lib/Schedule.
#pragma once

#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Graph/LazyBuffer.h"

#include <unordered_map>
#include <vector>

namespace lazyjit::schedule_detail {

/// Adds the symbolic variables of `st` not in `out` yet: the scheduler collects a kernel's
/// variables from the ShapeTrackers it builds instead of walking the AST again (varsFromAst).
void addVars(std::vector<NodeRef> &out, const ShapeTracker &st);

/// Adds the bound values of `st`'s variables to `out`; one variable bound to two values is an error.
void mergeVarVals(VarVals &out, const ShapeTracker &st);

/// The deduplicated base buffers a kernel (or host step) over `op` reads, and each one's LOAD index.
struct Inputs {
  std::vector<LazyBufferRef> bufs;
  std::unordered_map<const LazyBuffer *, int> idx; // base buffer -> its LOAD index
  /// The LOAD index of `x`'s base, numbered in the order bases are first added.
  int add(LazyBuffer *x) {
    auto [it, fresh] = idx.emplace(x->base(), static_cast<int>(bufs.size()) + 1);
    if (fresh) bufs.push_back(x->baseShared());
    return it->second;
  }
};
Inputs inputsOf(const LazyOp &op);

struct ReplacedAst {
  KernelOpRef ast;
  std::vector<LazyBufferRef> inputs;
  std::vector<NodeRef> vars; ///< of the leaves' ShapeTrackers, in the order they were met
  VarVals varVals;           ///< the values bound to them, merged into those passed in
};

/// _replace_bufferops: the kernel IR of `op`, whose leaves become LOAD(MemBuffer) of the
/// deduplicated base buffers (inputsOf's, in its order), or CONST; each distinct node of the lazy
/// tree is built once. The leaves' variable values are merged into `varVals` on the way, in one
/// pass over the leaves that reads only their bits unless they have variables (a fused chain has
/// a leaf per op, and each pass over 20,000 of them reads them back from the last-level cache).
ReplacedAst replaceBufferOps(const LazyOpRef &op, VarVals varVals);

} // namespace lazyjit::schedule_detail
