// The short text forms that messages and dumps use for shapes and ops: `[4, n[1-8]]`,
// `float32[4, 6]`, and an op's name without its class (`ADD` for `BinaryOps.ADD`). The
// reference's own forms are elsewhere: renderShape (Symbolic.h) prints Python's `(4, 6)`, opName
// (Ops.h) the full `BinaryOps.ADD`.
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Graph/Ops.h"
#include "lazyjit/Graph/Symbolic.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit {

/// `[4, 6]`; a symbolic dimension is rendered as the symbolic algebra renders it (`n[1-8]`).
std::string shapeText(const Shape &s);
std::string shapeText(const std::vector<int64_t> &s);
/// `float32[4, 6]`: how messages name a tensor or a buffer.
std::string typedShapeText(DType dt, const Shape &s);
std::string typedShapeText(DType dt, const std::vector<int64_t> &s);
/// The op's name without its class: `ADD` for `BinaryOps.ADD`, `CONST` for `LoadOps.CONST`.
std::string_view opShortName(Op op);

} // namespace lazyjit
