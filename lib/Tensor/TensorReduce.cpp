// Reductions of the Tensor API (reference tensor.py): sum/max/min/mean/var/std, softmax and
// log_softmax, argmax/argmin, cumsum and einsum.
#include "TensorInternals.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace lazyjit {

using TI = TensorInternals;

std::vector<int64_t> normAxes(const char *op, const Tensor &t, const Tensor::Axes &axis) {
  std::vector<int64_t> out;
  if (!axis) {
    for (int64_t i = 0; i < t.ndim(); ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : *axis) {
    LAZYJIT_USER_CHECK(a >= -t.ndim() && a < t.ndim(), ShapeError,
                       "{}: axis {} is out of range for {} ({} dims)", op, a, describe(t), t.ndim());
    out.push_back(a < 0 ? a + t.ndim() : a);
  }
  return out;
}

void requireFloat(const char *op, const Tensor &t) {
  LAZYJIT_USER_CHECK(t.dtype().isFloating(), DTypeError, "{}: needs a floating-point tensor, got {}",
                     op, describe(t));
}

Tensor TensorInternals::reduce(const Tensor &self, Op rop, const Tensor::Axes &axis, bool keepdim) {
  const char *name = rop == Op::Sum ? "sum" : "max";
  std::vector<int64_t> axes = normAxes(name, self, axis);
  auto in = [&](int64_t i) { return std::find(axes.begin(), axes.end(), i) != axes.end(); };
  Shape shape, newShape;
  for (int64_t i = 0; i < self.ndim(); ++i) {
    if (!in(i)) shape.push_back(self.shape()[i]);
    newShape.push_back(in(i) ? SInt(1) : self.shape()[i]);
  }
  auto hasZero = [](const Shape &s) {
    return std::any_of(s.begin(), s.end(), [](const SInt &x) { return pyEq(x, 0); });
  };
  if (hasZero(self.shape()) && !hasZero(shape)) {
    // The reference keeps every non-zero dim with keepdim (sum((4, 0), keepdim) is (4, 1)); every
    // reduced dim becomes 1, as in numpy.
    Shape fs = keepdim ? newShape : shape;
    double v = rop == Op::Sum ? 0.0 : -INFINITY;
    return Tensor::full(fs, v, {self.dtype(), self.device(), std::nullopt});
  }
  Tensor ret = mlReduce(rop, self, newShape);
  return keepdim ? ret : ret.reshape(shape);
}

Tensor Tensor::sum(const Axes &axis, bool keepdim) const & { return TI::reduce(*this, Op::Sum, axis, keepdim); }
Tensor Tensor::max(const Axes &axis, bool keepdim) const & {
  return TI::reduce(*this, Op::ReduceMax, axis, keepdim);
}
namespace {
// An order-reversing bijection of the dtype's values, as neg() is for floats and bools: for
// integers the bitwise not (x ^ -1 or x ^ max), since -x maps unsigned 0 to 0 and INT_MIN to itself
// (the reference's min of uint8 [0, 5] is 5).
Tensor reverseOrder(const Tensor &t) {
  if (!t.dtype().isInt()) return t.neg();
  double ones = t.dtype().isUnsigned() ? std::ldexp(1.0, static_cast<int>(t.dtype().itemsize()) * 8) - 1 : -1;
  return t.xorWith(ones);
}
} // namespace

Tensor Tensor::min(const Axes &axis, bool keepdim) const & {
  normAxes("min", *this, axis);
  if (dtype().isInt()) return reverseOrder(reverseOrder(*this).max(axis, keepdim));
  return neg().max(axis, keepdim).neg();
}

Tensor Tensor::mean(const Axes &axis, bool keepdim) const & {
  requireFloat("mean", *this);
  normAxes("mean", *this, axis);
  LAZYJIT_USER_CHECK(allInt(shape()), UnsupportedError, "mean: does not support symbolic shape {}",
                     describe(*this));
  Tensor out = sum(axis, keepdim);
  bool zero = std::any_of(shape().begin(), shape().end(), [](const SInt &s) { return pyEq(s, 0); });
  if (zero) return out;
  return out.mul(static_cast<double>(prodInt(out.shape())) / static_cast<double>(prodInt(shape())));
}

Tensor Tensor::var(const Axes &axis, bool keepdim, int64_t correction) const & {
  requireFloat("var", *this);
  normAxes("var", *this, axis);
  Tensor squareSum = sub(mean(axis, true)).square().sum(axis, keepdim);
  return squareSum.div(static_cast<double>(prodInt(shape())) / static_cast<double>(prodInt(squareSum.shape())) -
                       static_cast<double>(correction));
}

Tensor Tensor::std(const Axes &axis, bool keepdim, int64_t correction) const & {
  requireFloat("std", *this);
  normAxes("std", *this, axis);
  Tensor squareSum = sub(mean(axis, true)).square().sum(axis, keepdim);
  return squareSum
      .div(static_cast<double>(prodInt(shape())) / static_cast<double>(prodInt(squareSum.shape())) -
           static_cast<double>(correction))
      .sqrt();
}

std::tuple<Tensor, Tensor, Tensor> TensorInternals::softmaxParts(const Tensor &self, int64_t axis) {
  Tensor m = self.sub(self.max(std::vector<int64_t>{axis}, true));
  Tensor e = m.exp();
  Tensor ss = e.sum(std::vector<int64_t>{axis}, true);
  return {m, e, ss};
}

Tensor Tensor::softmax(int64_t axis) const & {
  requireFloat("softmax", *this);
  if (autocastType() && dtype().isHalfWidth()) return TI::autocastFloat32(*this).softmax(axis);
  normAxis("softmax", *this, axis);
  auto [m, e, ss] = TI::softmaxParts(*this, axis);
  return e.div(ss);
}

Tensor Tensor::logSoftmax(int64_t axis) const & {
  requireFloat("log_softmax", *this);
  if (autocastType() && dtype().isHalfWidth()) return TI::autocastFloat32(*this).logSoftmax(axis);
  normAxis("log_softmax", *this, axis);
  auto [m, e, ss] = TI::softmaxParts(*this, axis);
  return m.sub(ss.log());
}

Tensor Tensor::argmax(std::optional<int64_t> axis, bool keepdim) const & {
  LAZYJIT_USER_CHECK(allInt(shape()), UnsupportedError, "argmax: symbolic shape {}", describe(*this));
  bool empty = axis ? shape()[normAxis("argmax", *this, *axis)].asInt() == 0 : prodInt(shape()) == 0;
  LAZYJIT_USER_CHECK(!empty, ShapeError, "argmax: {} has no elements to choose from{}", describe(*this),
                     axis ? fmt::format(" along dim {}", *axis) : std::string());
  // The reference returns the float result of its arithmetic; lazyjit casts it to int32 (fused into
  // the same kernel) as PyTorch users expect an integer index.
  if (!axis) {
    int64_t n = prodInt(shape());
    Tensor isMax = eq(max());
    Tensor idx = isMax.mul(Tensor::arange(static_cast<double>(n - 1), -1, -1, {dtypes::int32, device(), false})
                               .reshape(shape()));
    return idx.max().sub(static_cast<double>(n), true).sub(1).cast(dtypes::int32);
  }
  int64_t a = normAxis("argmax", *this, *axis);
  Tensor m = eq(max(std::vector<int64_t>{a}, true));
  Shape rs{shape()[a]};
  rs.insert(rs.end(), ndim() - a - 1, SInt(1));
  Tensor idx = m.mul(Tensor::arange(static_cast<double>(shape()[a].asInt() - 1), -1, -1,
                                    {dtypes::int32, device(), false})
                         .reshape(rs));
  return idx.max(std::vector<int64_t>{a}, keepdim)
      .sub(static_cast<double>(shape()[a].asInt()), true)
      .sub(1)
      .cast(dtypes::int32);
}

Tensor Tensor::argmin(std::optional<int64_t> axis, bool keepdim) const & {
  if (axis) normAxis("argmin", *this, *axis);
  if (allInt(shape())) {
    bool empty = axis ? shape()[normAxis("argmin", *this, *axis)].asInt() == 0 : prodInt(shape()) == 0;
    LAZYJIT_USER_CHECK(!empty, ShapeError, "argmin: {} has no elements to choose from{}", describe(*this),
                       axis ? fmt::format(" along dim {}", *axis) : std::string());
  }
  return reverseOrder(*this).argmax(axis, keepdim);
}

Tensor TensorInternals::cumsumImpl(const Tensor &self, int64_t axis, bool firstZero) {
  int64_t n = self.shape()[axis].asInt();
  return TI::pool(self.transpose(axis, -1).pad2d({n - (firstZero ? 0 : 1), 0}), "cumsum", {n}, {1}, {1})
      .sum(std::vector<int64_t>{-1})
      .transpose(axis, -1);
}

Tensor Tensor::cumsum(int64_t axisIn) const & {
  int64_t axis = normAxis("cumsum", *this, axisIn);
  LAZYJIT_USER_CHECK(shape()[axis].isInt(), UnsupportedError, "cumsum: symbolic dim in {}", describe(*this));
  constexpr int64_t SPLIT = 256;
  int64_t n = shape()[axis].asInt();
  // OPT=5 (FusionFlags::scanLayouts): along another axis than the last, the reference's windows
  // slide across the input's contiguous axis, where no kernel has a vector axis (2048 x 2048 along
  // axis 0: 340 ms); summed over a copy with that axis moved last, they slide along it (one
  // transposing copy, 45 ms). Only where the windows' work (numel x window) outweighs the copy's
  if (axis != ndim() - 1 && n >= 32 && allInt(shape()) &&
      prodInt(shape()) * std::min<int64_t>(n, SPLIT) >= (1 << 20) && configuredGraphOptions().fusion.scanLayouts)
    return transpose(axis, -1).contiguous().cumsum(-1).transpose(axis, -1);
  if (n <= SPLIT * 2) return TI::cumsumImpl(*this, axis, false);
  int64_t padded = (n + SPLIT - 1) / SPLIT * SPLIT;
  Tensor ret = transpose(axis, -1).pad2d({padded - n, 0});
  Shape rs(ret.shape().begin(), ret.shape().end() - 1);
  rs.push_back(ret.shape().back().asInt() / SPLIT);
  rs.push_back(SPLIT);
  ret = TI::cumsumImpl(ret.reshape(rs), static_cast<int64_t>(rs.size()) - 1, false);
  std::vector<Index> last(ret.ndim() - 1, Index::all());
  last.push_back(Index::at(-1));
  Tensor lastCol = ret.getitem(last);
  Tensor baseAdd = TI::cumsumImpl(lastCol, lastCol.ndim() - 1, true);
  std::vector<Index> dropLast(baseAdd.ndim() - 1, Index::all());
  dropLast.push_back(Index::range(std::nullopt, -1));
  baseAdd = baseAdd.getitem(dropLast);
  Shape es = baseAdd.shape();
  es.push_back(ret.shape().back());
  baseAdd = baseAdd.unsqueeze(-1).expand(es);
  auto fix = [&](const Tensor &x) {
    Shape s(ret.shape().begin(), ret.shape().end() - 2);
    s.push_back(ret.shape()[ret.ndim() - 2] * ret.shape().back());
    Tensor y = x.reshape(s);
    std::vector<Index> tail(y.ndim() - 1, Index::all());
    tail.push_back(Index::range(-n, std::nullopt));
    return y.getitem(tail).transpose(axis, -1);
  };
  Tensor a = fix(ret);
  return a.add(fix(baseAdd));
}

Tensor Tensor::einsum(const std::string &formula, std::vector<Tensor> xsIn) {
  std::vector<Tensor> xs = std::move(xsIn);
  auto arrow = formula.find("->");
  LAZYJIT_USER_CHECK(arrow != std::string::npos, ShapeError, "einsum: formula '{}' has no '->'", formula);
  std::string lhs = formula.substr(0, arrow), output = formula.substr(arrow + 2);
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (true) {
    size_t c = lhs.find(',', pos);
    inputs.push_back(lhs.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  LAZYJIT_USER_CHECK(inputs.size() == xs.size(), ShapeError,
                     "einsum: number of inputs doesn't match the formula, expected {}, got {}",
                     inputs.size(), xs.size());
  std::map<char, SInt> letterVal;
  for (size_t k = 0; k < xs.size(); ++k) {
    LAZYJIT_USER_CHECK(static_cast<int64_t>(inputs[k].size()) == xs[k].ndim(), ShapeError,
                       "einsum: '{}' does not match {}", inputs[k], describe(xs[k]));
    for (size_t i = 0; i < inputs[k].size(); ++i) {
      auto [it, fresh] = letterVal.emplace(inputs[k][i], xs[k].shape()[i]);
      LAZYJIT_USER_CHECK(fresh || pyEq(it->second, xs[k].shape()[i]), ShapeError,
                         "einsum: letter '{}' has sizes {} and {}", inputs[k][i], it->second.render(),
                         xs[k].shape()[i].render());
    }
  }
  std::vector<Tensor> xs_;
  for (size_t k = 0; k < xs.size(); ++k) {
    std::vector<std::pair<char, int64_t>> order;
    for (size_t i = 0; i < inputs[k].size(); ++i) order.emplace_back(inputs[k][i], static_cast<int64_t>(i));
    std::stable_sort(order.begin(), order.end());
    std::vector<int64_t> perm;
    std::string letters;
    for (auto &[l, i] : order) {
      perm.push_back(i);
      letters += l;
    }
    Shape rs, es;
    for (auto &[l, v] : letterVal) {
      rs.push_back(letters.find(l) != std::string::npos ? v : SInt(1));
      es.push_back(v);
    }
    xs_.push_back(xs[k].permute(perm).reshape(rs).expand(es));
  }
  // After the sum the kept axes are in sorted letter order; output dim i is the axis of output[i].
  // The reference permutes by the argsort of the output, the inverse permutation, which differs
  // for a 3-cycle: its 'abc->cab' comes out as 'bca'.
  std::string rhsLetters = output;
  std::sort(rhsLetters.begin(), rhsLetters.end());
  std::vector<int64_t> rhsOrder;
  for (char l : output) rhsOrder.push_back(static_cast<int64_t>(rhsLetters.find(l)));
  std::vector<int64_t> sumAxes;
  int64_t ax = 0;
  for (auto &[l, v] : letterVal) {
    if (rhsLetters.find(l) == std::string::npos) sumAxes.push_back(ax);
    ++ax;
  }
  Tensor prodT = xs_[0];
  for (size_t k = 1; k < xs_.size(); ++k) prodT = prodT.mul(xs_[k]);
  return prodT.sum(sumAxes).permute(rhsOrder);
}

} // namespace lazyjit
