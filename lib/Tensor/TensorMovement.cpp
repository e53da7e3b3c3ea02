// Movement ops of the Tensor API: argument checks with clear errors, then the reference's
// movement mlops and hlops (reshape with -1, expand, permute, flip, shrink, pad, cat, stack,
// repeat, squeeze, chunk, ...). Indexing is in TensorIndexing.cpp.
#include "TensorInternals.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

namespace lazyjit {

using TI = TensorInternals;

namespace {
// The least value a size may take over every value of its variables (its own value when it is an
// int). A symbolic movement op must be valid for every value a variable may take, not only for the
// bound one: a kernel is compiled once per AST and runs for every binding.
SInt leastOf(const SInt &x) { return x.isInt() ? x : x.node()->min; }
bool alwaysNonNegative(const SInt &x) { return truthy(ge(leastOf(x), 0)); }
} // namespace

Tensor Tensor::reshape(const Shape &newShape) const & {
  int minusOnes = 0;
  for (const auto &s : newShape) {
    if (pyEq(s, -1)) {
      ++minusOnes;
      continue;
    }
    LAZYJIT_USER_CHECK(truthy(lazyjit::ge(s, 0)), ShapeError, "reshape: cannot reshape {} to {}: negative dimension",
                       describe(*this), shapeText(newShape));
  }
  LAZYJIT_USER_CHECK(minusOnes <= 1, ShapeError, "reshape: cannot reshape {} to {}: more than one -1",
                     describe(*this), shapeText(newShape));
  Shape resolved;
  for (const auto &s : newShape) {
    if (pyEq(s, -1)) {
      Shape known;
      for (const auto &t : newShape)
        if (!pyEq(t, -1)) known.push_back(t);
      SInt k = prod(known);
      LAZYJIT_USER_CHECK(pyNe(k, 0), ShapeError, "reshape: cannot infer -1 in {} for {}",
                         shapeText(newShape), describe(*this));
      // -prod(self.shape) // prod(new_shape) in the reference, where prod(new_shape) includes -1
      resolved.push_back(floordiv(-prod(shape()), -k));
    } else {
      resolved.push_back(s);
    }
  }
  if (allInt(shape()) && allInt(resolved)) {
    int64_t a = checkedNumel("reshape", shape()), b = checkedNumel("reshape", resolved);
    LAZYJIT_USER_CHECK(a == b, ShapeError, "reshape: cannot reshape {} ({} elements) to {} ({} elements)",
                       describe(*this), a, shapeText(resolved), b);
  } else {
    // symbolic: the element counts must be the same expression, so they agree for every value
    for (const auto &d : resolved)
      LAZYJIT_USER_CHECK(alwaysNonNegative(d), ShapeError, "reshape: dimension {} of {} may be negative",
                         fmtSInt(d), shapeText(resolved));
    // symbolic: the element counts must be the same expression, so they agree for every value;
    // a concrete tensor viewed with a bound variable (the reference's symbolic tests) must agree
    // for the bound value, the only one its kernels run with
    SInt a = prod(shape()), b = prod(resolved);
    auto boundCount = [](const SInt &x) -> std::optional<int64_t> {
      if (x.isInt()) return x.asInt();
      std::map<std::string, int64_t> vals;
      for (const auto &v : x.node()->vars()) {
        if (!v->boundValue()) return std::nullopt;
        vals[v->expr ? *v->expr : "None"] = *v->boundValue();
      }
      return symInfer(x, vals);
    };
    auto ca = boundCount(a), cb = boundCount(b);
    LAZYJIT_USER_CHECK(pyEq(a, b) || (ca && cb && *ca == *cb), ShapeError,
                       "reshape: cannot reshape {} ({} elements) to {} ({} elements): the counts may differ",
                       describe(*this), fmtSInt(a), shapeText(resolved), fmtSInt(b));
  }
  return mlReshape(*this, resolved);
}

Tensor Tensor::expand(const Shape &arg) const & {
  LAZYJIT_USER_CHECK(arg.size() == shape().size(), ShapeError,
                     "expand: cannot expand {} to {}: the number of dims differs", describe(*this),
                     shapeText(arg));
  Shape ns;
  for (size_t i = 0; i < arg.size(); ++i) {
    SInt x = pyEq(arg[i], -1) ? shape()[i] : arg[i];
    LAZYJIT_USER_CHECK(pyEq(x, shape()[i]) || (pyEq(shape()[i], 1) && alwaysNonNegative(x)), ShapeError,
                       "expand: cannot expand {} to {}: dim {} has size {}, not 1", describe(*this),
                       shapeText(arg), i, shape()[i].render());
    ns.push_back(x);
  }
  checkedNumel("expand", ns);
  return mlExpand(*this, ns);
}

Tensor Tensor::permute(const std::vector<int64_t> &order) const & {
  std::vector<int64_t> o;
  std::set<int64_t> seen;
  bool ok = static_cast<int64_t>(order.size()) == ndim();
  for (int64_t a : order) {
    int64_t n = a < 0 ? a + ndim() : a;
    ok = ok && n >= 0 && n < ndim() && seen.insert(n).second;
    o.push_back(n);
  }
  LAZYJIT_USER_CHECK(ok, ShapeError, "permute: {} is not a permutation of the {} dims of {}",
                     fmtInts(order), ndim(), describe(*this));
  return mlPermute(*this, o);
}

Tensor Tensor::flip(const std::vector<int64_t> &axis) const & {
  std::vector<int64_t> a;
  for (int64_t x : axis) a.push_back(normAxis("flip", *this, x));
  return mlFlip(*this, a);
}

Tensor Tensor::shrink(const std::vector<std::optional<SIntPair>> &arg) const & {
  LAZYJIT_USER_CHECK(arg.size() == shape().size(), ShapeError,
                     "shrink: {} bounds for {} ({} dims)", arg.size(), describe(*this), ndim());
  bool any = false;
  PadArg full;
  for (size_t i = 0; i < arg.size(); ++i) {
    if (!arg[i]) {
      full.emplace_back(0, shape()[i]);
      continue;
    }
    const auto &[b, e] = *arg[i];
    const SInt &dim = shape()[i];
    if (b.isInt() && e.isInt() && dim.isInt()) {
      LAZYJIT_USER_CHECK(0 <= b.asInt() && b.asInt() <= e.asInt() && e.asInt() <= dim.asInt(), ShapeError,
                         "shrink: bounds ({}, {}) are outside dim {} of {}", b.asInt(), e.asInt(), i,
                         describe(*this));
    } else {
      LAZYJIT_USER_CHECK(alwaysNonNegative(b), ShapeError, "shrink: start {} of dim {} may be negative in {}",
                         fmtSInt(b), i, describe(*this));
      LAZYJIT_USER_CHECK(alwaysNonNegative(e - b), ShapeError, "shrink: start {} may exceed end {} in dim {} of {}",
                         fmtSInt(b), fmtSInt(e), i, describe(*this));
      LAZYJIT_USER_CHECK(alwaysNonNegative(dim - e), ShapeError, "shrink: end {} may exceed dimension {} of {}",
                         fmtSInt(e), fmtSInt(dim), describe(*this));
    }
    any = any || !(pyEq(b, 0) && pyEq(e, dim));
    full.push_back(*arg[i]);
  }
  if (!any) return *this;
  return mlShrink(*this, full);
}

Tensor Tensor::pad(const std::vector<std::optional<SIntPair>> &arg, double value) const & {
  LAZYJIT_USER_CHECK(arg.size() == shape().size(), ShapeError, "pad: {} pairs for {} ({} dims)",
                     arg.size(), describe(*this), ndim());
  bool any = false;
  PadArg narg;
  for (const auto &p : arg) {
    SIntPair q = p ? *p : SIntPair(0, 0);
    LAZYJIT_USER_CHECK(alwaysNonNegative(q.first) && alwaysNonNegative(q.second), ShapeError,
                       "pad: negative padding ({}, {}) for {}", fmtSInt(q.first), fmtSInt(q.second),
                       describe(*this));
    any = any || !(pyEq(q.first, 0) && pyEq(q.second, 0));
    narg.push_back(q);
  }
  if (!any) return *this;
  Shape padded;
  for (size_t i = 0; i < narg.size(); ++i) {
    try {
      padded.push_back(shape()[i] + narg[i].first + narg[i].second);
    } catch (const ShapeError &) {
      throw ShapeError(fmt::format("pad: padding ({}, {}) of dim {} of {} overflows the size", narg[i].first.render(),
                                   narg[i].second.render(), i, describe(*this)));
    }
  }
  checkedNumel("pad", padded);
  Tensor ret = mlPad(*this, narg);
  if (value == 0) return ret;
  return ret.add(mlPad(onesLike(), narg).where(0, value));
}

Tensor Tensor::slice(const std::vector<std::optional<SIntPair>> &arg, double value) const & {
  std::vector<SIntPair> a;
  for (size_t i = 0; i < shape().size(); ++i)
    a.push_back(i < arg.size() && arg[i] ? *arg[i] : SIntPair(0, shape()[i]));
  std::vector<std::optional<SIntPair>> padding, shrinkArg;
  for (size_t i = 0; i < a.size(); ++i)
    padding.emplace_back(SIntPair(pyMax(0, -a[i].first), pyMax(0, a[i].second - shape()[i])));
  for (size_t i = 0; i < a.size(); ++i)
    shrinkArg.emplace_back(SIntPair(a[i].first + padding[i]->first, a[i].second + padding[i]->first));
  return pad(padding, value).shrink(shrinkArg);
}

Tensor Tensor::pad2d(const std::vector<int64_t> &padding, double value) const & {
  LAZYJIT_USER_CHECK(padding.size() % 2 == 0 && static_cast<int64_t>(padding.size() / 2) <= ndim(),
                     ShapeError, "pad2d: padding {} does not fit {}", fmtInts(padding), describe(*this));
  size_t k = padding.size() / 2;
  std::vector<std::optional<SIntPair>> slc;
  for (size_t i = 0; i + k < shape().size(); ++i) slc.emplace_back(SIntPair(0, shape()[i]));
  // (-p0, s+p1) for the last dims, listed from the last dim backwards
  std::vector<SIntPair> tail;
  for (size_t j = 0; j < k; ++j) {
    const SInt &s = shape()[shape().size() - 1 - j];
    tail.emplace_back(-padding[2 * j], s + padding[2 * j + 1]);
  }
  std::reverse(tail.begin(), tail.end());
  for (auto &t : tail) slc.emplace_back(t);
  return slice(slc, value);
}

Tensor Tensor::T() const & { return transpose(); }

Tensor Tensor::transpose(int64_t ax1, int64_t ax2) const & {
  int64_t a = normAxis("transpose", *this, ax1), b = normAxis("transpose", *this, ax2);
  std::vector<int64_t> order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[a], order[b]);
  return permute(order);
}

