// Writing through an index (x[indices] = v, the reference's __setitem__ as an assign of a masked
// where), moving a tensor in place (to_), and the autocast scope of mixed precision.
//
// Basic indices (ints, slices of any step, None, Ellipsis) place the value by movement ops: the
// value is broadcast to the selection, flipped where a step is negative, dilated by the steps
// (pad then reshape) and padded to the selected positions; the same ops over a `true` tensor give
// the mask. One kernel computes mask.where(placed, x) into x's buffer. Tensor indices select
// flat positions (arange(numel) indexed the same way) and place through a one-hot mask, the
// last write winning.
#include "TensorInternals.h"

#include <algorithm>

namespace lazyjit {

using TI = TensorInternals;

namespace {

/// The positions one dim of a basic index selects: start + k * step for k < n; `keep` is false
/// for an int index (the dim is collapsed in the selection).
struct DimSel {
  int64_t start = 0, n = 0, step = 1;
  bool keep = true;
};

/// The shape of the selection (NewAxis included) and each dim's positions, for basic indices.
std::pair<Shape, std::vector<DimSel>> basicSelection(const Tensor &x, const std::vector<Index> &input) {
  std::vector<Index> indices = input;
  int ellipses = 0;
  int64_t numSlices = 0;
  for (const auto &i : indices) {
    if (i.kind == Index::Kind::Ellipsis) ++ellipses;
    else if (i.kind != Index::Kind::NewAxis) ++numSlices;
  }
  LAZYJIT_USER_CHECK(ellipses <= 1, ShapeError, "setitem: an index can only have a single ellipsis");
  LAZYJIT_USER_CHECK(numSlices <= x.ndim(), ShapeError, "setitem: too many indices for {} ({} dims)",
                     describe(x), x.ndim());
  auto fill = std::find_if(indices.begin(), indices.end(),
                           [](const Index &i) { return i.kind == Index::Kind::Ellipsis; });
  size_t fillAt = fill - indices.begin();
  if (fill != indices.end()) indices.erase(fill);
  indices.insert(indices.begin() + fillAt, x.ndim() - numSlices, Index::all());

  Shape selShape;
  std::vector<DimSel> dims;
  for (const auto &ix : indices) {
    if (ix.kind == Index::Kind::NewAxis) {
      selShape.push_back(1);
      continue;
    }
    size_t d = dims.size();
    LAZYJIT_USER_CHECK(x.shape()[d].isInt(), UnsupportedError, "setitem: dim {} of {} is symbolic", d, describe(x));
    int64_t sh = x.shape()[d].asInt();
    DimSel s;
    if (ix.kind == Index::Kind::Int) {
      LAZYJIT_USER_CHECK(ix.i < sh && ix.i >= -sh, ShapeError,
                         "setitem: index {} is out of bounds for dimension {} with size {}", ix.i, d, sh);
      s = {ix.i < 0 ? ix.i + sh : ix.i, 1, 1, false};
    } else {
      LAZYJIT_USER_CHECK(ix.step != 0, ShapeError, "setitem: slice step cannot be 0");
      auto [start, stop, step] = pySliceIndices(ix, sh);
      int64_t n = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                           : (start > stop ? (start - stop - step - 1) / -step : 0);
      s = {start, n, step, true};
      selShape.push_back(n);
    }
    dims.push_back(s);
  }
  return {selShape, dims};
}

/// `v` (shaped as the selection without its NewAxis dims, collapsed dims as 1) moved to the
/// positions `dims` select in a tensor of shape `full`; elsewhere 0 (false).
Tensor place(Tensor v, const std::vector<DimSel> &dims, const Shape &full) {
  std::vector<int64_t> flips;
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d].step < 0) flips.push_back(static_cast<int64_t>(d));
  if (!flips.empty()) v = v.flip(flips);
  bool strided = std::any_of(dims.begin(), dims.end(), [](const DimSel &s) { return s.step != 1 && s.step != -1; });
  if (strided) { // dilate: [n, 1] padded to [n, |step|], merged, the trailing gap cut
    Shape inter;
    std::vector<std::optional<SIntPair>> pads, cut;
    for (const auto &s : dims) {
      int64_t a = std::abs(s.step);
      inter.push_back(s.n);
      inter.push_back(1);
      pads.emplace_back(SIntPair(0, 0));
      pads.emplace_back(SIntPair(0, a - 1));
    }
    v = v.reshape(inter).pad(pads);
    Shape merged;
    for (const auto &s : dims) {
      int64_t a = std::abs(s.step);
      merged.push_back(s.n * a);
      cut.emplace_back(SIntPair(0, (s.n - 1) * a + 1));
    }
    v = v.reshape(merged).shrink(cut);
  }
  std::vector<std::optional<SIntPair>> pads;
  for (size_t d = 0; d < dims.size(); ++d) {
    const DimSel &s = dims[d];
    int64_t span = (s.n - 1) * std::abs(s.step) + 1;
    int64_t lo = s.step > 0 ? s.start : s.start + (s.n - 1) * s.step;
    pads.emplace_back(SIntPair(lo, full[d].asInt() - lo - span));
  }
  return v.pad(pads);
}

/// `value` as this dtype, broadcast to `sel` (an error naming both shapes when it does not).
Tensor broadcastValue(const Tensor &x, const Tensor &value, const Shape &sel) {
  auto fail = [&] {
    return fmt::format("setitem: cannot broadcast the value {} to the selection {} of {}", describe(value),
                       shapeText(sel), describe(x));
  };
  LAZYJIT_USER_CHECK(value.ndim() <= static_cast<int64_t>(sel.size()), ShapeError, "{}", fail());
  Shape padded(sel.size() - value.ndim(), SInt(1));
  padded.insert(padded.end(), value.shape().begin(), value.shape().end());
  for (size_t d = 0; d < sel.size(); ++d)
    LAZYJIT_USER_CHECK(pyEq(padded[d], sel[d]) || pyEq(padded[d], 1), ShapeError, "{}", fail());
  return value.cast(x.dtype()).reshape(padded).expand(sel);
}

} // namespace

