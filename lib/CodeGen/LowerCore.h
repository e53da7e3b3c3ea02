// The target-independent part of kernel lowering: per-node dtypes, symbolic index rendering,
// gated loads of LOAD/CONST leaves, evaluation of an AST at per-axis index nodes, and loops with
// explicit phis. The CPU (LowerCPU.cpp) and NVPTX (LowerNVPTX.cpp) drivers build on it.
#pragma once

#include "IndexSimplify.h"
#include "LoopNest.h"
#include "LowerValues.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Schedule/NodeDType.h"

#include <llvm/IR/Module.h>
#include <llvm/IR/ValueHandle.h>

#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

namespace lazyjit {

/// Fast-math flags as the reference uses them: no nnan/ninf, so NaN and inf stay exact.
llvm::FastMathFlags referenceFastMath();

/// The loop nest a lowering emits, as text (`lazyjit-dump --emit=loops`, DEBUG >= 4): one line per
/// loop, per unrolled or vector body, per accumulation and per store, indented by nesting. The
/// lowering writes it as it emits the IR, so it shows what the code does, not a prediction.
struct LoopTrace {
  std::vector<std::string> lines;
  int depth = 0;
  /// How a loop bound or other value prints ("n", "(n*4)", "min(end, 64)"), when not a constant.
  std::unordered_map<const llvm::Value *, std::string> names;
  /// Adds a line at the current depth; a line equal to the one before it at the same depth
  /// counts it instead ("store buffer 0 (x4)").
  void note(const std::string &line);
  std::string text(const llvm::Value *v) const;
  std::string str() const;

private:
  std::vector<int> repeats;
};

class KernelEmitter {
public:
  KernelEmitter(const Kernel &k, const LoopNest &nest, llvm::Module &m, MathLowering &math)
      : k(k), m(m), ctx(m.getContext()), b(ctx), vb(b, math), nest(nest), idxTy(llvm::Type::getInt64Ty(ctx)) {}
  virtual ~KernelEmitter() = default;
  /// Writes the loop nest into `t` while lowering (null: not traced).
  void traceInto(LoopTrace *t) { trace = t; }

protected:
  using Value = llvm::Value;
  const Kernel &k;
  llvm::Module &m;
  llvm::LLVMContext &ctx;
  llvm::IRBuilder<> b;
  ValueBuilder vb;
  /// The kernel's loop nest (LoopNest.h, the pass before lowering): its unrolled combinations,
  /// accumulators and (CPU) vector axis, whose lanes the index `vidx` names (null without one).
  const LoopNest &nest;
  NodeRef vidx;
  /// Sets the unrolled axes of `ix` to output combination `oc` and reduce combination `rc` (null:
  /// where the reduce is done), the vector axis to `vidx`.
  void setUpcast(std::vector<NodeRef> &ix, const std::vector<int64_t> &oc, const std::vector<int64_t> *rc) const {
    nest.setUpcast(ix, oc, rc, vidx);
  }
  /// A reduce loop's iterations [lo, hi), its index's largest value, and whether it may run none.
  struct LoopRange {
    Value *lo, *hi;
    SInt last;
    bool maybeEmpty;
  };
  /// The range of the reduce loop over `axis`: the whole axis (a driver narrows it where it runs
  /// the axis in blocks, or bounds a symbolic index by its largest value).
  virtual LoopRange reduceRange(int axis);
  /// The reduce loops over axes [from, to), `ridx<axis>` each, their indices set in `idxs`,
  /// carrying `cur`; inside the last, `innermost` gives the carried values' next ones.
  std::vector<Value *> reduceLoops(int from, int to, std::vector<NodeRef> &idxs, const std::vector<Value *> &cur,
                                   const std::function<std::vector<Value *>(const std::vector<Value *> &)> &innermost);
  /// One step of the kernel's reduce at `idxs`: every output combination's accumulator in `cur`
  /// takes the reduce's source at each reduce combination, on `lanes` lanes (0: scalars);
  /// `beforeCombo(o, c)`, when given, runs before output combination `o` takes reduce
  /// combination `c`.
  std::vector<Value *> accumulateCombos(const std::vector<NodeRef> &idxs, const std::vector<Value *> &cur,
                                        int64_t lanes, const std::function<void(size_t, size_t)> &beforeCombo = {});
  /// Every unrolled output combination at `idxs` (the upcast axes set), with its accumulator in
  /// `accs` (null without a reduce), given to `each`.
  void forEachOutput(const std::vector<NodeRef> &idxs, const std::vector<Val> &accs,
                     const std::function<void(const std::vector<NodeRef> &, const Val *)> &each);
  /// The kernel's stores: the STORE's source `top` computed and stored for every output
  /// combination (storeResult), after the reduce.
  virtual void storeOutputs(const std::vector<NodeRef> &idxs, const std::vector<Val> &accs, const KernelOp &top);
  /// Computes `top` at `ix` from accumulator `acc` and stores it: scalars here; a driver with a
  /// vector mode stores vectors.
  virtual void storeResult(const std::vector<NodeRef> &ix, const KernelOp &top, const Val *acc);
  llvm::Function *fn = nullptr;
  std::vector<Value *> bufPtrs;               ///< data0..dataN
  std::map<std::string, Value *> varValues;   ///< index and kernel variables by name
  std::map<std::string, Val> loadCache;
  std::unordered_map<std::string, SimplifiedIndex> accessMemo;
  /// The integer type of index arithmetic: i64 unless a driver narrows it (NVPTX uses i32 when
  /// every index value fits). Variables in `varValues` must have this type.
  llvm::IntegerType *idxTy;
  /// Set when a value rendered with a narrow `idxTy` might not fit it (an unbounded or symbolic
  /// range, or bounds beyond the type); the driver then lowers again with i64.
  bool indexMayOverflow = false;
  /// The `acc + x` of SUM reduces (markAccumulate), contracted with a multiply `x` when lowering ends.
  std::vector<llvm::WeakTrackingVH> accumulates;
  /// Where the loop nest is written (null: not traced).
  LoopTrace *trace = nullptr;
  /// Adds a line to the trace; nothing is formatted when there is none (a normal compile).
  template <typename... A> void note(fmt::format_string<A...> f, A &&...args) {
    if (trace) trace->note(fmt::format(f, std::forward<A>(args)...));
  }
  /// Indents the trace's lines under the last one until it goes out of scope.
  struct TraceIndent {
    LoopTrace *t;
    explicit TraceIndent(LoopTrace *t) : t(t) {
      if (t) ++t->depth;
    }
    ~TraceIndent() {
      if (t) --t->depth;
    }
    TraceIndent(const TraceIndent &) = delete;
    TraceIndent &operator=(const TraceIndent &) = delete;
  };
  /// Records a reduce accumulation `acc + x`: when `x` is a multiply, the two may fuse into an FMA
  /// (a reduce's result is computed once, so its rounding never has to match another kernel's).
  Value *markAccumulate(Value *v) {
    accumulates.emplace_back(v);
    return v;
  }
  /// One step of a reduce (`alu` ADD for SUM, MAX for MAX): `acc`, of `rdt`, combined with `x`
  /// converted to `rdt`, on scalars or lane vectors alike, marked for contraction.
  Value *accumulate(Op alu, const Val &x, Value *acc, DType rdt) {
    return markAccumulate(vb.alu(alu, {vb.convert(x, rdt, false), Val{acc, rdt}}, rdt).v);
  }
  /// Sets `contract` on each marked accumulation and on the multiply it adds (verify() calls it).
  void contractAccumulates();