Tensor Tensor::flatten(int64_t startDim) const & {
  int64_t s = startDim < 0 ? startDim + ndim() : startDim;
  LAZYJIT_USER_CHECK(s >= 0 && s <= ndim(), ShapeError, "flatten: start dim {} for {}", startDim,
                     describe(*this));
  Shape ns(shape().begin(), shape().begin() + s);
  ns.push_back(-1);
  return reshape(ns);
}

Tensor Tensor::squeeze(std::optional<int64_t> dim) const & {
  if (!dim) {
    bool hasOne = std::any_of(shape().begin(), shape().end(), [](const SInt &s) { return pyEq(s, 1); });
    if (!hasOne) return *this;
    Shape ns;
    for (const auto &s : shape())
      if (!pyEq(s, 1)) ns.push_back(s);
    return reshape(ns);
  }
  if (*dim <= 0 && ndim() == 0) return *this; // PyTorch behaviour
  int64_t d = normAxis("squeeze", *this, *dim);
  if (!pyEq(shape()[d], 1)) return *this;
  Shape ns;
  for (int64_t i = 0; i < ndim(); ++i)
    if (i != d) ns.push_back(shape()[i]);
  return reshape(ns);
}

Tensor Tensor::unsqueeze(int64_t dim) const & {
  int64_t d = dim < 0 ? ndim() + dim + 1 : dim;
  LAZYJIT_USER_CHECK(d >= 0 && d <= ndim(), ShapeError, "unsqueeze: dim {} is out of range for {}",
                     dim, describe(*this));
  Shape ns(shape().begin(), shape().begin() + d);
  ns.push_back(1);
  ns.insert(ns.end(), shape().begin() + d, shape().end());
  return reshape(ns);
}

