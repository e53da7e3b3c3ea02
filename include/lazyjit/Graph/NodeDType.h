// The dtype a kernel AST node computes: one rule, read by the FlopCounter (getLazyOpInfo), the
// code generator and the reference interpreter.
#pragma once

#include "lazyjit/Graph/LazyOp.h"

#include <optional>
#include <span>
#include <unordered_map>

namespace lazyjit {

/// The dtype of `op` given its operands' dtypes (in `op.src` order): a buffer node's own (a
/// STORE's is the buffer's), CAST's target, a binary op's operands promoted, WHERE's and MULACC's
/// values promoted, and the operand's for the other unary ops, reduces and a row kernel's EXPAND.
/// Empty for ops a kernel cannot contain (movement ops other than EXPAND, load ops).
std::optional<DType> kernelNodeDType(const LazyOp &op, std::span<const DType> srcs);

/// kernelNodeDType over a kernel AST, each node once (the code generator's and the interpreter's
/// memo; the FlopCounter computes it beside its other counts).
class KernelDTypes {
public:
  /// The dtype of `op`; empty when its tree holds an op a kernel cannot contain, which `*bad`
  /// then points to.
  std::optional<DType> of(const LazyOp &op, const LazyOp **bad = nullptr);

private:
  std::unordered_map<const LazyOp *, DType> memo;
};

} // namespace lazyjit
