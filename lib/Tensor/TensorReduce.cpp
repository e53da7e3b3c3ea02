// Reductions and processing ops of the Tensor API: sum/max/mean/var/std, softmax, argmax, cumsum,
// einsum, pooling, convolution, matmul, normalization and attention (reference tensor.py).
#include "TensorInternals.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

namespace lazyjit {

using TI = TensorInternals;

namespace {
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

std::vector<int64_t> pairOf(const std::vector<int64_t> &v, size_t n, const char *op, const char *what) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  LAZYJIT_USER_CHECK(v.size() == n, ShapeError, "{}: expected 1 or {} {} values, got {}", op, n, what,
                     v.size());
  return v;
}

void requireFloat(const char *op, const Tensor &t) {
  LAZYJIT_USER_CHECK(t.dtype().isFloating(), DTypeError, "{}: needs a floating-point tensor, got {}",
                     op, describe(t));
}
} // namespace

// ---- reductions ---------------------------------------------------------------------------------

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
  normAxis("softmax", *this, axis);
  auto [m, e, ss] = TI::softmaxParts(*this, axis);
  return e.div(ss);
}

Tensor Tensor::logSoftmax(int64_t axis) const & {
  requireFloat("log_softmax", *this);
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

// ---- pooling and convolution --------------------------------------------------------------------

Tensor TensorInternals::pool(const Tensor &self, const char *op, const std::vector<int64_t> &k_,
                             const std::vector<int64_t> &strideIn,
                             const std::vector<int64_t> &dilationIn) {
  size_t nk = k_.size();
  LAZYJIT_USER_CHECK(self.ndim() >= static_cast<int64_t>(nk), ShapeError, "{}: can't pool {} with {}", op,
                     describe(self), fmtInts(k_));
  LAZYJIT_USER_CHECK(allInt(self.shape()), UnsupportedError, "{}: symbolic shape {}", op, describe(self));
  std::vector<int64_t> s_ = pairOf(strideIn, nk, op, "stride"), d_ = pairOf(dilationIn, nk, op, "dilation");
  auto positive = [](const std::vector<int64_t> &v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; });
  };
  LAZYJIT_USER_CHECK(positive(k_), ShapeError, "{}: kernel {} must be positive", op, fmtInts(k_));
  LAZYJIT_USER_CHECK(positive(s_), ShapeError, "{}: stride {} must be positive", op, fmtInts(s_));
  LAZYJIT_USER_CHECK(positive(d_), ShapeError, "{}: dilation {} must be positive", op, fmtInts(d_));
  std::vector<int64_t> shape = self.intShape();
  size_t np = shape.size() - nk;
  std::vector<std::optional<SIntPair>> slcPrefix;
  Shape prefix;
  for (size_t i = 0; i < np; ++i) {
    slcPrefix.emplace_back(SIntPair(0, shape[i]));
    prefix.push_back(shape[i]);
  }
  std::vector<int64_t> i_(shape.begin() + np, shape.end());
  for (size_t j = 0; j < nk; ++j)
    LAZYJIT_USER_CHECK(i_[j] >= d_[j] * (k_[j] - 1) + 1, ShapeError,
                       "{}: kernel {} (dilation {}) does not fit {}", op, fmtInts(k_), fmtInts(d_),
                       describe(self));
  auto cat = [](Shape a, const Shape &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  auto slc = [&](const std::vector<std::optional<SIntPair>> &rest) {
    auto v = slcPrefix;
    v.insert(v.end(), rest.begin(), rest.end());
    return v;
  };
  bool anyBig = false, anyDil = false;
  for (size_t j = 0; j < nk; ++j) {
    anyBig = anyBig || k_[j] > s_[j];
    anyDil = anyDil || d_[j] != 1;
  }
  std::vector<int64_t> permOut;
  for (size_t i = 0; i < np; ++i) permOut.push_back(static_cast<int64_t>(i));
  if (anyBig || anyDil) {
    std::vector<int64_t> o_, e_;
    for (size_t j = 0; j < nk; ++j) {
      o_.push_back((i_[j] - d_[j] * (k_[j] - 1) - 1) / s_[j] + 1);
      e_.push_back(static_cast<int64_t>(std::ceil(static_cast<double>(k_[j] * (i_[j] + d_[j])) / i_[j])));
    }
    Shape r1, e1, r2;
    for (size_t j = 0; j < nk; ++j) {
      r1.push_back(1);
      r1.push_back(i_[j]);
      e1.push_back(e_[j]);
      e1.push_back(i_[j]);
      r2.push_back(e_[j] * i_[j]);
    }
    Tensor xup = self.reshape(cat(prefix, r1)).expand(cat(prefix, e1)).reshape(cat(prefix, r2));
    // slide by dilation
    std::vector<std::optional<SIntPair>> s1;
    for (size_t j = 0; j < nk; ++j) s1.emplace_back(SIntPair(0, k_[j] * (i_[j] + d_[j])));
    xup = xup.slice(slc(s1));
    Shape r3;
    for (size_t j = 0; j < nk; ++j) {
      r3.push_back(k_[j]);
      r3.push_back(i_[j] + d_[j]);
    }
    xup = xup.reshape(cat(prefix, r3));
    std::vector<std::optional<SIntPair>> s2;
    for (size_t j = 0; j < nk; ++j) {
      s2.emplace_back(SIntPair(0, k_[j]));
      s2.emplace_back(SIntPair(0, o_[j] * s_[j]));
    }
    xup = xup.slice(slc(s2));
    // handle stride, and permute to move reduce to the end
    Shape r4;
    for (size_t j = 0; j < nk; ++j) {
      r4.push_back(k_[j]);
      r4.push_back(o_[j]);
      r4.push_back(s_[j]);
    }
    xup = xup.reshape(cat(prefix, r4));
    std::vector<std::optional<SIntPair>> s3;
    for (size_t j = 0; j < nk; ++j) {
      s3.emplace_back(SIntPair(0, k_[j]));
      s3.emplace_back(SIntPair(0, o_[j]));
      s3.emplace_back(SIntPair(0, 1));
    }
    xup = xup.slice(slc(s3));
    Shape r5;
    for (size_t j = 0; j < nk; ++j) {
      r5.push_back(k_[j]);
      r5.push_back(o_[j]);
    }
    xup = xup.reshape(cat(prefix, r5));
    for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2 + 1));
    for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2));
    return xup.permute(permOut);
  }
  // TODO in the reference: once the shapetracker can optimize well, remove this alternative
  std::vector<int64_t> o_;
  for (size_t j = 0; j < nk; ++j) o_.push_back((i_[j] + (s_[j] - k_[j])) / s_[j]);
  std::vector<std::optional<SIntPair>> s1;
  for (size_t j = 0; j < nk; ++j) s1.emplace_back(SIntPair(0, o_[j] * s_[j]));
  Tensor xup = self.slice(slc(s1));
  Shape r1;
  for (size_t j = 0; j < nk; ++j) {
    r1.push_back(o_[j]);
    r1.push_back(s_[j]);
  }
  xup = xup.reshape(cat(prefix, r1));
  std::vector<std::optional<SIntPair>> s2;
  for (size_t j = 0; j < nk; ++j) {
    s2.emplace_back(SIntPair(0, o_[j]));
    s2.emplace_back(SIntPair(0, k_[j]));
  }
  xup = xup.slice(slc(s2));
  for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2));
  for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2 + 1));
  return xup.permute(permOut);
}

