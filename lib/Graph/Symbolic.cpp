// The symbolic algebra, a rule-for-rule port of the reference's shape/symbolic.py.
//
// Every Python method becomes a function named after the node type whose override it is
// (`mulFloorDiv` is MulNode.__floordiv__), and every Python operator becomes a call of the SInt
// operators, which dispatch like Python (int op Node goes to the node's reflected method). Keep the
// order of the rules: it decides which simplification fires.
#include "lazyjit/Graph/Symbolic.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace lazyjit {

namespace {

[[noreturn]] void notSupported(const std::string &what) {
  throw UnsupportedError("symbolic: not supported: " + what);
}

NodeRef make(NodeKind k, auto &&init) {
  auto n = std::make_shared<Node>(k);
  init(*n);
  return n;
}

const NodeRef &asNode(const SInt &x) {
  LAZYJIT_INTERNAL_CHECK(x.isNode(), "symbolic: expected a node");
  return x.node();
}

bool isKind(const SInt &x, NodeKind k) { return x.isNode() && x.node()->kind == k; }

// create_node: fold a node whose bounds meet into a NumNode.
NodeRef createNode(NodeRef ret) {
  LAZYJIT_INTERNAL_CHECK(truthy(le(ret->min, ret->max)), "symbolic: min greater than max");
  if (pyEq(ret->min, ret->max)) {
    LAZYJIT_INTERNAL_CHECK(ret->min.isInt(), "symbolic: node bounds are equal but not constant");
    return numNode(ret->min.asInt());
  }
  return ret;
}

// ---- raw constructors with the reference's bounds ----------------------------------------------

// The integer range of a value whose bounds may themselves be symbolic.
std::pair<int64_t, int64_t> intBounds(const SInt &x) {
  if (x.isInt()) return {x.asInt(), x.asInt()};
  return {intBounds(x.node()->min).first, intBounds(x.node()->max).second};
}

NodeRef newMul(NodeRef a, SInt b) {
  return make(NodeKind::Mul, [&](Node &n) {
    n.a = std::move(a);
    n.b = std::move(b);
    if (n.b.isNode() && intBounds(n.b).first < 0) {
      // The reference's sign test (`b >= 0` on a node is true unless provably false) takes the
      // positive branch for a symbolic factor that may be negative, which swaps the bounds
      // (found by fuzz-symbolic). Decide by the factor's integer range instead.
      auto [bl, bh] = intBounds(n.b);
      if (bh <= 0) {
        n.min = n.a->max * n.b;
        n.max = n.a->min * n.b;
      } else {
        auto [al, ah] = intBounds(SInt(n.a));
        int64_t c[4] = {checkedMul(al, bl), checkedMul(al, bh), checkedMul(ah, bl), checkedMul(ah, bh)};
        n.min = *std::min_element(c, c + 4);
        n.max = *std::max_element(c, c + 4);
      }
    } else if (truthy(ge(n.b, 0))) {
      n.min = n.a->min * n.b;
      n.max = n.a->max * n.b;
    } else {
      n.min = n.a->max * n.b;
      n.max = n.a->min * n.b;
    }
  });
}

NodeRef newDiv(NodeRef a, int64_t b) {
  return make(NodeKind::Div, [&](Node &n) {
    n.a = std::move(a);
    n.b = b;
    LAZYJIT_INTERNAL_CHECK(truthy(ge(n.a->min, 0)), "symbolic: DivNode of a negative numerator");
    n.min = floordiv(n.a->min, b);
    n.max = floordiv(n.a->max, b);
  });
}

NodeRef newMod(NodeRef a, int64_t b) {
  return make(NodeKind::Mod, [&](Node &n) {
    n.a = std::move(a);
    n.b = b;
    const SInt &amin = n.a->min, &amax = n.a->max;
    LAZYJIT_INTERNAL_CHECK(truthy(ge(amin, 0)), "symbolic: ModNode of a negative numerator");
    bool full = truthy(ge(amax - amin, b)) ||
                (pyNe(amin, amax) && truthy(ge(mod(amin, b), mod(amax, b))));
    if (full) {
      n.min = 0;
      n.max = b - 1;
    } else {
      n.min = mod(amin, b);
      n.max = mod(amax, b);
    }
  });
}

NodeRef newLt(NodeRef a, SInt b) {
  return make(NodeKind::Lt, [&](Node &n) {
    n.a = std::move(a);
    n.b = std::move(b);
    SInt bmin = n.b.isInt() ? n.b : n.b.node()->min;
    SInt bmax = n.b.isInt() ? n.b : n.b.node()->max;
    if (truthy(lt(n.a->max, bmin))) {
      n.min = 1;
      n.max = 1;
    } else if (truthy(ge(n.a->min, bmax))) {
      n.min = 0;
      n.max = 0;
    } else {
      n.min = 0;
      n.max = 1;
    }
  });
}

NodeRef newRed(NodeKind k, std::vector<NodeRef> nodes) {
  return make(k, [&](Node &n) { n.nodes = std::move(nodes); });
}

// ---- the memo of SumNode.__mul__/__floordiv__/__mod__ (the reference's lru_cache) ----------------

constexpr size_t kSumMemoLimit = size_t(1) << 16;

struct SumMemo {
  std::mutex mu;
  std::unordered_map<std::string, NodeRef> map;
};
SumMemo &sumMemo() {
  static SumMemo *m = new SumMemo(); // never destroyed: nodes may outlive static destruction
  return *m;
}
std::string memoKey(char op, const Node &self, const SInt &b, bool fa) {
  std::string k;
  k.reserve(self.key().size() + 16);
  k += op;
  k += fa ? '1' : '0';
  k += b.isInt() ? "i" + std::to_string(b.asInt()) : "n" + b.node()->key();
  k += '|';
  k += self.key();
  return k;
}
} // namespace

