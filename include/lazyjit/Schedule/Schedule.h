// The scheduler: turns the unrealized part of a lazy graph into kernels (ScheduleItems), each one
// fused AST with a STORE root, LOAD/CONST leaves and at most one reduce (reference lazy.py). At
// OPT=5 a kernel may instead be a row kernel: reduces over the same trailing axes, each result
// broadcast back with an EXPAND node (Verifier.h states the rules, docs/architecture.md the design).
#pragma once

#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/PtrSet.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit {

/// The values of the symbolic variables a kernel reads: name -> (unbound variable, value), in
/// vars_from_ast order (sorted by name), which is also the order of the kernel's int arguments.
using VarVals = std::map<std::string, std::pair<NodeRef, int64_t>>;

/// What a schedule item does on the host instead of running a kernel: allocate its buffer
/// (EMPTY), copy its one input into it (COPY, from another device), or fill it with a host
/// function (CUSTOM). A kernel never contains these ops, nor any LazyBuffer.
struct HostStep {
  Op kind = Op::Empty;  ///< Op::Empty, Op::Copy or Op::Custom
  CustomOpRef custom;   ///< CUSTOM's function
};

struct ScheduleItem {
  KernelOpRef ast;                    ///< the kernel, STORE(...); null for a host step
  LazyBufferRef out;                  ///< the buffer this item realizes
  std::vector<LazyBufferRef> inputs;  ///< deduplicated base buffers; LOAD idx i+1 reads inputs[i]
  VarVals varVals;
  std::optional<HostStep> host;       ///< set instead of `ast` for EMPTY, COPY and CUSTOM

  bool isKernel() const { return !host; }
  /// The host step's op, or STORE for a kernel.
  Op kind() const { return host ? host->kind : Op::Store; }
};

/// Buffers already scheduled in this walk (the reference's `seen` set). It keeps its members
/// alive so that their addresses stay unique during the walk.
class SeenSet {
public:
  bool contains(const LazyBuffer *b) const { return set.contains(b); }
  void add(const LazyBufferRef &b) {
    if (set.insert(b.get())) keep.push_back(b);
  }

private:
  PtrSet<LazyBuffer> set;
  std::vector<LazyBufferRef> keep;
};

/// Row kernels (OPT=5) are formed only for buffers on devices that lower them, by the kind of
/// device (the part of its name before any ':'). The built-in CPU, CUDA and INTERP are known
/// without registering (so the fusion decisions do not depend on the Runtime library); another
/// device registers when its compiler supports EXPAND-ed reduces.
/// `reducesOfRows`: whether a reduce over whole rows may also compute the row values it reads
/// (cross-entropy's sum of log_softmax(x) * y as one kernel). That kernel runs the rows one after
/// another for each output element: fine for a CPU thread, but a GPU would run a loss over the
/// whole batch on one block, so CUDA is known without it.
void registerRowKernelDevice(const std::string &device, bool reducesOfRows = true);
bool rowKernelDevice(const std::string &device);
bool rowReduceDevice(const std::string &device);
/// The longest row (elements over the reduced axes) a row kernel is formed for: its passes after
/// the first read the row from the cache.
inline constexpr int64_t kMaxRowKernelElements = 1 << 16;
/// The shortest: below it (a 2x2 pooling window) the per-row work of the passes outweighs what
/// the reference's kernels, vectorized across rows, cost.
inline constexpr int64_t kMinRowKernelElements = 8;
/// The most reduces one row kernel computes; a chain of row operations beyond it is split into
/// several kernels (each reduce's source is evaluated again by every pass that reads it).
inline constexpr int kMaxRowKernelReduces = 6;

/// LazyBuffer.schedule: a post-order walk; dependencies come first, `out` last. The scheduler
/// fuses by the options it is given (their fusion flags; the reshapes it adds are graph ops built
/// under them) and reads no configuration: the Tensor layer's overloads without options
/// (Tensor.h) pass the configuration's.
std::vector<ScheduleItem> schedule(const LazyBufferRef &out, SeenSet &seen, const GraphOptions &o);
/// Schedules several outputs with one shared `seen` set (Tensor.corealize).
std::vector<ScheduleItem> scheduleMany(const std::vector<LazyBufferRef> &outs, const GraphOptions &o);

} // namespace lazyjit