  /// Bounds mode (Kernel::boundsCheck): the BoundsReport to fill, and each buffer's size in
  /// elements (i64), by buffer index. Null/empty: accesses are not checked.
  Value *boundsReport = nullptr;
  std::vector<Value *> bufSizes;

  /// Bounds mode: emits a check that `idx` (an index, or a vector of per-lane indices) of buffer
  /// `memIdx` is inside it wherever `active` (i1 or a lane mask; null: always) holds. Outside, the
  /// kernel records the first such access in the BoundsReport and returns. No-op otherwise.
  void checkAccess(int memIdx, Value *idx, Value *active);
  /// The lane indices base + 0 .. base + lanes - 1 of a contiguous vector access.
  Value *laneIndices(Value *base, int64_t lanes);

  size_t bufIndex(const KernelOp *op) const { return k.bufIndex(op); }
  DType dtypeOf(const KernelOp &op);
  Value *i64(int64_t v) { return b.getInt64(static_cast<uint64_t>(v)); }
  Value *asI64(Value *v);
  Value *asI1(Value *v);
  /// An index constant of `idxTy`, and an index value (i1 from a comparison) widened to `idxTy`.
  Value *idxConst(int64_t v) { return llvm::ConstantInt::getSigned(idxTy, v); }
  Value *asIdx(Value *v);
  /// The loadCache key of buffer `bi` at (idx, valid): drivers that load several elements at once
  /// (vector loads) fill the cache under the keys loadLeaf will look up.
  static std::string loadKey(size_t bi, const Node &idx, const Node &valid);
  /// The (index, valid) of buffer `bi` at per-axis indices, the index simplified under the valid
  /// (IndexSimplify.h). Every access goes through here.
  SimplifiedIndex access(size_t bi, const std::vector<NodeRef> &idxs);
  /// Renders a symbolic node: `idxTy` arithmetic, i1 for comparisons and ands.
  Value *render(const Node &n);
  Value *renderSInt(const SInt &s);
  /// Whether every value rendering `n` computes (each operand, each partial sum) fits a signed
  /// 32-bit integer, for any values of its variables in their ranges.
  static bool fitsInt32(const Node &n);
  /// Whether `n` is never negative (then C and floor division agree, and udiv/urem are exact).
  static bool nonNegative(const Node &n);
  /// Loads buffer `op` (LOAD or CONST) at per-axis indices, gated by its validity.
  Val loadLeaf(const KernelOp &op, const std::vector<NodeRef> &idxs);
  /// Evaluates an AST node at per-axis indices on `lanes` lanes (0: one value; more: a driver's
  /// vector mode, one LLVM vector, leaves from laneLeaf): the reduce node evaluates to `acc`, a row
  /// kernel's EXPAND and reduce nodes to their `rowValues` (the same in every lane). One evaluator
  /// for any lane count: the ALU (ValueBuilder) is the same for scalars and vectors. Iterative, and
  /// each distinct node is evaluated once per call: a subtree the AST shares is emitted once, and
  /// a chain as deep as it is long needs no native stack.
  Val eval(const KernelOp &op, const std::vector<NodeRef> &idxs, const Val *acc, int64_t lanes = 0);
  /// A LOAD or CONST leaf on `lanes` (> 0) lanes: drivers with a vector mode override it.
  virtual Val laneLeaf(const KernelOp &op, const std::vector<NodeRef> &idxs, int64_t lanes);
  /// The instruction of element-wise node `op` on its evaluated operands `s`.
  Val evalAlu(const KernelOp &op, std::vector<Val> s);

