// Indexing of the Tensor API (reference tensor.py __getitem__ and gather): integers, slices with
// steps, None and Ellipsis through movement ops, and tensor indices through one-hot masks
// reduced with sum.
#include "TensorInternals.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lazyjit {

using TI = TensorInternals;

Tensor Tensor::getitem(const std::vector<Index> &input) const & {
  // 1. indices normalization and validation
  std::vector<Index> indices = input;
  // a list of ints is an int32 tensor on this tensor's device (the reference's Tensor(list, device=))
  for (auto &ix : indices)
    if (ix.kind == Index::Kind::Tensor && !ix.tensor) {
      std::vector<double> v(ix.list.begin(), ix.list.end());
      ix.tensor = TI::impl(Tensor::fromValues(v, {static_cast<int64_t>(v.size())}, {dtypes::int32, device(), false}));
    }
  int ellipses = 0;
  size_t numSlices = 0;
  for (const auto &i : indices) {
    if (i.kind == Index::Kind::Ellipsis) ++ellipses;
    else if (i.kind != Index::Kind::NewAxis) ++numSlices;
    if (i.kind == Index::Kind::Tensor) {
      Tensor t = TI::fromImpl(i.tensor);
      LAZYJIT_USER_CHECK(t.dtype().isInt() || t.dtype().isFloating(), DTypeError,
                         "getitem: index tensor must be numeric, got {}", describe(t));
      LAZYJIT_USER_CHECK(t.device() == device(), DeviceError,
                         "getitem: the index {} is on {} and the tensor {} on {}", describe(t),
                         t.device(), describe(*this), device());
    }
  }
  LAZYJIT_USER_CHECK(ellipses <= 1, ShapeError, "getitem: an index can only have a single ellipsis");
  LAZYJIT_USER_CHECK(static_cast<int64_t>(numSlices) <= ndim(), ShapeError,
                     "getitem: too many indices for {} ({} dims)", describe(*this), ndim());
  // fill the ellipsis (or the end) with full slices
  auto fill = std::find_if(indices.begin(), indices.end(),
                           [](const Index &i) { return i.kind == Index::Kind::Ellipsis; });
  size_t fillAt = fill - indices.begin();
  if (fill != indices.end()) indices.erase(fill);
  indices.insert(indices.begin() + fillAt, ndim() - numSlices, Index::all());

  std::vector<int64_t> newAxes, intDims, tensorDims; // type_dim[None], [int], [Tensor]
  std::vector<Index> filtered;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k].kind == Index::Kind::NewAxis) newAxes.push_back(static_cast<int64_t>(k));
    else filtered.push_back(indices[k]);
  }
  std::vector<int64_t> start, stop, strides;
  for (size_t d = 0; d < filtered.size(); ++d) {
    const Index &ix = filtered[d];
    LAZYJIT_USER_CHECK(shape()[d].isInt(), UnsupportedError, "getitem: dim {} of {} is symbolic", d,
                       describe(*this));
    int64_t sh = shape()[d].asInt();
    if (ix.kind == Index::Kind::Int) {
      LAZYJIT_USER_CHECK(ix.i < sh && ix.i >= -sh, ShapeError,
                         "getitem: index {} is out of bounds for dimension {} with size {}", ix.i, d, sh);
      intDims.push_back(static_cast<int64_t>(d));
      int64_t n = ix.i < 0 ? ix.i + sh : ix.i;
      start.push_back(n);
      stop.push_back(n + 1);
      strides.push_back(1);
    } else if (ix.kind == Index::Kind::Tensor) {
      tensorDims.push_back(static_cast<int64_t>(d));
      start.push_back(0);
      stop.push_back(sh);
      strides.push_back(1);
    } else {
      LAZYJIT_USER_CHECK(ix.step != 0, ShapeError, "getitem: slice step cannot be 0");
      auto [s, e, st] = pySliceIndices(ix, sh);
      start.push_back(s);
      stop.push_back(e);
      strides.push_back(st);
    }
  }
  // 2. basic indexing (no copy): shrink, then flip where strides are negative
  std::vector<std::optional<SIntPair>> newSlice;
  std::vector<int64_t> flipAxes;
  for (size_t d = 0; d < filtered.size(); ++d) {
    int64_t s = start[d], e = stop[d], st = strides[d];
    if (st > 0) newSlice.emplace_back(e < s ? SIntPair(0, 0) : SIntPair(s, e));
    else newSlice.emplace_back(e > s ? SIntPair(0, 0) : SIntPair(e + 1, s + 1));
    if (st < 0) flipAxes.push_back(static_cast<int64_t>(d));
  }
  Tensor sliced = shrink(newSlice).flip(flipAxes);
  Shape newShape = sliced.shape();
  // strides by pad -> reshape -> shrink
  if (std::any_of(strides.begin(), strides.end(), [](int64_t s) { return s != 1 && s != -1; })) {
    std::vector<std::optional<SIntPair>> pads;
    for (size_t d = 0; d < strides.size(); ++d) {
      int64_t s = std::abs(strides[d]), dim = sliced.shape()[d].asInt();
      pads.emplace_back(SIntPair(0, dim % s != 0 ? s - dim % s : 0));
    }
    Tensor padded = sliced.pad(pads);
    Shape rs;
    for (size_t d = 0; d < strides.size(); ++d) {
      int64_t s = std::abs(strides[d]);
      rs.push_back(padded.shape()[d].asInt() / s);
      rs.push_back(s);
    }
    Tensor reshaped = padded.reshape(rs);
    newShape.clear();
    for (size_t d = 0; d < rs.size(); d += 2) newShape.push_back(rs[d]);
    std::vector<std::optional<SIntPair>> shr;
    for (const auto &sh : newShape) {
      shr.emplace_back(SIntPair(0, sh));
      shr.emplace_back(SIntPair(0, 1));
    }
    sliced = reshaped.shrink(shr);
  }
  // inject dim=1 for None and collapse dim for int
  for (int64_t d : newAxes) newShape.insert(newShape.begin() + d, 1);
  std::vector<int64_t> dimsCollapsed;
  for (auto it = intDims.rbegin(); it != intDims.rend(); ++it) {
    int64_t dim = *it;
    for (int64_t d : newAxes)
      if (*it >= d) ++dim;
    dimsCollapsed.push_back(dim);
    newShape.erase(newShape.begin() + dim);
  }
  Tensor ret = sliced.reshape(newShape);
  if (tensorDims.empty()) return ret;

  // 3. advanced indexing (copy): for each index tensor, (arange == idx) * ret summed over its dim
  std::vector<Tensor> idx;
  std::vector<int64_t> tdim;
  for (int64_t tensorDim : tensorDims) {
    int64_t collapsed = 0, injected = 0;
    for (int64_t d : dimsCollapsed) collapsed += tensorDim >= d;
    for (int64_t d : newAxes) injected += tensorDim >= d;
    int64_t td = tensorDim - collapsed + injected;
    tdim.push_back(td);
    Tensor t = TI::fromImpl(indices[tensorDim + injected].tensor);
    // normalize the negative indices
    idx.push_back(t.sign().neg().relu().mul(static_cast<double>(ret.shape()[td].asInt())).add(t));
  }
  int64_t maxDim = 0;
  for (const auto &i : idx) maxDim = std::max(maxDim, i.ndim());
  std::vector<int64_t> sumDim;
  for (size_t n = 0; n < tdim.size(); ++n)
    sumDim.push_back(n == 0 ? tdim[n] : tdim[n] + maxDim - static_cast<int64_t>(n));
  auto ones = [](int64_t k) { return Shape(std::max<int64_t>(k, 0), SInt(1)); };
  auto cat = [](Shape a, const Shape &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  // every index tensor must broadcast with the others (they are aligned on their last dims)
  for (size_t a = 0; a < idx.size(); ++a)
    for (size_t b = a + 1; b < idx.size(); ++b) TI::checkBroadcast("getitem", idx[a], idx[b]);
  std::vector<Tensor> arange;
  for (size_t n = 0; n < tdim.size(); ++n) {
    int64_t d = tdim[n], sd = sumDim[n];
    int64_t len = ret.shape()[d].asInt();
    Shape rs = cat(cat(ones(sd), {len}), ones(ret.ndim() + maxDim - static_cast<int64_t>(n) - sd - 1));
    arange.push_back(Tensor::arange(0, static_cast<double>(len), 1, {dtypes::int32, device(), false}).reshape(rs));
  }
  std::vector<Tensor> shapedIdx;
  shapedIdx.push_back(idx[0].reshape(
      cat(cat(cat(ones(tdim[0]), ones(1 + maxDim - idx[0].ndim())), idx[0].shape()), ones(ret.ndim() - tdim[0] - 1))));
  for (size_t n = 1; n < idx.size(); ++n)
    shapedIdx.push_back(idx[n].reshape(cat(cat(cat(ones(tdim[0]), ones(maxDim - idx[n].ndim())), idx[n].shape()),
                                           ones(ret.ndim() - tdim[0] - static_cast<int64_t>(n)))));
  idx.clear();
  Shape rs(ret.shape().begin(), ret.shape().begin() + sumDim[0] + 1);
  rs = cat(cat(rs, ones(maxDim)), Shape(ret.shape().begin() + sumDim[0] + 1, ret.shape().end()));
  ret = ret.reshape(rs);
  for (size_t n = 0; n < arange.size(); ++n)
    ret = arange[n].eq(shapedIdx[n]).mul(ret).sum(std::vector<int64_t>{sumDim[n]});
  // special permute case: the index dims go first when the indexed dims are not adjacent
  bool adjacent = true;
  for (size_t n = 1; n < tdim.size(); ++n) adjacent = adjacent && tdim[n] == tdim[0] + static_cast<int64_t>(n);
  if (tdim[0] != 0 && tdim.size() != 1 && !adjacent) {
    std::vector<int64_t> dims(ret.ndim());
    std::iota(dims.begin(), dims.end(), 0);
    std::vector<int64_t> perm(dims.begin() + tdim[0], dims.begin() + tdim[0] + maxDim);
    perm.insert(perm.end(), dims.begin(), dims.begin() + tdim[0]);
    perm.insert(perm.end(), dims.begin() + tdim[0] + maxDim, dims.end());
    ret = ret.permute(perm);
  }
  return ret;
}

