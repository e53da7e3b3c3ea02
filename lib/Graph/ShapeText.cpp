// The short text forms of shapes and ops for messages and dumps (ShapeText.h).
#include "lazyjit/Graph/ShapeText.h"

namespace lazyjit {

namespace {
template <typename Dims, typename Render> std::string bracketed(const Dims &s, Render render) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + render(s[i]);
  return out + "]";
}
} // namespace

std::string shapeText(const Shape &s) {
  return bracketed(s, [](const SInt &x) { return x.render(); });
}

std::string shapeText(const std::vector<int64_t> &s) {
  return bracketed(s, [](int64_t x) { return std::to_string(x); });
}

std::string typedShapeText(DType dt, const Shape &s) { return std::string(dt.name()) + shapeText(s); }

std::string typedShapeText(DType dt, const std::vector<int64_t> &s) {
  return std::string(dt.name()) + shapeText(s);
}

std::string_view opShortName(Op op) {
  std::string_view n = opName(op);
  n.remove_prefix(n.find('.') + 1);
  return n;
}

} // namespace lazyjit
