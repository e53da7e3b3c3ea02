// What several op files share beyond OpUtil.h (private to lib/ONNX): Tensor helpers for slicing
// and stacking along an axis and for [N, C, D1, ...] inputs, and the NaN-aware comparisons and
// logic (numpy's semantics) that the element-wise and the reduction ops build on.
#pragma once

#include "OpUtil.h"

#include <cstdint>
#include <string_view>
#include <vector>

namespace lazyjit::onnx::ops {

// ---- shapes and axes ----------------------------------------------------------------------------

/// [from, from + 1, ..., to - 1].
std::vector<int64_t> iota(int64_t from, int64_t to);
/// The number of elements of `t`.
int64_t numel(const Tensor &t);
/// The graph's binary `op` (MOD, integer DIV, NaN-propagating MAX ...) on same-dtype operands,
/// broadcast as numpy does: what the Tensor API does not expose. Inference only.
Tensor rawBinary(Op op, const Tensor &a, const Tensor &b);
/// A one-value integer input read on the host.
int64_t hostInt(const Tensor &t, std::string_view what);

/// x[begin:end] along `axis`.
Tensor sliceAxis(const Tensor &x, int64_t axis, int64_t begin, int64_t end);
/// x[i] along `axis`, with that axis removed.
Tensor takeAt(const Tensor &x, int64_t axis, int64_t i);
/// Tensor::stack of many tensors, concatenated in groups of 8 so a long list (a sequence unrolled
/// over hundreds of steps) compiles a few small kernels that repeat instead of one kernel with
/// hundreds of inputs.
Tensor stackMany(std::vector<Tensor> parts, int64_t dim);

/// The spatial dims of an [N, C, D1, ...] input, checked to have at least `minSpatial` of them.
std::vector<int64_t> spatialDims(const Tensor &x, std::string_view what, size_t minSpatial = 1);
/// A [1, C, 1, ...] view of a per-channel parameter for a rank-`rank` input (a parameter of more
/// dims, as BatchNormalization's spatial=0 takes, is [C, D1, ...] and becomes [1, C, D1, ...]).
Tensor perChannel(const Tensor &p, int64_t rank);

// ---- broadcasting -------------------------------------------------------------------------------

Tensor scalarOf(const Tensor &like, double v, DType dt);
Tensor scalarOf(const Tensor &like, double v);
/// numpy's broadcast of the inputs' dims.
std::vector<int64_t> broadcastDims(const std::vector<Tensor> &ts);
Tensor broadcastTo(const Tensor &t, const std::vector<int64_t> &dims);

// ---- comparisons and logic (bool results; a NaN compares false and unequal) ---------------------

/// Tensor's comparisons return 0/1 in their operands' dtype.
Tensor asBool(const Tensor &t);
Tensor logicalNot(const Tensor &b);
Tensor logicalAnd(const Tensor &a, const Tensor &b);
Tensor logicalOr(const Tensor &a, const Tensor &b);
Tensor isNan(const Tensor &x);
/// a < b, false where either is NaN.
Tensor less(const Tensor &a, const Tensor &b);
Tensor greaterOrEqual(const Tensor &a, const Tensor &b);
Tensor lessOrEqual(const Tensor &a, const Tensor &b);
Tensor equal(const Tensor &a, const Tensor &b);

} // namespace lazyjit::onnx::ops
