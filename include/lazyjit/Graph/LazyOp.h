// LazyOp: the op tree of the lazy graph, with LazyBuffer leaves. A scheduled kernel is not a LazyOp
// but the kernel IR's KernelOp (KernelOp.h), which the scheduler builds from these trees.
//
// A LazyOp is immutable. Its structural hash is computed once; equality is structural, with
// LazyBuffer sources compared by identity (as the reference's frozen dataclass does).
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Graph/Ops.h"
#include "lazyjit/Graph/PtrList.h"
#include "lazyjit/Graph/ShapeTracker.h"
#include "lazyjit/Support/NodePool.h"

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace lazyjit {

class LazyBuffer;
struct GraphOptions;
class LazyOp;
class Buffer; // runtime storage, defined in lib/Runtime
using LazyBufferRef = std::shared_ptr<LazyBuffer>;
using LazyOpRef = std::shared_ptr<const LazyOp>;

/// CAST arg: the target dtype, and whether it is a bitcast.
struct CastArg {
  DType dtype;
  bool bitcast = false;
  bool operator==(const CastArg &o) const { return dtype == o.dtype && bitcast == o.bitcast; }
};

/// LOAD and STORE leaves: buffer `idx` (0 is the output) read through `st`.
struct MemBuffer {
  int idx = 0;
  DType dtype;
  ShapeTracker st;
  bool operator==(const MemBuffer &o) const {
    return idx == o.idx && dtype == o.dtype && st == o.st;
  }
};

/// CONST leaves: a scalar broadcast through `st` (the value is stored as a double, as the
/// reference stores float(val)).
struct ConstBuffer {
  double val = 0;
  DType dtype;
  ShapeTracker st;
  bool operator==(const ConstBuffer &o) const {
    return sameValue(val, o.val) && dtype == o.dtype && st == o.st;
  }
  /// Values compare by value, with every NaN equal to every NaN (so NaN constants dedup and a
  /// node always equals itself).
  static bool sameValue(double a, double b) { return a == b || (a != a && b != b); }
};

/// A host function run by a CUSTOM load op (Tensor::rand fills its output this way).
struct CustomOp {
  std::string name;
  std::function<void(Buffer &out)> fn;
};
using CustomOpRef = std::shared_ptr<const CustomOp>;

/// The op's argument:
///  - Shape: RESHAPE and EXPAND (new shape), SUM/MAX reduce (output shape with 1s);
///  - std::vector<int64_t>: PERMUTE (axis order), STRIDE (per-axis step);
///  - PadArg: PAD and SHRINK (per-axis (begin, end));
///  - CastArg: CAST; MemBuffer: LOAD/STORE; ConstBuffer: CONST;
///  - double: LoadOps.CONST value; CustomOpRef: CUSTOM.
using LazyOpArg = std::variant<std::monostate, Shape, std::vector<int64_t>, PadArg, CastArg,
                               MemBuffer, ConstBuffer, double, CustomOpRef>;

/// The kind of an argument value (the variant's alternatives in OpArg's order).
inline OpArg argKindOf(const LazyOpArg &a) { return static_cast<OpArg>(a.index()); }
template <OpArg K> using OpArgType = std::variant_alternative_t<static_cast<size_t>(K), LazyOpArg>;
static_assert(std::is_same_v<OpArgType<OpArg::None>, std::monostate> && std::is_same_v<OpArgType<OpArg::Shape>, Shape> &&
                  std::is_same_v<OpArgType<OpArg::Axes>, std::vector<int64_t>> &&
                  std::is_same_v<OpArgType<OpArg::Pairs>, PadArg> && std::is_same_v<OpArgType<OpArg::Cast>, CastArg> &&
                  std::is_same_v<OpArgType<OpArg::Mem>, MemBuffer> &&
                  std::is_same_v<OpArgType<OpArg::ConstBuf>, ConstBuffer> &&
                  std::is_same_v<OpArgType<OpArg::Value>, double> &&
                  std::is_same_v<OpArgType<OpArg::Custom>, CustomOpRef> &&
                  std::variant_size_v<LazyOpArg> == static_cast<size_t>(OpArg::Custom) + 1,
              "LazyOpArg's alternatives follow OpArg");

bool argEqual(const LazyOpArg &a, const LazyOpArg &b);
size_t argHash(const LazyOpArg &a);

/// A source of a LazyOp: another LazyOp, or a LazyBuffer (a leaf of the lazy graph).
struct LazySrc {
  LazyOpRef op;
  LazyBufferRef buf;
  LazySrc() = default;
  LazySrc(LazyOpRef o) : op(std::move(o)) {}
  LazySrc(LazyBufferRef b) : buf(std::move(b)) {}
  bool isBuffer() const { return static_cast<bool>(buf); }
};

/// An op's sources: most ops have one or two, kept inline (no allocation per node).
using LazySrcs = SmallVector<LazySrc, 2>;

/// The node a walk descends into from a source (LazyOpWalk.h); null for a LazyBuffer.
inline const LazyOp *srcOp(const LazySrc &s) { return s.isBuffer() ? nullptr : s.op.get(); }

class LazyOp {
public:
  Op op;

private:
  friend class LazyBuffer;
  friend class WalkMarks;
  // (here for the layout: in the bytes after `op`, which its alignment would leave empty, on the
  // line a walk reads first and StridePrefetch asks for)
  mutable bool linked_ = false; ///< see `parents_`
  mutable bool leavesDone_ = false;
  mutable uint32_t walkMark_ = 0; ///< WalkMarks.h

public:
  LazySrcs src;
  LazyOpArg arg;

  // (its sources and argument are taken as rvalues: make's are moved into the node once, not twice;
  // an argument is a 120-byte variant, a Shape's four symbolic ints inline)
  LazyOp(Op op, LazySrcs &&src, LazyOpArg &&arg);
  /// Frees its sources through deferRelease: a graph thousands of ops deep is freed without recursion.
  ~LazyOp();
  static LazyOpRef make(Op op, LazySrcs src, LazyOpArg arg = {}) {
    return std::allocate_shared<const LazyOp>(NodePoolAllocator<LazyOp>(), op, std::move(src), std::move(arg));
  }

  size_t hash() const { return hash_; }
  /// The leaf created last (the greatest LazyBuffer serial; null: the op reads no buffer). Equal
  /// ops have the same leaves, so the same newest one: the dedup cache files a buffer under it,
  /// and a lookup reads a list on memory the caller has just touched instead of probing a table
  /// as large as the graph.
  LazyBuffer *newestLeaf() const { return newestLeaf_; }
  bool operator==(const LazyOp &o) const;
  bool operator!=(const LazyOp &o) const { return !(*this == o); }

  /// The leaf LazyBuffers, deduplicated, in DFS order. The op's sources own them: the pointers
  /// live as long as this op (use shared_from_this() to keep one longer).
  std::span<LazyBuffer *const> buffers() const;
  /// Every LazyOp node in preorder, duplicates included (a subtree shared n times appears n
  /// times: exponential in the depth of an AST like `x = x * x` repeated).
  std::vector<const LazyOp *> lazyops() const;
  /// Each distinct node once, in the order of its first occurrence in lazyops(): linear in the
  /// nodes. What a walk that asks "which ops, which buffers" should use.
  std::vector<const LazyOp *> uniqueOps() const;
  /// Rebuilds the tree replacing the LazyBuffer leaves found in `mapping`.
  LazyOpRef mapBuffers(const std::unordered_map<const LazyBuffer *, LazySrc> &mapping) const;
  /// Re-applies this elementwise op after applying the movement ops to each leaf (lazy.py).
  LazyBufferRef replaceWithMovementOps(const GraphOptions &o,
                                       const std::vector<std::pair<Op, LazyOpArg>> &ops) const;

  const Shape &shapeArg() const { return std::get<Shape>(arg); }

private:
  /// 64 bits: a chain of one op is hashed by iterating one function of the source's hash, and a
  /// 32-bit hash falls into a cycle after ~2^16 ops, where distinct ops share a hash and the dedup
  /// cache compares them node by node (a 100,000-op `-x` chain went quadratic).
  size_t hash_;
  mutable uint32_t leafCount_ = 0; ///< (next to `leaves_`)
  /// (its serial is read from it: the newest leaf of a source was made just before, nearby)
  LazyBuffer *newestLeaf_ = nullptr;
  /// buffers(), computed on first use: `leafCount_` pointers from the node pool.
  mutable LazyBuffer **leaves_ = nullptr;
  // Graph links (LazyBuffer.h), set when a LazyBuffer is created over this op or over an op that
  // contains it (`linked_`); kernel ASTs and other temporary trees are never linked. `parents_`
  // are the linked ops that have this one as a source, `owners_` the live LazyBuffers whose `op`
  // this is. Both are weak: a parent or owner unlinks itself before it releases this op.
  mutable PtrList<const LazyOp> parents_;
  mutable PtrList<LazyBuffer> owners_;
};

} // namespace lazyjit