Tensor Tensor::avgPool2d(const std::vector<int64_t> &kernel,
                         const std::optional<std::vector<int64_t>> &stride,
                         const std::vector<int64_t> &dilation) const & {
  std::vector<int64_t> k = pairOf(kernel, kernel.size() == 1 ? 2 : kernel.size(), "avg_pool2d", "kernel");
  std::vector<int64_t> axes;
  for (int64_t i = -static_cast<int64_t>(k.size()); i < 0; ++i) axes.push_back(i);
  return TI::pool(*this, "avg_pool2d", k, stride ? *stride : k, dilation).mean(axes);
}

Tensor Tensor::maxPool2d(const std::vector<int64_t> &kernel,
                         const std::optional<std::vector<int64_t>> &stride,
                         const std::vector<int64_t> &dilation) const & {
  std::vector<int64_t> k = pairOf(kernel, kernel.size() == 1 ? 2 : kernel.size(), "max_pool2d", "kernel");
  std::vector<int64_t> axes;
  for (int64_t i = -static_cast<int64_t>(k.size()); i < 0; ++i) axes.push_back(i);
  return TI::pool(*this, "max_pool2d", k, stride ? *stride : k, dilation).max(axes);
}

Tensor Tensor::conv2d(Tensor weightIn, std::optional<Tensor> biasIn, int64_t groups,
                      const std::vector<int64_t> &stride, const std::vector<int64_t> &dilation,
                      const std::vector<int64_t> &padding) const & {
  Tensor weight = std::move(weightIn);
  std::optional<Tensor> bias = std::move(biasIn);
  LAZYJIT_USER_CHECK(ndim() >= 3 && ndim() == weight.ndim(), ShapeError,
                     "conv2d: input {} does not match the weights {}", describe(*this), describe(weight));
  LAZYJIT_USER_CHECK(groups >= 1, ShapeError, "conv2d: groups must be >= 1, got {}", groups);
  int64_t bs = shape()[0].asInt(), cinAll = shape()[1].asInt();
  int64_t cout = weight.shape()[0].asInt(), cin = weight.shape()[1].asInt();
  std::vector<int64_t> HW;
  for (int64_t i = 2; i < weight.ndim(); ++i) HW.push_back(weight.shape()[i].asInt());
  LAZYJIT_USER_CHECK(groups * cin == cinAll && cout % groups == 0, ShapeError,
                     "conv2d: input {} does not match the weights {} with groups={} ({} vs. {})",
                     describe(*this), describe(weight), groups, groups * cin, cinAll);
  if (bias)
    LAZYJIT_USER_CHECK(bias->ndim() == 1 && pyEq(bias->shape()[0], cout), ShapeError,
                       "conv2d: bias {} does not match {} output channels", describe(*bias), cout);
  size_t nhw = HW.size();
  LAZYJIT_USER_CHECK(padding.size() == 1 || padding.size() == nhw || padding.size() == 2 * nhw, ShapeError,
                     "conv2d: expected padding of length 1, {} or {}, got {} for {}", nhw, 2 * nhw,
                     padding.size(), describe(*this));
  std::vector<int64_t> padding_;
  if (padding.size() == 1) padding_.assign(2 * nhw, padding[0]);
  else if (padding.size() == 2 * nhw) padding_ = padding;
  else {
    for (int64_t p : padding) {
      padding_.push_back(p);
      padding_.push_back(p);
    }
    std::reverse(padding_.begin(), padding_.end());
  }
  // conv2d is a pooling op (with padding)
  Tensor x = TI::pool(pad2d(padding_), "conv2d", HW, stride, dilation); // (bs, groups*cin, oy, ox, H, W)
  int64_t rcout = cout / groups;
  Shape oyx(x.shape().begin() + 2, x.shape().end() - nhw);
  Shape rs{bs, groups, cin, 1};
  rs.insert(rs.end(), oyx.begin(), oyx.end());
  for (int64_t h : HW) rs.push_back(h);
  Shape es{bs, groups, cin, rcout};
  es.insert(es.end(), oyx.begin(), oyx.end());
  for (int64_t h : HW) es.push_back(h);
  std::vector<int64_t> perm{0, 1, 3};
  for (size_t i = 0; i < oyx.size(); ++i) perm.push_back(static_cast<int64_t>(4 + i));
  perm.push_back(2);
  for (size_t i = 0; i < nhw; ++i) perm.push_back(static_cast<int64_t>(4 + oyx.size() + i));
  x = x.reshape(rs).expand(es).permute(perm);
  // conv! broadcasted to (bs, groups, rcout, *oyx, cin, *HW)
  Shape ws{1, groups, rcout};
  ws.insert(ws.end(), oyx.size(), SInt(1));
  ws.push_back(cin);
  for (int64_t h : HW) ws.push_back(h);
  std::vector<int64_t> sumAxes;
  for (size_t i = 0; i < 1 + oyx.size(); ++i) sumAxes.push_back(-1 - static_cast<int64_t>(i));
  Shape outShape{bs, cout};
  outShape.insert(outShape.end(), oyx.begin(), oyx.end());
  Tensor ret = x.mul(weight.reshape(ws)).sum(sumAxes, true).reshape(outShape);
  if (!bias) return ret;
  Shape bsh{1, -1};
  bsh.insert(bsh.end(), nhw, SInt(1));
  return ret.add(bias->reshape(bsh));
}

