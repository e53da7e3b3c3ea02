// ONNX ops that reduce or rank along axes: the Reduce* family, ArgMax/ArgMin, CumSum, Hardmax and
// LogSoftmax, TopK, and the small linear-algebra ops (Einsum, Trilu, Det). Reductions over no
// elements give numpy's identities; ties and NaNs resolve as in numpy.
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <map>

namespace lazyjit::onnx::ops {

namespace {

// ---- reductions ---------------------------------------------------------------------------------

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

/// The opset from which the op takes its axes as an input instead of an attribute.
int64_t axesInputOpset(Reduction r) { return r == Reduction::Sum ? 13 : 18; }

template <Reduction R> void checkReduce(const NodeContext &ctx) {
  intAttr(ctx.node, "keepdims", 1);
  intAttr(ctx.node, "noop_with_empty_axes", 0);
  if (ctx.opset < axesInputOpset(R))
    intsAttr(ctx.node, "axes");
  else
    LAZYJIT_USER_CHECK(!findAttr(ctx.node, "axes"), UnsupportedError,
                       "attribute 'axes' is not supported from opset {} (the axes are an input)",
                       axesInputOpset(R));
}

/// The product over the axes by pairwise halving (exact for integers, no logs).
Tensor prodOver(const Tensor &x, const std::vector<int64_t> &axes) {
  std::vector<int64_t> dims = x.intShape();
  std::vector<int64_t> perm, outDims;
  int64_t n = 1;
  for (int64_t i = 0; i < int64_t(dims.size()); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      perm.push_back(i);
      outDims.push_back(dims[size_t(i)]);
    }
  for (int64_t a : axes) {
    perm.push_back(a);
    n *= dims[size_t(a)];
  }
  std::vector<int64_t> flat = outDims;
  flat.push_back(n);
  Tensor y = x.permute(perm).reshape(toShape(flat));
  std::vector<std::optional<SIntPair>> keep(outDims.size(), std::nullopt);
  while (n > 1) {
    if (n % 2) {
      auto arg = keep;
      arg.push_back(SIntPair{SInt(0), SInt(1)});
      y = y.pad(arg, 1.0);
      ++n;
    }
    auto lo = keep, hi = keep;
    lo.push_back(SIntPair{SInt(0), SInt(n / 2)});
    hi.push_back(SIntPair{SInt(n / 2), SInt(n)});
    y = y.shrink(lo).mul(y.shrink(hi));
    n /= 2;
  }
  return y.reshape(toShape(outDims));
}

/// The identity of a reduction over no elements (numpy's, as in ONNX's empty-set tests).
double emptyValue(Reduction r, DType dt) {
  auto lowest = [&]() -> double {
    if (dt.isFloating()) return -INFINITY;
    if (dt.isUnsigned() || dt.isBool()) return 0;
    return -std::ldexp(1.0, dt.itemsize() * 8 - 1);
  };
  switch (r) {
  case Reduction::Sum:
  case Reduction::L1:
  case Reduction::L2:
  case Reduction::SumSquare:
    return 0;
  case Reduction::Prod:
    return 1;
  case Reduction::Mean:
    return NAN;
  case Reduction::Max:
    return lowest();
  case Reduction::Min:
    if (dt.isFloating()) return INFINITY;
    if (dt.isBool()) return 1;
    return std::ldexp(1.0, dt.itemsize() * 8 - (dt.isUnsigned() ? 0 : 1)) - 1;
  case Reduction::LogSum:
  case Reduction::LogSumExp:
    return -INFINITY;
  }
  return 0;
}

template <Reduction R> Out runReduce(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset < axesInputOpset(R))
    axes = intsAttr(n, "axes");
  else if (has(in, 1))
    axes = hostInts(in[1], "the axes input");
  if (axes && axes->empty()) axes.reset();
  if (!axes && intAttr(n, "noop_with_empty_axes", 0)) return {x};
  std::vector<int64_t> dims = x.intShape();
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> ax;
  if (axes)
    for (int64_t a : *axes) ax.push_back(normalizeAxis(a, rank, "axis"));
  else
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  std::sort(ax.begin(), ax.end());
  ax.erase(std::unique(ax.begin(), ax.end()), ax.end());
  bool keep = intAttr(n, "keepdims", 1) != 0;
  std::vector<int64_t> kept = dims, dropped;
  for (int64_t a : ax) kept[size_t(a)] = 1;
  for (int64_t i = 0; i < rank; ++i)
    if (!std::binary_search(ax.begin(), ax.end(), i)) dropped.push_back(dims[size_t(i)]);
  const std::vector<int64_t> &outDims = keep ? kept : dropped;
  if (product(dims, 0, dims.size()) == 0)
    return {Tensor::full(toShape(outDims), emptyValue(R, x.dtype()),
                         TensorOptions(x.dtype(), x.device()))};
  Tensor::Axes axv = ax;
  Tensor y;
  switch (R) {
  case Reduction::Sum:
    y = x.sum(axv, true);
    break;
  case Reduction::Mean:
    y = x.dtype().isFloating()
            ? x.mean(axv, true)
            : keepDType(x.sum(axv, true).div(
                            double(product(dims, 0, dims.size()) / product(kept, 0, kept.size()))),
                        x.dtype());
    break;
  case Reduction::Max:
    y = x.max(axv, true);
    break;
  case Reduction::Min:
    y = x.min(axv, true);
    break;
  case Reduction::Prod:
    y = prodOver(x, ax).reshape(toShape(kept));
    break;
  case Reduction::L1:
    y = x.abs().sum(axv, true);
    break;
  case Reduction::L2:
    y = x.mul(x).sum(axv, true).sqrt();
    break;
  case Reduction::LogSum:
    y = x.sum(axv, true).log();
    break;
  case Reduction::LogSumExp: {
    Tensor m = x.max(axv, true);
    m = asBool(m.abs().lt(INFINITY)).where(m, scalarOf(m, 0)); // (no shift by an infinite max)
    y = x.sub(m).exp().sum(axv, true).log().add(m);
    break;
  }
  case Reduction::SumSquare:
    y = x.mul(x).sum(axv, true);
    break;
  }
  return {y.reshape(toShape(outDims))};
}

// ---- arg-reductions, cumsum, hardmax, log-softmax -----------------------------------------------

/// The int64 index of the first maximum (or minimum) along `axis` (a NaN counts as the extreme,
/// as in numpy), with `keepdim`.
Tensor argExtreme(const Tensor &x, int64_t axis, bool keepdim, bool isMax) {
  std::vector<int64_t> dims = x.intShape();
  int64_t nAxis = dims[size_t(axis)];
  LAZYJIT_USER_CHECK(nAxis > 0, ShapeError, "cannot take the arg{} over the empty axis {} of {}",
                     isMax ? "max" : "min", axis, dimsText(dims));
  Tensor::Axes ax = std::vector<int64_t>{axis};
  Tensor m = isMax ? x.max(ax, true) : x.min(ax, true);
  Tensor hit = equal(x, m);
  if (x.dtype().isFloating()) hit = logicalOr(hit, isNan(x));
  std::vector<int64_t> rs(dims.size() - size_t(axis), 1);
  rs[0] = nAxis;
  // n - i for index i: the largest marks the first hit
  Tensor score = Tensor::arange(double(nAxis), 0, -1, TensorOptions(dtypes::int32, x.device()))
                     .reshape(toShape(rs));
  Tensor best = hit.where(score, scalarOf(score, 0)).max(ax, keepdim);
  return best.cast(dtypes::int64).sub(double(nAxis), true);
}

void checkArg(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", 0);
  intAttr(ctx.node, "keepdims", 1);
  intAttr(ctx.node, "select_last_index", 0);
}
template <bool IsMax> Out runArg(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(n, "axis", 0), x.ndim(), "axis");
  bool keep = intAttr(n, "keepdims", 1) != 0;
  if (!intAttr(n, "select_last_index", 0)) return {argExtreme(x, axis, keep, IsMax)};
  Tensor idx = argExtreme(x.flip({axis}), axis, keep, IsMax);
  return {idx.sub(double(x.intShape()[size_t(axis)] - 1), true)};
}

