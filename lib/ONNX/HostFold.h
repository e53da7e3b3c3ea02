// Shape arithmetic on the host (private to lib/ONNX). The Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape chains that exporters write, and every node whose inputs are all constants, are
// evaluated here while the graph is built, so they cost no kernels: their results enter the graph
// as small host buffers. A node is folded only when every input is known on the host, its op is
// one of the table below, and its result is small; anything else runs as Tensor ops as usual.
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Tensor/Tensor.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit::onnx::fold {

/// A small tensor on the host. Values are long doubles, which hold every int64 exactly (a 64-bit
/// mantissa) as well as every float; each op rounds its results to `dtype` as the kernel would.
struct HostValue {
  DType dtype = dtypes::float32;
  std::vector<int64_t> dims;
  std::vector<long double> values;

  int64_t size() const;
  /// The value as a lazy tensor over a host buffer (no kernel computes it).
  Tensor toTensor() const;
};

/// The largest folded result, in elements: shape vectors and scalars, never activations.
inline constexpr int64_t kMaxFoldElements = 1 << 12;

/// `t`'s values when it is small enough to fold and of a dtype lazyjit has.
std::optional<HostValue> fromProto(const TensorProto &t);

/// Evaluates `node` on host inputs (null for an omitted optional input). `shapes` holds every
/// input's dims (known for any tensor, host or not), which is all Shape and Size need. Returns
/// nullopt when the op is not foldable here or a result would be too large; errors in the values
/// (a bad axis) also return nullopt, so the Tensor op reports them as it always does.
std::optional<std::vector<HostValue>> evaluate(const NodeProto &node, int64_t opset,
                                               const std::vector<const HostValue *> &inputs,
                                               const std::vector<std::vector<int64_t>> &shapes);

} // namespace lazyjit::onnx::fold
