// The reference oracle for ShapeTracker tests: an explicit array of source indices (an arange, -1
// for padding) that every movement op rewrites element by element, and a ShapeTracker kept next to
// it (the reference's CheckingShapeTracker). Shared by ShapeTrackerTest and ShapeTrackerOracleTest.
#pragma once

#include "lazyjit/Graph/ShapeTracker.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit::testing {

/// A dense row-major array of source indices; -1 marks a padded (invalid) element.
struct IotaArray {
  std::vector<int64_t> shape;
  std::vector<int64_t> data;

  static IotaArray arange(const std::vector<int64_t> &shape) {
    IotaArray a{shape, {}};
    int64_t n = a.numel();
    a.data.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) a.data[static_cast<size_t>(i)] = i;
    return a;
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }

  /// The element at a multi-index.
  int64_t at(const std::vector<int64_t> &idx) const {
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
    return data[static_cast<size_t>(flat)];
  }

  /// Builds an array of `newShape` whose element at idx is `source(idx)`: an old multi-index, or
  /// nullopt for padding.
  IotaArray
  remap(const std::vector<int64_t> &newShape,
        const std::function<std::optional<std::vector<int64_t>>(const std::vector<int64_t> &)>
            &source) const {
    IotaArray out{newShape, {}};
    int64_t n = out.numel();
    out.data.reserve(static_cast<size_t>(n));
    std::vector<int64_t> idx(newShape.size(), 0);
    for (int64_t i = 0; i < n; ++i) {
      auto old = source(idx);
      out.data.push_back(old ? at(*old) : -1);
      for (size_t d = newShape.size(); d-- > 0;) {
        if (++idx[d] < newShape[d]) break;
        idx[d] = 0;
      }
    }
    return out;
  }

  IotaArray reshape(const std::vector<int64_t> &newShape) const { return {newShape, data}; }

  IotaArray permute(const std::vector<int64_t> &axis) const {
    std::vector<int64_t> ns;
    for (int64_t a : axis) ns.push_back(shape[static_cast<size_t>(a)]);
    return remap(ns, [&](const std::vector<int64_t> &idx) {
      std::vector<int64_t> old(shape.size());
      for (size_t d = 0; d < axis.size(); ++d) old[static_cast<size_t>(axis[d])] = idx[d];
      return std::optional(old);
    });
  }

  IotaArray expand(const std::vector<int64_t> &newShape) const {
    return remap(newShape, [&](const std::vector<int64_t> &idx) {
      std::vector<int64_t> old(idx);
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] == 1) old[d] = 0;
      return std::optional(old);
    });
  }

  IotaArray pad(const std::vector<std::pair<int64_t, int64_t>> &arg) const {
    std::vector<int64_t> ns;
    for (size_t d = 0; d < shape.size(); ++d) ns.push_back(arg[d].first + shape[d] + arg[d].second);
    return remap(ns, [&](const std::vector<int64_t> &idx) -> std::optional<std::vector<int64_t>> {
      std::vector<int64_t> old(idx.size());
      for (size_t d = 0; d < shape.size(); ++d) {
        old[d] = idx[d] - arg[d].first;
        if (old[d] < 0 || old[d] >= shape[d]) return std::nullopt;
      }
      return old;
    });
  }

  IotaArray shrink(const std::vector<std::pair<int64_t, int64_t>> &arg) const {
    std::vector<int64_t> ns;
    for (const auto &[b, e] : arg) ns.push_back(e - b);
    return remap(ns, [&](const std::vector<int64_t> &idx) {
      std::vector<int64_t> old(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) old[d] = idx[d] + arg[d].first;
      return std::optional(old);
    });
  }

  /// numpy's t[::m0, ::m1, ...]: every |m|-th element, from the end when m < 0.
  IotaArray stride(const std::vector<int64_t> &mul) const {
    std::vector<int64_t> ns;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t m = mul[d] < 0 ? -mul[d] : mul[d];
      ns.push_back((shape[d] + m - 1) / m);
    }
    return remap(ns, [&](const std::vector<int64_t> &idx) {
      std::vector<int64_t> old(idx.size());
      for (size_t d = 0; d < idx.size(); ++d)
        old[d] = mul[d] > 0 ? idx[d] * mul[d] : shape[d] - 1 + idx[d] * mul[d];
      return std::optional(old);
    });
  }
};