Tensor Tensor::convTranspose2d(Tensor weight, std::optional<Tensor> bias, int64_t groups,
                               const std::vector<int64_t> &strideIn, const std::vector<int64_t> &dilationIn,
                               const std::vector<int64_t> &paddingIn,
                               const std::vector<int64_t> &outputPaddingIn) const & {
  LAZYJIT_USER_CHECK(weight.ndim() >= 3 && ndim() == weight.ndim(), ShapeError,
                     "conv_transpose2d: input {} does not match the weights {}", describe(*this),
                     describe(weight));
  std::vector<int64_t> HW;
  for (int64_t i = 2; i < weight.ndim(); ++i) HW.push_back(weight.shape()[i].asInt());
  size_t nhw = HW.size();
  std::vector<int64_t> trailing;
  for (int64_t i = 3; i <= weight.ndim(); ++i) trailing.push_back(i);
  int64_t w0 = weight.shape()[0].asInt(), w1 = weight.shape()[1].asInt();
  LAZYJIT_USER_CHECK(groups >= 1 && w0 % groups == 0 && pyEq(shape()[1], w0), ShapeError,
                     "conv_transpose2d: input {} does not match the weights {} with groups={} ({} vs. {})",
                     describe(*this), describe(weight), groups, w0, shape()[1].render());
  Shape wr{groups, w0 / groups, w1};
  for (int64_t h : HW) wr.push_back(h);
  std::vector<int64_t> wp{0, 2, 1};
  wp.insert(wp.end(), trailing.begin(), trailing.end());
  Tensor x = *this;
  Tensor w = weight.reshape(wr).permute(wp).flip(trailing);
  std::vector<int64_t> stride = pairOf(strideIn, nhw, "conv_transpose2d", "stride");
  if (std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s > 1; })) {
    Shape s1(x.shape().begin(), x.shape().begin() + 2);
    for (size_t i = 2; i < x.shape().size(); ++i) {
      s1.push_back(x.shape()[i]);
      s1.push_back(1);
    }
    x = x.reshape(s1);
    std::vector<std::optional<SIntPair>> p{SIntPair(0, 0), SIntPair(0, 0)};
    for (int64_t s : stride) {
      p.emplace_back(SIntPair(0, 0));
      p.emplace_back(SIntPair(0, s - 1));
    }
    x = x.pad(p);
    Shape s2(x.shape().begin(), x.shape().begin() + 2);
    for (size_t i = 0; i < nhw; ++i) s2.push_back(x.shape()[2 + 2 * i] * stride[i]);
    x = x.reshape(s2);
    std::vector<std::optional<SIntPair>> shr{SIntPair(0, x.shape()[0]), SIntPair(0, x.shape()[1])};
    for (size_t i = 0; i < nhw; ++i) shr.emplace_back(SIntPair(0, x.shape()[2 + i] - (stride[i] - 1)));
    x = x.shrink(shr);
  }
  std::vector<int64_t> dil = pairOf(dilationIn, nhw, "conv_transpose2d", "dilation");
  std::vector<int64_t> pad = pairOf(paddingIn, nhw, "conv_transpose2d", "padding");
  std::vector<int64_t> opad = pairOf(outputPaddingIn, nhw, "conv_transpose2d", "output_padding");
  std::vector<int64_t> padding;
  for (size_t j = nhw; j-- > 0;) {
    padding.push_back((HW[j] - 1) * dil[j] - pad[j]);
    padding.push_back((HW[j] - 1) * dil[j] - pad[j] + opad[j]);
  }
  Shape wf{w.shape()[0] * w.shape()[1]};
  wf.insert(wf.end(), w.shape().begin() + 2, w.shape().end());
  return x.conv2d(w.reshape(wf), bias, groups, {1}, dilationIn, padding);
}

