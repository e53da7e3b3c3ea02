// Kernel: the shape bookkeeping of one kernel AST before lowering (the reference's
// codegen/kernel.py). All buffers' ShapeTrackers are kept at one rank; the axes are laid out as
//
//   [ global | local ] first_reduce [ group | reduce loops ] [ upcast: reduce-unrolled | output ]
//
// and optimizations (OptOps) reshape/permute every ShapeTracker together. This file has no LLVM
// dependency; lowering to LLVM IR is in Lower*.cpp.
#pragma once

#include "lazyjit/Schedule/KernelOp.h"

#include <functional>
#include <string>
#include <vector>

namespace lazyjit {

enum class OptOp : uint8_t { Upcast, Unroll, Local, LastLocal, Group, GroupTop, NoLocals, PadTo, Swap };

/// One applied optimization (the reference's Opt). Swap (CPU only, not in the reference) exchanges
/// global axes `axis` and `amt` to change the loop order. PadTo (the later reference's PADTO)
/// rounds axis `axis` up to a multiple of `amt` with masked elements (see Kernel::padTo).
struct Opt {
  OptOp op;
  int64_t axis = 0;
  int64_t amt = 0;
  std::string str() const; ///< "UPCAST(1,4)"
  bool operator==(const Opt &o) const { return op == o.op && axis == o.axis && amt == o.amt; }
};

/// What the target supports (the reference's LinearizerOptions).
struct KernelOptions {
  int vectorBits = 256;   ///< CPU vector register width (256: AVX2, 512: AVX-512)
  bool hasLocal = false;  ///< thread-block local dims (GPU)
  bool hasShared = false; ///< shared memory for group reduces (GPU)
  std::vector<int64_t> globalMax, localMax;
  bool mergeView = true;  ///< MERGE_VIEW for the kernel's reshapes (ShapeTracker::reshape)
  bool vectorMath = false; ///< glibc's vector math (libmvec) exists for the target: x86-64 Linux
  bool avx512dq = false;   ///< x86 AVX512DQ (vreduceps, in the row kernels' inline exp2)
};

class Kernel {
public:
  explicit Kernel(KernelOpRef ast, KernelOptions opts = {});

  KernelOpRef ast;
  KernelOptions opts;
  /// The buffer nodes in AST preorder, each once (equal leaves are one KernelOp); bufs[0] is the
  /// STORE.
  std::vector<const KernelOp *> bufs;
  /// The position of buffer node `x` in `bufs`.
  size_t bufIndex(const KernelOp *x) const;
  /// One ShapeTracker per buffer, all of rank shapeLen().
  std::vector<ShapeTracker> sts;
  const KernelOp *reduceop = nullptr;
  size_t fullBufIndex = 0;
  /// A row kernel (OPT=5, Verifier.h): its reduces are EXPAND-ed back to the kernel's shape, so the
  /// kernel has no reduce axes; instead the axes from `rowStart` on are the row axes those reduces
  /// run over. `reduceop` is null, and the OptOps do not apply (the lowering plans the row itself).
  bool rowKernel = false;
  int rowStart = 0;
  /// CPU row kernels: the output pass writes `rowLanes` elements of the last row axis per vector
  /// store (0: a scalar loop the loop vectorizer widens). Chosen by the CPU heuristics.
  int64_t rowLanes = 0;
  /// CPU row kernels: keep element-wise values that several passes read in a per-row scratch
  /// array instead of computing them in each pass. Chosen by the CPU heuristics.
  bool rowScratch = false;
  /// CPU row kernels: rows are software-pipelined. Each row's output pass runs inside the next
  /// row's last pass over its row (lastRowPass), in the same loop: the next row's arithmetic (the
  /// exp of softmax's sum) then overlaps this row's stores, which otherwise run alone after it.
  /// Scratch arrays have two copies, one per row in flight; the thread's last row is written
  /// after its loop. Chosen by the CPU heuristics (HeuristicsRow.cpp) for outputs written with
  /// streaming stores.
  bool rowPipelined = false;
  /// CPU: the vector axis is one along which the output is not contiguous (a convolution's output
  /// channels in NCHW): each output combination is stored by a scatter after the reduce, once per
  /// reduce of hundreds of steps. Chosen by the CPU heuristics where the contiguous axis would
  /// waste padded lanes.
  bool scatterOutput = false;
  /// Row kernels: a SUM over the row of `(value - center)^2`, where `center` is a row value (an
  /// EXPAND of earlier reduces) and `value` reads no row value (layernorm's variance; var and std,
  /// the kernel's own reduce), is not a pass of its own: the row's first pass also keeps `value`'s
  /// running mean and sum of squared deviations M2 (Welford's update, per CPU lane or GPU thread),
  /// and the reduce is `M2 + N * (mean - center)^2`, an identity for any `center`. Chosen by both
  /// targets' row heuristics (HeuristicsRow.cpp).
  struct RowMoments {
    const KernelOp *reduce, *value, *center;
  };
  std::vector<RowMoments> rowMoments;
  /// The entry of rowMoments that folds `reduce` (null: none).
  const RowMoments *rowMomentsOf(const KernelOp *reduce) const;
  /// GPU row kernels: the threads of the block that runs each row (a power of two; 0 or 1: one
  /// thread). The row's elements are dealt to them round-robin, so neighbouring threads read
  /// neighbouring elements; each reduce combines their partial results in shared memory. Chosen
  /// by the GPU heuristics.
  int64_t rowThreads = 0;

