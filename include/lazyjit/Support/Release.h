// Releasing long ownership chains without recursion.
#pragma once

#include <memory>

namespace lazyjit {

/// Drops `p`. A lazy graph (LazyBuffer -> LazyOp -> LazyBuffer ...) and an autograd graph
/// (Tensor -> Function -> parent Tensor ...) can be tens of thousands of nodes deep; freeing one
/// through nested destructors overflows the stack. Destructors of such nodes hand their owning
/// pointers here instead: while a release is already running on this thread the pointer is queued,
/// and the outermost call frees the queue one node at a time, so the stack stays flat.
void deferRelease(std::shared_ptr<const void> p) noexcept;

} // namespace lazyjit