Tensor Tensor::matmul(Tensor w) const & { return dot(std::move(w)); }

Tensor Tensor::dot(Tensor wIn) const & {
  Tensor w = std::move(wIn);
  int64_t n1 = ndim(), n2 = w.ndim();
  LAZYJIT_USER_CHECK(n1 != 0 && n2 != 0, ShapeError,
                     "matmul: both arguments need to be at least 1D, but they are {} and {}",
                     describe(*this), describe(w));
  const SInt &k2 = w.shape()[n2 - std::min<int64_t>(n2, 2)];
  LAZYJIT_USER_CHECK(pyEq(shape().back(), k2), ShapeError,
                     "matmul: {} and {} cannot be multiplied ({} != {})", describe(*this), describe(w),
                     shape().back().render(), k2.render());
  if (n1 >= 2 && n2 >= 2) {
    Shape xb(shape().begin(), shape().end() - 2), wb(w.shape().begin(), w.shape().end() - 2);
    size_t n = std::max(xb.size(), wb.size());
    for (size_t i = 0; i < n; ++i) {
      SInt a = i < n - xb.size() ? SInt(1) : xb[i - (n - xb.size())];
      SInt b = i < n - wb.size() ? SInt(1) : wb[i - (n - wb.size())];
      LAZYJIT_USER_CHECK(pyEq(a, b) || pyEq(a, 1) || pyEq(b, 1), ShapeError,
                         "matmul: cannot broadcast the batch dims of {} and {}", describe(*this),
                         describe(w));
    }
  }
  int64_t ones = std::min<int64_t>({n1 - 1, n2 - 1, 1});
  Shape xs(shape().begin(), shape().end() - 1);
  xs.insert(xs.end(), ones, SInt(1));
  xs.push_back(shape().back());
  Tensor x = reshape(xs);
  Shape ws(w.shape().begin(), w.shape().end() - std::min<int64_t>(n2, 2));
  ws.insert(ws.end(), ones, SInt(1));
  ws.insert(ws.end(), w.shape().end() - std::min<int64_t>(n2, 2), w.shape().end());
  Tensor wt = w.reshape(ws).transpose(-1, -std::min<int64_t>(n2, 2));
  return x.mul(wt).sum(std::vector<int64_t>{-1});
}

