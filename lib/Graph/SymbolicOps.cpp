// The Python operators on SInt (int op int, int op Node -> the node's reflected method, Node op x
// -> the node type's own rule) and the functions over values and shapes built on them.
#include "SymbolicImpl.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>

namespace lazyjit {

using namespace symbolic;

SInt operator+(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return checkedAdd(x.asInt(), y.asInt());
  if (x.isInt()) return nodeAdd(y.node(), x); // Node.__radd__
  return nodeAdd(x.node(), y);
}

SInt operator-(const SInt &x) {
  if (x.isInt()) return checkedNeg(x.asInt());
  return nodeNeg(x.node());
}

SInt operator-(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return checkedSub(x.asInt(), y.asInt());
  if (x.isInt()) return nodeAdd(nodeNeg(y.node()), x); // Node.__rsub__: -self + b
  return nodeAdd(x.node(), -y);                        // Node.__sub__: self + -b
}

SInt sint_detail::mulNode(const SInt &x, const SInt &y) {
  if (x.isInt()) return nodeMul(y.node(), x); // Node.__rmul__
  return nodeMul(x.node(), y);
}

SInt floordiv(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) {
    LAZYJIT_USER_CHECK(y.asInt() != 0, UnsupportedError, "symbolic: integer division by zero");
    return floorDiv(x.asInt(), y.asInt());
  }
  if (x.isInt()) return nodeRFloorDiv(y.node(), x.asInt());
  return nodeFloorDiv(x.node(), y);
}

SInt mod(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) {
    LAZYJIT_USER_CHECK(y.asInt() != 0, UnsupportedError, "symbolic: integer modulo by zero");
    return floorMod(x.asInt(), y.asInt());
  }
  if (x.isInt()) return nodeRMod(y.node(), x.asInt());
  return nodeMod(x.node(), y);
}

// Node.__gt__(b): (-self) < (-b)
static SInt nodeGt(const NodeRef &self, const SInt &b) { return nodeLt(nodeNeg(self), -b); }
// Node.__ge__(b): (-self) < (-b+1)
static SInt nodeGe(const NodeRef &self, const SInt &b) { return nodeLt(nodeNeg(self), -b + 1); }
// Node.__le__(b): self < (b+1)
static SInt nodeLe(const NodeRef &self, const SInt &b) { return nodeLt(self, b + 1); }

SInt lt(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return x.asInt() < y.asInt() ? 1 : 0;
  if (x.isInt()) return nodeGt(y.node(), x); // reflected
  return nodeLt(x.node(), y);
}
SInt gt(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return x.asInt() > y.asInt() ? 1 : 0;
  if (x.isInt()) return nodeLt(y.node(), x);
  return nodeGt(x.node(), y);
}
SInt le(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return x.asInt() <= y.asInt() ? 1 : 0;
  if (x.isInt()) return nodeGe(y.node(), x);
  return nodeLe(x.node(), y);
}
SInt ge(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return x.asInt() >= y.asInt() ? 1 : 0;
  if (x.isInt()) return nodeLe(y.node(), x);
  return nodeGe(x.node(), y);
}

bool sint_detail::eqNode(const SInt &x, const SInt &y) {
  if (x.isInt()) return y.node()->isNum() && y.node()->num == x.asInt();
  if (y.isInt()) return x.node()->isNum() && x.node()->num == y.asInt();
  const Node &a = *x.node(), &b = *y.node();
  if (a.isNum()) return b.isNum() && a.num == b.num; // NumNode.__eq__: self.b == other
  if (b.isNum()) return false;
  return a.identity() == b.identity();
}

bool sint_detail::truthyNode(const SInt &x) {
  const Node &n = *x.node();
  return !(pyEq(n.max, n.min) && pyEq(n.min, 0));
}

SInt pyMax(const SInt &x, const SInt &y) { return truthy(gt(y, x)) ? y : x; }
SInt pyMin(const SInt &x, const SInt &y) { return truthy(lt(y, x)) ? y : x; }

int64_t symInfer(const SInt &x, const std::map<std::string, int64_t> &valuesByName) {
  if (x.isInt()) return x.asInt();
  std::map<std::string, NodeRef> m;
  for (const auto &v : x.node()->vars()) {
    auto it = valuesByName.find(v->expr ? *v->expr : "None");
    if (it != valuesByName.end()) m.emplace(v->key(), numNode(it->second));
  }
  NodeRef r = x.node()->substitute(m);
  LAZYJIT_USER_CHECK(r->isNum(), Error, "sym_infer: {} does not become a constant",
                     x.node()->render());
  return r->num;
}

int64_t evalNode(const Node &n, const std::map<std::string, int64_t> &valuesByName) {
  auto ev = [&](const SInt &s) { return s.isInt() ? s.asInt() : evalNode(*s.node(), valuesByName); };
  switch (n.kind) {
  case NodeKind::Variable: {
    auto it = valuesByName.find(n.expr ? *n.expr : "None");
    LAZYJIT_USER_CHECK(it != valuesByName.end(), Error, "no value for variable {}", n.key());
    return it->second;
  }
  case NodeKind::Num: return n.num;
  case NodeKind::Mul: return checkedMul(evalNode(*n.a, valuesByName), ev(n.b));
  case NodeKind::Div: return floorDiv(evalNode(*n.a, valuesByName), ev(n.b));
  case NodeKind::Mod: return floorMod(evalNode(*n.a, valuesByName), ev(n.b));
  case NodeKind::Lt: return evalNode(*n.a, valuesByName) < ev(n.b) ? 1 : 0;
  case NodeKind::Sum: {
    int64_t s = 0;
    for (const auto &x : n.nodes) s = checkedAdd(s, evalNode(*x, valuesByName));
    return s;
  }
  case NodeKind::And: {
    for (const auto &x : n.nodes)
      if (!evalNode(*x, valuesByName)) return 0;
    return 1;
  }
  }
  return 0;
}

bool allInt(const Shape &s) {
  return std::all_of(s.begin(), s.end(), [](const SInt &x) { return x.isInt(); });
}

SInt prod(const Shape &s) {
  SInt p = 1;
  for (const auto &x : s) p = p * x;
  return p;
}

int64_t prodInt(const Shape &s) {
  int64_t p = 1;
  for (const auto &x : s) p = checkedMul(p, x.asInt());
  return p;
}

std::string renderShape(const Shape &s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].render();
  if (s.size() == 1) out += ",";
  return out + ")";
}

size_t hashSInt(const SInt &x) {
  // A NumNode hashes like its int so that values that compare equal hash equal.
  if (x.isInt()) return std::hash<int64_t>{}(x.asInt());
  if (x.node()->isNum()) return std::hash<int64_t>{}(x.node()->num);
  return x.node()->hash();
}

size_t hashShape(const Shape &s) {
  size_t h = s.size();
  for (const auto &x : s) hashCombine(h, hashSInt(x));
  return h;
}

} // namespace lazyjit
