// The kernel-AST verifier: checks the structural invariants every backend relies on, so that a
// hand-written or parsed AST is rejected with a message instead of miscompiling.
#pragma once

#include "lazyjit/Schedule/KernelOp.h"

#include <map>
#include <string>

namespace lazyjit {

/// The values each variable (by name) may take in a bounds proof: [lo, hi].
using VarRanges = std::map<std::string, std::pair<int64_t, int64_t>>;

/// The ranges the AST's variables declare (every value they may take).
VarRanges declaredRanges(const KernelOp &ast);

/// The element indices a view stack may access, as [lo, hi] (lo > hi when it accesses nothing),
/// proven from each view's shape, strides, offset and mask and the variables' ranges. Every view
/// below the last one wraps its coordinates (exprNodeOfView takes each one modulo its dim), so
/// only its mask and strides bound what it reads. Throws Error when a view below the last one may
/// be given a negative element index, or when the index arithmetic may overflow 64 bits.
std::pair<int64_t, int64_t> accessRange(const ShapeTracker &st, const VarRanges &ranges);

/// For each buffer of the AST (0 is the output), the element count its accesses need; throws
/// Error when an access may be negative.
std::map<int, int64_t> requiredSizes(const KernelOp &ast, const VarRanges &ranges);

/// verifyAst, then a proof that every access stays inside `sizes` (elements per buffer index):
/// throws Error naming the buffer, its view and the index range otherwise.
void verifyAstBounds(const KernelOp &ast, const std::map<int, int64_t> &sizes, const VarRanges &ranges);

/// Checks that `ast` is a well-formed kernel AST and throws lazyjit::Error naming the broken rule
/// otherwise ("verifyAst: ..."):
///  - the root is the only STORE, and it writes MemBuffer idx 0;
///  - at most one distinct reduce (structurally equal reduces count once), unless the kernel is a
///    row kernel (OPT=5): its EXPAND nodes all broadcast one row shape back to the STORE's shape,
///    and every reduce goes from the STORE's shape to that row shape;
///  - the leaves are LOAD and CONST; no LoadOps (KernelOp::make refuses them) and no movement op but
///    a row kernel's EXPAND inside;
///  - LOAD buffer indices are dense 1..n, and one index always has one dtype;
///  - arity per op class: unary 1, binary 2, WHERE/MULACC 3, reduce 1, LOAD/CONST 0, STORE 1;
///  - each op carries its argument kind (MemBuffer, ConstBuffer, CastArg, reduce shape);
///  - shapes agree: elementwise operands have equal shapes, a reduce's output shape has the
///    rank of its input with each dim equal or 1, and the STORE's shape is its operand's shape;
///  - every ShapeTracker has at least one view, and all of them have the same rank;
///  - no dimension may be negative, and a view is marked contiguous exactly when its strides,
///    offset and mask are the contiguous layout of its shape (kernels trust the flag).
void verifyAst(const KernelOp &ast);

} // namespace lazyjit
