// Helpers shared by the ShapeTracker tests: Python-style renders of strides and view stacks, and
// hand-built views.
#pragma once

#include "lazyjit/Graph/ShapeTracker.h"
#include "Graph/IotaArray.h"
#include "Graph/SymbolicTestUtil.h"

#include <string>
#include <vector>

namespace lazyjit::testing {

using Ints = std::vector<int64_t>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

/// A Python tuple of real strides: `(4, None)`, `(None,)`.
inline std::string stridesStr(const std::vector<std::optional<SInt>> &rs) {
  std::string s = "(";
  for (size_t i = 0; i < rs.size(); ++i) s += (i ? ", " : "") + (rs[i] ? rs[i]->render() : "None");
  if (rs.size() == 1) s += ",";
  return s + ")";
}

inline std::string viewsStr(const ShapeTracker &st) {
  std::string s;
  for (size_t i = 0; i < st.views.size(); ++i) s += (i ? "; " : "") + st.views[i].repr();
  return s;
}

inline ShapeTracker trackerOf(std::initializer_list<View> views) { return ShapeTracker{views}; }

inline View viewOf(const Ints &shape, const Ints &strides, int64_t offset = 0) {
  return View::create(toShape(shape), toShape(strides), offset);
}

inline int64_t intMin(const SInt &x) { return x.isInt() ? x.asInt() : x.node()->min.asInt(); }
inline int64_t intMax(const SInt &x) { return x.isInt() ? x.asInt() : x.node()->max.asInt(); }

} // namespace lazyjit::testing