void checkCumSum(const NodeContext &ctx) {
  intAttr(ctx.node, "exclusive", 0);
  intAttr(ctx.node, "reverse", 0);
}
Out runCumSum(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(int64_t(hostScalar(in[1], "the axis input")), x.ndim(), "axis");
  int64_t len = x.intShape()[size_t(axis)];
  if (len == 0) return {x};
  bool reverse = intAttr(ctx.node, "reverse", 0) != 0;
  Tensor y = reverse ? x.flip({axis}) : x;
  if (intAttr(ctx.node, "exclusive", 0)) {
    // shifted by one: the sum of the elements before each one
    std::vector<std::optional<SIntPair>> pad(size_t(x.ndim()), std::nullopt);
    pad[size_t(axis)] = SIntPair{SInt(1), SInt(0)};
    std::vector<std::optional<SIntPair>> cut(size_t(x.ndim()), std::nullopt);
    cut[size_t(axis)] = SIntPair{SInt(0), SInt(len)};
    y = y.pad(pad).shrink(cut);
  }
  y = y.cumsum(axis);
  return {reverse ? y.flip({axis}) : y};
}

/// Softmax-like ops before opset 13 work on the 2-D view [prod(dims[:axis]), prod(dims[axis:])].
template <typename Fn> Tensor overAxis(const NodeContext &ctx, const Tensor &x, Fn fn) {
  if (ctx.opset >= 13) return fn(x, normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis"));
  std::vector<int64_t> dims = x.intShape();
  size_t at = size_t(normalizeAxis(intAttr(ctx.node, "axis", 1), int64_t(dims.size()), "axis"));
  Tensor flat = x.reshape(toShape({product(dims, 0, at), product(dims, at, dims.size())}));
  return fn(flat, 1).reshape(x.shape());
}
void checkAxisOpset13(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", ctx.opset < 13 ? 1 : -1);
}
Out runHardmax(const NodeContext &ctx, const Inputs &in) {
  return {overAxis(ctx, in[0], [](const Tensor &x, int64_t axis) {
    std::vector<int64_t> dims = x.intShape();
    std::vector<int64_t> rs(dims.size() - size_t(axis), 1);
    rs[0] = dims[size_t(axis)];
    Tensor iota = Tensor::arange(double(rs[0]), TensorOptions(dtypes::int64, x.device()))
                      .reshape(toShape(rs));
    Tensor hit = equal(iota, argExtreme(x, axis, true, true));
    return hit.where(scalarOf(x, 1), scalarOf(x, 0));
  })};
}
Out runLogSoftmax(const NodeContext &ctx, const Inputs &in) {
  return {overAxis(ctx, in[0], [](const Tensor &x, int64_t axis) { return x.logSoftmax(axis); })};
}

// ---- Einsum -------------------------------------------------------------------------------------

void checkEinsum(const NodeContext &ctx) {
  LAZYJIT_USER_CHECK(findAttr(ctx.node, "equation"), Error,
                     "the required attribute 'equation' is missing");
  std::string eq = stringAttr(ctx.node, "equation", "");
  for (char c : eq)
    LAZYJIT_USER_CHECK(std::isalpha(static_cast<unsigned char>(c)) || c == ',' || c == '.' ||
                           c == '-' || c == '>' || c == ' ',
                       Error, "equation '{}' has the character '{}'", eq, c);
}

/// One operand's subscripts with its ellipsis expanded into the letters 0..9 (right-aligned, so
/// that ellipsis dims broadcast as numpy's do).
std::string expandEllipsis(const std::string &term, int64_t rank, int64_t ellRank) {
  size_t at = term.find("...");
  if (at == std::string::npos) return term;
  std::string ell;
  for (int64_t i = ellRank - (rank - int64_t(term.size()) + 3); i < ellRank; ++i)
    ell += char('0' + i);
  return term.substr(0, at) + ell + term.substr(at + 3);
}

Out runEinsum(const NodeContext &ctx, const Inputs &in) {
  std::string eq;
  for (char c : stringAttr(ctx.node, "equation", ""))
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t pos = 0;;) {
    size_t c = lhs.find(',', pos);
    terms.push_back(lhs.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  LAZYJIT_USER_CHECK(terms.size() == in.size(), ShapeError,
                     "equation '{}' has {} operands, but the node has {} inputs", eq, terms.size(),
                     in.size());
  int64_t ellRank = 0;
  for (size_t k = 0; k < terms.size(); ++k)
    if (terms[k].find("...") != std::string::npos)
      ellRank = std::max(ellRank, in[k].ndim() - int64_t(terms[k].size() - 3));
  LAZYJIT_USER_CHECK(ellRank <= 10, UnsupportedError, "an ellipsis of {} dims", ellRank);
  std::map<char, int64_t> sizes, counts;
  std::vector<std::string> subs;
  std::vector<Tensor> ops;
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string s = expandEllipsis(terms[k], in[k].ndim(), ellRank);
    std::vector<int64_t> dims = in[k].intShape();
    LAZYJIT_USER_CHECK(s.size() == dims.size(), ShapeError, "operand {} ('{}') has rank {}, not {}",
                       k, terms[k], dims.size(), s.size());
    for (char c : s) ++counts[c];
    Tensor t = in[k];
    // a letter repeated within one operand takes its diagonal
    for (size_t i = 0; i < s.size(); ++i) {
      size_t j = s.find(s[i], i + 1);
      while (j != std::string::npos) {
        LAZYJIT_USER_CHECK(dims[i] == dims[j], ShapeError, "'{}' has sizes {} and {} in operand {}",
                           s[i], dims[i], dims[j], k);
        std::vector<int64_t> ri(dims.size(), 1), rj(dims.size(), 1);
        ri[i] = dims[i];
        rj[j] = dims[j];
        TensorOptions o(dtypes::int32, t.device());
        Tensor mask = equal(Tensor::arange(double(dims[i]), o).reshape(toShape(ri)),
                            Tensor::arange(double(dims[j]), o).reshape(toShape(rj)));
        t = mask.where(t, scalarOf(t, 0)).sum(std::vector<int64_t>{int64_t(j)});
        s.erase(j, 1);
        dims.erase(dims.begin() + int64_t(j));
        j = s.find(s[i], i + 1);
      }
    }
    for (size_t i = 0; i < s.size(); ++i) {
      auto [it, fresh] = sizes.emplace(s[i], dims[i]);
      if (!fresh && it->second == 1) it->second = dims[i];
      LAZYJIT_USER_CHECK(fresh || dims[i] == 1 || it->second == dims[i], ShapeError,
                         "'{}' has sizes {} and {}", s[i], it->second, dims[i]);
    }
    subs.push_back(s);
    ops.push_back(t);
  }
  std::string out;
  if (arrow != std::string::npos) {
    std::string term = eq.substr(arrow + 2);
    out = expandEllipsis(term, ellRank + int64_t(term.size()) - 3, ellRank);
  } else {
    // implicit output: the ellipsis dims, then the letters used once, in alphabetical order
    for (auto [c, cnt] : counts)
      if (std::isdigit(static_cast<unsigned char>(c)) || cnt == 1) out += c;
  }
  // every letter an axis of one product, in the order of `all`
  std::string all;
  for (auto [c, size] : sizes) all += c;
  Tensor prod;
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<int64_t> perm, rs;
    std::vector<int64_t> dims = ops[k].intShape();
    for (char c : all) {
      size_t p = subs[k].find(c);
      if (p != std::string::npos) perm.push_back(int64_t(p));
    }
    for (char c : all) {
      size_t p = subs[k].find(c);
      rs.push_back(p == std::string::npos ? 1 : dims[p]);
    }
    Tensor t = ops[k].permute(perm).reshape(toShape(rs));
    prod = k == 0 ? t : prod.mul(t);
  }
  std::vector<int64_t> sumAxes, outPerm;
  std::string keptLetters;
  for (size_t i = 0; i < all.size(); ++i) {
    if (out.find(all[i]) == std::string::npos)
      sumAxes.push_back(int64_t(i));
    else
      keptLetters += all[i];
  }
  for (char c : out) {
    LAZYJIT_USER_CHECK(keptLetters.find(c) != std::string::npos, ShapeError,
                       "output subscript '{}' is in no operand", c);
    outPerm.push_back(int64_t(keptLetters.find(c)));
  }
  std::vector<int64_t> fullDims;
  for (char c : all) fullDims.push_back(sizes[c]);
  prod = broadcastTo(prod, fullDims);
  if (!sumAxes.empty()) prod = prod.sum(sumAxes);
  return {prod.permute(outPerm)};
}

