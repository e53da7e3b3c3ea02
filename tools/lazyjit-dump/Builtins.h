// The builtin objects of the script language (Tensor, Variable, dtypes, nn) and the Tensor method
// table shared by the evaluator and the name checker.
#pragma once

#include "Value.h"

namespace lazyjit::script {

bool isTensorMethod(std::string_view name);
/// Attributes read without a call: T, shape, dtype, ndim, device.
bool isTensorProperty(std::string_view name);
Value callTensorMethod(Tensor &&self, const std::string &name, CallArgs &args);
Value getTensorProperty(Tensor &&self, const std::string &name);
/// Takes the keyword-only `dtype=` and `device=` arguments of creation functions.
TensorOptions tensorOptions(CallArgs &args);

} // namespace lazyjit::script
