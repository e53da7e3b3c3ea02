// Private helpers shared by the Tensor implementation files: the mlops forward functions, shape
// formatting for error messages, and axis normalization.
#pragma once

#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Tensor.h"

#include <string>

namespace lazyjit {

/// `float32[4, 6]`: how errors name a tensor (shapes alone are shapeText's `[4, 6]`).
std::string describe(const Tensor &t);
std::string fmtInts(const std::vector<int64_t> &v);
/// A size in an error message: an int, or an expression with its variables' ranges (`n[1-100]`).
std::string fmtSInt(const SInt &x);

/// The element count of a concrete shape; throws ShapeError naming the op when it does not fit in
/// 62 bits (Python's integers never overflow; lazyjit's int64 arithmetic must not either).
int64_t checkedNumel(const char *op, const Shape &s);

/// Normalizes a possibly negative axis for an op; throws ShapeError naming the op.
int64_t normAxis(const char *op, const Tensor &t, int64_t axis, int64_t ndimExtra = 0);
/// The axes a reduction over `axis` covers (all of them when unset), normalized; throws ShapeError
/// naming the op (TensorReduce.cpp).
std::vector<int64_t> normAxes(const char *op, const Tensor &t, const Tensor::Axes &axis);
/// Throws DTypeError naming the op unless `t` is floating-point (TensorReduce.cpp).
void requireFloat(const char *op, const Tensor &t);

/// The reference's mlops: forward functions over LazyBuffers, each returning a new Tensor.
class TensorInternals {
public:
  static const std::shared_ptr<TensorImpl> &impl(const Tensor &t) { return t.impl; }
  static Tensor fromImpl(std::shared_ptr<TensorImpl> impl) {
    Tensor t;
    t.impl = std::move(impl);
    return t;
  }
  /// Tensor(value) on a device a live tensor is on (so known to be available), without
  /// resolving it again: the scalar operand of every binary op.
  static Tensor scalarOn(double value, DType dtype, const std::string &device);
  /// Tensor._broadcasted: makes a scalar a tensor of self's dtype, left-pads shapes with 1s and
  /// expands both to the broadcast shape. `op` names the operation in errors.
  static std::pair<Tensor, Tensor> broadcasted(const char *op, const Tensor &self, const Operand &y,
                                               bool reverse = false);
  /// Throws ShapeError "<op>: cannot broadcast <x> with <y>" unless the shapes broadcast (a
  /// scalar operand always does). Builds no graph node.
  static void checkBroadcast(const char *op, const Tensor &x, const Operand &y);
  /// Tensor._to_float: an unrealized contiguous const tensor becomes its Python scalar.
  static Operand toFloat(const Tensor &self, Operand x);
  static Tensor reduce(const Tensor &self, Op rop, const Tensor::Axes &axis, bool keepdim);
  /// The reference's _pool; `op` names the calling op in errors.
  static Tensor pool(const Tensor &self, const char *op, const std::vector<int64_t> &k,
                     const std::vector<int64_t> &stride, const std::vector<int64_t> &dilation);
  static Tensor cumsumImpl(const Tensor &self, int64_t axis, bool firstZero);
  static std::tuple<Tensor, Tensor, Tensor> softmaxParts(const Tensor &self, int64_t axis);
  static Tensor loadop(Op op, int64_t size, const TensorOptions &opts, LazyOpArg arg = {});
  /// Autocast (TensorSetItem.cpp): whether an enabled AutocastGuard casts `t` for a matmul-like
  /// op; `t` cast to the autocast dtype when it does; a half-width `t` as float32 for the ops that
  /// autocast runs in float32 (softmaxes, losses, layernorm), unchanged outside autocast.
  static bool autocastWants(const Tensor &t);
  static Tensor autocast(const Tensor &t);
  static Tensor autocastFloat32(const Tensor &t);
};

/// Python's slice.indices(length): the slice's (start, stop, step) clamped to a dim of `len`.
std::tuple<int64_t, int64_t, int64_t> pySliceIndices(const Index &s, int64_t len);

// mlops (MLOps.cpp): each applies one Function and returns its result
Tensor mlContiguous(const Tensor &x);
Tensor mlContiguousBackward(const Tensor &x);
Tensor mlCast(const Tensor &x, DType dtype, bool bitcast);
Tensor mlZero(const Tensor &x);
Tensor mlNeg(const Tensor &x);
Tensor mlSin(const Tensor &x);
Tensor mlRelu(const Tensor &x);
Tensor mlLog(const Tensor &x);
Tensor mlExp(const Tensor &x);
Tensor mlSqrt(const Tensor &x);
Tensor mlSigmoid(const Tensor &x);
Tensor mlBinary(Op op, const Tensor &x, const Tensor &y);
Tensor mlWhere(const Tensor &x, const Tensor &y, const Tensor &z);
Tensor mlReduce(Op op, const Tensor &x, const Shape &newShape);
Tensor mlExpand(const Tensor &x, const Shape &shape);
Tensor mlReshape(const Tensor &x, const Shape &shape);
Tensor mlPermute(const Tensor &x, const std::vector<int64_t> &order);
Tensor mlPad(const Tensor &x, const PadArg &arg);
Tensor mlShrink(const Tensor &x, const PadArg &arg);
Tensor mlFlip(const Tensor &x, const std::vector<int64_t> &axis);

} // namespace lazyjit
