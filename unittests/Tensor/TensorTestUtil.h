// Shared helpers for the Tensor tests: the devices every numeric test runs on, deterministic input
// data, non-contiguous views of known values, independent host references (broadcasting,
// reductions, float16/bfloat16 rounding) and value checks with per-dtype tolerances.
//
// Expected values never come from lazyjit itself: they are computed here in double from the very
// values stored in the input tensors (inputs are rounded to their dtype first).
#pragma once

#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Tensor.h"

#include "../Graph/TestRng.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace lazyjit::testing {

/// Every numeric test runs once per device: the reference interpreter and the CPU backend.
inline const std::vector<std::string> &devices() {
  static const std::vector<std::string> d{"INTERP", "CPU"};
  return d;
}

using Ints = std::vector<int64_t>;
using Vals = std::vector<double>;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline const std::vector<DType> &allDTypes() {
  static const std::vector<DType> d(std::begin(dtypes::all), std::end(dtypes::all));
  return d;
}
inline const std::vector<DType> &floatDTypes() {
  static const std::vector<DType> d{dtypes::float16, dtypes::bfloat16, dtypes::float32,
                                    dtypes::float64};
  return d;
}
inline const std::vector<DType> &intDTypes() {
  static const std::vector<DType> d{dtypes::int8,  dtypes::uint8,  dtypes::int16, dtypes::uint16,
                                    dtypes::int32, dtypes::uint32, dtypes::int64, dtypes::uint64};
  return d;
}

// ---- deterministic data (Rng: splitmix64, ../Graph/TestRng.h)
// ----------------------------------------------------------------------------

/// `n` float32-representable values in [lo, hi).
inline Vals randVals(size_t n, uint64_t seed, double lo = -2, double hi = 2) {
  Rng r(seed);
  Vals out(n);
  for (auto &v : out) v = static_cast<float>(lo + (hi - lo) * r.uniform());
  return out;
}

/// `n` integers in [lo, hi], as doubles.
inline Vals randInts(size_t n, uint64_t seed, int64_t lo, int64_t hi) {
  Rng r(seed);
  Vals out(n);
  for (auto &v : out)
    v = static_cast<double>(lo +
                            static_cast<int64_t>(r.next() % static_cast<uint64_t>(hi - lo + 1)));
  return out;
}

inline Vals iotaVals(size_t n, double start = 0, double step = 1) {
  Vals out(n);
  for (size_t i = 0; i < n; ++i) out[i] = start + step * static_cast<double>(i);
  return out;
}

inline int64_t numelOf(const Ints &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

inline Shape toShape(const Ints &s) { return Shape(s.begin(), s.end()); }

// ---- independent float rounding
// -----------------------------------------------------------------------

/// Rounds `v` to nearest-even with `bits` significand bits (incl. the implicit one), gradual
/// underflow below 2^minExp and overflow to inf above `maxFinite` (IEEE semantics).
inline double roundBinary(double v, int bits, int minExp, double maxFinite) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  int e;
  std::frexp(v, &e); // v = m * 2^e, 0.5 <= |m| < 1
  int exp = std::max(e - 1, minExp);
  double quantum = std::ldexp(1.0, exp - (bits - 1));
  double r = std::nearbyint(v / quantum) * quantum; // ties to even (default rounding mode)
  double limit = maxFinite + std::ldexp(1.0, static_cast<int>(std::log2(maxFinite)) - bits);
  if (std::fabs(r) > maxFinite || std::fabs(v) >= limit) return std::copysign(kInf, v);
  return r;
}

/// The value a dtype stores for `v` (floats rounded, ints truncated toward zero and wrapped,
/// bools as 0/1), computed without lazyjit's conversion code.
inline double storeAs(double v, DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Float64:
    return v;
  case ScalarType::Float32:
    return static_cast<float>(v);
  case ScalarType::Float16:
    return roundBinary(static_cast<float>(v), 11, -14, 65504.0);
  case ScalarType::BFloat16:
    return roundBinary(static_cast<float>(v), 8, -126, 3.3895313892515355e38);
  case ScalarType::Bool:
    return v != 0 ? 1 : 0;
  default:
    break;
  }
  double t = std::trunc(v);
  int bits = static_cast<int>(dt.itemsize()) * 8;
  if (bits == 64) return dt.isUnsigned() && t < 0 ? t + 0x1p64 : t; // (inexact beyond 2^53)
  double mod = std::ldexp(1.0, bits);
  double w = std::fmod(t, mod);
  if (w < 0) w += mod;
  if (!dt.isUnsigned() && w >= mod / 2) w -= mod;
  return w;
}

