// The kernel-AST verifier: checks the structural invariants every backend relies on, so that a
// hand-written or parsed AST is rejected with a message instead of miscompiling.
#pragma once

#include "lazyjit/Graph/LazyOp.h"

namespace lazyjit {

/// Checks that `ast` is a well-formed kernel AST and throws lazyjit::Error naming the broken rule
/// otherwise ("verifyAst: ..."):
///  - the root is the only STORE, and it writes MemBuffer idx 0;
///  - at most one distinct reduce (structurally equal reduces count once);
///  - the leaves are LOAD and CONST; no LazyBuffer sources, no movement or LoadOps inside;
///  - LOAD buffer indices are dense 1..n, and one index always has one dtype;
///  - arity per op class: unary 1, binary 2, WHERE/MULACC 3, reduce 1, LOAD/CONST 0, STORE 1;
///  - each op carries its argument kind (MemBuffer, ConstBuffer, CastArg, reduce shape);
///  - shapes agree: elementwise operands have equal shapes, a reduce's output shape has the
///    rank of its input with each dim equal or 1, and the STORE's shape is its operand's shape;
///  - every ShapeTracker has at least one view, and all of them have the same rank.
void verifyAst(const LazyOp &ast);

} // namespace lazyjit
