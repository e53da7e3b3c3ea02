// Symbolic nodes: their construction, identity, rendering and the methods on one node.
//
// A node is built once, by NodeFactory, with its bounds computed by the reference's rules (the
// raw constructors below) and its identity interned: a NodeClass per equivalence class of
// structures, found in a table by the node's kind, value, name and the classes of its operands.
// Two nodes share a class exactly when their DEBUG renders are equal, so the reference's
// `__eq__`/`__hash__` (which compare renders) become a pointer comparison and a stored hash.
#include "SymbolicImpl.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/ProbeTable.h"

#include <algorithm>
#include <functional>
#include <mutex>

namespace lazyjit {

// ---- identity: interned structural classes ------------------------------------------------------

class NodeClass : public std::enable_shared_from_this<NodeClass> {
public:
  /// An operand in a class key: an integer, or the class of a node.
  struct Operand {
    const NodeClass *cls = nullptr;
    int64_t i = 0;
    bool operator==(const Operand &) const = default;
  };
  /// What the DEBUG render of a node shows, with operands replaced by their classes.
  struct Key {
    NodeKind kind = NodeKind::Num;
    int64_t num = 0;
    std::string expr;                     // a variable's name as rendered ("None" without one)
    std::optional<int64_t> val;           // a variable's bound value
    Operand min, max;                     // a variable's bounds (a NumNode bound renders <n>)
    Operand a, b;                         // binary operands in render order; a NumNode b is its int
    std::vector<const NodeClass *> terms; // Sum/And operands as a multiset (renders sort them)
    bool operator==(const Key &) const = default;
  };
  NodeClass(Key k, size_t h) : key(std::move(k)), hash(h) {}
  ~NodeClass();
  const Key key;
  const size_t hash;
};

namespace {

struct ClassTable {
  std::mutex mu;
  ProbeTable<const NodeClass *> classes; ///< by hash
};
ClassTable &classTable() {
  static ClassTable *t = new ClassTable(); // never destroyed: nodes may outlive static destruction
  return *t;
}

size_t mix(size_t x) { // splitmix64's finalizer: a term's contribution to an unordered hash
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

size_t operandHash(const NodeClass::Operand &o) {
  return o.cls ? o.cls->hash : mix(std::hash<int64_t>{}(o.i) ^ 0x5bd1e995);
}

NodeClass::Operand operandOf(const SInt &x, bool numAsInt) {
  if (x.isInt()) return {nullptr, x.asInt()};
  if (numAsInt && x.node()->isNum()) return {nullptr, x.node()->num};
  return {x.node()->identity(), 0};
}

// The key mirrors Node::computeRender(debug = true) case by case: what the render shows, the key
// holds, and what the render orders (Sum/And terms, the operands of a product of two named
// variables) the key orders.
NodeClass::Key classKey(const Node::Init &n) {
  NodeClass::Key k;
  k.kind = n.kind;
  switch (n.kind) {
  case NodeKind::Variable:
    k.expr = n.expr ? *n.expr : "None";
    k.val = n.val;
    k.min = operandOf(n.min, false);
    k.max = operandOf(n.max, false);
    break;
  case NodeKind::Num: k.num = n.num; break;
  case NodeKind::Mul:
  case NodeKind::Div:
  case NodeKind::Mod:
  case NodeKind::Lt:
    k.a = {n.a->identity(), 0};
    k.b = operandOf(n.b, true);
    if (n.kind == NodeKind::Mul && n.a->isVar() && symbolic::isKind(n.b, NodeKind::Variable) && n.a->expr && !n.a->expr->empty() &&
        n.b.node()->expr && !n.b.node()->expr->empty() && *n.b.node()->expr < *n.a->expr)
      std::swap(k.a, k.b);
    break;
  case NodeKind::Sum:
  case NodeKind::And:
    for (const auto &x : n.nodes) k.terms.push_back(x->identity());
    std::sort(k.terms.begin(), k.terms.end());
    if (k.terms.size() == 1) k.kind = NodeKind::Sum; // `(t)`: one term renders alike in both
    break;
  }
  return k;
}

size_t keyHash(const NodeClass::Key &k) {
  size_t h = mix(static_cast<size_t>(k.kind) + 1);
  hashCombine(h, std::hash<int64_t>{}(k.num));
  hashCombine(h, std::hash<std::string>{}(k.expr));
  hashCombine(h, k.val ? mix(std::hash<int64_t>{}(*k.val)) : 0);
  for (const auto *o : {&k.min, &k.max, &k.a, &k.b}) hashCombine(h, operandHash(*o));
  size_t terms = 0; // order-free, as the key's multiset
  for (const NodeClass *c : k.terms) terms += mix(c->hash);
  hashCombine(h, terms);
  return h;
}

std::shared_ptr<const NodeClass> internClass(NodeClass::Key key) {
  size_t h = keyHash(key);
  ClassTable &t = classTable();
  std::shared_ptr<const NodeClass> found; // released (if ever) after the lock, whose mutex its destructor takes
  std::lock_guard lock(t.mu);
  t.classes.find(h, [&](const NodeClass *c) {
    // empty while dying. Through the non-const weak_from_this: libstdc++ converts a weak_ptr<T> to
    // weak_ptr<const T> by locking it, and that temporary owner, released here under the lock, is
    // the last one when another thread drops its reference meanwhile: ~NodeClass then takes this
    // mutex on the thread that holds it (a deadlock seen compiling kernels on two threads)
    if (c->key == key) found = const_cast<NodeClass *>(c)->weak_from_this().lock();
    return found != nullptr;
  });
  if (!found) {
    found = std::make_shared<NodeClass>(std::move(key), h);
    t.classes.insert(h, found.get());
  }
  return found;
}

} // namespace

NodeClass::~NodeClass() {
  ClassTable &t = classTable();
  std::lock_guard lock(t.mu);
  t.classes.erase(hash, this); // (an equal class made while this one was dying stays)
}

size_t symbolicClassCount() {
  std::lock_guard lock(classTable().mu);
  return classTable().classes.size();
}

NodeRef NodeFactory::build(Node::Init init) {
  auto cls = internClass(classKey(init));
  return std::make_shared<const Node>(Node::Token(), std::move(init), std::move(cls));
}

Node::Node(Token, Init init, std::shared_ptr<const NodeClass> c)
    : kind(init.kind), min(std::move(init.min)), max(std::move(init.max)), expr(std::move(init.expr)),
      num(init.num), a(std::move(init.a)), b(std::move(init.b)), nodes(std::move(init.nodes)),
      val(init.val), cls(std::move(c)) {}

size_t Node::hash() const { return cls->hash; }

namespace symbolic {

[[noreturn]] void notSupported(const std::string &what) {
  throw UnsupportedError("symbolic: not supported: " + what);
}

const NodeRef &asNode(const SInt &x) {
  LAZYJIT_INTERNAL_CHECK(x.isNode(), "symbolic: expected a node");
  return x.node();
}

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

// Fills a node's fields (bounds last, from its operands) and builds it.
NodeRef make(NodeKind k, auto &&init) {
  Node::Init n;
  n.kind = k;
  init(n);
  return NodeFactory::build(std::move(n));
}

// The integer range of a value whose bounds may themselves be symbolic.
std::pair<int64_t, int64_t> intBounds(const SInt &x) {
  if (x.isInt()) return {x.asInt(), x.asInt()};
  return {intBounds(x.node()->min).first, intBounds(x.node()->max).second};
}

NodeRef newMul(NodeRef a, SInt b) {
  return make(NodeKind::Mul, [&](Node::Init &n) {
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
  return make(NodeKind::Div, [&](Node::Init &n) {
    n.a = std::move(a);
    n.b = b;
    LAZYJIT_INTERNAL_CHECK(truthy(ge(n.a->min, 0)), "symbolic: DivNode of a negative numerator");
    n.min = floordiv(n.a->min, b);
    n.max = floordiv(n.a->max, b);
  });
}

NodeRef newMod(NodeRef a, int64_t b) {
  return make(NodeKind::Mod, [&](Node::Init &n) {
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
  return make(NodeKind::Lt, [&](Node::Init &n) {
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

NodeRef newSum(std::vector<NodeRef> nodes) {
  SInt mn = 0, mx = 0;
  for (const auto &x : nodes) {
    mn = mn + x->min;
    mx = mx + x->max;
  }
  return make(NodeKind::Sum, [&](Node::Init &n) {
    n.min = mn;
    n.max = mx;
    n.nodes = std::move(nodes);
  });
}

NodeRef newAnd(std::vector<NodeRef> nodes) {
  if (nodes.empty()) notSupported("an empty AndNode");
  SInt mn = nodes[0]->min, mx = nodes[0]->max;
  for (size_t i = 1; i < nodes.size(); ++i) {
    mn = pyMin(mn, nodes[i]->min);
    mx = pyMax(mx, nodes[i]->max);
  }
  return make(NodeKind::And, [&](Node::Init &n) {
    n.min = mn;
    n.max = mx;
    n.nodes = std::move(nodes);
  });
}

} // namespace symbolic

using namespace symbolic;

namespace {
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

void SInt::throwNotInt() const {
  throw UnsupportedError(fmt::format("symbolic: expected an integer, got {}", n->render()));
}

NodeRef SInt::toNode() const { return n ? n : numNode(i); }

std::string SInt::render() const { return n ? n->render() : std::to_string(i); }
std::string SInt::str() const { return sintStr(*this); }

// ---- Node ----------------------------------------------------------------------------------------

Node::~Node() {
  delete keyCache.load();
  delete renderCache.load();
}

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
  return make(NodeKind::Variable, [&](Node::Init &n) {
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
std::vector<NodeRef> Node::vars() const {
  std::vector<NodeRef> out;
  std::function<void(const Node &)> walk = [&](const Node &n) {
    switch (n.kind) {
    case NodeKind::Variable:
      for (const auto &v : out)
        if (v->identity() == n.identity()) return;
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

std::vector<NodeRef> symbolic::flattenSums(const std::vector<NodeRef> &nodes) {
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

std::vector<NodeRef> Node::flatComponents() const { return flattenSums(nodes); }

// ---- construction --------------------------------------------------------------------------------

NodeRef numNode(int64_t v) {
  return make(NodeKind::Num, [&](Node::Init &n) {
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
  return make(NodeKind::Variable, [&](Node::Init &n) {
    n.expr = std::move(expr);
    n.min = std::move(min);
    n.max = std::move(max);
  });
}

NodeRef createSumNode(const std::vector<NodeRef> &nodes) { return createNode(newSum(nodes)); }
NodeRef createAndNode(const std::vector<NodeRef> &nodes) { return createNode(newAnd(nodes)); }

NodeRef rawMulNode(NodeRef a, SInt b) { return newMul(std::move(a), std::move(b)); }
NodeRef rawDivNode(NodeRef a, int64_t b) { return newDiv(std::move(a), b); }
NodeRef rawModNode(NodeRef a, int64_t b) { return newMod(std::move(a), b); }
NodeRef rawLtNode(NodeRef a, SInt b) { return newLt(std::move(a), std::move(b)); }
NodeRef rawSumNode(const std::vector<NodeRef> &nodes) { return newSum(nodes); }

} // namespace lazyjit