Tensor Tensor::linear(Tensor weightIn, std::optional<Tensor> biasIn) const & {
  Tensor weight = std::move(weightIn);
  std::optional<Tensor> bias = std::move(biasIn);
  if (weight.ndim() >= 2 && ndim() >= 1) {
    const SInt &k = weight.shape()[weight.ndim() - 2];
    LAZYJIT_USER_CHECK(pyEq(shape().back(), k), ShapeError, "linear: {} and {} cannot be multiplied ({} != {})",
                       describe(*this), describe(weight), shape().back().render(), k.render());
  }
  Tensor x = weight.ndim() == 1 ? mul(weight) : dot(weight);
  return bias ? x.add(*bias) : x;
}

Tensor Tensor::layernorm(const std::vector<int64_t> &axis, double eps) const & {
  requireFloat("layernorm", *this);
  normAxes("layernorm", *this, axis);
  Tensor y = sub(mean(axis, true));
  return y.mul(y.mul(y).mean(axis, true).add(eps).rsqrt());
}

Tensor Tensor::batchnorm(std::optional<Tensor> weightIn, std::optional<Tensor> biasIn,
                         Tensor meanIn, Tensor invstdIn) const & {
  std::optional<Tensor> weight = std::move(weightIn), bias = std::move(biasIn);
  Tensor mean = std::move(meanIn), invstd = std::move(invstdIn);
  LAZYJIT_USER_CHECK(ndim() >= 2, ShapeError, "batchnorm: input {} needs a channel dim", describe(*this));
  Shape cs{1, -1, 1, 1};
  Tensor x = sub(mean.reshape(cs));
  if (weight) x = x.mul(weight->reshape(cs));
  Tensor ret = x.mul(invstd.ndim() == 1 ? invstd.reshape(cs) : invstd);
  return bias ? ret.add(bias->reshape(cs)) : ret;
}

Tensor Tensor::dropout(double p) const & {
  LAZYJIT_USER_CHECK(p >= 0 && p <= 1, ShapeError, "dropout: probability {} is outside [0, 1]", p);
  if (!training || p == 0) return *this;
  if (p == 1) return mul(0); // the reference divides by 1 - p = 0 (Python raises); PyTorch gives 0s
  Tensor mask = Tensor::rand(shape(), {std::nullopt, device(), false}).ge(p).cast(dtypes::boolean);
  return mul(mask).mul(1 / (1.0 - p));
}

Tensor Tensor::scaledDotProductAttention(Tensor keyIn, Tensor valueIn,
                                         std::optional<Tensor> attnMaskIn, double dropoutP,
                                         bool isCausal) const & {
  Tensor key = std::move(keyIn), value = std::move(valueIn);
  LAZYJIT_USER_CHECK(allInt(shape()), UnsupportedError,
                     "scaled_dot_product_attention: the query {} must have a concrete shape", describe(*this));
  LAZYJIT_USER_CHECK(ndim() >= 2 && key.ndim() >= 2 && value.ndim() >= 2, ShapeError,
                     "scaled_dot_product_attention: query {}, key {} and value {} need >= 2 dims",
                     describe(*this), describe(key), describe(value));
  std::optional<Tensor> attnMask = std::move(attnMaskIn);
  if (isCausal)
    attnMask = Tensor::ones({shape()[ndim() - 2], key.shape()[key.ndim() - 2]}, {std::nullopt, device(), false})
                   .tril(0)
                   .cast(dtypes::boolean);
  if (attnMask && attnMask->dtype() == dtypes::boolean) attnMask = attnMask->eq(0).where(-INFINITY, 0);
  Tensor scores = dot(key.transpose(-2, -1)).div(std::sqrt(static_cast<double>(shape().back().asInt())));
  if (attnMask) scores = scores.add(*attnMask);
  return scores.softmax(-1).dropout(dropoutP).dot(value);
}