// ---- TopK, Trilu, Det ---------------------------------------------------------------------------

void checkTopK(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  intAttr(ctx.node, "largest", 1);
  intAttr(ctx.node, "sorted", 1);
  LAZYJIT_USER_CHECK(ctx.opset >= 10, UnsupportedError, "TopK before opset 10 (k as an attribute)");
}
/// TopK of a long axis: the ranks' n^2 comparisons would outweigh a sort, so the indices are found
/// on the host (a NaN sorts as the largest, as in numpy) and the values gathered on the device.
Out topKOnHost(const Tensor &v, int64_t k, bool largest) {
  std::vector<int64_t> dims = v.intShape();
  int64_t n = dims.back(), rows = product(dims, 0, dims.size() - 1);
  std::vector<double> vals = v.cast(dtypes::float64).toVector<double>();
  std::vector<int64_t> idx(static_cast<size_t>(rows * k)), order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = vals.data() + r * n;
    auto key = [&](int64_t i) {
      double x = row[i];
      if (std::isnan(x)) x = INFINITY;
      return largest ? -x : x;
    };
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    auto ahead = [&](int64_t a, int64_t b) {
      bool nanA = std::isnan(row[a]), nanB = std::isnan(row[b]);
      if (nanA != nanB) return largest ? nanA : nanB;
      return key(a) < key(b) || (key(a) == key(b) && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), ahead);
    std::copy(order.begin(), order.begin() + k, idx.begin() + r * k);
  }
  dims.back() = k;
  Tensor idxT = Tensor::fromVector(idx, toShape(dims), v.device());
  return {v.gather(idxT, -1), idxT};
}

