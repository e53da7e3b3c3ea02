// A ShapeTracker: a stack of Views that maps a tensor's index space onto its buffer without copies
// (reference shape/shapetracker.py). Only the last view is live; each view's flat index addresses the
// view below it, down to views[0], which indexes the buffer.
#pragma once

#include "lazyjit/Graph/View.h"
#include "lazyjit/Support/NodePool.h"

#include <atomic>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit {

/// A list of views under construction, from the node pool.
using Views = std::vector<View, NodePoolAllocator<View>>;

/// The views of a tracker: immutable once built and shared by every copy of the tracker, with its
/// hash computed once. Every node of the lazy graph and every buffer op of a kernel holds a
/// tracker, and most are copies of another (an element-wise op's output is the plain layout of its
/// shape, a kernel's leaf is its buffer's tracker): a copy is a reference count, not the views'
/// vectors of symbolic ints, and equal copies compare by address.
class ViewStack {
public:
  ViewStack() = default;
  ViewStack(Views views);
  ViewStack(std::initializer_list<View> views) : ViewStack(Views(views)) {}

  size_t size() const { return rep ? rep->views.size() : 0; }
  bool empty() const { return size() == 0; }
  const View &operator[](size_t i) const { return rep->views[i]; }
  const View &back() const { return rep->views.back(); }
  const View *begin() const { return rep ? rep->views.data() : nullptr; }
  const View *end() const { return rep ? rep->views.data() + rep->views.size() : nullptr; }
  /// The views as a vector (empty when there are none).
  const Views &list() const;

  bool operator==(const ViewStack &o) const;
  bool operator!=(const ViewStack &o) const { return !(*this == o); }
  /// The hash of the views, computed on first use.
  size_t hash() const;
  /// True when both hold the same views object (copies of one tracker).
  bool sameAs(const ViewStack &o) const { return rep == o.rep; }
  /// Whether a shape, stride, offset or mask bound of some view is a node (false: no variables).
  bool symbolic() const { return rep && rep->symbolic; }

private:
  struct Rep {
    Views views;
    bool symbolic = false;
    mutable std::atomic<size_t> hash{0}; ///< 0: not computed yet
  };
  std::shared_ptr<const Rep> rep;
};

struct ShapeTracker {
  ViewStack views;

  static ShapeTracker fromShape(const Shape &shape);

  const Shape &shape() const { return views.back().shape; }
  bool contiguous() const { return views.size() == 1 && views[0].contiguous; }
  /// The extent of the buffer this tracker touches: max(idx)+1 over the shape (ignores masks).
  int64_t size() const;

  // Movement ops. They throw ShapeError naming the op and the shapes on bad arguments.
  ShapeTracker pad(const PadArg &arg) const;
  ShapeTracker shrink(const PadArg &arg) const;
  ShapeTracker expand(const Shape &newShape) const;
  ShapeTracker permute(const std::vector<int64_t> &axis) const;
  ShapeTracker stride(const std::vector<int64_t> &mul) const;
  /// With `mergeView` (the reference's MERGE_VIEW, on by default) the reshape folds into the last
  /// view when it can; otherwise it always adds a view.
  ShapeTracker reshape(const Shape &newShape, bool mergeView = true) const;

  /// Merges the last two views while the result is exact (the same views when none merge). On a
  /// temporary, the same views are moved on, not copied (a copy is an atomic count once the
  /// process has threads: `st.simplify().unbind()` for each leaf of a kernel).
  ShapeTracker simplify() const &;
  ShapeTracker simplify() &&;

  /// Index and validity expressions over per-dimension index nodes (default: `idx0..idxN-1`).
  std::pair<NodeRef, NodeRef> exprIdxs(std::optional<std::vector<NodeRef>> idxs = std::nullopt) const;
  /// Index and validity over one flat index variable (default: Variable("idx", 0, prod-1)).
  std::pair<NodeRef, NodeRef> exprNode(NodeRef idx = nullptr) const;

  /// Per-axis strides when they are exact, nullopt where an axis is masked or non-affine.
  std::vector<std::optional<SInt>> realStrides(bool ignoreValid = false) const;
  std::vector<int64_t> unitStrideAxes(bool ignoreValid = false) const;
  bool axisIsMasked(int64_t axis) const;

  std::vector<NodeRef> vars() const;
  /// Bound variables: expr name -> (unbound variable, value).
  std::map<std::string, std::pair<NodeRef, int64_t>> varVals() const;
  /// The views with every bound variable replaced by its unbound one (the same views when there
  /// are no variables: the scheduler unbinds every leaf it loads).
  ShapeTracker unbind() const &;
  ShapeTracker unbind() &&;

  /// `views` with the last one replaced by `v`.
  ShapeTracker withLast(View v) const;

  bool operator==(const ShapeTracker &o) const { return views == o.views; }
  bool operator!=(const ShapeTracker &o) const { return !(*this == o); }
  size_t hash() const { return views.hash(); }
  std::string repr() const;
};

/// Groups old axes so that each new dim is a product of consecutive old dims; nullopt otherwise.
std::optional<std::vector<std::vector<int64_t>>> getContraction(const Shape &oldShape,
                                                               const Shape &newShape);

/// The validity and index node helpers of one view (used by ShapeTracker and tests).
NodeRef exprNodeMask(const View &view, const NodeRef &idx, const NodeRef &valid = nullptr);
NodeRef exprNodeOfView(const View &view, NodeRef idx = nullptr);
NodeRef exprIdxsOfView(const View &view, const std::vector<NodeRef> &idxs);

} // namespace lazyjit
