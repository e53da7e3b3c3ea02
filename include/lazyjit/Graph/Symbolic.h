// The symbolic index algebra: immutable nodes over integer variables, simplified on construction.
//
// This is the reference's shape/symbolic.py, ported rule for rule, because its simplifications
// decide view merging, real strides and the quality of every index expression. Values are
// Python-like: an `SInt` is either a plain integer or a Node (the reference's `sint`), and the
// operators on SInt dispatch exactly as Python's do (int op int, int op Node -> Node.__rop__,
// Node op x -> the node type's own rule). Comparisons return an SInt (0/1 or an LtNode), and
// `truthy()` is Python's bool().
//
// Node kinds (reference semantics, notes §4):
//  - Variable(expr, min, max): a named integer in [min, max]; `bind` returns a bound copy (the
//    reference mutates the variable; here no node ever changes after it is built).
//  - NumNode(b): a constant.
//  - MulNode(a, b), DivNode(a, b), ModNode(a, b), LtNode(a, b): binary nodes; b is an int, or a
//    Node for symbolic strides.
//  - SumNode(nodes), AndNode(nodes): n-ary; rendered with children sorted as strings.
// Equality is the reference's (equal DEBUG renders), decided by interned structure (see Node).
#pragma once

#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/SmallVector.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit {

class Node;
using NodeRef = std::shared_ptr<const Node>;

/// Python's `int | Node`.
class SInt {
public:
  SInt() = default;
  SInt(int v) : i(v) {}
  SInt(long v) : i(v) {}
  SInt(long long v) : i(static_cast<int64_t>(v)) {}
  SInt(unsigned v) : i(v) {}
  SInt(unsigned long v) : i(static_cast<int64_t>(v)) {}
  SInt(NodeRef node) : n(std::move(node)) {}

  bool isInt() const { return !n; }
  bool isNode() const { return static_cast<bool>(n); }
  /// The integer; throws if this is a node.
  int64_t asInt() const {
    if (n) [[unlikely]]
      throwNotInt();
    return i;
  }
  const NodeRef &node() const { return n; }
  /// The node, making a NumNode of an int.
  NodeRef toNode() const;

  /// The normal render (`((idx0*4)+idx1)`), or the integer.
  std::string render() const;
  /// Python's str(): ints as decimal, nodes as `<key>`.
  std::string str() const;

private:
  int64_t i = 0;
  NodeRef n;
  [[noreturn]] void throwNotInt() const;
};

/// A shape, its strides, or an index tuple: up to four dimensions without an allocation.
using Shape = SmallVector<SInt, 4>;

enum class NodeKind : uint8_t { Variable, Num, Mul, Div, Mod, Lt, Sum, And };

/// A node's identity: one interned object per equivalence class of structures, shared by every
/// live node of the class (defined in SymbolicNode.cpp).
class NodeClass;

/// An immutable symbolic expression. Fields are read-only after construction, and only the
/// factories below build nodes (the constructor takes a Token only they can make): they compute
/// the bounds by the reference's rules, and intern the node's identity.
///
/// Identity is structural and interned: two nodes are equal exactly when their DEBUG renders
/// (`key()`) are, but no string is built to decide it. Each node points to its NodeClass, found in
/// a table by (kind, value, name, bounds of a variable, the classes of its operands; a Sum's or
/// And's operands as a multiset, as their renders sort them). Nodes whose terms differ only in
/// order share a class and stay separate objects, because the simplification rules read terms in
/// order.
class Node : public std::enable_shared_from_this<Node> {
public:
  /// Everything a node holds; a factory fills it, bounds included.
  struct Init {
    NodeKind kind = NodeKind::Num;
    SInt min, max;
    std::optional<std::string> expr;
    int64_t num = 0;
    NodeRef a;
    SInt b;
    std::vector<NodeRef> nodes;
    std::optional<int64_t> val;
  };
  class Token {
    Token() = default;
    friend struct NodeFactory;
  };
  Node(Token, Init init, std::shared_ptr<const NodeClass> cls);
  ~Node();
  Node(const Node &) = delete;
  Node &operator=(const Node &) = delete;

  const NodeKind kind;
  const SInt min, max;
  // Variable
  const std::optional<std::string> expr;
  // NumNode value (kind Num); the `b` of binary nodes is `b` below.
  const int64_t num;
  // Mul/Div/Mod/Lt
  const NodeRef a;
  const SInt b;
  // Sum/And
  const std::vector<NodeRef> nodes;

  bool isNum() const { return kind == NodeKind::Num; }
  bool isVar() const { return kind == NodeKind::Variable; }

  /// The bound value of a Variable, if any.
  std::optional<int64_t> boundValue() const { return val; }
  /// A copy of this Variable bound to `v` (itself when it is already bound to `v`). This node does
  /// not change: expressions built over it keep their keys (the reference mutates the variable).
  NodeRef bind(int64_t v) const;
  /// An unbound copy of a bound Variable, and its value.
  std::pair<NodeRef, int64_t> unbindVar() const;

