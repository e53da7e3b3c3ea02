// The dtype a kernel AST node computes: one rule, read by the kernel IR when a node is built
// (KernelOp::kernelDType), and through it by the FlopCounter, the code generator and the
// reference interpreter.
#pragma once

#include "lazyjit/Schedule/KernelOp.h"

#include <optional>
#include <span>

namespace lazyjit {

/// The dtype of a node `op` with argument `arg` given its operands' dtypes (in source order): a
/// buffer node's own (a STORE's is the buffer's), CAST's target, a binary op's operands promoted,
/// WHERE's and MULACC's values promoted, and the operand's for the other unary ops, reduces and a
/// row kernel's EXPAND. Empty for ops a kernel cannot contain (movement ops other than EXPAND,
/// load ops) and for an argument of the wrong kind.
std::optional<DType> kernelNodeDType(Op op, const LazyOpArg &arg, std::span<const DType> srcs);

/// The dtype of a kernel AST node (KernelOp::kernelDType, computed when the node was built); empty
/// when its tree holds a malformed node, which `*bad` then points to: the first such node in
/// post-order.
std::optional<DType> kernelDTypeOf(const KernelOp &op, const KernelOp **bad = nullptr);

} // namespace lazyjit