  /// Row kernels (Kernel::rowKernel): the values of the current row's reduces and EXPANDs, by the
  /// node `rowNodes` lists for them.
  std::unordered_map<const KernelOp *, Val> rowValues;
  const Val *rowValue(const KernelOp &op) const;
  /// Sets the row value of an EXPAND: its tree (over the row shape) at the row's first element,
  /// `idxs` with the row axes at 0.
  void setRowValue(const KernelOp &expand, const std::vector<NodeRef> &idxs);
  /// Row kernels: element-wise values that several passes over the row read are kept in a
  /// per-row scratch array (LowerCPURow.cpp) at `rowIndex`: the first pass stores, later ones load.
  struct RowScratch {
    llvm::Value *ptr;
    llvm::Type *type;
    bool filled = false;
  };
  std::unordered_map<const KernelOp *, RowScratch> rowScratch;
  std::vector<const KernelOp *> rowScratchStored; ///< stored by the current pass
  /// A node with a scratch array (in a row pass): the first pass computes it and stores it at
  /// `rowIndex` (scratchStore), later passes load it (scratchLoad: empty when the node has no
  /// filled array); `lanes` 0 is one element, else a vector of `lanes`.
  std::optional<Val> scratchLoad(const KernelOp &op, int64_t lanes);
  void scratchStore(const KernelOp &op, int64_t lanes, const Val &v);
  RowScratch *scratchOf(const KernelOp &op);
  Value *scratchAddress(const RowScratch &sc, int64_t lanes, llvm::Type *&t, llvm::Align &align);
  Value *rowIndex = nullptr;
  /// Kernel::rowMoments (both targets): `x - shift`, the value a Welford step takes, without
  /// reassoc (which would fold `(x - s) - mean` into `x - (s + mean)` and undo the shift).
  Value *shiftedValue(Value *x, Value *shift);
  /// One Welford step of `value` (scalars or lane vectors) into its running `mean` and `m2`, `inv`
  /// being 1 / (the count including this element).
  void welfordStep(Value *value, Value *&mean, Value *&m2, Value *inv);
  /// At the start of the pass that keeps the moments of every folded reduce's value: their shifts
  /// (the median of each value at the row's first, middle and last element, in its reduce's dtype),
  /// returned, and the carried values, appended to `carried`: per folded reduce `copies` means
  /// then `copies` M2s (zeros; vectors on `lanes` > 0 lanes), then the count (scalar, in the
  /// first folded reduce's dtype). Writes the pass's trace line.
  std::vector<Value *> startRowMoments(const std::vector<NodeRef> &idxs, std::vector<Value *> &carried, size_t copies,
                                       int64_t lanes);
  /// The count of a pass's moments after one more element (or one more element per lane), and
  /// `inv` = 1 / it.
  Value *countRowElement(Value *count, Value *&inv);
  /// A Welford step of every folded reduce's value at `ix` (on `lanes` lanes; 0: scalars) into
  /// partial result `u` of the `copies` that `cur`/`next` hold from `at` (startRowMoments' layout),
  /// `inv` from countRowElement.
  void rowMomentSteps(const std::vector<NodeRef> &ix, const std::vector<Value *> &shifts, Value *inv,
                      const std::vector<Value *> &cur, size_t at, size_t copies, size_t u, int64_t lanes,
                      std::vector<Value *> &next);
  /// sum((value - center)^2) over the values whose shifted moments are (mean, m2, count):
  /// M2 + N * (mean - (center - shift))^2, an identity for any center; 0 when count is 0.
  Val squaredDeviations(Value *mean, Value *m2, Value *count, Value *shift, const Val &center, DType dt);
  /// Emits `for iv in [lo, hi)` (iv of lo's type) carrying `carried`; `body` returns their next values. Loads cached
  /// inside the body do not leak out of it.
  std::vector<Value *> loop(const std::string &name, Value *lo, Value *hi, bool maybeEmpty,
                            const std::vector<Value *> &carried,
                            const std::function<std::vector<Value *>(Value *, const std::vector<Value *> &)> &body);
  bool mayBeEmpty(const SInt &extent) const { return !extent.isInt(); }
  /// Stores `v` to the output at per-axis indices, gated by the STORE's validity.
  void storeOutput(const std::vector<NodeRef> &idxs, Val v);
  /// Throws CompileError if the module does not verify.
  void verify();

private:
  /// Records whether every value rendering `n` computes fits a narrow `idxTy` (indexMayOverflow).
  void noteIndexRange(const Node &n);
};

} // namespace lazyjit
