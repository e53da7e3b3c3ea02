// ONNX ops: quantization, recurrent nets (RNN, GRU, LSTM), control flow.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

std::span<const OpDef> extraOps() { return {}; }

} // namespace lazyjit::onnx::ops