  std::vector<Opt> appliedOpts;
  std::vector<int64_t> groupForReduce;
  int upcasted = 0;
  int localDims = 0;
  /// CPU: write the output with non-temporal (streaming) stores, bypassing the caches. Set for
  /// large element-wise outputs that would only evict the inputs; needs the vector store of the
  /// last upcast axis to cover whole cache lines.
  bool streamingStores = false;
  /// CPU vector mode: upcast axis `vectorAxis` is emitted as one LLVM vector of its size (-1:
  /// none); `vectorReduce`: it is a reduce axis whose lanes are partial sums, added up before the
  /// store (dot products). Decided once the optimizations are applied (LoopNest.h
  /// chooseVectorAxis); the CPU lowering follows it.
  int vectorAxis = -1;
  bool vectorReduce = false;
  /// CPU: every load and store index is checked at run time (CompileOptions::bounds).
  bool boundsCheck = false;
  /// CPU register-tiled reduces (matmul, convolution): the buffers among `bufs` (indices) that the
  /// reduce reads along the vector axis but not along the register tile's rows (the right-hand
  /// side's panel) are copied, in the order the reduce loop reads them, into a contiguous
  /// per-thread array before the loop over global axis `packDepth`; every iteration of that loop
  /// and of the global loops inside it then reads the copy (OpenBLAS's packed panels: a panel of a
  /// row-major matrix is a column of cache lines a power of two apart, which the caches' sets
  /// cannot hold). -1: nothing is packed. Chosen by the CPU heuristics.
  int packDepth = -1;
  std::vector<size_t> packedBufs;
  /// With packed panels: when a panel of every reduce step would not fit, the first reduce axis
  /// runs in blocks of this many steps (0: in one), each block's panel packed in turn; the sums
  /// of the blocks before the last are kept in the output buffer (OpenBLAS's K blocking), so only
  /// a SUM or MAX whose output has the accumulator's dtype and whose result is stored without
  /// reading another buffer is blocked.
  int64_t packBlock = 0;
  /// With packed panels: the inputs of the reduce read as one value per row of the register tile
  /// (broadcast across the vector) whose reads move a cache line or more per reduce step (A of
  /// A^T @ B: each step of an 8-row tile reads 32 bytes of a line one row of A after the last,
  /// 4 KiB apart for n = 1024), copied whole before the kernel computes (a first phase of the
  /// launch, the threads splitting the copy) into a scratch block the launcher provides, in the
  /// order the reduce reads them: [the global axes the buffer moves along][row combination][reduce
  /// step][reduce combination]. `wholePackBytes` is that block's size
  /// (KernelSignature::scratchBytes). Chosen by the CPU heuristics.
  std::vector<size_t> wholePacked;
  int64_t wholePackBytes = 0;

  size_t shapeLen() const { return sts[0].shape().size(); }
  const Shape &fullShape() const { return sts[fullBufIndex].shape(); }
  const Shape &outputShape() const { return sts[0].shape(); }
  /// The first axis where output and full shape differ among the non-upcast axes.
  int firstReduce() const;
  int globalDims() const { return firstReduce() - localDims; }
  /// The CPU launcher's range, which it splits across threads: the first axis when it is an outer
  /// (global) one, else 1. An expression of the kernel's variables (KernelSignature::gridDims).
  SInt outerRange() const;

  /// "E_" or "r_" + the full shape, as the reference names kernels.
  std::string name() const;

  // ---- the reference's simplifiers and OptOps ----
  void reshapeAndPermute(const std::function<Shape(const Shape &)> &newShape,
                         const std::vector<int64_t> *axis);
  void shiftTo(int64_t axis, int64_t amount, bool top = false, int64_t insertBefore = -1);
  void upcast();
  /// PADTO: rounds axis `axis` up to a multiple of `amt`. The extra elements of an output axis are
  /// masked off at the store (and at every load that moves along the axis); along a reduce axis
  /// every leaf reads 0 there, which needs a SUM whose operands keep 0 at 0.
  void padTo(int64_t axis, int64_t amt);
  bool simplifyOnes();
  void simplifyMergeAdjacent();
  /// Applies one optimization; throws UnsupportedError if it does not apply to this kernel.
  void applyOpt(const Opt &opt);
  /// The reference's hand-coded heuristics, adapted per target (HeuristicsCPU.cpp,
  /// HeuristicsGPU.cpp).
  void handCodedOptimizations();
};

/// The name of the kernel an AST becomes with no optimizations (what `--emit=schedule` shows), its
/// axes merged under MERGE_VIEW = `mergeView` (as CompileOptions::mergeView compiles it).
std::string kernelName(const KernelOp &ast, bool mergeView);

} // namespace lazyjit
