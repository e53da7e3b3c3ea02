// The scheduler: turns the unrealized part of a lazy graph into kernels (ScheduleItems), each one
// fused AST with a STORE root, LOAD/CONST leaves and at most one reduce (reference lazy.py).
#pragma once

#include "lazyjit/Graph/LazyBuffer.h"

#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace lazyjit {

/// The values of the symbolic variables a kernel reads: name -> (unbound variable, value), in
/// vars_from_ast order (sorted by name), which is also the order of the kernel's int arguments.
using VarVals = std::map<std::string, std::pair<NodeRef, int64_t>>;

struct ScheduleItem {
  LazyOpRef ast;                      ///< STORE(...) for kernels; a LoadOps op otherwise
  LazyBufferRef out;                  ///< the buffer this item realizes
  std::vector<LazyBufferRef> inputs;  ///< deduplicated base buffers; LOAD idx i+1 reads inputs[i]
  VarVals varVals;

  bool isKernel() const { return !isLoadOp(ast->op); }
};

/// Buffers already scheduled in this walk (the reference's `seen` set). It keeps its members
/// alive so that their addresses stay unique during the walk.
class SeenSet {
public:
  bool contains(const LazyBuffer *b) const { return set.count(b) != 0; }
  void add(const LazyBufferRef &b) {
    if (set.insert(b.get()).second) keep.push_back(b);
  }

private:
  std::unordered_set<const LazyBuffer *> set;
  std::vector<LazyBufferRef> keep;
};

/// LazyBuffer.schedule: a post-order walk; dependencies come first, `out` last.
std::vector<ScheduleItem> schedule(const LazyBufferRef &out, SeenSet &seen);
std::vector<ScheduleItem> schedule(const LazyBufferRef &out);
/// Schedules several outputs with one shared `seen` set (Tensor.corealize).
std::vector<ScheduleItem> scheduleMany(const std::vector<LazyBufferRef> &outs);

} // namespace lazyjit