size_t symbolicMemoSize() {
  std::lock_guard lock(sumMemo().mu);
  return sumMemo().map.size();
}

namespace {
template <typename F> NodeRef memoized(char op, const Node &self, const SInt &b, bool fa, F &&f) {
  std::string k = memoKey(op, self, b, fa);
  {
    std::lock_guard lock(sumMemo().mu);
    auto it = sumMemo().map.find(k);
    if (it != sumMemo().map.end()) return it->second;
  }
  NodeRef r = f();
  std::lock_guard lock(sumMemo().mu);
  // bounded (the reference's lru_cache is not): a long-running process that keeps building new
  // expressions would otherwise grow without end (the symbolic fuzz target reached 2 GB in 30
  // minutes). Results are pure functions of the key, so starting over changes no result.
  if (sumMemo().map.size() >= kSumMemoLimit) sumMemo().map.clear();
  return sumMemo().map.emplace(std::move(k), r).first->second;
}

// ---- forward declarations of the dispatching methods ------------------------------------------

NodeRef nodeMul(const NodeRef &self, const SInt &b);
NodeRef nodeFloorDiv(const NodeRef &self, const SInt &b);
NodeRef nodeFloorDivFA(const NodeRef &self, const SInt &b, bool factoringAllowed);
NodeRef nodeMod(const NodeRef &self, const SInt &b);
NodeRef nodeLt(const NodeRef &self, const SInt &b);
NodeRef genericFloorDiv(const NodeRef &self, const SInt &b, bool fa);
NodeRef genericMod(const NodeRef &self, const SInt &b);
NodeRef genericLt(const NodeRef &self, const SInt &b) { return createNode(newLt(self, b)); }

// Node.__add__
NodeRef nodeAdd(const NodeRef &self, const SInt &b) { return sumNodes({self, b.toNode()}); }

// ---- Node.__mul__ and overrides ----------------------------------------------------------------

NodeRef genericMul(const NodeRef &self, const SInt &b) {
  if (pyEq(b, 0)) return numNode(0);
  if (pyEq(b, 1)) return self;
  if (self->isNum()) {
    if (b.isInt()) return numNode(checkedMul(self->num, b.asInt()));
    return nodeMul(b.node(), self->num);
  }
  if (isKind(b, NodeKind::Num)) return createNode(newMul(self, b.node()->num));
  return createNode(newMul(self, b));
}

// MulNode.__mul__: two muls in one mul.
NodeRef mulMul(const NodeRef &self, const SInt &b) { return asNode(SInt(self->a) * (self->b * b)); }

// SumNode.__mul__: distribute the mul into the sum.
NodeRef sumMul(const NodeRef &self, const SInt &b) {
  return memoized('*', *self, b, true, [&] {
    std::vector<NodeRef> terms;
    for (const auto &x : self->nodes) terms.push_back(nodeMul(x, b));
    return sumNodes(terms);
  });
}

NodeRef nodeMul(const NodeRef &self, const SInt &b) {
  switch (self->kind) {
  case NodeKind::Mul: return mulMul(self, b);
  case NodeKind::Sum: return sumMul(self, b);
  case NodeKind::Variable:
  case NodeKind::Num:
  case NodeKind::Div:
  case NodeKind::Mod:
  case NodeKind::Lt:
  case NodeKind::And: return genericMul(self, b);
  }
  LAZYJIT_INTERNAL_CHECK(false, "symbolic: bad node kind");
}

// ---- Node.__floordiv__ and overrides -----------------------------------------------------------

NodeRef genericFloorDiv(const NodeRef &self, const SInt &b, bool fa) {
  if (b.isNode()) {
    if (b.node()->isNum()) return nodeFloorDiv(self, b.node()->num);
    if (pyEq(self, b)) return numNode(1);
    if (truthy(gt(asNode(b - self)->min, 0)) && truthy(ge(self->min, 0))) return numNode(0);
    notSupported(self->render() + " // " + b.render());
  }
  int64_t bi = b.asInt();
  LAZYJIT_USER_CHECK(bi != 0, UnsupportedError, "symbolic: division by zero in {} // 0",
                     self->render());
  if (bi < 0) return asNode(SInt(nodeFloorDiv(self, -bi)) * -1);
  if (bi == 1) return self;
  if (truthy(lt(self->min, 0))) {
    SInt offset = floordiv(self->min, bi);
    NodeRef shifted = asNode(SInt(self) + (-offset) * bi);
    return asNode(SInt(nodeFloorDivFA(shifted, bi, false)) + offset);
  }
  return createNode(newDiv(self, bi));
}

NodeRef mulFloorDiv(const NodeRef &self, const SInt &b, bool fa) {
  if (pyEq(mod(self->b, b), 0)) return asNode(SInt(self->a) * floordiv(self->b, b));
  if (pyEq(mod(b, self->b), 0) && truthy(gt(self->b, 0)))
    return nodeFloorDiv(self->a, floordiv(b, self->b));
  return genericFloorDiv(self, b, fa);
}

NodeRef modFloorDiv(const NodeRef &self, const SInt &b, bool fa) {
  if (pyEq(mod(self->b, b), 0))
    return asNode(mod(SInt(nodeFloorDiv(self->a, b)), floordiv(self->b, b)));
  return genericFloorDiv(self, b, fa);
}

NodeRef sumFloorDiv(const NodeRef &self, const SInt &b, bool fa) {
  return memoized('/', *self, b, fa, [&]() -> NodeRef {
    std::vector<NodeRef> fully, rest;
    if (isKind(b, NodeKind::Sum)) {
      int64_t nu = 0, de = 0;
      for (const auto &x : self->flatComponents())
        if (x->isNum()) nu = checkedAdd(nu, x->num);
      for (const auto &x : b.node()->flatComponents())
        if (x->isNum()) de = checkedAdd(de, x->num);
      if (nu > 0 && de != 0) {
        int64_t d = floorDiv(nu, de);
        if (d > 0) return asNode(SInt(numNode(d)) + floordiv(SInt(self) - b * d, b));
      }
    }
    if (b.isNode()) {
      for (const auto &x : self->flatComponents()) {
        if (pyEq(SInt(nodeMod(x, b)), 0))
          fully.push_back(nodeFloorDiv(x, b));
        else
          rest.push_back(x);
      }
      NodeRef sfd = createSumNode(fully);
      if (pyNe(sfd, 0)) return asNode(SInt(sfd) + floordiv(createSumNode(rest), b));
      return genericFloorDiv(self, b, false);
    }
    int64_t bi = b.asInt();
    if (bi == 1) return self;
    if (!fa) return genericFloorDiv(self, b, fa);
    int64_t g = bi, divisor = 1;
    for (const auto &x : self->flatComponents()) {
      if (x->isNum() || x->kind == NodeKind::Mul) {
        SInt xb = x->isNum() ? SInt(x->num) : x->b;
        if (pyEq(mod(xb, bi), 0)) {
          fully.push_back(nodeFloorDiv(x, bi));
        } else {
          rest.push_back(x);
          if (xb.isInt()) {
            g = gcd64(g, xb.asInt());
            if (x->kind == NodeKind::Mul && divisor == 1 && floorMod(bi, xb.asInt()) == 0)
              divisor = xb.asInt();
          } else {
            g = 1;
          }
        }
      } else {
        rest.push_back(x);
        g = 1;
      }
    }
    if (g > 1)
      return asNode(SInt(sumNodes(fully)) +
                    floordiv(SInt(nodeFloorDiv(sumNodes(rest), g)), floorDiv(bi, g)));
    if (divisor > 1)
      return asNode(SInt(sumNodes(fully)) +
                    floordiv(SInt(nodeFloorDiv(sumNodes(rest), divisor)), floorDiv(bi, divisor)));
    return asNode(SInt(sumNodes(fully)) + genericFloorDiv(sumNodes(rest), bi, true));
  });
}

NodeRef nodeFloorDivFA(const NodeRef &self, const SInt &b, bool fa) {
  switch (self->kind) {
  case NodeKind::Lt: return asNode(lt(floordiv(self->a, b), floordiv(self->b, b)));
  case NodeKind::Mul: return mulFloorDiv(self, b, fa);
  case NodeKind::Div: return asNode(floordiv(self->a, self->b * b));
  case NodeKind::Mod: return modFloorDiv(self, b, fa);
  case NodeKind::Sum: return sumFloorDiv(self, b, fa);
  case NodeKind::And: {
    std::vector<NodeRef> parts;
    for (const auto &x : self->nodes) parts.push_back(asNode(floordiv(x, b)));
    return andNodes(parts);
  }
  case NodeKind::Variable:
  case NodeKind::Num: return genericFloorDiv(self, b, fa);
  }
  LAZYJIT_INTERNAL_CHECK(false, "symbolic: bad node kind");
}

// `x // b` with the default factoring_allowed of the node's class (MulNode's is False).
NodeRef nodeFloorDiv(const NodeRef &self, const SInt &b) {
  return nodeFloorDivFA(self, b, self->kind != NodeKind::Mul);
}

// int // Node
NodeRef nodeRFloorDiv(const NodeRef &self, int64_t b) {
  if (truthy(gt(self->min, b)) && b >= 0) return numNode(0);
  if (self->isNum()) return numNode(floorDiv(b, self->num));
  notSupported(std::to_string(b) + " // " + self->render());
}

// ---- Node.__mod__ and overrides ----------------------------------------------------------------

NodeRef genericMod(const NodeRef &self, const SInt &b) {
  if (b.isNode()) {
    if (b.node()->isNum()) return nodeMod(self, b.node()->num);
    if (pyEq(self, b)) return numNode(0);
    if (truthy(gt(asNode(b - self)->min, 0)) && truthy(ge(self->min, 0))) return self;
    notSupported(self->render() + " % " + b.render());
  }
  int64_t bi = b.asInt();
  LAZYJIT_USER_CHECK(bi > 0, UnsupportedError, "symbolic: modulo by {} of {}", bi,
                     self->render());
  if (bi == 1) return numNode(0);
  if (self->min.isInt() && self->max.isInt()) {
    int64_t mn = self->min.asInt(), mx = self->max.asInt();
    if (mn >= 0 && mx < bi) return self;
    if (floorDiv(mn, bi) == floorDiv(mx, bi)) return asNode(SInt(self) - bi * floorDiv(mn, bi));
    if (mn < 0) return nodeMod(asNode(SInt(self) - floorDiv(mn, bi) * bi), bi);
  }
  return createNode(newMod(self, bi));
}

NodeRef mulMod(const NodeRef &self, const SInt &b) {
  NodeRef a = asNode(SInt(self->a) * mod(self->b, b));
  return genericMod(a, b);
}

NodeRef modMod(const NodeRef &self, const SInt &b) {
  if (b.isNode() || self->b.isNode()) return genericMod(self, b);
  if (gcd64(self->b.asInt(), b.asInt()) == b.asInt()) return nodeMod(self->a, b);
  return genericMod(self, b);
}

NodeRef sumMod(const NodeRef &self, const SInt &b) {
  return memoized('%', *self, b, true, [&]() -> NodeRef {
    if (isKind(b, NodeKind::Sum)) {
      int64_t nu = 0, de = 0;
      for (const auto &x : self->flatComponents())
        if (x->isNum()) nu = checkedAdd(nu, x->num);
      for (const auto &x : b.node()->flatComponents())
        if (x->isNum()) de = checkedAdd(de, x->num);
      if (nu > 0 && de != 0) {
        int64_t d = floorDiv(nu, de);
        if (d > 0) return asNode(mod(SInt(self) - b * d, b));
      }
    }
    if (b.isNode() && truthy(gt(asNode(b - self)->min, 0))) return self;
    std::vector<NodeRef> parts;
    for (const auto &x : self->nodes) {
      if (x->isNum()) {
        // NumNode(x.b % b): the reference asserts the remainder is a plain int.
        SInt r = mod(x->num, b);
        if (!r.isInt()) notSupported("NumNode(" + r.render() + ") in " + self->render() + " % " + b.render());
        parts.push_back(numNode(r.asInt()));
      } else if (x->kind == NodeKind::Mul)
        parts.push_back(asNode(SInt(x->a) * mod(x->b, b)));
      else
        parts.push_back(x);
    }
    return genericMod(sumNodes(parts), b);
  });
}

NodeRef nodeMod(const NodeRef &self, const SInt &b) {
  switch (self->kind) {
  case NodeKind::Mul: return mulMod(self, b);
  case NodeKind::Mod: return modMod(self, b);
  case NodeKind::Sum: return sumMod(self, b);
  case NodeKind::Variable:
  case NodeKind::Num:
  case NodeKind::Div:
  case NodeKind::Lt:
  case NodeKind::And: return genericMod(self, b);
  }
  LAZYJIT_INTERNAL_CHECK(false, "symbolic: bad node kind");
}

// int % Node
NodeRef nodeRMod(const NodeRef &self, int64_t b) {
  if (truthy(gt(self->min, b)) && b >= 0) return numNode(b);
  if (self->isNum()) return numNode(floorMod(b, self->num));
  notSupported(std::to_string(b) + " % " + self->render());
}

// ---- Node.__lt__ and overrides -----------------------------------------------------------------

NodeRef mulLt(const NodeRef &self, const SInt &b) {
  if (b.isNode() || self->b.isNode() || pyEq(self->b, -1)) return genericLt(self, b);
  int64_t k = self->b.asInt();
  int64_t sgn = k > 0 ? 1 : -1;
  int64_t ak = k < 0 ? -k : k;
  return genericLt(nodeMul(self->a, sgn), floordiv(b + ak - 1, ak));
}

NodeRef sumLt(const NodeRef &self, const SInt &b) {
  NodeRef lhs = self;
  if (!b.isInt()) return genericLt(lhs, b);
  int64_t bi = b.asInt();
  std::vector<NodeRef> newSum;
  for (const auto &x : self->nodes) {
    if (x->isNum())
      bi -= x->num;
    else
      newSum.push_back(x);
  }
  lhs = sumNodes(newSum);
  std::vector<NodeRef> nodes = lhs->kind == NodeKind::Sum ? lhs->nodes : std::vector<NodeRef>{lhs};
  for (const auto &x : nodes)
    if (x->kind == NodeKind::Mul && !x->b.isInt())
      notSupported("comparison of a sum with a symbolic-coefficient term: " + self->render());
  std::vector<NodeRef> muls, others;
  for (const auto &x : nodes) {
    if (x->kind == NodeKind::Mul && x->b.asInt() > 0 && truthy(ge(x->max, bi)))
      muls.push_back(x);
    else
      others.push_back(x);
  }
  if (!muls.empty()) {
    int64_t g = bi;
    for (const auto &x : muls) g = gcd64(g, x->b.asInt());
    NodeRef allOthers = sumNodes(others);
    if (truthy(ge(allOthers->min, 0)) && truthy(lt(allOthers->max, g))) {
      std::vector<NodeRef> divided;
      for (const auto &m : muls) divided.push_back(nodeFloorDiv(m, g));
      lhs = sumNodes(divided);
      bi = floorDiv(bi, g);
    }
  }
  return genericLt(lhs, bi);
}

NodeRef nodeLt(const NodeRef &self, const SInt &b) {
  switch (self->kind) {
  case NodeKind::Mul: return mulLt(self, b);
  case NodeKind::Sum: return sumLt(self, b);
  case NodeKind::Variable:
  case NodeKind::Num:
  case NodeKind::Div:
  case NodeKind::Mod:
  case NodeKind::Lt:
  case NodeKind::And: return genericLt(self, b);
  }
  LAZYJIT_INTERNAL_CHECK(false, "symbolic: bad node kind");
}

NodeRef nodeNeg(const NodeRef &self) { return nodeMul(self, -1); }

// ---- rendering ---------------------------------------------------------------------------------

std::string sintStr(const SInt &x) { return x.isInt() ? std::to_string(x.asInt()) : "<" + x.node()->key() + ">"; }

const std::string &cached(std::atomic<const std::string *> &slot, auto &&compute) {
  const std::string *p = slot.load(std::memory_order_acquire);
  if (p) return *p;
  auto *fresh = new std::string(compute());
  const std::string *expected = nullptr;
  if (slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *expected;
}

} // namespace

// ---- SInt ----------------------------------------------------------------------------------------

int64_t SInt::asInt() const {
  LAZYJIT_USER_CHECK(!n, UnsupportedError, "symbolic: expected an integer, got {}", n->render());
  return i;
}

NodeRef SInt::toNode() const { return n ? n : numNode(i); }

std::string SInt::render() const { return n ? n->render() : std::to_string(i); }
std::string SInt::str() const { return sintStr(*this); }

// ---- Node ----------------------------------------------------------------------------------------

Node::~Node() {
  delete keyCache.load();
  delete renderCache.load();
}

std::optional<int64_t> Node::boundValue() const { return val; }

NodeRef Node::bind(int64_t v) const {
  if (isNum()) {
    LAZYJIT_USER_CHECK(num == v, Error, "cannot bind {} to the constant {}", v, num);
    return self();
  }
  LAZYJIT_USER_CHECK(isVar(), Error, "cannot bind {} to the expression {}", v, render());
  LAZYJIT_USER_CHECK(!val || *val == v, Error, "cannot bind {} to {}: it is already bound to {}",
                     v, key(), *val);
  LAZYJIT_USER_CHECK(truthy(le(min, SInt(v))) && truthy(le(SInt(v), max)), Error,
                     "cannot bind {} to {}: out of range", v, key());
  if (val) return self();
  // Nodes are immutable: the reference mutates the variable, which would change the key of every
  // expression already built over it (and free a key string someone holds). The bound variable
  // is a new node; the unbound one stays as it is and can be bound to other values.
  return make(NodeKind::Variable, [&](Node &n) {
    n.expr = expr;
    n.min = min;
    n.max = max;
    n.val = v;
  });
}

std::pair<NodeRef, int64_t> Node::unbindVar() const {
  LAZYJIT_USER_CHECK(isVar() && val, Error, "cannot unbind {}", key());
  return {variable(expr, min, max), *val};
}

std::string Node::computeRender(bool debug) const {
  auto r = [debug](const NodeRef &n) -> const std::string & { return debug ? n->key() : n->render(); };
  auto rs = [&](const SInt &x) { return x.isInt() ? std::to_string(x.asInt()) : r(x.node()); };
  LAZYJIT_INTERNAL_CHECK(isVar() || isNum() || pyNe(min, max),
                         "symbolic: rendering a node whose bounds meet");
  switch (kind) {
  case NodeKind::Variable: {
    std::string e = expr ? *expr : "None";
    if (!debug) return e;
    std::string s = e + "[" + sintStr(min) + "-" + sintStr(max);
    if (val) s += "=" + std::to_string(*val);
    return s + "]";
  }
  case NodeKind::Num: return std::to_string(num);
  case NodeKind::Mul:
    if (a->isVar() && isKind(b, NodeKind::Variable) && a->expr && !a->expr->empty() &&
        b.node()->expr && !b.node()->expr->empty() && *b.node()->expr < *a->expr)
      return "(" + rs(b) + "*" + r(a) + ")";
    return "(" + r(a) + "*" + rs(b) + ")";
  case NodeKind::Div: return "(" + r(a) + "//" + rs(b) + ")";
  case NodeKind::Mod: return "(" + r(a) + "%" + rs(b) + ")";
  case NodeKind::Lt: return "(" + r(a) + "<" + rs(b) + ")";
  case NodeKind::Sum:
  case NodeKind::And: {
    std::vector<std::string> parts;
    parts.reserve(nodes.size());
    for (const auto &x : nodes) parts.push_back(r(x));
    std::sort(parts.begin(), parts.end());
    std::string sep = kind == NodeKind::Sum ? "+" : " and ";
    std::string s = "(";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
    return s + ")";
  }
  }
  LAZYJIT_INTERNAL_CHECK(false, "symbolic: bad node kind");
}

const std::string &Node::key() const {
  return cached(keyCache, [this] { return computeRender(true); });
}
const std::string &Node::render() const {
  return cached(renderCache, [this] { return computeRender(false); });
}
size_t Node::hash() const { return std::hash<std::string>{}(key()); }

std::vector<NodeRef> Node::vars() const {
  std::vector<NodeRef> out;
  std::function<void(const Node &)> walk = [&](const Node &n) {
    switch (n.kind) {
    case NodeKind::Variable:
      for (const auto &v : out)
        if (v->key() == n.key()) return;
      out.push_back(n.self());
      return;
    case NodeKind::Num: return;
    case NodeKind::Mul:
    case NodeKind::Div:
    case NodeKind::Mod:
    case NodeKind::Lt:
      walk(*n.a);
      if (n.b.isNode()) walk(*n.b.node());
      return;
    case NodeKind::Sum:
    case NodeKind::And:
      for (const auto &x : n.nodes) walk(*x);
      return;
    }
  };
  walk(*this);
  return out;
}

NodeRef Node::substitute(const std::map<std::string, NodeRef> &byKey) const {
  auto sub = [&](const SInt &x) -> SInt { return x.isInt() ? x : SInt(x.node()->substitute(byKey)); };
  switch (kind) {
  case NodeKind::Variable: {
    auto it = byKey.find(key());
    return it != byKey.end() ? it->second : self();
  }
  case NodeKind::Num: return self();
  case NodeKind::Lt: return asNode(lt(a->substitute(byKey), sub(b)));
  case NodeKind::Mul: return asNode(SInt(a->substitute(byKey)) * sub(b));
  case NodeKind::Div: return asNode(floordiv(a->substitute(byKey), b));
  case NodeKind::Mod: return asNode(mod(a->substitute(byKey), b));
  case NodeKind::Sum: {
    std::vector<NodeRef> parts;
    for (const auto &x : nodes) parts.push_back(x->substitute(byKey));
    return sumNodes(parts);
  }
  case NodeKind::And: {
    std::vector<NodeRef> parts;
    for (const auto &x : nodes) {
      NodeRef s = x->substitute(byKey);
      if (!truthy(s)) return numNode(0);
      parts.push_back(s);
    }
    return andNodes(parts);
  }
  }
  LAZYJIT_INTERNAL_CHECK(false, "symbolic: bad node kind");
}

NodeRef Node::unbind() const {
  std::map<std::string, NodeRef> m;
  for (const auto &v : vars())
    if (v->val) m.emplace(v->key(), v->unbindVar().first);
  if (m.empty()) return self();
  return substitute(m);
}

std::vector<NodeRef> Node::flatComponents() const {
  std::vector<NodeRef> out;
  for (const auto &x : nodes) {
    if (x->kind == NodeKind::Sum) {
      auto inner = x->flatComponents();
      out.insert(out.end(), inner.begin(), inner.end());
    } else {
      out.push_back(x);
    }
  }
  return out;
}

// ---- construction --------------------------------------------------------------------------------

NodeRef numNode(int64_t v) {
  return make(NodeKind::Num, [&](Node &n) {
    n.num = v;
    n.min = v;
    n.max = v;
  });
}

NodeRef variable(std::optional<std::string> expr, SInt min, SInt max) {
  LAZYJIT_USER_CHECK(truthy(ge(min, 0)) && truthy(le(min, max)), Error,
                     "invalid Variable {} with bounds [{}, {}]", expr ? *expr : "None", min.str(),
                     max.str());
  if (pyEq(min, max)) return numNode(min.asInt());
  return make(NodeKind::Variable, [&](Node &n) {
    n.expr = std::move(expr);
    n.min = std::move(min);
    n.max = std::move(max);
  });
}

NodeRef sumNodes(const std::vector<NodeRef> &in) {
  std::vector<NodeRef> nodes;
  for (const auto &x : in)
    if (truthy(x->max) || truthy(x->min)) nodes.push_back(x);
  if (nodes.empty()) return numNode(0);
  if (nodes.size() == 1) return nodes[0];

  // mul_groups: an insertion-ordered dict keyed by node equality (the DEBUG key).
  std::vector<std::pair<NodeRef, SInt>> groups;
  std::unordered_map<std::string, size_t> index;
  int64_t numSum = 0;
  auto addTo = [&](const NodeRef &a, const SInt &k) {
    auto [it, fresh] = index.emplace(a->key(), groups.size());
    if (fresh)
      groups.emplace_back(a, SInt(0) + k);
    else
      groups[it->second].second = groups[it->second].second + k;
  };
  std::vector<NodeRef> flat;
  for (const auto &x : nodes) {
    if (x->kind == NodeKind::Sum) {
      auto inner = x->flatComponents();
      flat.insert(flat.end(), inner.begin(), inner.end());
    } else {
      flat.push_back(x);
    }
  }
  for (const auto &x : flat) {
    if (x->isNum())
      numSum = checkedAdd(numSum, x->num);
    else if (x->kind == NodeKind::Mul)
      addTo(x->a, x->b);
    else
      addTo(x, 1);
  }
  std::vector<NodeRef> out;
  for (const auto &[a, k] : groups) {
    if (!pyNe(k, 0)) continue;
    out.push_back(pyNe(k, 1) ? newMul(a, k) : a);
  }
  if (numSum) out.push_back(numNode(numSum));
  if (out.size() > 1) return createSumNode(out);
  if (out.size() == 1) return out[0];
  return numNode(0);
}

NodeRef andNodes(const std::vector<NodeRef> &in) {
  if (in.empty()) return numNode(1);
  if (in.size() == 1) return in[0];
  for (const auto &x : in)
    if (!truthy(x)) return numNode(0);
  std::vector<NodeRef> nodes;
  for (const auto &x : in)
    if (pyNe(x->min, x->max)) nodes.push_back(x);
  if (nodes.size() > 1) return createAndNode(nodes);
  if (nodes.size() == 1) return nodes[0];
  return numNode(1);
}

NodeRef createSumNode(const std::vector<NodeRef> &nodes) {
  NodeRef r = newRed(NodeKind::Sum, nodes);
  Node &n = const_cast<Node &>(*r);
  SInt mn = 0, mx = 0;
  for (const auto &x : nodes) {
    mn = mn + x->min;
    mx = mx + x->max;
  }
  n.min = mn;
  n.max = mx;
  return createNode(r);
}

NodeRef createAndNode(const std::vector<NodeRef> &nodes) {
  NodeRef r = newRed(NodeKind::And, nodes);
  Node &n = const_cast<Node &>(*r);
  if (nodes.empty()) notSupported("an empty AndNode");
  SInt mn = nodes[0]->min, mx = nodes[0]->max;
  for (size_t i = 1; i < nodes.size(); ++i) {
    mn = pyMin(mn, nodes[i]->min);
    mx = pyMax(mx, nodes[i]->max);
  }
  n.min = mn;
  n.max = mx;
  return createNode(r);
}

NodeRef rawMulNode(NodeRef a, SInt b) { return newMul(std::move(a), std::move(b)); }

NodeRef rawSumNode(const std::vector<NodeRef> &nodes) {
  NodeRef r = newRed(NodeKind::Sum, nodes);
  Node &n = const_cast<Node &>(*r);
  SInt mn = 0, mx = 0;
  for (const auto &x : nodes) {
    mn = mn + x->min;
    mx = mx + x->max;
  }
  n.min = mn;
  n.max = mx;
  return r;
}

// ---- Python operators ------------------------------------------------------------------------------

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

SInt operator*(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return checkedMul(x.asInt(), y.asInt());
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

bool pyEq(const SInt &x, const SInt &y) {
  if (x.isInt() && y.isInt()) return x.asInt() == y.asInt();
  if (x.isInt()) return y.node()->isNum() && y.node()->num == x.asInt();
  if (y.isInt()) return x.node()->isNum() && x.node()->num == y.asInt();
  const Node &a = *x.node(), &b = *y.node();
  if (a.isNum()) return b.isNum() && a.num == b.num; // NumNode.__eq__: self.b == other
  if (b.isNum()) return false;
  return a.key() == b.key();
}

bool truthy(const SInt &x) {
  if (x.isInt()) return x.asInt() != 0;
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
