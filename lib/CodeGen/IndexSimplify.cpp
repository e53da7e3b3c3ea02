// Valid-aware index simplification (see IndexSimplify.h).
//
// Facts are bounds on linear forms: a conjunct `c + s*L < b` of the valid (L a sum of terms with
// coprime integer coefficients, the first positive) bounds L from above (s > 0) or below (s < 0).
// Each `//`, `%` and `<` of the index is rebuilt bottom-up; where the facts bound its operand more
// tightly than the operand's own range, the operand is replaced by a variable of that range for
// the symbolic algebra to simplify with, and put back afterwards.
#include "IndexSimplify.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace lazyjit {

namespace {

using I128 = __int128;

// A range of values; a missing end is unbounded.
struct Range {
  std::optional<I128> lo, hi;
  bool empty() const { return lo && hi && *lo > *hi; }
};

Range meet(const Range &a, const Range &b) {
  Range r = a;
  if (b.lo && (!r.lo || *b.lo > *r.lo)) r.lo = b.lo;
  if (b.hi && (!r.hi || *b.hi < *r.hi)) r.hi = b.hi;
  return r;
}

I128 floorDiv(I128 a, I128 b) {
  I128 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
I128 ceilDiv(I128 a, I128 b) { return -floorDiv(-a, b); }

// Values beyond this are treated as unbounded (they never occur in a real index).
constexpr I128 kLimit = I128(1) << 62;
std::optional<I128> clampBound(std::optional<I128> x) {
  if (x && (*x > kLimit || *x < -kLimit)) return std::nullopt;
  return x;
}

Range scaled(const Range &r, I128 k) {
  if (k == 0) return {0, 0};
  Range out;
  if (k > 0) {
    if (r.lo) out.lo = *r.lo * k;
    if (r.hi) out.hi = *r.hi * k;
  } else {
    if (r.hi) out.lo = *r.hi * k;
    if (r.lo) out.hi = *r.lo * k;
  }
  return {clampBound(out.lo), clampBound(out.hi)};
}

Range ownRange(const Node &n) {
  Range r;
  if (n.min.isInt()) r.lo = n.min.asInt();
  if (n.max.isInt()) r.hi = n.max.asInt();
  return r;
}

// E = constant + scale * L, where L (named by `key`) has coprime coefficients, the first positive.
struct LinearForm {
  std::string key;
  I128 scale = 1;
  I128 constant = 0;
};

std::optional<LinearForm> linearForm(const Node &e) {
  std::vector<NodeRef> terms = e.kind == NodeKind::Sum ? e.flatComponents() : std::vector<NodeRef>{e.self()};
  std::vector<std::pair<std::string, I128>> parts;
  LinearForm lf;
  for (const auto &t : terms) {
    if (t->isNum()) lf.constant += t->num;
    else if (t->kind == NodeKind::Mul && t->b.isInt()) parts.emplace_back(t->a->key(), t->b.asInt());
    else parts.emplace_back(t->key(), 1);
  }
  if (parts.empty()) return std::nullopt;
  std::sort(parts.begin(), parts.end());
  int64_t g = 0;
  for (const auto &p : parts) g = std::gcd(g, static_cast<int64_t>(p.second));
  if (g == 0) return std::nullopt;
  lf.scale = parts[0].second < 0 ? -g : g;
  for (const auto &p : parts) {
    lf.key += std::to_string(static_cast<int64_t>(p.second / lf.scale));
    lf.key += '*';
    lf.key += p.first;
    lf.key += '+';
  }
  return lf;
}

class Simplifier {
public:
  /// Adds what `conjunct` (true under the valid) says; false when it is never true.
  bool learn(const Node &conjunct) {
    if (conjunct.kind != NodeKind::Lt || !conjunct.b.isInt()) return true;
    auto lf = linearForm(*conjunct.a);
    if (!lf) return true;
    // constant + scale*L <= b - 1
    I128 m = static_cast<I128>(conjunct.b.asInt()) - 1 - lf->constant;
    Range bound;
    if (lf->scale > 0) bound.hi = floorDiv(m, lf->scale);
    else bound.lo = ceilDiv(m, lf->scale);
    Range &r = facts[lf->key];
    r = meet(r, bound);
    ranges.clear();
    return !r.empty();
  }

  /// The range of `n` under the facts.
  Range rangeOf(const Node &n) {
    if (auto it = ranges.find(n.key()); it != ranges.end()) return it->second;
    Range r = ownRange(n);
    auto intB = [](const Node &x) { return x.b.isInt() ? std::optional<I128>(x.b.asInt()) : std::nullopt; };
    switch (n.kind) {
    case NodeKind::Sum: {
      Range acc{0, 0};
      for (const auto &x : n.nodes) {
        Range t = rangeOf(*x);
        acc.lo = acc.lo && t.lo ? clampBound(*acc.lo + *t.lo) : std::nullopt;
        acc.hi = acc.hi && t.hi ? clampBound(*acc.hi + *t.hi) : std::nullopt;
      }
      r = meet(r, acc);
      break;
    }
    case NodeKind::Mul:
      if (auto k = intB(n)) r = meet(r, scaled(rangeOf(*n.a), *k));
      break;
    case NodeKind::Div:
      if (auto k = intB(n); k && *k > 0) {
        Range a = rangeOf(*n.a);
        if (a.lo && *a.lo >= 0) r = meet(r, {floorDiv(*a.lo, *k), a.hi ? std::optional(floorDiv(*a.hi, *k)) : std::nullopt});
      }
      break;
    case NodeKind::Mod:
      if (auto k = intB(n); k && *k > 0) {
        Range a = rangeOf(*n.a);
        if (a.lo && *a.lo >= 0) {
          if (a.hi && floorDiv(*a.lo, *k) == floorDiv(*a.hi, *k)) r = meet(r, {*a.lo % *k, *a.hi % *k});
          else r = meet(r, {0, *k - 1});
        }
      }
      break;
    case NodeKind::Variable:
    case NodeKind::Num:
    case NodeKind::Lt:
    case NodeKind::And: break;
    }
    if (auto lf = linearForm(n)) {
      if (auto it = facts.find(lf->key); it != facts.end()) {
        Range l = scaled(it->second, lf->scale);
        if (l.lo) l.lo = *l.lo + lf->constant;
        if (l.hi) l.hi = *l.hi + lf->constant;
        r = meet(r, l);
      }
    }
    return ranges[n.key()] = r;
  }

  /// `n` rebuilt with every `//`, `%` and `<` simplified under the facts.
  NodeRef rebuild(const NodeRef &n) {
    switch (n->kind) {
    case NodeKind::Variable:
    case NodeKind::Num: return n;
    case NodeKind::Mul: return (SInt(rebuild(n->a)) * n->b).toNode();
    case NodeKind::Sum: {
      std::vector<NodeRef> parts;
      for (const auto &x : n->nodes) parts.push_back(rebuild(x));
      return sumNodes(parts);
    }
    case NodeKind::And: {
      std::vector<NodeRef> parts;
      for (const auto &x : n->nodes) parts.push_back(rebuild(x));
      return andNodes(parts);
    }
    case NodeKind::Div: return tightened(rebuild(n->a), [&](const SInt &x) { return floordiv(x, n->b); });
    case NodeKind::Mod: return tightened(rebuild(n->a), [&](const SInt &x) { return mod(x, n->b); });
    case NodeKind::Lt: return tightened(rebuild(n->a), [&](const SInt &x) { return lt(x, n->b); });
    }
    return n;
  }

private:
  std::unordered_map<std::string, Range> facts;  // by LinearForm key
  std::unordered_map<std::string, Range> ranges; // rangeOf memo, cleared when a fact is added

  // op(a), with `a` narrowed to its range under the facts while the algebra simplifies
  template <typename F> NodeRef tightened(const NodeRef &a, F &&op) {
    try {
      return tightenedOrThrow(a, op);
    } catch (const UnsupportedError &) {
      // the algebra has no rule for this form (a symbolic divisor): keep the operand as it is
      return op(SInt(a)).toNode();
    }
  }
  template <typename F> NodeRef tightenedOrThrow(const NodeRef &a, F &&op) {
    Range r = rangeOf(*a), own = ownRange(*a);
    bool narrower = r.lo && r.hi && ((!own.lo || *r.lo > *own.lo) || (!own.hi || *r.hi < *own.hi));
    if (!narrower || r.empty()) return op(SInt(a)).toNode();
    if (*r.lo == *r.hi) return op(SInt(static_cast<int64_t>(*r.lo))).toNode();
    // a = t + lo with t in [0, hi - lo] (variables are never negative)
    int64_t lo = static_cast<int64_t>(*r.lo);
    NodeRef t = variable("$t", 0, static_cast<int64_t>(*r.hi - *r.lo));
    NodeRef out = op(SInt(t) + lo).toNode();
    for (const auto &v : out->vars())
      if (v->key() == t->key()) return out->substitute({{t->key(), (SInt(a) - lo).toNode()}});
    return out;
  }
};

void flattenAnd(const NodeRef &n, std::vector<NodeRef> &out) {
  if (n->kind != NodeKind::And) {
    out.push_back(n);
    return;
  }
  for (const auto &x : n->nodes) flattenAnd(x, out);
}

// How much a conjunct depends on others to simplify: its `//` and `%` count.
size_t complexity(const Node &n) {
  size_t c = (n.kind == NodeKind::Div || n.kind == NodeKind::Mod) ? 1 : 0;
  if (n.a) c += complexity(*n.a);
  if (n.b.isNode()) c += complexity(*n.b.node());
  for (const auto &x : n.nodes) c += complexity(*x);
  return c;
}

} // namespace

SimplifiedIndex simplifyUnderValid(const NodeRef &idx, const NodeRef &valid) {
  if (valid->isNum()) return {idx, valid};
  std::vector<NodeRef> conjuncts;
  flattenAnd(valid, conjuncts);
  // Each conjunct is simplified under the facts of those before it, simplest first: then the
  // simplified conjunction holds exactly where the original does (by induction over the order).
  std::stable_sort(conjuncts.begin(), conjuncts.end(), [](const NodeRef &x, const NodeRef &y) {
    size_t cx = complexity(*x), cy = complexity(*y);
    return cx != cy ? cx < cy : x->key().size() < y->key().size();
  });
  Simplifier s;
  std::vector<NodeRef> kept;
  for (const auto &c : conjuncts) {
    NodeRef c2 = s.rebuild(c);
    if (c2->isNum()) {
      if (c2->num == 0) return {idx, numNode(0)};
      continue;
    }
    if (!s.learn(*c2)) return {idx, numNode(0)};
    kept.push_back(c2);
  }
  return {s.rebuild(idx), andNodes(kept)};
}

} // namespace lazyjit