Tensor Tensor::getitem(Tensor indexIn) const & {
  Tensor index = std::move(indexIn);
  LAZYJIT_USER_CHECK(ndim() >= 1, ShapeError, "getitem: cannot index a 0-d tensor with {}", describe(index));
  return getitem(std::vector<Index>{Index::of(index)});
}

Tensor Tensor::gather(Tensor idxArg, int64_t dim) const & {
  Tensor idxIn = std::move(idxArg);
  LAZYJIT_USER_CHECK(idxIn.ndim() == ndim(), ShapeError, "gather: index {} must have the rank of {}",
                     describe(idxIn), describe(*this));
  for (int64_t i = 0; i < ndim(); ++i)
    LAZYJIT_USER_CHECK(truthy(lazyjit::ge(shape()[i], idxIn.shape()[i])), ShapeError,
                       "gather: index {} is larger than {} in dim {}", describe(idxIn), describe(*this), i);
  int64_t d = normAxis("gather", *this, dim);
  Tensor idx = idxIn.transpose(d, 0).unsqueeze(-1);
  std::vector<int64_t> permarg(ndim());
  std::iota(permarg.begin(), permarg.end(), 0);
  std::vector<int64_t> p;
  if (d != 0) {
    p.assign(permarg.begin() + 1, permarg.begin() + d);
    p.push_back(permarg[0]);
    p.insert(p.end(), permarg.begin() + d + 1, permarg.end());
    p.push_back(permarg[d]);
  } else {
    p.assign(permarg.begin() + 1, permarg.end());
    p.push_back(permarg[0]);
  }
  std::vector<std::optional<SIntPair>> shr;
  for (size_t i = 1; i + 1 < idx.shape().size(); ++i) shr.emplace_back(SIntPair(0, idx.shape()[i]));
  shr.emplace_back(SIntPair(0, shape()[d]));
  Tensor ar = Tensor::arange(0, static_cast<double>(shape()[d].asInt()), 1, {dtypes::int32, device(), false});
  Tensor eqm = idx.eq(ar);
  return eqm.mul(permute(p).shrink(shr).unsqueeze(0)).sum(std::vector<int64_t>{-1}).transpose(0, d);
}


