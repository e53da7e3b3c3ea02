// A View: one strided, offset, optionally masked window onto a flat buffer (reference shape/view.py).
#pragma once

#include "lazyjit/Graph/Symbolic.h"

#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace lazyjit {

using SIntPair = std::pair<SInt, SInt>;
/// Per-dimension valid ranges [lo, hi); elements outside read as zero.
using Mask = std::vector<SIntPair>;
/// Per-dimension (begin, end) for pad/shrink arguments.
using PadArg = std::vector<SIntPair>;

/// Shape, strides, offset and mask of one view. Immutable; every movement op returns a new View.
/// `contiguous` is true iff the view is the plain row-major layout of its shape.
struct View {
  Shape shape;
  Shape strides;
  SInt offset;
  std::optional<Mask> mask;
  bool contiguous = false;

  /// View.create: row-major strides by default; size-1 dims always get stride 0.
  static View create(const Shape &shape, const std::optional<Shape> &strides = std::nullopt,
                     const SInt &offset = 0, const std::optional<Mask> &mask = std::nullopt);

  View pad(const PadArg &arg) const;
  View shrink(const PadArg &arg) const;
  View expand(const Shape &newShape) const;
  View permute(const std::vector<int64_t> &axis) const;
  View stride(const std::vector<int64_t> &mul) const;
  /// Reshape within this one view, or nullopt when it needs a second view.
  std::optional<View> reshape(const Shape &newShape) const;

  std::vector<NodeRef> vars() const;
  View unbind() const;
  bool hasMask() const { return mask && !mask->empty(); }

  bool operator==(const View &o) const;
  bool operator!=(const View &o) const { return !(*this == o); }
  size_t hash() const;
  /// `View(shape=(...), strides=(...), offset=..., mask=..., contiguous=...)` as the reference prints.
  std::string repr() const;

private:
  View unsafeResize(const PadArg &arg, const std::optional<Mask> &newMask) const;
};

using MergedDim = std::tuple<SInt, SInt, SInt>; ///< (merged size, stride, real size)
std::vector<MergedDim> mergeDims(const Shape &shape, const Shape &strides,
                                 const std::optional<Mask> &mask = std::nullopt);
Shape stridesForShape(const Shape &shape);
Shape filterStrides(const Shape &shape, const Shape &strides);

} // namespace lazyjit
