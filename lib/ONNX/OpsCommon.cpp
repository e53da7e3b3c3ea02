// The helpers OpsCommon.h declares, shared by the op files.
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Function.h"

#include <algorithm>

namespace lazyjit::onnx::ops {

// ---- shapes and axes ----------------------------------------------------------------------------

std::vector<int64_t> iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

int64_t numel(const Tensor &t) {
  std::vector<int64_t> d = t.intShape();
  return product(d, 0, d.size());
}

int64_t hostInt(const Tensor &t, std::string_view what) {
  LAZYJIT_USER_CHECK(t.dtype().isInt(), DTypeError, "{} must be an integer, not {}", what,
                     t.dtype().name());
  LAZYJIT_USER_CHECK(numel(t) == 1, ShapeError, "{} must hold one value, not {}", what,
                     dimsText(t.intShape()));
  return t.toVector<int64_t>()[0];
}

Tensor sliceAxis(const Tensor &x, int64_t axis, int64_t begin, int64_t end) {
  std::vector<std::optional<SIntPair>> arg(size_t(x.ndim()));
  arg[size_t(axis)] = SIntPair(begin, end);
  return x.shrink(arg);
}

Tensor takeAt(const Tensor &x, int64_t axis, int64_t i) {
  std::vector<int64_t> dims = x.intShape();
  dims.erase(dims.begin() + axis);
  return sliceAxis(x, axis, i, i + 1).reshape(toShape(dims));
}

namespace {

/// Concatenates many tensors along `dim` in groups of 8, so a long list (a sequence unrolled over
/// hundreds of steps) compiles a few small kernels that repeat instead of one kernel with hundreds
/// of inputs.
Tensor catMany(std::vector<Tensor> parts, int64_t dim) {
  constexpr size_t group = 8;
  while (parts.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i < parts.size(); i += group) {
      size_t end = std::min(parts.size(), i + group);
      if (end - i == 1) {
        next.push_back(parts[i]);
        continue;
      }
      std::vector<Tensor> rest(parts.begin() + int64_t(i) + 1, parts.begin() + int64_t(end));
      next.push_back(parts[i].cat(std::move(rest), dim));
    }
    parts = std::move(next);
  }
  return parts.at(0);
}

} // namespace

Tensor stackMany(std::vector<Tensor> parts, int64_t dim) {
  LAZYJIT_INTERNAL_CHECK(!parts.empty(), "onnx: stackMany of no tensors");
  int64_t at = dim < 0 ? dim + parts[0].ndim() + 1 : dim;
  for (Tensor &t : parts) t = t.unsqueeze(at);
  return catMany(std::move(parts), at);
}

std::vector<int64_t> spatialDims(const Tensor &x, std::string_view what, size_t minSpatial) {
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2 + minSpatial, ShapeError,
                     "{} must be [N, C, D1, ...] with {} spatial dim(s) or more, not {}", what,
                     minSpatial, dimsText(dims));
  return {dims.begin() + 2, dims.end()};
}

Tensor perChannel(const Tensor &p, int64_t rank) {
  std::vector<int64_t> d = p.intShape();
  if (d.size() != 1) {
    d.insert(d.begin(), 1);
    return p.reshape(toShape(d));
  }
  std::vector<int64_t> s(size_t(rank), 1);
  s[1] = d[0];
  return p.reshape(toShape(s));
}

// ---- broadcasting -------------------------------------------------------------------------------

Tensor scalarOf(const Tensor &like, double v, DType dt) {
  return Tensor::scalar(v, TensorOptions(dt, like.device()));
}
Tensor scalarOf(const Tensor &like, double v) { return scalarOf(like, v, like.dtype()); }

std::vector<int64_t> broadcastDims(const std::vector<Tensor> &ts) {
  size_t rank = 0;
  for (const Tensor &t : ts) rank = std::max(rank, size_t(t.ndim()));
  std::vector<int64_t> out(rank, 1);
  for (const Tensor &t : ts) {
    std::vector<int64_t> dims = t.intShape();
    size_t off = rank - dims.size();
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t &o = out[off + i];
      LAZYJIT_USER_CHECK(o == 1 || dims[i] == 1 || dims[i] == o, ShapeError,
                         "cannot broadcast {} with {}", dimsText(dims), dimsText(out));
      if (o == 1) o = dims[i];
    }
  }
  return out;
}

Tensor broadcastTo(const Tensor &t, const std::vector<int64_t> &dims) {
  std::vector<int64_t> td = t.intShape();
  if (td == dims) return t;
  std::vector<int64_t> padded(dims.size() - td.size(), 1);
  padded.insert(padded.end(), td.begin(), td.end());
  return t.reshape(toShape(padded)).expand(toShape(dims));
}

// ---- comparisons and logic ----------------------------------------------------------------------

Tensor asBool(const Tensor &t) { return t.cast(dtypes::boolean); }
// (where, not add/mul: those turn a constant bool operand into a float32 scalar)
Tensor logicalNot(const Tensor &b) { return b.neg(); }
Tensor logicalAnd(const Tensor &a, const Tensor &b) { return a.where(b, a); }
Tensor logicalOr(const Tensor &a, const Tensor &b) { return a.where(a, b); }

Tensor isNan(const Tensor &x) {
  if (!x.dtype().isFloating())
    return Tensor::zeros(x.shape(), TensorOptions(dtypes::boolean, x.device()));
  return asBool(x.lt(x));
}
Tensor less(const Tensor &a, const Tensor &b) {
  Tensor r = asBool(a.lt(b));
  if (!a.dtype().isFloating()) return r;
  return logicalAnd(r, logicalNot(logicalOr(isNan(a), isNan(b))));
}
Tensor greaterOrEqual(const Tensor &a, const Tensor &b) { return logicalNot(asBool(a.lt(b))); }
Tensor lessOrEqual(const Tensor &a, const Tensor &b) { return logicalNot(asBool(b.lt(a))); }
Tensor equal(const Tensor &a, const Tensor &b) {
  return logicalNot(logicalOr(asBool(a.lt(b)), asBool(b.lt(a))));
}

namespace {
/// A graph binary op the Tensor API does not expose as such (MOD, integer DIV, MAX with IEEE NaN
/// propagation). Inference only: it has no backward.
struct RawBinary : Function {
  Op op;
  explicit RawBinary(Op op) : op(op) {}
  std::string_view name() const override { return opName(op); }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->e(opts, op, {in[1]}); }
};
} // namespace

Tensor rawBinary(Op op, const Tensor &a, const Tensor &b) {
  LAZYJIT_USER_CHECK(a.dtype() == b.dtype(), DTypeError,
                     "operands have different dtypes: {} and {}", a.dtype().name(),
                     b.dtype().name());
  std::vector<int64_t> dims = broadcastDims({a, b});
  return Function::apply(std::make_shared<RawBinary>(op),
                         {broadcastTo(a, dims), broadcastTo(b, dims)});
}

} // namespace lazyjit::onnx::ops
