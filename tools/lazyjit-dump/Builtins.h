// The builtin objects of the script language (Tensor, Variable, dtypes, nn) and the Tensor method
// table shared by the evaluator and the name checker, and the helpers the nn, optim and state
// builtins share.
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
/// A tensor's subscript `x[a, b]` as the list of its items: `x[(a, b)]` is `x[a, b]`, and a list
/// that is not all ints is an index list too (the reference's __getitem__); a list of ints stays
/// one integer-tensor index. Shared by the subscript syntax and `x.__getitem__(index)`.
void spreadIndexSequence(std::vector<Value> &items);
/// The Tensor indices of subscript items: slices, ints, None, ..., tensors, (nested) int lists
/// (an int32 tensor on `device`).
std::vector<Index> tensorIndices(const std::vector<Value> &items, const std::string &device);
/// `self[items] = v` (the subscript assignment and `x.__setitem__(index, v)`): `v` a Tensor or a
/// number.
void setTensorItem(Tensor &self, std::vector<Value> items, const Value &v);

// ---- shared by the nn builtins (NNBuiltins.cpp) and the optim/state ones (OptimStateBuiltins.cpp)

/// Parameter `i`/`name` of a call as a double or a bool; `dflt` when it is not given.
double doubleArg(CallArgs &a, size_t i, std::string_view name, double dflt);
bool boolArg(CallArgs &a, size_t i, std::string_view name, bool dflt);
/// The layer's tensors by their state-dict names ("weight", "running_mean"), as references.
void visitLayerTensors(const LayerV &l,
                       const std::function<void(const std::string &, Tensor &)> &f);
/// Constructs `optim.<cls>(params, ...)` for a class of optimClasses().
OptimV makeOptim(const std::string &cls, CallArgs &a);

} // namespace lazyjit::script