/// TopK by ranks: element i's rank is the count of elements ahead of it (larger, or equal and
/// earlier), and output slot p takes the element of rank p; the result is always sorted.
Out runTopK(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  int64_t k = int64_t(hostScalar(in[1], "k"));
  std::vector<int64_t> dims = x.intShape();
  int64_t nAxis = dims[size_t(axis)];
  LAZYJIT_USER_CHECK(k >= 0 && k <= nAxis, ShapeError, "k = {} is out of range for axis {} of {}",
                     k, axis, dimsText(dims));
  bool largest = intAttr(ctx.node, "largest", 1) != 0;
  int64_t last = x.ndim() - 1;
  Tensor v = x.transpose(axis, last); // (..., n)
  if (nAxis > 4096 && k > 0) {
    Out r = topKOnHost(v, k, largest);
    return {r[0].transpose(axis, last), r[1].transpose(axis, last)};
  }
  Tensor vi = v.unsqueeze(-1), vj = v.unsqueeze(-2); // element i against element j
  Tensor ahead = largest ? less(vi, vj) : less(vj, vi);
  TensorOptions i32(dtypes::int32, x.device());
  Tensor ii = Tensor::arange(double(nAxis), i32).reshape(toShape({nAxis, 1}));
  Tensor jj = Tensor::arange(double(nAxis), i32).reshape(toShape({1, nAxis}));
  Tensor tieFirst = logicalAnd(equal(vi, vj), asBool(jj.lt(ii)));
  Tensor rank = logicalOr(ahead, tieFirst).cast(dtypes::int32).sum(std::vector<int64_t>{-1});
  Tensor slot = Tensor::arange(double(k), i32).reshape(toShape({1, k}));
  Tensor onehot = equal(rank.unsqueeze(-1), slot); // (..., n, k)
  Tensor values = onehot.where(v.unsqueeze(-1), scalarOf(v, 0)).sum(std::vector<int64_t>{-2});
  Tensor idx = onehot.where(ii.cast(dtypes::int64), scalarOf(ii, 0, dtypes::int64))
                   .sum(std::vector<int64_t>{-2});
  return {values.transpose(axis, last), idx.transpose(axis, last)};
}