  /// The interned identity: equal for exactly the nodes whose keys are equal.
  const NodeClass *identity() const { return cls.get(); }
  /// DEBUG render: variables as `a[0-8]` or `a[0-8=3]` (what the reference compares).
  const std::string &key() const;
  /// Normal render, as in the reference's render_python with ctx=None.
  const std::string &render() const;
  /// Structural, deterministic across runs, equal for equal nodes.
  size_t hash() const;

  /// The Variables in this node (deduplicated, in first-seen order).
  std::vector<NodeRef> vars() const;
  /// Rebuilds the node with variables replaced (by key); the result is simplified again.
  NodeRef substitute(const std::map<std::string, NodeRef> &byKey) const;
  /// Replaces every bound variable with its unbound copy.
  NodeRef unbind() const;
  /// The flattened terms of a SumNode.
  std::vector<NodeRef> flatComponents() const;

  NodeRef self() const { return shared_from_this(); }

private:
  const std::optional<int64_t> val;
  const std::shared_ptr<const NodeClass> cls;
  mutable std::atomic<const std::string *> keyCache{nullptr};
  mutable std::atomic<const std::string *> renderCache{nullptr};
  std::string computeRender(bool debug) const;
};

/// Live identity classes (tests check that the table shrinks when nodes die).
size_t symbolicClassCount();

// ---- construction -------------------------------------------------------------------------

NodeRef numNode(int64_t v);
/// Variable(expr, min, max); returns a NumNode when min == max (as the reference does).
NodeRef variable(std::optional<std::string> expr, SInt min, SInt max);
/// Entries in the memo of sum * n, sum // n and sum % n (bounded at 65536; tests read it).
size_t symbolicMemoSize();
/// Node.sum: flattens, folds constants and groups equal terms.
NodeRef sumNodes(const std::vector<NodeRef> &nodes);
/// Node.ands.
NodeRef andNodes(const std::vector<NodeRef> &nodes);
/// create_rednode(SumNode | AndNode, nodes), no regrouping.
NodeRef createSumNode(const std::vector<NodeRef> &nodes);
NodeRef createAndNode(const std::vector<NodeRef> &nodes);
/// Direct constructors (no simplification, the reference's bounds), for the AST parser, which
/// rebuilds printed nodes as they are, and for tests that build nodes by hand. Div and Mod need a
/// nonnegative numerator and a positive divisor.
NodeRef rawMulNode(NodeRef a, SInt b);
NodeRef rawDivNode(NodeRef a, int64_t b);
NodeRef rawModNode(NodeRef a, int64_t b);
NodeRef rawLtNode(NodeRef a, SInt b);
NodeRef rawSumNode(const std::vector<NodeRef> &nodes);

// ---- Python-semantics operators on SInt ----------------------------------------------------

SInt operator+(const SInt &x, const SInt &y);
SInt operator-(const SInt &x, const SInt &y);
namespace sint_detail {
// The cases of `*`, `==` and bool() with a node (SymbolicOps.cpp): shapes and strides are nearly
// always plain integers, and those cases are inline.
SInt mulNode(const SInt &x, const SInt &y);
bool eqNode(const SInt &x, const SInt &y);
bool truthyNode(const SInt &x);
} // namespace sint_detail
inline SInt operator*(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return checkedMul(x.asInt(), y.asInt());
  return sint_detail::mulNode(x, y);
}
SInt operator-(const SInt &x);
/// Python `x // y`.
SInt floordiv(const SInt &x, const SInt &y);
/// Python `x % y`.
SInt mod(const SInt &x, const SInt &y);
/// Python comparisons: 0/1 for ints, a node (often folded to a NumNode) otherwise.
SInt lt(const SInt &x, const SInt &y);
SInt le(const SInt &x, const SInt &y);
SInt gt(const SInt &x, const SInt &y);
SInt ge(const SInt &x, const SInt &y);
/// Python `==` between int/Node values.
inline bool pyEq(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return x.asInt() == y.asInt();
  return sint_detail::eqNode(x, y);
}
inline bool pyNe(const SInt &x, const SInt &y) { return !pyEq(x, y); }
/// Python bool(): ints are true when nonzero; a node is false only when it is the constant 0.
inline bool truthy(const SInt &x) { return x.isInt() ? x.asInt() != 0 : sint_detail::truthyNode(x); }
/// Python builtins max(x, y) / min(x, y) over int/Node values.
SInt pyMax(const SInt &x, const SInt &y);
SInt pyMin(const SInt &x, const SInt &y);

/// The reference's sym_infer: substitutes the values and requires a constant.
int64_t symInfer(const SInt &x, const std::map<std::string, int64_t> &valuesByName);
/// Evaluates a node with integer values for its variables (by expr name); Python floor semantics.
int64_t evalNode(const Node &n, const std::map<std::string, int64_t> &valuesByName);

/// Strict structural identity of values: ints by value, nodes by identity (Python's == for Nodes).
inline bool operator==(const SInt &x, const SInt &y) { return pyEq(x, y); }
inline bool operator!=(const SInt &x, const SInt &y) { return !pyEq(x, y); }

bool allInt(const Shape &s);
/// The product of a shape (Python's prod, start 1).
SInt prod(const Shape &s);
int64_t prodInt(const Shape &s);
std::string renderShape(const Shape &s);
size_t hashSInt(const SInt &x);
size_t hashShape(const Shape &s);

} // namespace lazyjit
