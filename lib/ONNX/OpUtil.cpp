// The helpers the op files share: attributes read with their type checked, axes, shapes, and
// shape-like inputs read on the host.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

// ---- attributes ---------------------------------------------------------------------------------

const AttributeProto *findAttr(const NodeProto &n, std::string_view name) {
  for (const AttributeProto &a : n.attribute)
    if (a.name == name) return &a;
  return nullptr;
}

/// The attribute `name` when present, checked to hold a value of `type` (an attribute of IR
/// version < 2 may leave its type unset).
const AttributeProto *typedAttr(const NodeProto &n, std::string_view name, AttributeType type) {
  const AttributeProto *a = findAttr(n, name);
  if (!a) return nullptr;
  LAZYJIT_USER_CHECK(a->type == type || a->type == AttributeType::Undefined, Error,
                     "attribute '{}' is {}, not {}", name, attributeTypeName(a->type),
                     attributeTypeName(type));
  return a;
}

int64_t intAttr(const NodeProto &n, std::string_view name, int64_t dflt) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::Int);
  return a ? a->i : dflt;
}
float floatAttr(const NodeProto &n, std::string_view name, float dflt) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::Float);
  return a ? a->f : dflt;
}
std::optional<std::vector<int64_t>> intsAttr(const NodeProto &n, std::string_view name) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::Ints);
  if (!a) return std::nullopt;
  return a->ints;
}
int64_t requiredIntAttr(const NodeProto &n, std::string_view name) {
  LAZYJIT_USER_CHECK(findAttr(n, name), Error, "the required attribute '{}' is missing", name);
  return intAttr(n, name, 0);
}

// ---- shapes -------------------------------------------------------------------------------------

int64_t normalizeAxis(int64_t axis, int64_t rank, std::string_view what) {
  LAZYJIT_USER_CHECK(axis >= -rank && axis < rank, ShapeError, "{} {} is out of range for rank {}",
                     what, axis, rank);
  return axis < 0 ? axis + rank : axis;
}

Shape toShape(const std::vector<int64_t> &dims) {
  Shape s;
  for (int64_t d : dims) s.emplace_back(d);
  return s;
}

std::string dimsText(const std::vector<int64_t> &dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

int64_t product(const std::vector<int64_t> &dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= dims[i];
  return p;
}

/// The values of a shape-like input (Reshape's shape, Unsqueeze's axes), read on the host. This
/// realizes the tensor: usually an initializer or a Constant, else whatever computed it.
std::vector<int64_t> hostInts(const Tensor &t, std::string_view what) {
  LAZYJIT_USER_CHECK(t.dtype().isInt(), DTypeError, "{} must be an integer tensor, not {}", what,
                     t.dtype().name());
  LAZYJIT_USER_CHECK(t.ndim() <= 1, ShapeError, "{} must be 1-D, not rank {}", what, t.ndim());
  return t.toVector<int64_t>();
}


std::string stringAttr(const NodeProto &n, std::string_view name, std::string_view dflt) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::String);
  return a ? a->s : std::string(dflt);
}

std::optional<std::vector<float>> floatsAttr(const NodeProto &n, std::string_view name) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::Floats);
  if (!a) return std::nullopt;
  return a->floats.toVector();
}

void checkStringAttr(const NodeProto &n, std::string_view name,
                     std::initializer_list<std::string_view> allowed) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::String);
  if (!a) return;
  for (std::string_view s : allowed)
    if (a->s == s) return;
  throw UnsupportedError(
      fmt::format("attribute '{}' = '{}' is not supported (supported: {})", name, a->s,
                  fmt::join(allowed, ", ")));
}

double hostScalar(const Tensor &t, std::string_view what) {
  std::vector<int64_t> dims = t.intShape();
  int64_t n = product(dims, 0, dims.size());
  LAZYJIT_USER_CHECK(n == 1, ShapeError, "{} must hold one value, not {}", what, n);
  return t.cast(dtypes::float64).toVector<double>()[0];
}

void noCheck(const NodeContext &) {}

} // namespace lazyjit::onnx::ops
