// ONNX ops: unary and binary math, comparisons and logic, reductions and arg-reductions.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

std::span<const OpDef> mathOps() { return {}; }

} // namespace lazyjit::onnx::ops
