// The CPU kernel lowerer, shared by its parts: LowerCPU.cpp (loops, accumulators, stores and the
// entry points), LowerCPUVector.cpp (vector mode: one upcast axis as one LLVM vector) and
// LowerCPUMath.cpp (vector mode's math), LowerCPUPack.cpp and LowerCPURow*.cpp.
// Private to lib/CodeGen.
#pragma once

#include "LowerCore.h"

#include <llvm/TargetParser/Triple.h>

#include <array>

namespace lazyjit {

// CPU math: sqrt is an instruction; exp2/log2/sin are calls to the C library by name, marked as
// not touching memory, so that the loop vectorizer can replace them with glibc's vector variants
// (libmvec, mapped in Compiler.cpp) and the scalar remainder calls libm. On a vector (vector mode)
// they call the vector library's function of that width directly (vectorMathFn), in pieces when
// it is narrower; a row kernel's float exp2 is computed inline (inlineExp2F32).
class CPUMath : public MathLowering {
public:
  CPUMath(const KernelOptions &o, llvm::Triple triple, bool rowKernel)
      : vectorBits(o.vectorBits), vectorMath(o.vectorMath), avx512dq(o.avx512dq), triple(std::move(triple)),
        rowKernel(rowKernel) {}
  llvm::Value *unary(llvm::IRBuilder<> &b, Op op, llvm::Value *x) override;

private:
  int64_t vectorBits;
  bool vectorMath; ///< KernelOptions::vectorMath: libmvec's variants exist
  bool avx512dq;
  llvm::Triple triple;
  bool rowKernel;
  llvm::Value *vectorCall(llvm::IRBuilder<> &b, Op op, llvm::Value *x);
};

/// exp2 of a <N x float> computed inline (no libmvec call); row kernels use it (LowerCPUMath.cpp).
/// `avx512`: the target has AVX-512F (2^k is applied with vscalefps); `dq`: also AVX512DQ (the
/// fraction comes from vreduceps).
llvm::Value *inlineExp2F32(llvm::IRBuilder<> &b, llvm::Value *x, bool avx512, bool dq);

/// Lowers one Kernel for a CPU target (lowerKernelCPU); see LowerCPU.cpp for the IR it emits.
class CPULowerer : public KernelEmitter {
public:
  CPULowerer(const Kernel &k, const LoopNest &nest, llvm::Module &m)
      : KernelEmitter(k, nest, m, math), math(k.opts, llvm::Triple(m.getTargetTriple()), k.rowKernel) {}
  llvm::Function *lower(const std::string &symbol);

private:
  CPUMath math;
  void emitBody(Value *start, Value *end);
  /// A row kernel (OPT=5, LowerCPURow.cpp): per outer index, one pass over the row per reduce,
  /// then the output row.
  void emitRowBody(Value *start, Value *end);
  /// Chooses the values several passes of a row kernel read and gives each a scratch array.
  /// `passes`: the roots each pass over the row evaluates per element.
  void planRowScratch(const std::vector<std::vector<const KernelOp *>> &passes);
  void prefetchNextRow(const std::vector<NodeRef> &vix);
  /// Kernel::rowPipelined: each scratch array's two copies; the row being computed uses the one
  /// the row's parity selects, the row whose output is written the other.
  std::unordered_map<const KernelOp *, std::array<Value *, 2>> scratchCopies;
  /// The loops over the global axes [0, count), the first over the launcher's chunk [start, stop)
  /// (with no global axis, `body` runs once for the range [0, 1)), `body` inside.
  void globalLoops(int count, std::vector<NodeRef> &idxs, Value *start, Value *stop,
                   const std::function<void()> &body);
  void outerLoops(int axis, int end, std::vector<NodeRef> &idxs, Value *start, Value *stop,
                  const std::function<void()> &body);
  /// Runs once where the loop over global axis `globalHookAxis` is about to be emitted (the
  /// packing of Kernel::packDepth).
  int globalHookAxis = -1;
  /// Called with the emitter of the loops from that axis on, which it must call once.
  std::function<void(const std::function<void()> &)> globalHook;