Tensor Tensor::multinomial(int64_t numSamples, bool replacement) const & {
  LAZYJIT_USER_CHECK((ndim() == 1 || ndim() == 2) && numSamples > 0, ShapeError,
                     "multinomial: needs 1-d or 2-d weights and a positive sample count, got {} and {}",
                     describe(*this), numSamples);
  LAZYJIT_USER_CHECK(replacement || numSamples == 1, ShapeError,
                     "multinomial: without replacement only one sample can be drawn, asked for {}", numSamples);
  LAZYJIT_USER_CHECK(allInt(shape()), ShapeError, "multinomial: needs concrete weights, got {}", describe(*this));
  Tensor weight = ndim() == 1 ? unsqueeze(0) : *this;
  Tensor cw = weight.cumsum(1);
  int64_t rows = weight.shape()[0].asInt(), cols = weight.shape()[1].asInt();
  Tensor cdf = cw.div(cw.getitem({Index::all(), Index::at(-1)}).unsqueeze(1));
  Tensor unif = Tensor::rand({numSamples, rows, 1}, {cdf.dtype(), device(), false});
  Tensor indices = unif.expand({numSamples, rows, cols}).ge(cdf).sum(std::vector<int64_t>{2}).permute({1, 0});
  return (ndim() == 1 ? indices.squeeze(0) : indices).cast(dtypes::int32);
}

Tensor Tensor::triu(int64_t k) const & {
  LAZYJIT_USER_CHECK(allInt(shape()) && ndim() >= 2, ShapeError, "triu: needs a concrete >= 2-d tensor, got {}",
                     describe(*this));
  int64_t r = shape()[ndim() - 2].asInt(), c = shape().back().asInt();
  TensorOptions o{dtype(), device(), std::nullopt};
  Tensor tri = Tensor::arange(0, static_cast<double>(r), 1, o).unsqueeze(1).expand({r, c})
                   .le(Tensor::arange(static_cast<double>(-k), static_cast<double>(c - k), 1, o)
                           .unsqueeze(0)
                           .expand({r, c}));
  return tri.where(*this, zerosLike());
}

Tensor Tensor::tril(int64_t k) const & {
  LAZYJIT_USER_CHECK(allInt(shape()) && ndim() >= 2, ShapeError, "tril: needs a concrete >= 2-d tensor, got {}",
                     describe(*this));
  int64_t r = shape()[ndim() - 2].asInt(), c = shape().back().asInt();
  TensorOptions o{dtype(), device(), std::nullopt};
  Tensor tri = Tensor::arange(0, static_cast<double>(r), 1, o).unsqueeze(1).expand({r, c})
                   .le(Tensor::arange(static_cast<double>(-(k + 1)), static_cast<double>(c - (k + 1)), 1, o)
                           .unsqueeze(0)
                           .expand({r, c}));
  return tri.where(zerosLike(), *this);
}

Tensor Tensor::binaryCrossentropy(Tensor yIn) const & {
  Tensor y = std::move(yIn);
  Tensor a = y.neg().mul(log());
  Tensor b = y.sub(1, true).mul(sub(1, true).log());
  return a.sub(b).mean();
}

Tensor Tensor::binaryCrossentropyLogits(Tensor yIn) const & {
  Tensor y = std::move(yIn);
  Tensor a = maximum(0).sub(y.mul(*this));
  return a.add(abs().neg().exp().add(1, true).log()).mean();
}

Tensor Tensor::sparseCategoricalCrossentropy(Tensor yIn, int64_t ignoreIndex) const & {
  Tensor Y = std::move(yIn);
  Tensor lossMask = Y.ne(static_cast<double>(ignoreIndex));
  int64_t classes = shape().back().asInt();
  Tensor yCounter = Tensor::arange(0, static_cast<double>(classes), 1, {dtypes::int32, device(), false})
                        .unsqueeze(0)
                        .expand({Y.numel(), classes});
  Shape ys = Y.shape();
  ys.push_back(classes);
  Tensor y = yCounter.eq(Y.flatten().reshape({-1, 1})).where(-1.0, 0).mul(lossMask.reshape({-1, 1})).reshape(ys);
  return logSoftmax().mul(y).sum().div(lossMask.sum());
}

} // namespace lazyjit
