// The IDX file format (MNIST, Fashion-MNIST): a big-endian header (two zero bytes, a type code,
// the number of dims, one 32-bit size per dim) followed by the values in row-major order. Plain
// and gzip-compressed files are both read.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <optional>
#include <string>

namespace lazyjit::nn {

/// Reads an IDX file (optionally gzip-compressed) into a realized tensor of its dtype (uint8,
/// int8, int16, int32, float32 or float64) and shape. A missing, truncated or malformed file is
/// an Error naming the file and what is wrong.
Tensor loadIDX(const std::string &path, const std::optional<std::string> &device = std::nullopt);

} // namespace lazyjit::nn
