// What the op files of lib/ONNX share (private to lib/ONNX): reading a node's attributes with
// their type checked, axes and shapes, and shape-like inputs read on the host.
#pragma once

#include "Ops.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit::onnx::ops {

using Out = std::vector<Tensor>;
using Inputs = std::vector<Tensor>;

// ---- attributes ---------------------------------------------------------------------------------

const AttributeProto *findAttr(const NodeProto &n, std::string_view name);
/// The attribute `name` when present, checked to hold a value of `type` (an attribute of IR
/// version < 2 may leave its type unset).
const AttributeProto *typedAttr(const NodeProto &n, std::string_view name, AttributeType type);
int64_t intAttr(const NodeProto &n, std::string_view name, int64_t dflt);
float floatAttr(const NodeProto &n, std::string_view name, float dflt);
std::string stringAttr(const NodeProto &n, std::string_view name, std::string_view dflt);
std::optional<std::vector<int64_t>> intsAttr(const NodeProto &n, std::string_view name);
std::optional<std::vector<float>> floatsAttr(const NodeProto &n, std::string_view name);
int64_t requiredIntAttr(const NodeProto &n, std::string_view name);
/// Throws UnsupportedError unless the string attribute `name` is absent or one of `allowed`.
void checkStringAttr(const NodeProto &n, std::string_view name,
                     std::initializer_list<std::string_view> allowed);

// ---- shapes -------------------------------------------------------------------------------------

/// `axis` in [-rank, rank) made non-negative.
int64_t normalizeAxis(int64_t axis, int64_t rank, std::string_view what = "axis");
Shape toShape(const std::vector<int64_t> &dims);
std::string dimsText(const std::vector<int64_t> &dims);
int64_t product(const std::vector<int64_t> &dims, size_t from, size_t to);

/// The values of a shape-like input (Reshape's shape, Unsqueeze's axes), read on the host. This
/// realizes the tensor: usually an initializer or a Constant, else whatever computed it.
std::vector<int64_t> hostInts(const Tensor &t, std::string_view what);
/// A scalar (or one-element) input's value on the host, as a double.
double hostScalar(const Tensor &t, std::string_view what);
/// Whether input `i` is present (given and not an omitted optional input).
inline bool has(const Inputs &in, size_t i) { return in.size() > i && in[i].defined(); }

/// Keeps a binary op's result in the first operand's dtype, as ONNX does (Tensor's Div and Pow may
/// promote integers to floats; casting back truncates as ONNX's integer division does).
inline Tensor keepDType(Tensor y, DType dt) { return y.dtype() == dt ? y : y.cast(dt); }

void noCheck(const NodeContext &);

} // namespace lazyjit::onnx::ops
