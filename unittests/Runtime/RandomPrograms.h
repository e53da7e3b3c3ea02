// The random tensor programs of the differential tests: shapes with 0, 1 and odd sizes, chains of
// movement ops, broadcasting, reductions over random axes, every dtype. The same seed builds the
// same program on every device, so a backend is checked by comparing its values with the
// reference interpreter's (integers and booleans exactly, floats within the dtype's tolerance).
#pragma once

#include "KernelTestUtil.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>

namespace lazyjit::randomprograms {

// splitmix64: small, seedable, identical on every platform
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(int percent) { return range(0, 99) < percent; }
  template <typename T> const T &pick(const std::vector<T> &v) { return v[next() % v.size()]; }
};

inline const std::vector<DType> kDTypes = {dtypes::float32, dtypes::float32, dtypes::float16, dtypes::bfloat16,
                                    dtypes::float64, dtypes::int8,    dtypes::uint8,   dtypes::int16,
                                    dtypes::uint16,  dtypes::int32,   dtypes::uint32,  dtypes::int64,
                                    dtypes::uint64,  dtypes::boolean};

inline std::vector<int64_t> randomShape(Rng &r, int maxDims = 3) {
  std::vector<int64_t> s;
  int n = static_cast<int>(r.range(1, maxDims));
  for (int i = 0; i < n; ++i) {
    int64_t p = r.range(0, 99);
    s.push_back(p < 3 ? 0 : p < 20 ? 1 : r.range(2, 7));
  }
  return s;
}

inline Shape toShape(const std::vector<int64_t> &v) { return Shape(v.begin(), v.end()); }

inline Tensor input(Rng &r, const std::vector<int64_t> &shape, DType dt, const std::string &dev) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> vals;
  for (int64_t i = 0; i < n; ++i) {
    if (dt.isBool()) vals.push_back(static_cast<double>(r.range(0, 1)));
    else if (dt.isUnsigned()) vals.push_back(static_cast<double>(r.range(0, 20)));
    else if (dt.isInt()) vals.push_back(static_cast<double>(r.range(-20, 20)));
    else vals.push_back(static_cast<double>(r.range(-400, 400)) / 64.0);
  }
  return Tensor::fromValues(vals, toShape(shape), {dt, dev});
}

// One random movement op that keeps the tensor valid.
inline Tensor randomMovement(Rng &r, const Tensor &t, std::ostringstream &log) {
  std::vector<int64_t> s = t.intShape();
  int nd = static_cast<int>(s.size());
  switch (r.range(0, 6)) {
  case 0: { // permute
    std::vector<int64_t> p(nd);
    for (int i = 0; i < nd; ++i) p[i] = i;
    for (int i = nd - 1; i > 0; --i) std::swap(p[i], p[r.range(0, i)]);
    log << ".permute";
    return t.permute(p);
  }
  case 1: { // flip
    if (nd == 0) return t;
    log << ".flip";
    return t.flip({r.range(0, nd - 1)});
  }
  case 2: { // pad
    std::vector<std::optional<SIntPair>> p;
    for (int i = 0; i < nd; ++i) p.emplace_back(SIntPair(r.range(0, 2), r.range(0, 2)));
    log << ".pad";
    return t.pad(p, r.chance(30) ? 1.0 : 0.0);
  }
  case 3: { // shrink
    std::vector<std::optional<SIntPair>> p;
    for (int i = 0; i < nd; ++i) {
      int64_t b = s[i] ? r.range(0, s[i] - 1) : 0;
      int64_t e = s[i] ? r.range(b + 1, s[i]) : 0;
      p.emplace_back(SIntPair(b, e));
    }
    log << ".shrink";
    return t.shrink(p);
  }
  case 4: { // reshape: merge all, or split the first dim
    log << ".reshape";
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    if (r.chance(50) || n == 0) return t.reshape({n});
    for (int64_t f : {4, 3, 2})
      if (n % f == 0 && n > f) return t.reshape({f, n / f});
    return t.reshape({1, n});
  }
  case 5: { // strided slice of the first dim
    if (nd == 0) return t;
    log << ".getitem";
    std::vector<Index> idx{Index::range(std::nullopt, std::nullopt, r.chance(50) ? 2 : -1)};
    return t.getitem(idx);
  }
  default: { // expand a size-1 axis through reshape+expand
    log << ".unsqueeze.expand";
    Tensor u = t.unsqueeze(0);
    Shape es = u.shape();
    es[0] = r.range(1, 3);
    return u.expand(es);
  }
  }
}

