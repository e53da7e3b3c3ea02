// The loop nest of a Kernel: the stage between the Kernel's axes and either target's IR. It says
// what every axis becomes (a loop over global or local indices, a reduce loop, unrolled
// combinations, the CPU's vector) and how many accumulators the reduce keeps; the CPU and NVPTX
// lowerings emit their loops from it and derive none of it themselves. The CPU's vector axis is a
// decision of the code generator's passes (chooseVectorAxis, recorded in the Kernel before
// lowering), so that `lazyjit-dump --emit=kernel` shows it and the lowering only follows it.
// Private to lib/CodeGen; no LLVM dependency.
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

#include <string>
#include <vector>

namespace lazyjit {

/// Every combination of values of the given axis sizes, the first axis varying slowest.
std::vector<std::vector<int64_t>> upcastCombos(const std::vector<int64_t> &sizes);

struct LoopNest {
  /// What an axis becomes. Global and Local axes are loops (CPU) or thread indices (NVPTX); Group
  /// and Reduce axes are reduce loops (a Group's threads combine through shared memory); Upcast
  /// (output) and Unroll (reduce) axes are unrolled combinations; Vector is the CPU's LLVM vector;
  /// Row axes belong to a row kernel's passes.
  enum class Role : uint8_t { Global, Local, Group, Reduce, Upcast, Unroll, Vector, Row };
  std::vector<Role> roles; ///< per axis
  /// The unrolled axes: output-upcast and reduce-unroll (the vector axis is neither), and every
  /// combination of their values. The reduce keeps one accumulator per output combination and
  /// accumulates every (output, reduce) combination per step.
  std::vector<int> outUp, redUp;
  std::vector<std::vector<int64_t>> outCombos, redCombos;
  /// Kernel::vectorAxis and its lane count (0: no vector); a reduce axis's lanes are partial sums.
  int vecAxis = -1;
  int64_t lanes = 0;
  bool vecReduce = false;

  /// The nest of `k` as optimized (its OptOps and recorded decisions applied).
  static LoopNest of(const Kernel &k);
  size_t accumulators() const { return outCombos.size(); }
  /// Sets the unrolled axes of per-axis indices `ix` to output combination `oc` and reduce
  /// combination `rc` (null: the reduce axes at 0, where the reduce is done); the vector axis
  /// takes `vidx`, or 0 where a vector reduce is done.
  void setUpcast(std::vector<NodeRef> &ix, const std::vector<int64_t> &oc, const std::vector<int64_t> *rc,
                 const NodeRef &vidx) const;
  /// "global", "reduce", "vector", ... (`--emit=kernel`'s axes line).
  static const char *roleName(Role r);
  /// One line for the pass list's log: the roles, the combinations, the vector.
  std::string str() const;
};

/// Whether index node `n` reads the CPU vector mode's lane index (the variable named "vidx").
bool usesVidx(const Node &n);
/// Whether `idx` is a base without the lane index `vidx` plus `vidx` (a contiguous vector access);
/// the base goes to `*base` when given.
bool contiguousInVidx(const NodeRef &idx, const NodeRef &vidx, NodeRef *base);

/// Whether the CPU's vector mode computes every node among `ops` on `lanes` lanes, as each op's
/// Lanes column in Ops.def says (opLanes): float32/float64 buffers and casts to them (not
/// bitcasts), no integer op, exp2/log2/sin where the vector library has them for the target (`o`).
/// Everything else is the ALU's, which works on vectors as on scalars. (isTranscendental, the
/// element-wise ops that cost tens of instructions per value, is Ops.def's too.)
bool lanesSupported(const std::vector<const KernelOp *> &ops, int64_t lanes, const KernelOptions &o);

// ---- row kernels (Kernel::rowKernel): what the heuristics and both lowerings read alike ----

/// The distinct reduce and EXPAND nodes of a row kernel's rows (not the kernel's own reduce,
/// outside every EXPAND), each after the ones it reads: the order the row's passes run in.
std::vector<const KernelOp *> rowNodes(const Kernel &k);
/// Whether a pass over the row evaluates node `x`'s operands: not below a row value (a reduce or an
/// EXPAND, computed before the pass). (The leaves of a pass, LOADs and CONSTs, have none.)
bool rowPassDescends(const KernelOp &x);
/// The nodes a pass over a row kernel's row evaluates per element: its tree down to the leaves and
/// the row values (reduces and EXPANDs, computed before the pass).
std::vector<const KernelOp *> rowPassNodes(const KernelOp *root);
/// Whether the pass evaluating `root` computes a transcendental function per element.
bool rowPassTranscendental(const KernelOp *root);
/// Whether the CPU's pass evaluating `root` per element runs in vectors of Kernel::rowLanes.
bool rowPassInVectors(const Kernel &k, const KernelOp *root);
/// The reduces that are passes over the row, in the order they run: those in rowNodes not folded
/// into the first pass's moments. The last runs just before the output pass.
std::vector<const KernelOp *> rowPasses(const Kernel &k);

/// CPU: records in `k` which upcast axis the lowering emits as one LLVM vector (Kernel::vectorAxis).
/// A last upcast axis that is a reduce axis of 8 to 64 elements becomes vector partial sums (dot
/// products) when the reduce is float; otherwise the last output-upcast axis of 4 to 64 elements
/// when the output is contiguous along it. Either needs every node computable on the lanes.
void chooseVectorAxis(Kernel &k);

} // namespace lazyjit
