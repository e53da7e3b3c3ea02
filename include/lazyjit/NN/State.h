// Weights in and out: safetensors and NumPy .npy files, and loading a state dict into a model.
//
// safetensors: an 8-byte little-endian header length, a JSON header naming each tensor's dtype
// (F16 BF16 F32 F64 I8 I16 I32 I64 U8 U16 U32 U64 BOOL), shape and data_offsets, then the raw
// little-endian data. safeLoad maps the file and gives tensors that read their bytes only when
// they are realized (the reference's DISK tensors: a file region copied to its device).
// .npy: NumPy's format 1.0/2.0/3.0 header (a Python dict literal with descr, fortran_order and
// shape) and the raw data, for the dtypes NumPy and lazyjit share.
//
// Every malformed file (truncated, a header length beyond the file, bad JSON, an unknown dtype,
// offsets out of range or overlapping, sizes that overflow) is a ParseError naming the file and
// what is wrong; a file is never read outside its bounds.
#pragma once

#include "lazyjit/NN/Module.h"
#include "lazyjit/Tensor/Tensor.h"

#include <optional>
#include <string>

namespace lazyjit {

/// The tensors of a safetensors file, in the header's order (`__metadata__` is skipped), on
/// `device` (default: the default device). Nothing is read until a tensor is realized; the file
/// stays mapped while any of them is alive.
nn::StateDict safeLoad(const std::string &path, const std::optional<std::string> &device = std::nullopt);
/// Writes the tensors of `dict` (realizing them) in dict order.
void safeSave(const nn::StateDict &dict, const std::string &path);

/// A .npy file as a tensor (read when realized, like safeLoad).
Tensor npyLoad(const std::string &path, const std::optional<std::string> &device = std::nullopt);
/// Writes `t` (realized) as a C-order .npy file. bfloat16, which NumPy lacks, is an error.
void npySave(const Tensor &t, const std::string &path);

namespace nn {

/// Assigns `dict`'s tensors to the tensors of `own` with the same names (the model's own
/// tensors: see getStateDict). With `strict`, a key of `own` missing from `dict` or a key of
/// `dict` that `own` lacks is an error; a shape or dtype mismatch always is. Everything is
/// checked before anything is assigned: a failed load changes nothing.
void loadStateDictInto(const StateDict &own, const StateDict &dict, bool strict = true);

/// The reference's load_state_dict: `model`'s parameters and buffers take `dict`'s values.
template <typename T> void loadStateDict(T &model, const StateDict &dict, bool strict = true) {
  loadStateDictInto(getStateDict(model), dict, strict);
}

} // namespace nn
} // namespace lazyjit
