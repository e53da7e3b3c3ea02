// ONNX ops outside the default domain: the training domain (ai.onnx.preview.training), the
// classic-ML domain (ai.onnx.ml) and the contrib ops ONNX Runtime's exporters write
// (com.microsoft).
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

std::span<const OpDef> domainOps() { return {}; }

} // namespace lazyjit::onnx::ops