inline Tensor randomUnary(Rng &r, const Tensor &t, std::ostringstream &log) {
  DType dt = t.dtype();
  if (dt.isFloating()) {
    switch (r.range(0, 7)) {
    case 0: log << ".neg"; return t.neg();
    case 1: log << ".exp"; return t.mul(0.25).exp();
    case 2: log << ".log"; return t.abs().add(1).log();
    case 3: log << ".sqrt"; return t.abs().sqrt();
    case 4: log << ".sin"; return t.sin();
    case 5: log << ".relu"; return t.relu();
    case 6: log << ".sigmoid"; return t.sigmoid();
    default: log << ".tanh"; return t.tanh();
    }
  }
  if (dt.isBool()) {
    log << ".cast(int32)";
    return t.cast(dtypes::int32);
  }
  switch (r.range(0, 2)) {
  case 0: log << ".neg"; return t.neg();
  case 1: log << ".relu"; return t.relu();
  default: log << ".cast(float32)"; return t.cast(dtypes::float32);
  }
}

inline Tensor randomBinary(Rng &r, const Tensor &a, const Tensor &b, std::ostringstream &log) {
  DType dt = promote(a.dtype(), b.dtype());
  switch (r.range(0, 6)) {
  case 0: log << " + "; return a.add(b);
  case 1: log << " - "; return a.sub(b);
  case 2: log << " * "; return a.mul(b);
  case 3:
    log << " / ";
    if (dt.isFloating()) return a.div(b.abs().add(1));
    return a.div(b);
  case 4: log << " max "; return a.maximum(b);
  case 5: log << " < "; return a.lt(b);
  default: log << " where "; return a.gt(0).where(a, b);
  }
}

// One row operation over the last axis (what OPT=5 fuses): a reduce with keepdim broadcast back
// into element-wise work, softmax, log_softmax, layernorm, std and var; sometimes over the first
// axis instead.
inline Tensor randomRowOp(Rng &r, const Tensor &t, std::ostringstream &log) {
  Tensor x = t.dtype().isBool() ? t.cast(dtypes::int32) : t;
  int64_t ax = r.chance(80) ? -1 : 0;
  std::vector<int64_t> axes{ax};
  bool fl = x.dtype().isFloating();
  switch (r.range(0, 5)) {
  case 0: log << ".rowmax(" << ax << ")"; return x - x.max(axes, true);
  case 1: log << ".rowsum(" << ax << ")"; return x * x.sum(axes, true);
  case 2: if (fl) { log << ".softmax(" << ax << ")"; return x.softmax(ax); }
    log << ".rowmax2(" << ax << ")"; return (x - x.max(axes, true)) * x.max(axes, true);
  case 3: if (fl) { log << ".log_softmax(" << ax << ")"; return x.logSoftmax(ax); }
    log << ".rowsum2(" << ax << ")"; return x + x.sum(axes, true) - x.max(axes, true);
  case 4: if (fl) { log << ".layernorm(" << ax << ")"; return x.layernorm(axes); }
    log << ".rowmax(" << ax << ")"; return x - x.max(axes, true);
  default:
    // the variance from the mean's pass (Kernel::rowMoments): a row value (x scaled by it), or
    // the kernel's own reduce (var, then broadcast back)
    if (!fl) { log << ".rowsum(" << ax << ")"; return x * x.sum(axes, true); }
    if (r.chance(50)) { log << ".mulstd(" << ax << ")"; return x * x.std(axes, true); }
    log << ".var(" << ax << ")"; return x.var(axes, true).expand(x.shape());
  }
}

// Builds one random program on `dev`. The same seed builds the same program on every device. With
// `rowOps`, a step may also be a row operation (randomRowOp), and most programs' last axis is a row
// of 8 to `maxRow` elements.
// `emptyInput` (when given) says whether either input has no elements.
inline Tensor program(uint64_t seed, const std::string &dev, std::string *desc, bool rowOps = false,
                      int64_t maxRow = 20, bool *emptyInput = nullptr) {
  Rng r{seed};
  std::ostringstream log;
  DType dt = r.pick(kDTypes);
  DType dt2 = r.chance(70) ? dt : r.pick(kDTypes);
  std::vector<int64_t> sa = randomShape(r);
  // row operations fuse for rows of kMinRowKernelElements (8) or more
  if (rowOps && r.chance(70)) sa.back() = r.range(8, maxRow);
  // b broadcasts against a: some of a's dims replaced by 1, maybe fewer dims
  std::vector<int64_t> sb;
  for (size_t i = r.chance(30) ? 1 : 0; i < sa.size(); ++i) sb.push_back(r.chance(30) ? 1 : sa[i]);
  if (sb.empty()) sb.push_back(1);
  log << dt.name() << renderShape(toShape(sa)) << " " << dt2.name() << renderShape(toShape(sb)) << ": ";
  Tensor a = input(r, sa, dt, dev);
  Tensor b = input(r, sb, dt2, dev);
  if (emptyInput)
    *emptyInput = std::find(sa.begin(), sa.end(), 0) != sa.end() || std::find(sb.begin(), sb.end(), 0) != sb.end();
  Tensor x = a;
  int steps = static_cast<int>(r.range(1, 5));
  for (int i = 0; i < steps; ++i) {
    switch (r.range(0, rowOps ? 6 : 4)) {
    case 5:
    case 6:
      if (x.ndim() > 0) x = randomRowOp(r, x, log);
      break;
    case 0: x = randomMovement(r, x, log); break;
    case 1: x = randomUnary(r, x, log); break;
    case 2:
      if (x.shape() == a.shape()) x = randomBinary(r, x, b, log);
      else x = randomUnary(r, x, log);
      break;
    case 3: {
      if (x.ndim() == 0) break;
      int64_t ax = r.range(0, x.ndim() - 1);
      bool keep = r.chance(50);
      if (r.chance(60) || x.dtype().isBool()) {
        log << ".sum(" << ax << ")";
        x = x.dtype().isBool() ? x.cast(dtypes::int32).sum(std::vector<int64_t>{ax}, keep)
                               : x.sum(std::vector<int64_t>{ax}, keep);
      } else {
        log << ".max(" << ax << ")";
        x = x.max(std::vector<int64_t>{ax}, keep);
      }
      break;
    }
    default:
      log << ".contiguous";
      x = x.contiguous();
      break;
    }
  }
  if (desc) *desc = log.str();
  return x;
}