Tensor Tensor::interpolate(const std::vector<int64_t> &size, const std::string &mode,
                           bool alignCorners) const & {
  LAZYJIT_USER_CHECK(mode == "nearest" || mode == "linear", Error,
                     "interpolate: mode '{}' is not one of nearest, linear", mode);
  LAZYJIT_USER_CHECK(!size.empty() && int64_t(size.size()) <= ndim(), ShapeError,
                     "interpolate: size has {} dims, {} has {}", size.size(), describe(*this), ndim());
  LAZYJIT_USER_CHECK(mode == "linear" || !alignCorners, Error,
                     "interpolate: align_corners is for mode linear, not {}", mode);
  Tensor x = *this;
  if (mode == "linear" && !dtype().isFloating()) x = x.cast(dtypes::float32);
  for (size_t k = 0; k < size.size(); ++k) {
    int64_t axis = ndim() - int64_t(size.size()) + int64_t(k);
    LAZYJIT_USER_CHECK(x.shape()[size_t(axis)].isInt(), ShapeError,
                       "interpolate: dim {} of {} is symbolic", axis, describe(*this));
    int64_t in = x.shape()[size_t(axis)].asInt(), out = size[k];
    LAZYJIT_USER_CHECK(out > 0 && in > 0, ShapeError, "interpolate: cannot resize dim {} of {} to {}",
                       axis, describe(*this), out);
    if (in == out) continue;
    // the source positions of each output index along this axis, computed on the host
    std::vector<int64_t> i0(static_cast<size_t>(out)), i1(static_cast<size_t>(out));
    std::vector<float> w(size_t(out), 0);
    for (int64_t i = 0; i < out; ++i) {
      if (mode == "nearest") {
        i0[size_t(i)] = std::min(in - 1, int64_t(std::floor(double(i) * double(in) / double(out))));
        continue;
      }
      double src = alignCorners ? (out > 1 ? double(i) * double(in - 1) / double(out - 1) : 0.0)
                                : std::max(0.0, (double(i) + 0.5) * double(in) / double(out) - 0.5);
      auto lo = std::min(in - 1, int64_t(std::floor(src)));
      i0[size_t(i)] = lo;
      i1[size_t(i)] = std::min(in - 1, lo + 1);
      w[size_t(i)] = float(src - double(lo));
    }
    // the rows at those indices along this axis (one advanced index: it stays in place)
    Shape idxShape(size_t(ndim()), SInt(1));
    idxShape[size_t(axis)] = SInt(out);
    auto along = [&](const std::vector<int64_t> &v) {
      std::vector<Index> ix(size_t(ndim()), Index::all());
      ix[size_t(axis)] = Index::of(v);
      return x.getitem(ix);
    };
    Tensor a = along(i0);
    if (mode == "nearest") {
      x = a;
      continue;
    }
    Tensor weight = Tensor::fromVector(w, idxShape, device()).cast(x.dtype());
    Tensor b = along(i1);
    x = a.add(b.sub(a).mul(weight));
  }
  return x;
}

} // namespace lazyjit