Tensor Tensor::contiguous() const & { return mlContiguous(*this); }
Tensor Tensor::contiguousBackward() const & { return mlContiguousBackward(*this); }

Tensor Tensor::cat(std::vector<Tensor> othersIn, int64_t dim) const & {
  std::vector<Tensor> others = std::move(othersIn);
  LAZYJIT_USER_CHECK(ndim() > 0, ShapeError, "cat: a zero-dimensional tensor cannot be concatenated");
  int64_t d = normAxis("cat", *this, dim);
  for (const auto &y : others) {
    bool ok = y.ndim() == ndim();
    for (int64_t i = 0; ok && i < ndim(); ++i)
      if (i != d) ok = pyEq(y.shape()[i], shape()[i]);
    LAZYJIT_USER_CHECK(ok, ShapeError, "cat: cannot concatenate {} and {} along dim {}", describe(*this),
                       describe(y), d);
    LAZYJIT_USER_CHECK(y.dtype() == dtype(), DTypeError, "cat: dtype mismatch {} and {}",
                       describe(*this), describe(y));
  }
  std::vector<Tensor> catargs{*this};
  catargs.insert(catargs.end(), others.begin(), others.end());
  std::vector<SInt> cumsum{0};
  for (const auto &t : catargs) cumsum.push_back(cumsum.back() + t.shape()[d]);
  std::vector<Tensor> padded;
  for (size_t k = 0; k < catargs.size(); ++k) {
    std::vector<std::optional<SIntPair>> slc(ndim(), SIntPair(0, 0));
    slc[d] = SIntPair(cumsum[k], cumsum.back() - cumsum[k] - catargs[k].shape()[d]);
    padded.push_back(catargs[k].pad(slc));
  }
  // reduce(Tensor.__add__, padded)
  Tensor acc = padded[0];
  for (size_t k = 1; k < padded.size(); ++k) acc = acc.add(padded[k]);
  return acc;
}