std::tuple<int64_t, int64_t, int64_t> pySliceIndices(const Index &s, int64_t len) {
  int64_t step = s.step;
  int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? len - 1 : len;
  auto norm = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += len;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  return {norm(s.start, step < 0 ? upper : lower), norm(s.stop, step < 0 ? lower : upper), step};
}

Tensor &Tensor::setItem(const std::vector<Index> &indices, double value) {
  LAZYJIT_USER_CHECK(defined(), Error, "setitem: the tensor is undefined");
  return setItem(indices, TI::scalarOn(value, dtype(), device()));
}

Tensor &Tensor::setItem(const std::vector<Index> &indices, const Tensor &valueIn) {
  LAZYJIT_USER_CHECK(defined() && valueIn.defined(), Error, "setitem: an undefined Tensor");
  LAZYJIT_USER_CHECK(!requiresGrad().value_or(false) && !valueIn.requiresGrad().value_or(false), Error,
                     "setitem: {} or the value {} requires a gradient; setitem does not record one "
                     "(detach() both sides)", describe(*this), describe(valueIn));
  LAZYJIT_USER_CHECK(valueIn.device() == device(), DeviceError, "setitem: the value {} is on {} and {} on {}",
                     describe(valueIn), valueIn.device(), describe(*this), device());
  LAZYJIT_USER_CHECK(allInt(shape()), UnsupportedError, "setitem: {} has a symbolic shape", describe(*this));
  bool advanced = std::any_of(indices.begin(), indices.end(), [](const Index &i) { return i.kind == Index::Kind::Tensor; });
  Tensor value = valueIn.detach();
  if (!advanced) {
    auto [sel, dims] = basicSelection(*this, indices);
    Tensor v = broadcastValue(*this, value, sel);
    if (std::any_of(dims.begin(), dims.end(), [](const DimSel &s) { return s.n == 0; })) return *this;
    Shape perDim;
    for (const auto &s : dims) perDim.push_back(s.keep ? s.n : 1);
    Tensor placed = place(v.reshape(perDim), dims, shape());
    Tensor mask = place(Tensor::ones(perDim, {dtypes::boolean, device(), false}), dims, shape());
    return assign(mask.where(placed, detach()));
  }
  int64_t n = checkedNumel("setitem", shape());
  LAZYJIT_USER_CHECK(n < (int64_t(1) << 31), UnsupportedError,
                     "setitem: tensor indices into {} ({} elements) need int32 positions", describe(*this), n);
  TensorOptions i32{dtypes::int32, device(), false};
  Tensor pos = Tensor::arange(0, static_cast<double>(n), 1, i32).reshape(shape()).getitem(indices);
  Tensor v = broadcastValue(*this, value, pos.shape());
  int64_t r = checkedNumel("setitem", pos.shape());
  if (r == 0) return *this;
  // (comparisons give their operands' dtype; a where's condition is made bool, or its values would
  // be promoted to the condition's int32)
  auto asBool = [](const Tensor &t) { return t.cast(dtypes::boolean); };
  Tensor hit = asBool(Tensor::arange(0, static_cast<double>(n), 1, i32).reshape({n, 1}).eq(pos.reshape({1, r})));
  Tensor order = Tensor::arange(1, static_cast<double>(r + 1), 1, i32).reshape({1, r});
  Tensor last = hit.where(order, 0).max(std::vector<int64_t>{1}, true); // the last write to each element
  Tensor pick = asBool(hit.where(order.eq(last), 0));
  Tensor row = v.reshape({1, r});
  Tensor written = pick.where(row, row.zerosLike()).sum(std::vector<int64_t>{1}).cast(dtype());
  Tensor mask = asBool(last.reshape({n}).gt(0));
  return assign(mask.where(written, detach().reshape({n})).reshape(shape()));
}

Tensor &Tensor::to_(const std::optional<std::string> &dev) {
  LAZYJIT_USER_CHECK(defined(), Error, "to_: the tensor is undefined");
  if (!dev) return *this;
  Tensor moved = to(*dev);
  if (moved.sameAs(*this)) return *this;
  impl->lazydata = moved.impl->lazydata;
  impl->grad = moved.impl->grad;
  return *this;
}

// ---- autocast ---------------------------------------------------------------------------------

namespace {
std::optional<DType> &autocastHere() {
  thread_local std::optional<DType> dt;
  return dt;
}
} // namespace

Tensor::AutocastGuard::AutocastGuard(DType dtype, bool enabled) : prev(autocastHere()) {
  LAZYJIT_USER_CHECK(dtype.isHalfWidth(), DTypeError,
                     "autocast: the compute dtype must be float16 or bfloat16, got {}", dtype.name());
  autocastHere() = enabled ? std::optional<DType>(dtype) : std::nullopt;
}

Tensor::AutocastGuard::~AutocastGuard() { autocastHere() = prev; }

std::optional<DType> Tensor::autocastType() { return autocastHere(); }

bool TensorInternals::autocastWants(const Tensor &t) {
  auto dt = autocastHere();
  return dt && t.dtype().isFloating() && t.dtype() != *dt;
}

Tensor TensorInternals::autocast(const Tensor &t) { return autocastWants(t) ? t.cast(*autocastHere()) : t; }

Tensor TensorInternals::autocastFloat32(const Tensor &t) {
  return autocastHere() && t.dtype().isHalfWidth() ? t.cast(dtypes::float32) : t;
}

} // namespace lazyjit
