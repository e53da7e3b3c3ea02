// KernelOp: the kernel IR. A scheduled kernel is a tree (a DAG where subtrees are shared) of
// KernelOps: a STORE root, LOAD/CONST leaves, element-wise ops, at most the reduces the verifier
// allows, and a row kernel's EXPANDs (Verifier.h). It is a type of its own, not the lazy graph's
// LazyOp: a kernel holds no LazyBuffer, no host function (EMPTY, COPY and CUSTOM are host steps of
// a schedule item) and no graph links.
//
// Nodes are immutable and hash-consed. KernelOp::make is the only way to build one: it returns the
// live node equal to (op, sources, argument) if there is one, else a new node, with its dtype and
// shape computed once from its sources'. Two kernel ASTs are structurally equal exactly when they
// are the same object, so equality, hashing and every per-node memo are pointer operations.
#pragma once

#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Support/KeyedList.h"

#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

namespace lazyjit {

class KernelOp;
using KernelOpRef = std::shared_ptr<const KernelOp>;
/// A kernel node's sources (at most three: WHERE), inline.
using KernelOpRefs = SmallVector<KernelOpRef, 3>;

class KernelOp : public std::enable_shared_from_this<KernelOp> {
  struct Token {
    explicit Token() = default;
  };

public:
  /// The node (op, src, arg): the live equal node when there is one. The argument's kind is the
  /// caller's (the verifier checks it against the op table), but a kernel never holds a load op or
  /// a host function: those throw InternalError. Arguments are identical, not Python-equal: a
  /// CONST of -0.0 is not the CONST of 0.0 (NaNs of one sign are one value).
  static KernelOpRef make(Op op, KernelOpRefs src, LazyOpArg arg = {});
  static KernelOpRef load(int idx, DType dtype, ShapeTracker st) {
    return make(Op::Load, {}, MemBuffer{idx, dtype, std::move(st)});
  }
  static KernelOpRef constant(double val, DType dtype, ShapeTracker st) {
    return make(Op::Const, {}, ConstBuffer{val, dtype, std::move(st)});
  }
  static KernelOpRef store(KernelOpRef value, int idx, DType dtype, ShapeTracker st) {
    return make(Op::Store, {std::move(value)}, MemBuffer{idx, dtype, std::move(st)});
  }

  KernelOp(Token, Op op, KernelOpRefs src, LazyOpArg arg, size_t hash);
  /// Leaves the intern table, and frees its sources through deferRelease (a fused chain of
  /// thousands of ops is freed without recursion).
  ~KernelOp();
  KernelOp(const KernelOp &) = delete;
  KernelOp &operator=(const KernelOp &) = delete;

  const Op op;
  const KernelOpRefs src;
  const LazyOpArg arg;

  /// Structural, computed once; equal nodes are one object.
  size_t hash() const { return hash_; }
  bool operator==(const KernelOp &o) const { return this == &o; }
  bool operator!=(const KernelOp &o) const { return this != &o; }
  KernelOpRef self() const { return const_cast<KernelOp *>(this)->shared_from_this(); }

  /// The dtype this node computes (kernelNodeDType, NodeDType.h) from its sources'; empty when
  /// the node or one below it is malformed (a movement op other than EXPAND, a wrong arity or
  /// argument), which the verifier reports.
  std::optional<DType> kernelDType() const { return dtype_; }
  /// The shape this node computes (a buffer node's view, a reduce's or EXPAND's argument, an
  /// element-wise node's first operand's); null when malformed.
  const Shape *shape() const { return shape_; }

  const Shape &shapeArg() const { return std::get<Shape>(arg); }
  const MemBuffer &memBuffer() const { return std::get<MemBuffer>(arg); }
  const ConstBuffer &constBuffer() const { return std::get<ConstBuffer>(arg); }
  /// The ShapeTracker of a LOAD/CONST/STORE node.
  const ShapeTracker &bufferSt() const;
  DType bufferDType() const;

  /// Every node in preorder, duplicates included (a subtree shared n times appears n times:
  /// exponential in the depth of an AST like `x = x * x` repeated).
  std::vector<const KernelOp *> lazyops() const;
  /// Each distinct node once, in the order of its first occurrence in lazyops(): linear.
  std::vector<const KernelOp *> uniqueOps() const;

private:
  friend struct KernelOpInterning; // KernelOp.cpp
  size_t hash_;
  std::optional<DType> dtype_;
  const Shape *shape_ = nullptr;
  /// The intern table files a node with sources under its first one (KeyedList.h: a lookup reads
  /// that source's short list instead of probing a table as large as every kernel), a leaf in its
  /// table. Guarded by the table's lock.
  mutable KeyedLinks<const KernelOp> keyed_;
};

/// The node a walk descends into from a source (LazyOpWalk.h): every KernelOp source is one.
inline const KernelOp *srcOp(const KernelOpRef &s) { return s.get(); }

/// How many KernelOps are alive (the intern table's size), for tests.
size_t kernelOpCount();

/// The reference's FlopCounter result for a kernel AST.
struct LazyOpInfo {
  Shape shape;
  DType dtype;
  SInt flops;
  std::map<int, int64_t> mem; ///< buffer idx -> bytes
  int64_t memEstimate() const;
};
/// get_lazyop_info: abstract interpretation of an AST (shape, dtype, flops, bytes per buffer).
LazyOpInfo getLazyOpInfo(const KernelOp &ast);
/// vars_from_ast: every variable in the AST's ShapeTrackers, sorted by name.
std::vector<NodeRef> varsFromAst(const KernelOp &ast);

/// The LOAD indices whose buffer may be the STORE's own memory: a kernel of element-wise ops only
/// (no reduce, no EXPAND) whose output view is contiguous and reads such an input through the very
/// same view and dtype. Each output element is then computed from that input's element at the same
/// address alone, so writing it over its input is safe in any order of elements, lanes or threads
/// (every read of an element precedes the write that depends on it). Empty when there is none.
/// The runtime writes the output over such an input that nothing else holds (Realize.cpp); the
/// code generators leave those pointers and the output's without `noalias`.
std::vector<int> inPlaceInputs(const KernelOp &ast);

/// A row kernel's (OPT=5) EXPAND nodes and every node below them: its row values and what
/// computes them. Empty for an AST without EXPAND.
std::unordered_set<const KernelOp *> expandedSubtrees(const KernelOp &ast);

} // namespace lazyjit