inline Vals storeAll(Vals v, DType dt) {
  for (auto &x : v) x = storeAs(x, dt);
  return v;
}

/// Relative tolerance for one rounding step in `dt`, times `ulps`.
inline double epsOf(DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Float16:
    return 0x1.0p-10;
  case ScalarType::BFloat16:
    return 0x1.0p-7;
  case ScalarType::Float32:
    return 0x1.0p-23;
  case ScalarType::Float64:
    return 0x1.0p-52;
  default:
    return 0;
  }
}

struct Tol {
  double rtol = 1e-5;
  double atol = 1e-6;
};

/// Tolerance for float results in `dt`: `ulps` roundings, at least float32's 1e-5 relative.
inline Tol tolFor(DType dt, double ulps = 4, double atol = 1e-6) {
  double r = std::max(epsOf(dt) * ulps, dt == dtypes::float64 ? 1e-12 : 1e-5);
  return {r, std::max(atol, dt == dtypes::float64 ? 1e-12 : r * 1e-1)};
}

// ---- tensors with known values
// ------------------------------------------------------------------------

inline Tensor make(const Vals &values, const Ints &shape, const std::string &dev,
                   DType dt = dtypes::float32) {
  return Tensor::fromValues(values, toShape(shape), {dt, dev});
}

/// How a test input is laid out in memory; the logical values are the same for every kind.
enum class Layout { Contiguous, Permuted, Flipped, Sliced };
inline const std::vector<Layout> &allLayouts() {
  static const std::vector<Layout> l{Layout::Contiguous, Layout::Permuted, Layout::Flipped,
                                     Layout::Sliced};
  return l;
}
inline const char *layoutName(Layout l) {
  switch (l) {
  case Layout::Contiguous:
    return "contiguous";
  case Layout::Permuted:
    return "permuted";
  case Layout::Flipped:
    return "flipped";
  case Layout::Sliced:
    return "sliced";
  }
  return "?";
}

/// Row-major strides.
inline Ints stridesOf(const Ints &shape) {
  Ints st(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) st[i - 1] = st[i] * shape[i];
  return st;
}

/// values[i] of an array of `shape` viewed with axes permuted by `order` (numpy transpose).
inline Vals hostPermute(const Vals &v, const Ints &shape, const Ints &order) {
  Ints outShape;
  for (int64_t o : order) outShape.push_back(shape[o]);
  Ints inSt = stridesOf(shape), outSt = stridesOf(outShape);
  Vals out(v.size());
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t src = 0, rem = i;
    for (size_t d = 0; d < outShape.size(); ++d) {
      int64_t idx = rem / outSt[d];
      rem %= outSt[d];
      src += idx * inSt[order[d]];
    }
    out[i] = v[src];
  }
  return out;
}

/// A tensor holding `values` (row-major for `shape`) whose buffer is laid out as `layout` says:
/// the logical tensor is a permute, flip or shrink of a realized buffer.
inline Tensor makeView(Layout layout, const Vals &values, const Ints &shape, const std::string &dev,
                       DType dt = dtypes::float32) {
  int64_t nd = static_cast<int64_t>(shape.size());
  switch (layout) {
  case Layout::Contiguous:
    return make(values, shape, dev, dt);
  case Layout::Permuted: {
    if (nd < 2) return make(values, shape, dev, dt);
    Ints rev(nd);
    std::iota(rev.rbegin(), rev.rend(), 0); // (nd-1, ..., 0)
    Ints revShape;
    for (int64_t o : rev) revShape.push_back(shape[o]);
    Tensor base = make(hostPermute(values, shape, rev), revShape, dev, dt).realize();
    return base.permute(rev);
  }
  case Layout::Flipped: {
    Vals rv(values.rbegin(), values.rend()); // flipping every axis reverses row-major order
    Ints axes(nd);
    std::iota(axes.begin(), axes.end(), 0);
    return make(rv, shape, dev, dt).realize().flip(axes);
  }
  case Layout::Sliced: {
    // embed in a buffer with one extra element before and two after in every dim
    Ints big;
    for (int64_t s : shape) big.push_back(s + 3);
    Vals bv(static_cast<size_t>(numelOf(big)), 77);
    Ints bst = stridesOf(big), st = stridesOf(shape);
    for (int64_t i = 0; i < static_cast<int64_t>(values.size()); ++i) {
      int64_t at = 0, rem = i;
      for (int64_t d = 0; d < nd; ++d) {
        at += (rem / st[d] + 1) * bst[d];
        rem %= st[d];
      }
      bv[at] = values[i];
    }
    std::vector<std::optional<SIntPair>> arg;
    for (int64_t s : shape) arg.emplace_back(SIntPair(1, s + 1));
    return make(bv, big, dev, dt).realize().shrink(arg);
  }
  }
  return make(values, shape, dev, dt);
}