void checkTrilu(const NodeContext &ctx) { intAttr(ctx.node, "upper", 1); }
Out runTrilu(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() >= 2, ShapeError, "Trilu needs a rank >= 2 input, not {}", x.ndim());
  int64_t k = has(in, 1) ? int64_t(hostScalar(in[1], "k")) : 0;
  std::vector<int64_t> dims = x.intShape();
  int64_t r = dims[dims.size() - 2], c = dims.back();
  TensorOptions i64(dtypes::int64, x.device());
  Tensor row = Tensor::arange(double(r), i64).reshape(toShape({r, 1}));
  Tensor col = Tensor::arange(double(c), i64).reshape(toShape({1, c})).sub(double(k));
  // upper keeps j - i >= k, lower j - i <= k
  Tensor keep = intAttr(ctx.node, "upper", 1) ? lessOrEqual(row, col) : greaterOrEqual(row, col);
  return {keep.where(x, scalarOf(x, 0))};
}

/// Det by Gaussian elimination with partial pivoting, batched over the leading dims.
Out runDet(const NodeContext &, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2 && dims.back() == dims[dims.size() - 2], ShapeError,
                     "Det needs square matrices, not {}", dimsText(dims));
  LAZYJIT_USER_CHECK(x.dtype().isFloating(), DTypeError, "Det needs floats, not {}",
                     x.dtype().name());
  int64_t n = dims.back();
  std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  Tensor a = x.dtype().isHalfWidth() ? x.cast(dtypes::float32) : x;
  Tensor det = Tensor::ones(toShape(batch), TensorOptions(a.dtype(), a.device()));
  TensorOptions i64(dtypes::int64, x.device());
  Tensor rows = Tensor::arange(double(n), i64);   // (n)
  auto column = [&](const Tensor &m, int64_t j) { // (..., n)
    std::vector<std::optional<SIntPair>> cut(dims.size(), std::nullopt);
    cut.back() = SIntPair{SInt(j), SInt(j + 1)};
    return m.shrink(cut).squeeze(-1);
  };
  auto row = [&](const Tensor &m, int64_t j) { // (..., n)
    std::vector<std::optional<SIntPair>> cut(dims.size(), std::nullopt);
    cut[dims.size() - 2] = SIntPair{SInt(j), SInt(j + 1)};
    return m.shrink(cut).squeeze(-2);
  };
  for (int64_t j = 0; j < n; ++j) {
    Tensor cj = column(a, j);
    Tensor score = asBool(rows.lt(double(j))).where(scalarOf(cj, -1), cj.abs());
    Tensor p = argExtreme(score, int64_t(batch.size()), true, true); // (..., 1)
    Tensor ep = equal(rows, p).cast(a.dtype());                      // (..., n)
    Tensor ej = equal(rows, scalarOf(rows, double(j))).cast(a.dtype());
    Tensor rowP = ep.unsqueeze(-1).mul(a).sum(std::vector<int64_t>{-2});
    a = a.add(ej.sub(ep).unsqueeze(-1).mul(rowP.sub(row(a, j)).unsqueeze(-2)));
    Tensor rowJ = row(a, j);
    std::vector<std::optional<SIntPair>> at(dims.size() - 1, std::nullopt);
    at.back() = SIntPair{SInt(j), SInt(j + 1)};
    Tensor pivot = rowJ.shrink(at).reshape(toShape(batch));
    Tensor swapped = logicalNot(equal(p.reshape(toShape(batch)), scalarOf(p, double(j))));
    det = det.mul(pivot).mul(swapped.where(scalarOf(det, -1), scalarOf(det, 1)));
    if (j + 1 == n) break;
    Tensor zero = scalarOf(pivot, 0);
    Tensor pv = pivot.reshape(toShape([&] {
      std::vector<int64_t> b = batch;
      b.push_back(1);
      return b;
    }()));
    Tensor f = asBool(rows.gt(double(j))).where(column(a, j).div(pv), zero);
    f = equal(pv, zero).where(zero, f);
    a = a.sub(f.unsqueeze(-1).mul(row(a, j).unsqueeze(-2)));
    if (n > 8) a.realize();
  }
  return {det.cast(x.dtype())};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    // reductions
    OpDef{"ReduceSum", 1, 2, 1, checkReduce<Reduction::Sum>, runReduce<Reduction::Sum>},
    OpDef{"ReduceMean", 1, 2, 1, checkReduce<Reduction::Mean>, runReduce<Reduction::Mean>},
    OpDef{"ReduceMax", 1, 2, 1, checkReduce<Reduction::Max>, runReduce<Reduction::Max>},
    OpDef{"ReduceMin", 1, 2, 1, checkReduce<Reduction::Min>, runReduce<Reduction::Min>},
    OpDef{"ReduceProd", 1, 2, 1, checkReduce<Reduction::Prod>, runReduce<Reduction::Prod>},
    OpDef{"ReduceL1", 1, 2, 1, checkReduce<Reduction::L1>, runReduce<Reduction::L1>},
    OpDef{"ReduceL2", 1, 2, 1, checkReduce<Reduction::L2>, runReduce<Reduction::L2>},
    OpDef{"ReduceLogSum", 1, 2, 1, checkReduce<Reduction::LogSum>, runReduce<Reduction::LogSum>},
    OpDef{"ReduceLogSumExp", 1, 2, 1, checkReduce<Reduction::LogSumExp>,
          runReduce<Reduction::LogSumExp>},
    OpDef{"ReduceSumSquare", 1, 2, 1, checkReduce<Reduction::SumSquare>,
          runReduce<Reduction::SumSquare>},
    OpDef{"ArgMax", 1, 1, 1, checkArg, runArg<true>},
    OpDef{"ArgMin", 1, 1, 1, checkArg, runArg<false>},
    OpDef{"CumSum", 2, 2, 1, checkCumSum, runCumSum},
    OpDef{"Hardmax", 1, 1, 1, checkAxisOpset13, runHardmax},
    OpDef{"LogSoftmax", 1, 1, 1, checkAxisOpset13, runLogSoftmax},
    // linear algebra and friends
    OpDef{"Einsum", 1, SIZE_MAX, 1, checkEinsum, runEinsum},
    OpDef{"TopK", 2, 2, 2, checkTopK, runTopK},
    OpDef{"Trilu", 1, 2, 1, checkTrilu, runTrilu},
    OpDef{"Det", 1, 1, 1, noCheck, runDet},
};

} // namespace

std::span<const OpDef> reduceOps() { return opTable; }

} // namespace lazyjit::onnx::ops
