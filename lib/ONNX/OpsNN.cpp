// ONNX ops: convolution, pooling, normalization, resize, losses.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

std::span<const OpDef> nnOps() { return {}; }

} // namespace lazyjit::onnx::ops
