// The symbolic algebra, a rule-for-rule port of the reference's shape/symbolic.py.
//
// Every Python method becomes a function named after the node type whose override it is
// (`mulFloorDiv` is MulNode.__floordiv__), and every Python operator becomes a call of the SInt
// operators, which dispatch like Python (int op Node goes to the node's reflected method). Keep the
// order of the rules: it decides which simplification fires.
#include "SymbolicImpl.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace lazyjit {
namespace symbolic {

// ---- the memo of SumNode.__mul__/__floordiv__/__mod__ (the reference's lru_cache) ----------------

constexpr size_t kSumMemoLimit = size_t(1) << 16;

// Keyed by identity, as the reference's lru_cache keys by Node.__eq__/__hash__. An entry holds
// its operands, so the classes its key points to stay alive (and their addresses unique) while
// it exists.
struct MemoKey {
  char op;
  bool fa;
  const NodeClass *self;
  const NodeClass *bNode; // null when b is an int
  int64_t bInt;
  bool operator==(const MemoKey &) const = default;
};
struct MemoKeyHash {
  size_t operator()(const MemoKey &k) const {
    size_t h = std::hash<const void *>{}(k.self);
    hashCombine(h, std::hash<const void *>{}(k.bNode));
    hashCombine(h, std::hash<int64_t>{}(k.bInt));
    hashCombine(h, static_cast<size_t>(k.op) * 2 + k.fa);
    return h;
  }
};
struct MemoEntry {
  NodeRef self;
  SInt b;
  NodeRef result;
};
struct SumMemo {
  std::mutex mu;
  std::unordered_map<MemoKey, MemoEntry, MemoKeyHash> map;
};
SumMemo &sumMemo() {
  static SumMemo *m = new SumMemo(); // never destroyed: nodes may outlive static destruction
  return *m;
}

} // namespace symbolic

size_t symbolicMemoSize() {
  std::lock_guard lock(symbolic::sumMemo().mu);
  return symbolic::sumMemo().map.size();
}

namespace symbolic {

template <typename F> NodeRef memoized(char op, const NodeRef &self, const SInt &b, bool fa, F &&f) {
  MemoKey k{op, fa, self->identity(), b.isNode() ? b.node()->identity() : nullptr, b.isInt() ? b.asInt() : 0};
  SumMemo &m = sumMemo();
  {
    std::lock_guard lock(m.mu);
    auto it = m.map.find(k);
    if (it != m.map.end()) return it->second.result;
  }
  NodeRef r = f();
  std::lock_guard lock(m.mu);
  // bounded (the reference's lru_cache is not): a long-running process that keeps building new
  // expressions would otherwise grow without end (the symbolic fuzz target reached 2 GB in 30
  // minutes). A hit returns the result for the first structure of the key's class, as the
  // reference's cache does; sums whose terms differ only in order can simplify to different
  // (equal-valued) structures, so after the memo starts over the structure may be the other one.
  if (m.map.size() >= kSumMemoLimit) m.map.clear();
  return m.map.emplace(k, MemoEntry{self, b, r}).first->second.result;
}

// ---- the depth of the rules ------------------------------------------------------------------------

// Some of the reference's rules recurse without end on inputs they do not simplify: a sum whose
// lower bound stays negative after `% b` shifts it and reduces its constant back, a floor
// division by a symbolic lower bound. Python stops them with RecursionError; here they would run
// out of the stack, so the dispatching methods count their nesting and give up with an
// UnsupportedError far before that (real index expressions nest a few dozen deep).
constexpr int kMaxRuleDepth = 600;
thread_local int ruleDepth = 0;

struct RuleDepth {
  RuleDepth(const char *op, const NodeRef &self, const SInt &b) {
    if (++ruleDepth > kMaxRuleDepth) {
      --ruleDepth;
      notSupported(fmt::format("{} {} {} does not simplify: the rules recurse without end", self->render(), op,
                               b.render()));
    }
  }
  ~RuleDepth() { --ruleDepth; }
  RuleDepth(const RuleDepth &) = delete;
  RuleDepth &operator=(const RuleDepth &) = delete;
};

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
  return memoized('*', self, b, true, [&] {
    std::vector<NodeRef> terms;
    for (const auto &x : self->nodes) terms.push_back(nodeMul(x, b));
    return sumNodes(terms);
  });
}

NodeRef nodeMul(const NodeRef &self, const SInt &b) {
  RuleDepth depth("*", self, b);
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
    // the reference shifts by min // b, which for a symbolic lower bound is symbolic again and
    // recurses until the stack runs out (RecursionError in Python, a crash here)
    if (self->min.isNode() && !self->min.node()->isNum())
      notSupported(self->render() + " // " + std::to_string(bi) + " (its lower bound " + self->min.render() +
                   " is symbolic and may be negative)");
    SInt offset = floordiv(self->min, bi);
    NodeRef shifted = asNode(SInt(self) + (-offset) * bi);
    return asNode(SInt(nodeFloorDivFA(shifted, bi, false)) + offset);
  }
  if (!truthy(ge(self->min, 0))) // the reference asserts
    notSupported(self->render() + " // " + std::to_string(bi) + " (its lower bound " + self->min.render() +
                 " is negative)");
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
  return memoized('/', self, b, fa, [&]() -> NodeRef {
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
  RuleDepth depth("//", self, b);
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
  if (!truthy(ge(self->min, 0))) // the reference asserts
    notSupported(self->render() + " % " + std::to_string(bi) + " (its lower bound " + self->min.render() +
                 " is negative)");
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
  return memoized('%', self, b, true, [&]() -> NodeRef {
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
  RuleDepth depth("%", self, b);
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
  RuleDepth depth("<", self, b);
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

} // namespace symbolic

using namespace symbolic;

NodeRef sumNodes(const std::vector<NodeRef> &in) {
  std::vector<NodeRef> nodes;
  for (const auto &x : in)
    if (truthy(x->max) || truthy(x->min)) nodes.push_back(x);
  if (nodes.empty()) return numNode(0);
  if (nodes.size() == 1) return nodes[0];

  // mul_groups: an insertion-ordered dict keyed by node equality (identity).
  std::vector<std::pair<NodeRef, SInt>> groups;
  std::unordered_map<const NodeClass *, size_t> index;
  int64_t numSum = 0;
  auto addTo = [&](const NodeRef &a, const SInt &k) {
    auto [it, fresh] = index.emplace(a->identity(), groups.size());
    if (fresh)
      groups.emplace_back(a, SInt(0) + k);
    else
      groups[it->second].second = groups[it->second].second + k;
  };
  std::vector<NodeRef> flat = flattenSums(nodes);
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

} // namespace lazyjit
