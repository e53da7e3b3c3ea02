// Valid-aware simplification of a buffer access's index: the code generator's own rewrite of the
// (index, valid) pair that a ShapeTracker produces, before it is rendered to IR.
//
// A view stack such as the reference's pool/unfold trick renders indices full of `//` and `%`
// whose carries are 0 whenever the access is valid, e.g.
//
//   idx   = ((((B//125)+A)//125 + n)%64)*10000 + ...      valid = (A<125) and (B<125) and ...
//
// Every conjunct `X < c` of the valid bounds X (and `-X < c` bounds it from below), so under the
// valid, X can be replaced by a variable of that narrower range and the symbolic algebra's own
// rules drop the carries (`X//125` -> 0, `(n)%64` -> n). The result equals the original index
// wherever the valid holds, which is the only place a gated load or a masked store uses it; the
// simplified valid is true exactly where the original is.
//
// This lives in CodeGen, not in the shared symbolic rules: the reference's renders (which tests
// assert exactly) and its view merging must not change.
#pragma once

#include "lazyjit/Graph/Symbolic.h"

namespace lazyjit {

struct SimplifiedIndex {
  NodeRef idx;
  NodeRef valid;
};

/// Simplifies `idx` under `valid`, and each conjunct of `valid` under the ones simpler than it.
/// Guarantees: valid' holds exactly where valid does, and idx' == idx wherever valid holds.
SimplifiedIndex simplifyUnderValid(const NodeRef &idx, const NodeRef &valid);

} // namespace lazyjit
