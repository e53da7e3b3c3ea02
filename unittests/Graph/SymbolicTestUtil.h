// Helpers shared by the symbolic-algebra and ShapeTracker tests: variables, NumNodes, and the
// reference's Variable.sum / Variable.ands.
#pragma once

#include "lazyjit/Graph/Symbolic.h"

#include <initializer_list>
#include <vector>

namespace lazyjit::testing {

inline SInt var(const char *name, int64_t lo, int64_t hi) { return variable(name, lo, hi); }
inline SInt num(int64_t v) { return numNode(v); }

/// Variable.sum([...]).
inline SInt sumOf(std::initializer_list<SInt> xs) {
  std::vector<NodeRef> nodes;
  for (const auto &x : xs) nodes.push_back(x.toNode());
  return sumNodes(nodes);
}

/// Variable.ands([...]).
inline SInt andOf(std::initializer_list<SInt> xs) {
  std::vector<NodeRef> nodes;
  for (const auto &x : xs) nodes.push_back(x.toNode());
  return andNodes(nodes);
}

inline bool isKind(const SInt &x, NodeKind k) { return x.isNode() && x.node()->kind == k; }

} // namespace lazyjit::testing