  // ---- packed panels (Kernel::packDepth): a buffer's values along the vector axis for every
  // reduce step, copied to a per-thread array that the reduce loop then reads ----
  struct Panel {
    Value *ptr;
    llvm::Type *type; ///< the element type
  };
  std::unordered_map<size_t, Panel> panels; ///< by buffer index
  bool panelReads = false;                  ///< laneLeaf reads the packed buffers from their panels
  Value *panelStep = nullptr;               ///< the reduce step (row-major over the reduce loops)
  int64_t panelCombo = 0, panelCombos = 1;  ///< the unrolled reduce combination, and their count
  /// Kernel::packBlock: the current block of the first reduce axis and its first index (null
  /// when the reduce is not blocked).
  Value *kBlock = nullptr, *kBlockStart = nullptr;
  /// The range of reduce axis `axis` (`fr`: the first reduce axis): the whole axis, or the
  /// current block of the first one.
  std::pair<Value *, Value *> reduceAxisBounds(int axis, int fr);
  LoopRange reduceRange(int axis) override;
  void storeResult(const std::vector<NodeRef> &ix, const KernelOp &top, const Val *acc) override;
  /// A scattered output (Kernel::scatterOutput) whose P output combinations are P consecutive
  /// elements of every lane's row (a convolution's tile of pixels): the P vectors transposed in
  /// registers, blocks of P lanes at a time (P rounded up to a power of two, up to 16), and stored
  /// as one P-element vector per lane (masked to P where P was rounded up) instead of P scatters
  /// (W7: 32 scatters of 8 lanes per tile, 5.9-6.0 ms; transposed 5.5). Otherwise the base
  /// class's stores.
  void storeOutputs(const std::vector<NodeRef> &idxs, const std::vector<Val> &accs, const KernelOp &top) override;
  /// Transposes the n x n matrix whose rows are `rows` (n vectors of n elements) in place: log2(n)
  /// stages of two-source shuffles, each swapping the off-diagonal blocks of half the size.
  void transposeSquare(std::vector<Value *> &rows);
  /// A panel's reduce step, row-major over the reduce loops [fr, firstUpcast) whose counters are
  /// named `prefix` + axis, counted from the start of the current block (`inBlock`) or of the
  /// reduce.
  Value *reduceStep(const std::string &prefix, int fr, int firstUpcast, bool inBlock = true);

  /// Allocates the panels and sets the global-loop hook that fills them (LowerCPUPack.cpp).
  void packPanels(std::vector<NodeRef> &idxs);

  // ---- whole packed inputs (Kernel::wholePacked, LowerCPUPack.cpp): copied before the global
  // loops into the scratch block the launcher passes, then read from there by the reduce ----
  struct WholePanel {
    int64_t offset;           ///< in elements of `type`, from the scratch block's start
    llvm::Type *type;         ///< the element type
    std::vector<int> axes;    ///< the global axes the buffer moves along, outermost first
    int64_t steps;            ///< the reduce's steps (all its loops, unblocked)
  };
  std::unordered_map<size_t, WholePanel> wholePanels; ///< by buffer index
  Value *scratch = nullptr;                           ///< the launcher's scratch block
  Value *phase = nullptr;                             ///< 1: pack, 0: compute
  Value *wholeStep = nullptr; ///< the reduce step from the reduce's start (wholeAddress)
  int64_t panelOutCombo = 0;  ///< the output combination the reduce step is accumulating
  /// Lays out the panels and emits the copy of the first reduce axis's steps [start, end).
  void packWhole(const std::vector<NodeRef> &idxs, Value *start, Value *end);
  /// Where buffer `bi`'s value for reduce step `step`, reduce combination `rc` and output
  /// combination `oc` is, at the global indices the counters `prefix` + axis hold.
  Value *wholeAddress(size_t bi, const std::string &prefix, Value *step, int64_t rc, int64_t oc);
  Value *panelAddress(const Panel &p, Value *step, int64_t combo);
  /// The output's vector at per-axis indices (a blocked reduce's partial results), masked as the
  /// store is.
  Val vecLoadOutput(const std::vector<NodeRef> &idxs);
  /// Where the output's vector at per-axis indices starts, its first lane's index and its
  /// validity, its lanes bounds-checked (vecStore and vecLoadOutput); empty where it is never valid.
  struct OutputVector {
    Value *ptr;
    NodeRef base, valid;
    Value *lanePtrs = nullptr; ///< Kernel::scatterOutput: each lane's address (then `ptr` is null)
  };
  std::optional<OutputVector> outputVector(const std::vector<NodeRef> &idxs);
  llvm::Align panelAlign(DType dt) const;