Tensor Tensor::stack(std::vector<Tensor> tensorsIn, int64_t dim) {
  std::vector<Tensor> tensors = std::move(tensorsIn);
  LAZYJIT_USER_CHECK(!tensors.empty(), ShapeError, "stack: no tensors");
  Tensor first = tensors[0].unsqueeze(dim);
  std::vector<Tensor> rest;
  for (size_t i = 1; i < tensors.size(); ++i) rest.push_back(tensors[i].unsqueeze(dim));
  return first.cat(rest, dim);
}

Tensor Tensor::repeat(const std::vector<int64_t> &repeats) const & {
  LAZYJIT_USER_CHECK(static_cast<int64_t>(repeats.size()) >= ndim(), ShapeError,
                     "repeat: {} repeats for {}", fmtInts(repeats), describe(*this));
  Shape base(repeats.size() - ndim(), SInt(1));
  base.insert(base.end(), shape().begin(), shape().end());
  Shape newShape, expandShape, finalShape;
  for (size_t i = 0; i < base.size(); ++i) {
    LAZYJIT_USER_CHECK(repeats[i] >= 0, ShapeError, "repeat: negative repeat {}", repeats[i]);
    newShape.push_back(1);
    newShape.push_back(base[i]);
    expandShape.push_back(repeats[i]);
    expandShape.push_back(base[i]);
    finalShape.push_back(SInt(repeats[i]) * base[i]);
  }
  checkedNumel("repeat", finalShape);
  return reshape(newShape).expand(expandShape).reshape(finalShape);
}

std::vector<Tensor> Tensor::chunk(int64_t num, int64_t dim) const {
  LAZYJIT_USER_CHECK(num > 0, ShapeError, "chunk: {} chunks", num);
  int64_t d = normAxis("chunk", *this, dim);
  int64_t n = shape()[d].asInt();
  int64_t step = (n + num - 1) / num;
  std::vector<Tensor> out;
  for (int64_t k = 0; k < n; k += step) {
    std::vector<Index> idx(d, Index::all());
    idx.push_back(Index::range(k, k + step));
    out.push_back(getitem(idx));
  }
  return out;
}

} // namespace lazyjit
