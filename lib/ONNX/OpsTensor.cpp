// ONNX ops: slicing, splitting, gathers and scatters, padding, tiling, index generation.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

std::span<const OpDef> tensorOps() { return {}; }

} // namespace lazyjit::onnx::ops