  // ---- vector mode: upcast axis Kernel::vectorAxis as one LLVM vector (LowerCPUVector.cpp) ----
  int vecAxis = -1;
  int64_t lanes = 0;
  bool streamed = false; // a streaming store was emitted: fence before returning
  bool vecReduce = false; // the vector axis is a reduce axis (dot products)
  /// Whether `idx` is contiguous in the lanes (LoopNest.h's contiguousInVidx with this vidx).
  bool contiguousInVidx(const NodeRef &idx, NodeRef *base) const { return lazyjit::contiguousInVidx(idx, vidx, base); }
  Value *splat(Value *x) { return x->getType()->isVectorTy() ? x : b.CreateVectorSplat(static_cast<unsigned>(lanes), x); }
  Value *renderVec(const Node &n, llvm::IntegerType *et);
  llvm::IntegerType *vecIndexType(const Node &n);
  Value *maskFor(const NodeRef &valid);
  /// The middle of 2 x kZeroReach zero bytes (a constant of the module): a gated value the same in
  /// all lanes reads from there, or from up to kZeroReach bytes either side, where it is not valid
  /// (laneLeaf).
  Value *zeroSlot();
  static constexpr int64_t kZeroReach = 2048;
  llvm::GlobalVariable *zeros = nullptr;
  /// Whether `n` reads a reduce loop's index (ridx...): it changes inside the reduce loops.
  static bool usesReduceIndex(const Node &n);
  Val laneLeaf(const KernelOp &op, const std::vector<NodeRef> &idxs, int64_t lanes) override;
  /// A vector load under `valid`: a branch on its lane-invariant conjuncts around `load`, which is
  /// given the conjuncts that vary across the lanes (null when none).
  Value *guardedLoad(const NodeRef &valid, llvm::Type *vt, const char *name,
                     const std::function<Value *(const NodeRef &laneValid)> &load);
  Value *gather(int memIdx, Value *ptr, llvm::Type *et, const NodeRef &idx, const NodeRef &valid);
  /// Buffer `bi` read across the vector axis and contiguously along another output-upcast axis
  /// of `lanes` elements (a transpose tile): its lanes x lanes block loaded as rows and
  /// transposed in registers, every combination's vector put in the load cache; null when the
  /// buffer is not read so.
  Value *transposedLoad(size_t bi, const std::vector<NodeRef> &idxs, DType dt);
  /// Each lane's address of buffer `memIdx` at `idx` (bounds-checked under `mask`, null: every lane).
  Value *laneAddresses(int memIdx, Value *ptr, llvm::Type *et, const NodeRef &idx, Value *mask);
  void vecStore(const std::vector<NodeRef> &idxs, Val v);
  Value *vecZero(DType dt) { return llvm::Constant::getNullValue(llvm::VectorType::get(vb.regType(dt), static_cast<unsigned>(lanes), false)); }
};

} // namespace lazyjit
