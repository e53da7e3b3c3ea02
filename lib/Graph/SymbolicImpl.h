// Inside the symbolic algebra: the node factory and the rules the operator files share.
//
// Only these functions build nodes (Node's constructor takes a token only NodeFactory makes):
// the raw constructors compute the reference's bounds, `createNode` folds a node whose bounds
// meet, and NodeFactory interns the node's identity (SymbolicNode.cpp).
#pragma once

#include "lazyjit/Graph/Symbolic.h"

#include <string>
#include <utility>
#include <vector>

namespace lazyjit {

struct NodeFactory {
  /// Builds the node from complete fields, bounds included, and gives it its interned identity.
  static NodeRef build(Node::Init init);
};

namespace symbolic {

[[noreturn]] void notSupported(const std::string &what);
const NodeRef &asNode(const SInt &x);
inline bool isKind(const SInt &x, NodeKind k) { return x.isNode() && x.node()->kind == k; }

/// create_node: a node whose bounds meet becomes a NumNode.
NodeRef createNode(NodeRef ret);
/// MulNode/DivNode/ModNode/LtNode/SumNode/AndNode with the reference's bounds, unsimplified.
NodeRef newMul(NodeRef a, SInt b);
NodeRef newDiv(NodeRef a, int64_t b);
NodeRef newMod(NodeRef a, int64_t b);
NodeRef newLt(NodeRef a, SInt b);
NodeRef newSum(std::vector<NodeRef> nodes);
NodeRef newAnd(std::vector<NodeRef> nodes);

/// The terms of `nodes` with every SumNode replaced by its flattened terms.
std::vector<NodeRef> flattenSums(const std::vector<NodeRef> &nodes);

// The node methods the Python operators dispatch to (Symbolic.cpp).
NodeRef nodeAdd(const NodeRef &self, const SInt &b);
NodeRef nodeNeg(const NodeRef &self);
NodeRef nodeMul(const NodeRef &self, const SInt &b);
NodeRef nodeFloorDiv(const NodeRef &self, const SInt &b);
NodeRef nodeMod(const NodeRef &self, const SInt &b);
NodeRef nodeLt(const NodeRef &self, const SInt &b);
/// int // Node and int % Node.
NodeRef nodeRFloorDiv(const NodeRef &self, int64_t b);
NodeRef nodeRMod(const NodeRef &self, int64_t b);

} // namespace symbolic
} // namespace lazyjit