inline Shape toShape(const std::vector<int64_t> &s) { return Shape(s.begin(), s.end()); }

inline PadArg toPadArg(const std::vector<std::pair<int64_t, int64_t>> &arg) {
  PadArg out;
  for (const auto &[b, e] : arg) out.emplace_back(b, e);
  return out;
}

/// What the tracker says about every element, in row-major order: the source index, or -1 where the
/// validity is 0. `viaIdxs` uses exprIdxs over idx0..idxN-1, otherwise exprNode over one flat idx.
inline std::vector<int64_t> trackerElements(const ShapeTracker &st, bool viaIdxs) {
  std::vector<int64_t> shape;
  for (const auto &s : st.shape()) shape.push_back(s.asInt());
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> out;
  if (n == 0) return out;
  auto [idx, valid] = viaIdxs ? st.exprIdxs() : st.exprNode();
  std::map<std::string, int64_t> env;
  std::vector<std::string> names;
  for (size_t d = 0; d < shape.size(); ++d) names.push_back("idx" + std::to_string(d));
  std::vector<int64_t> multi(shape.size(), 0);
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (viaIdxs)
      for (size_t d = 0; d < shape.size(); ++d) env[names[d]] = multi[d];
    else
      env["idx"] = i;
    out.push_back(evalNode(*valid, env) ? evalNode(*idx, env) : -1);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++multi[d] < shape[d]) break;
      multi[d] = 0;
    }
  }
  return out;
}

/// The reference's CheckingShapeTracker: a ShapeTracker and the array it must describe.
struct CheckingShapeTracker {
  ShapeTracker st;
  IotaArray t;

  explicit CheckingShapeTracker(const std::vector<int64_t> &shape)
      : st(ShapeTracker::fromShape(toShape(shape))), t(IotaArray::arange(shape)) {}

  CheckingShapeTracker &reshape(const std::vector<int64_t> &s) {
    st = st.reshape(toShape(s));
    t = t.reshape(s);
    return *this;
  }
  CheckingShapeTracker &permute(const std::vector<int64_t> &axis) {
    st = st.permute(axis);
    t = t.permute(axis);
    return *this;
  }
  CheckingShapeTracker &expand(const std::vector<int64_t> &s) {
    st = st.expand(toShape(s));
    t = t.expand(s);
    return *this;
  }
  CheckingShapeTracker &pad(const std::vector<std::pair<int64_t, int64_t>> &arg) {
    st = st.pad(toPadArg(arg));
    t = t.pad(arg);
    return *this;
  }
  CheckingShapeTracker &shrink(const std::vector<std::pair<int64_t, int64_t>> &arg) {
    st = st.shrink(toPadArg(arg));
    t = t.shrink(arg);
    return *this;
  }
  CheckingShapeTracker &stride(const std::vector<int64_t> &mul) {
    st = st.stride(mul);
    t = t.stride(mul);
    return *this;
  }
  CheckingShapeTracker &flip(const std::vector<int64_t> &axes) {
    std::vector<int64_t> mul(t.shape.size(), 1);
    for (int64_t a : axes) mul[static_cast<size_t>(a)] = -1;
    return stride(mul);
  }
  CheckingShapeTracker &simplify() {
    st = st.simplify();
    return *this;
  }

  size_t numViews() const { return st.views.size(); }
  bool contiguous() const { return st.contiguous(); }

  /// assert_same: the shapes match and every element of exprNode (and of exprIdxs) is the array's.
  void assertSame() const {
    REQUIRE(st.shape() == toShape(t.shape));
    CHECK(trackerElements(st, false) == t.data);
    CHECK(trackerElements(st, true) == t.data);
  }
};

} // namespace lazyjit::testing