// ---- host references
// ----------------------------------------------------------------------------------

inline Ints broadcastShape(Ints a, Ints b) {
  while (a.size() < b.size()) a.insert(a.begin(), 1);
  while (b.size() < a.size()) b.insert(b.begin(), 1);
  Ints out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(a[i] == 1 ? b[i] : a[i]);
  return out;
}

/// The element of an array of `shape` that broadcasts to flat index `i` of `outShape`.
inline int64_t broadcastSource(int64_t i, const Ints &shape, const Ints &outShape) {
  Ints ost = stridesOf(outShape), st = stridesOf(shape);
  size_t off = outShape.size() - shape.size();
  int64_t src = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t idx = i / ost[d];
    i %= ost[d];
    if (d >= off && shape[d - off] != 1) src += idx * st[d - off];
  }
  return src;
}

inline Vals hostBinary(const Vals &a, const Ints &as, const Vals &b, const Ints &bs,
                       const std::function<double(double, double)> &f) {
  Ints os = broadcastShape(as, bs);
  Vals out(static_cast<size_t>(numelOf(os)));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i)
    out[i] = f(a[broadcastSource(i, as, os)], b[broadcastSource(i, bs, os)]);
  return out;
}

inline Vals hostMap(const Vals &a, const std::function<double(double)> &f) {
  Vals out(a.size());
  std::transform(a.begin(), a.end(), out.begin(), f);
  return out;
}

/// Reduces `axes` (already non-negative) of an array of `shape` with `f`, starting at `init`.
inline Vals hostReduce(const Vals &v, const Ints &shape, const Ints &axes, double init,
                       const std::function<double(double, double)> &f) {
  Ints outShape = shape;
  for (int64_t a : axes) outShape[a] = 1;
  Vals out(static_cast<size_t>(numelOf(outShape)), init);
  Ints st = stridesOf(shape), ost = stridesOf(outShape);
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t o = 0, rem = i;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t idx = rem / st[d];
      rem %= st[d];
      if (outShape[d] != 1) o += idx * ost[d];
    }
    out[o] = f(out[o], v[i]);
  }
  return out;
}

inline Ints reducedShape(const Ints &shape, const Ints &axes, bool keepdim) {
  Ints out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool r = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!r)
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// ---- checks
// -------------------------------------------------------------------------------------------

inline std::string fmtInts(const Ints &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

inline bool closeTo(double actual, double expected, const Tol &tol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::fabs(actual - expected) <= tol.atol + tol.rtol * std::fabs(expected);
}

/// Checks the shape and every value of `t` (read back as double) against `expected`.
inline void expectValues(const Tensor &t, const Ints &shape, const Vals &expected, Tol tol = {}) {
  REQUIRE(fmtInts(t.intShape()) == fmtInts(shape));
  REQUIRE(expected.size() == static_cast<size_t>(numelOf(shape)));
  Vals got = t.toVector<double>();
  REQUIRE(got.size() == expected.size());
  size_t bad = 0;
  std::ostringstream msg;
  msg.precision(17);
  for (size_t i = 0; i < got.size(); ++i) {
    if (closeTo(got[i], expected[i], tol)) continue;
    if (bad++ < 6) msg << "  [" << i << "] got " << got[i] << ", expected " << expected[i] << "\n";
  }
  CHECK_MESSAGE(bad == 0, bad << " of " << got.size() << " values of " << t.dtype().name()
                              << fmtInts(shape) << " differ (rtol " << tol.rtol << ", atol "
                              << tol.atol << "):\n"
                              << msg.str());
}

/// Exact comparison (ints, bools, and floats that must be exact).
inline void expectExact(const Tensor &t, const Ints &shape, const Vals &expected) {
  expectValues(t, shape, expected, Tol{0, 0});
}

inline void expectDType(const Tensor &t, DType dt) { CHECK(t.dtype().name() == dt.name()); }

} // namespace lazyjit::testing