inline double tolerance(DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Float16: return 2e-2;
  case ScalarType::BFloat16: return 8e-2;
  case ScalarType::Float32: return 2e-3;
  case ScalarType::Float64: return 1e-9;
  default: return 0;
  }
}


struct DifferentialResult {
  int checked = 0;
  int elements = 0;
  int rowKernels = 0; ///< programs whose schedule on the device has a row kernel (OPT=5)
};

/// Builds `count` programs from `seed` on `device` and on INTERP and compares their values; each
/// mismatch is a failed check naming the program. `rowOps` adds row operations to the programs
/// (rows of up to `maxRow` elements);
/// `refOpt` realizes the interpreter's side at that OPT level (default: the current one).
inline DifferentialResult compareWithInterpreter(const std::string &device, uint64_t seed, int count,
                                                 bool rowOps = false, std::optional<int> refOpt = std::nullopt,
                                                 int64_t maxRow = 20) {
  DifferentialResult res;
  for (int p = 0; p < count; ++p) {
    uint64_t s = seed + static_cast<uint64_t>(p) * 7919;
    std::string desc;
    bool emptyInput = false;
    Tensor dev = program(s, device, &desc, rowOps, maxRow, &emptyInput);
    bool rowKernel = false;
    for (const auto &si : schedule(dev.lazydata()))
      if (si.isKernel())
        for (const KernelOp *x : si.ast->lazyops()) rowKernel = rowKernel || x->op == Op::Expand;
    res.rowKernels += rowKernel;
    dev.realize();
    Tensor ref;
    {
      Config c = config();
      if (refOpt) c.opt = *refOpt;
      ScopedConfig scope(c);
      ref = program(s, "INTERP", nullptr, rowOps, maxRow);
      ref.realize();
    }
    INFO("program ", p, " (seed ", s, "): ", desc);
    REQUIRE(dev.shape() == ref.shape());
    // (an empty input is a realized buffer on CPU and a CONST elsewhere, as in the reference, whose
    // fromCPU skips the zero-size rewrite that its copy to another device takes; a binary op then
    // folds the CONST operand into a scalar of the other operand's dtype (Tensor._to_float):
    // int64(1, 0) * uint64(0,) is uint64 on CPU and int64 in the interpreter, and int16(1, 6, 0) +
    // float32(6, 0) summed is float32 and int16. The values still agree.)
    if (!emptyInput) REQUIRE(dev.dtype() == ref.dtype());
    std::vector<double> a = dev.toVector<double>(), b = ref.toVector<double>();
    REQUIRE(a.size() == b.size());
    double tol = tolerance(dev.dtype());
    for (size_t i = 0; i < a.size(); ++i) {
      bool same = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ||
                  std::fabs(a[i] - b[i]) <= tol * std::max(1.0, std::fabs(b[i]));
      if (!same) {
        FAIL_CHECK("element ", i, ": ", device, "=", a[i], " interpreter=", b[i]);
        break;
      }
    }
    ++res.checked;
    res.elements += static_cast<int>(a.size());
  }
  return res;
}

/// Programs with row operations at OPT=5 on `device` against the interpreter at OPT=2; a fifth of
/// them at least must form a row kernel, or the comparison says little.
inline void compareRowPrograms(const std::string &device, uint64_t seed, int programs, int64_t maxRow = 20) {
  testing::AtOpt opt5(5);
  auto res = compareWithInterpreter(device, seed, programs, true, 2, maxRow);
  MESSAGE(device, ", seed ", seed, ": ", res.checked, " programs (", res.rowKernels, " with a row kernel), ",
          res.elements, " elements compared");
  CHECK(res.checked == programs);
  CHECK(res.rowKernels >= programs / 5);
}

} // namespace lazyjit::randomprograms
