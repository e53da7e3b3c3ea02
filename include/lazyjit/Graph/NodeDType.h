// The dtype a kernel AST node computes: one rule, read by the FlopCounter (getLazyOpInfo), the
// code generator and the reference interpreter.
#pragma once

#include "lazyjit/Graph/LazyOp.h"

#include <optional>
#include <span>

namespace lazyjit {

/// The dtype of `op` given its operands' dtypes (in `op.src` order): a buffer node's own (a
/// STORE's is the buffer's), CAST's target, a binary op's operands promoted, WHERE's and MULACC's
/// values promoted, and the operand's for the other unary ops, reduces and a row kernel's EXPAND.
/// Empty for ops a kernel cannot contain (movement ops other than EXPAND, load ops).
std::optional<DType> kernelNodeDType(const LazyOp &op, std::span<const DType> srcs);

/// The dtype of a kernel AST node (LazyOp::kernelDType, computed when the node was built); empty
/// when its tree holds an op a kernel cannot contain (or a node built malformed), which `*bad` then
/// points to: the first such node in post-order.
std::optional<DType> kernelDTypeOf(const LazyOp &op, const LazyOp **bad = nullptr);

} // namespace lazyjit
