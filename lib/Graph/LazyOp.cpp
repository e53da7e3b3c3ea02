// LazyOp structure: hashing, structural equality, buffer collection, buffer mapping, and the
// reference's FlopCounter (get_lazyop_info) and vars_from_ast.
#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Graph/NodeDType.h"
#include "lazyjit/Support/Release.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

namespace lazyjit {

namespace {

size_t hashDouble(double v) { return v != v ? 0x7ff8 : std::hash<double>{}(v); }

bool pairsEqual(const PadArg &a, const PadArg &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!pyEq(a[i].first, b[i].first) || !pyEq(a[i].second, b[i].second)) return false;
  return true;
}

} // namespace

bool argEqual(const LazyOpArg &a, const LazyOpArg &b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto &x) -> bool {
        using T = std::decay_t<decltype(x)>;
        const T &y = std::get<T>(b);
        if constexpr (std::is_same_v<T, std::monostate>) return true;
        else if constexpr (std::is_same_v<T, PadArg>) return pairsEqual(x, y);
        else if constexpr (std::is_same_v<T, CustomOpRef>) return x == y;
        else if constexpr (std::is_same_v<T, double>) return ConstBuffer::sameValue(x, y);
        else return x == y;
      },
      a);
}

size_t argHash(const LazyOpArg &a) {
  size_t h = a.index();
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, Shape>) {
          hashCombine(h, hashShape(x));
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          for (int64_t v : x) hashCombine(h, std::hash<int64_t>{}(v));
        } else if constexpr (std::is_same_v<T, PadArg>) {
          for (const auto &[p, q] : x) {
            hashCombine(h, hashSInt(p));
            hashCombine(h, hashSInt(q));
          }
        } else if constexpr (std::is_same_v<T, CastArg>) {
          hashCombine(h, static_cast<size_t>(x.dtype.scalar()) * 2 + x.bitcast);
        } else if constexpr (std::is_same_v<T, MemBuffer>) {
          hashCombine(h, x.idx);
          hashCombine(h, static_cast<size_t>(x.dtype.scalar()));
          hashCombine(h, x.st.hash());
        } else if constexpr (std::is_same_v<T, ConstBuffer>) {
          hashCombine(h, hashDouble(x.val));
          hashCombine(h, static_cast<size_t>(x.dtype.scalar()));
          hashCombine(h, x.st.hash());
        } else if constexpr (std::is_same_v<T, double>) {
          hashCombine(h, hashDouble(x));
        } else if constexpr (std::is_same_v<T, CustomOpRef>) {
          hashCombine(h, std::hash<const void *>{}(x.get()));
        }
      },
      a);
  return h;
}

LazyOp::~LazyOp() {
  if (linked_)
    for (const LazySrc &s : src) {
      if (s.isBuffer())
        s.buf->users_.erase(this);
      else
        s.op->parents_.erase(this);
    }
  for (LazySrc &s : src) {
    deferRelease(std::move(s.op));
    deferRelease(std::move(s.buf));
  }
}

LazyOp::LazyOp(Op op_, std::vector<LazySrc> src_, LazyOpArg arg_)
    : op(op_), src(std::move(src_)), arg(std::move(arg_)) {
  size_t h = static_cast<size_t>(op) + 0x51;
  for (const auto &s : src)
    hashCombine(h, s.isBuffer() ? std::hash<const void *>{}(s.buf.get()) : s.op->hash());
  hashCombine(h, argHash(arg));
  hash_ = h;
  // the dtype from the sources', each computed when it was built: O(1) per node, where a walk
  // over a kernel AST with a memo was a sixth of scheduling a long chain
  // (a node built with the wrong kind of argument, which the verifier reports, has none)
  if (isBufferOp(op)) {
    if (auto *m = std::get_if<MemBuffer>(&arg)) kernelDType_ = m->dtype;
    if (auto *c = std::get_if<ConstBuffer>(&arg)) kernelDType_ = c->dtype;
    return;
  }
  if (op == Op::Cast && !std::holds_alternative<CastArg>(arg)) return;
  DType srcs[3];
  int arity = opArity(op);
  if (src.size() > 3 || (arity >= 0 && static_cast<int>(src.size()) < arity)) return;
  for (size_t i = 0; i < src.size(); ++i) {
    std::optional<DType> d = src[i].isBuffer() ? std::optional<DType>(src[i].buf->dtype()) : src[i].op->kernelDType_;
    if (!d) return;
    srcs[i] = *d;
  }
  kernelDType_ = kernelNodeDType(*this, std::span<const DType>(srcs, src.size()));
}

bool LazyOp::operator==(const LazyOp &o) const {
  // pairwise, with an explicit stack: kernel ASTs of merged chains are as deep as they are long;
  // a pair met again (subtrees both sides share, `x * x`) was compared at its first meeting
  std::vector<std::pair<const LazyOp *, const LazyOp *>> stack{{this, &o}};
  struct PairHash {
    size_t operator()(const std::pair<const LazyOp *, const LazyOp *> &p) const {
      return std::hash<const void *>()(p.first) * 31 + std::hash<const void *>()(p.second);
    }
  };
  std::unordered_set<std::pair<const LazyOp *, const LazyOp *>, PairHash> compared;
  while (!stack.empty()) {
    auto [a, b] = stack.back();
    stack.pop_back();
    if (a == b) continue;
    if (a->hash_ != b->hash_ || a->op != b->op || a->src.size() != b->src.size()) return false;
    if (!a->src.empty() && !compared.emplace(a, b).second) continue;
    if (!argEqual(a->arg, b->arg)) return false;
    for (size_t i = 0; i < a->src.size(); ++i) {
      const LazySrc &x = a->src[i], &y = b->src[i];
      if (x.isBuffer() != y.isBuffer()) return false;
      if (x.isBuffer()) {
        if (x.buf != y.buf) return false;
      } else {
        stack.emplace_back(x.op.get(), y.op.get());
      }
    }
  }
  return true;
}

const std::vector<LazyBuffer *> &LazyOp::buffers() const {
  if (!buffersDone_) {
    // The leaves in first-seen depth-first order, found without recursion (a merged chain is as
    // deep as it is long) and without filling the sources' caches (a chain of n ops would keep
    // n lists of up to n leaves). A shared subtree is walked once: when the walk meets it again,
    // all its leaves have been seen.
    struct Item {
      const LazyOp *op;
      LazyBuffer *buf;
    };
    std::vector<Item> stack{{this, nullptr}};
    std::unordered_set<const LazyOp *> walked;
    std::unordered_set<const LazyBuffer *> seen;
    while (!stack.empty()) {
      Item it = stack.back();
      stack.pop_back();
      if (it.buf) {
        if (seen.insert(it.buf).second) buffers_.push_back(it.buf);
        continue;
      }
      if (!walked.insert(it.op).second) continue;
      for (size_t i = it.op->src.size(); i-- > 0;) {
        const LazySrc &s = it.op->src[i];
        stack.push_back(s.isBuffer() ? Item{nullptr, s.buf.get()} : Item{s.op.get(), nullptr});
      }
    }
    buffersDone_ = true;
  }
  return buffers_;
}

std::vector<const LazyOp *> LazyOp::lazyops() const {
  // preorder, every occurrence (the reference's get_lazyops), in one pass and without recursion:
  // a chain of n merged elementwise ops costs O(n) and no native stack
  std::vector<const LazyOp *> out;
  std::vector<const LazyOp *> stack{this};
  while (!stack.empty()) {
    const LazyOp *n = stack.back();
    stack.pop_back();
    out.push_back(n);
    for (size_t i = n->src.size(); i-- > 0;)
      if (!n->src[i].isBuffer()) stack.push_back(n->src[i].op.get());
  }
  return out;
}

std::vector<const LazyOp *> LazyOp::uniqueOps() const {
  // the walk enters each node at its first occurrence in lazyops()' preorder: a node met again had
  // its whole subtree walked then
  std::vector<const LazyOp *> out;
  walkOps(*this, [&](const LazyOp &op) {
    out.push_back(&op);
    return true;
  }, [](const LazyOp &) {});
  return out;
}

LazyOpRef LazyOp::mapBuffers(const std::unordered_map<const LazyBuffer *, LazySrc> &mapping) const {
  // Post-order with an explicit stack. A subtree none of whose leaves change is shared, not copied
  // (scheduling a merged chain maps every constant, most of them to themselves); `mapped` holds
  // each visited node's replacement, null when it is unchanged. The root is always rebuilt.
  std::unordered_map<const LazyOp *, LazyOpRef> mapped;
  struct Frame {
    const LazyOp *node;
    size_t next;
  };
  std::vector<Frame> stack{{this, 0}};
  LazyOpRef root;
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.next < f.node->src.size()) {
      const LazySrc &s = f.node->src[f.next++];
      if (!s.isBuffer() && !mapped.count(s.op.get())) stack.push_back({s.op.get(), 0});
      continue;
    }
    const LazyOp *node = f.node;
    stack.pop_back();
    bool changed = false;
    std::vector<LazySrc> ns;
    ns.reserve(node->src.size());
    for (const LazySrc &s : node->src) {
      if (s.isBuffer()) {
        auto it = mapping.find(s.buf.get());
        bool replace = it != mapping.end() && !(it->second.isBuffer() && it->second.buf == s.buf);
        ns.push_back(replace ? it->second : s);
        changed = changed || replace;
      } else {
        const LazyOpRef &m = mapped.at(s.op.get());
        changed = changed || m;
        ns.emplace_back(m ? m : s.op);
      }
    }
    if (node == this)
      root = make(op, std::move(ns), arg);
    else
      mapped.emplace(node, changed ? make(node->op, std::move(ns), node->arg) : nullptr);
  }
  return root;
}

LazyBufferRef LazyOp::replaceWithMovementOps(const GraphOptions &o,
                                             const std::vector<std::pair<Op, LazyOpArg>> &ops) const {
  // The reference's recursion (each source in order: a buffer gets the movement ops, an op is
  // rebuilt first), with an explicit stack: a merged chain is as deep as it is long. A node the tree
  // shares (`x * x`) is rebuilt once; the reference rebuilds it per occurrence, which the lazy
  // cache then turns into the same buffer.
  struct Frame {
    const LazyOp *node;
    size_t next;
    std::vector<LazyBufferRef> srcs;
  };
  std::unordered_map<const LazyOp *, LazyBufferRef> done;
  std::vector<Frame> stack;
  stack.push_back({this, 0, {}});
  while (!stack.empty()) {
    Frame &f = stack.back();
    LAZYJIT_INTERNAL_CHECK(isElementwise(f.node->op), "replace_with_movement_ops on {}", opName(f.node->op));
    if (f.next < f.node->src.size()) {
      const LazySrc &z = f.node->src[f.next];
      if (z.isBuffer()) {
        LazyBufferRef y = z.buf;
        for (const auto &[mop, marg] : ops) y = y->movementOp(o, mop, marg);
        f.srcs.push_back(std::move(y));
        ++f.next;
      } else if (auto it = done.find(z.op.get()); it != done.end()) {
        f.srcs.push_back(it->second);
        ++f.next;
      } else {
        stack.push_back({z.op.get(), 0, {}}); // (f dangles now; this source is found in `done` next)
      }
      continue;
    }
    Frame fin = std::move(f);
    stack.pop_back();
    std::vector<LazyBufferRef> rest(fin.srcs.begin() + 1, fin.srcs.end());
    done.emplace(fin.node, fin.srcs[0]->e(o, fin.node->op, rest, fin.node->arg));
  }
  return done.at(this);
}

const ShapeTracker &LazyOp::bufferSt() const {
  if (auto *m = std::get_if<MemBuffer>(&arg)) return m->st;
  if (auto *c = std::get_if<ConstBuffer>(&arg)) return c->st;
  LAZYJIT_INTERNAL_CHECK(false, "{} has no ShapeTracker", opName(op));
}

DType LazyOp::bufferDType() const {
  if (auto *m = std::get_if<MemBuffer>(&arg)) return m->dtype;
  if (auto *c = std::get_if<ConstBuffer>(&arg)) return c->dtype;
  LAZYJIT_INTERNAL_CHECK(false, "{} has no dtype", opName(op));
}

// ---- get_lazyop_info ------------------------------------------------------------------------------

int64_t LazyOpInfo::memEstimate() const {
  int64_t s = 0;
  for (const auto &[k, v] : mem) s += v;
  return s;
}

namespace {

struct Counter {
  const Shape *shape; // points into the AST (a buffer's ShapeTracker or a reduce's shape)
  DType dtype;
  SInt flops;
  SInt consume() {
    SInt f = flops;
    flops = 0;
    return f;
  }
};

struct OpKeyHash {
  size_t operator()(const LazyOp *o) const { return o->hash(); }
};
struct OpKeyEq {
  bool operator()(const LazyOp *a, const LazyOp *b) const { return *a == *b; }
};
using CounterMemo = std::unordered_map<const LazyOp *, Counter *, OpKeyHash, OpKeyEq>;

// The reference memoizes run_ast per structurally equal sub-AST and consume_flops zeroes the
// shared counter, so a repeated subtree contributes its flops once; this keeps that behaviour.
// Shapes are not copied and the memory map is computed separately (getLazyOpInfo).
// The counter of `ast` from its sources' counters `s`.
Counter &countOp(const LazyOp &ast, const std::vector<Counter *> &s, std::deque<Counter> &store) {
  Counter &c = store.emplace_back();
  std::vector<DType> srcDTypes;
  for (const Counter *x : s) srcDTypes.push_back(x->dtype);
  std::optional<DType> dt = kernelNodeDType(ast, srcDTypes);
  LAZYJIT_INTERNAL_CHECK(dt.has_value(), "get_lazyop_info: {} is not allowed in a kernel AST", opName(ast.op));
  switch (opTypeOf(ast.op)) {
  case OpType::Buffer: {
    const ShapeTracker &st = ast.op == Op::Const ? ast.constBuffer().st : ast.memBuffer().st;
    c = {&st.shape(), *dt, ast.op == Op::Store ? s[0]->consume() : SInt(0)};
    break;
  }
  case OpType::Unary:
    c = {s[0]->shape, *dt, ast.op == Op::Cast ? s[0]->consume() : s[0]->consume() + prod(*s[0]->shape)};
    break;
  case OpType::Binary:
    c = {s[0]->shape, *dt, s[0]->consume() + s[1]->consume() + prod(*s[0]->shape)};
    break;
  case OpType::Ternary: {
    SInt f = s[0]->consume();
    for (size_t i = 1; i < ast.src.size(); ++i) f = f + s[i]->consume();
    c = {s[0]->shape, *dt, f + prod(*s[0]->shape)};
    break;
  }
  case OpType::Reduce:
    c = {&ast.shapeArg(), *dt, s[0]->consume() + prod(*s[0]->shape)};
    break;
  case OpType::Movement: // only a row kernel's EXPAND of a row value (OPT=5): no arithmetic of its own
    c = {&ast.shapeArg(), *dt, s[0]->consume()};
    break;
  case OpType::Load: break; // refused above
  }
  return c;
}

Counter *runAst(const LazyOp &root, CounterMemo &memo, std::deque<Counter> &store) {
  // post-order with an explicit stack; `results` holds the finished sources' counters
  struct Frame {
    const LazyOp *op;
    size_t next;
  };
  std::vector<Frame> stack;
  std::vector<Counter *> results;
  auto enter = [&](const LazyOp *o) {
    if (auto it = memo.find(o); it != memo.end())
      results.push_back(it->second);
    else
      stack.push_back({o, 0});
  };
  enter(&root);
  while (!stack.empty()) {
    Frame &f = stack.back();
    if (f.next < f.op->src.size()) {
      const LazySrc &x = f.op->src[f.next++];
      LAZYJIT_INTERNAL_CHECK(!x.isBuffer(), "get_lazyop_info on an AST with LazyBuffer leaves");
      enter(x.op.get());
      continue;
    }
    const LazyOp &ast = *f.op;
    stack.pop_back();
    std::vector<Counter *> s(results.end() - static_cast<std::ptrdiff_t>(ast.src.size()), results.end());
    results.resize(results.size() - ast.src.size());
    Counter &c = countOp(ast, s, store);
    memo.emplace(&ast, &c);
    results.push_back(&c);
  }
  return results.back();
}

// The LOADs of `ast` ordered by their last occurrence in lazyops(), last first, each once: the
// reverse of the preorder is the post-order of the mirrored tree, whose first occurrences a walk
// of each distinct node once keeps in order (a DAG's shared subtrees are not walked again).
std::vector<const LazyOp *> lastLoadsFirst(const LazyOp &ast) {
  std::vector<const LazyOp *> out;
  walkOps(ast, [](const LazyOp &) { return true; }, [&](const LazyOp &op) {
    if (op.op == Op::Load) out.push_back(&op);
  }, /*reversed=*/true);
  return out;
}

} // namespace

std::optional<DType> kernelNodeDType(const LazyOp &op, std::span<const DType> srcs) {
  switch (opTypeOf(op.op)) {
  case OpType::Buffer: return op.bufferDType();
  case OpType::Unary: return op.op == Op::Cast ? std::get<CastArg>(op.arg).dtype : srcs[0];
  case OpType::Binary: return promote(srcs[0], srcs[1]);
  case OpType::Ternary: return srcs.size() >= 3 ? promote(srcs[1], srcs[2]) : srcs[0];
  case OpType::Reduce: return srcs[0];
  case OpType::Movement:
    if (op.op == Op::Expand && !srcs.empty()) return srcs[0];
    return std::nullopt;
  case OpType::Load: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<DType> kernelDTypeOf(const LazyOp &root, const LazyOp **bad) {
  if (std::optional<DType> dt = root.kernelDType()) return dt;
  // a node has no dtype when it or a node below it fails kernelNodeDType: the first node in
  // post-order without one is where (a buffer node's operand is not walked, as no dtype comes
  // from it)
  const LazyOp *failed = nullptr;
  walkOps(root, [&](const LazyOp &op) { return !failed && !op.kernelDType() && !isBufferOp(op.op); },
          [&](const LazyOp &op) {
            if (!failed && !op.kernelDType()) failed = &op;
          });
  if (bad) *bad = failed;
  return std::nullopt;
}

LazyOpInfo getLazyOpInfo(const LazyOp &ast) {
  CounterMemo memo;
  std::deque<Counter> store;
  Counter *c = runAst(ast, memo, store);
  // The reference merges the sources' memory dicts bottom-up, later sources overriding earlier
  // ones, and a STORE overriding its source: that is every LOAD in left-to-right order, last one
  // winning, then the STORE at the root.
  std::map<int, int64_t> mem;
  for (const LazyOp *x : lastLoadsFirst(ast))
    mem.emplace(x->memBuffer().idx, x->memBuffer().dtype.itemsize() * x->memBuffer().st.size());
  if (ast.op == Op::Store) mem[ast.memBuffer().idx] = ast.memBuffer().dtype.itemsize() * ast.memBuffer().st.size();
  return {*c->shape, c->dtype, c->flops, std::move(mem)};
}

std::vector<NodeRef> varsFromAst(const LazyOp &ast) {
  std::vector<NodeRef> out;
  for (const LazyOp *x : ast.uniqueOps()) {
    if (!isBufferOp(x->op)) continue;
    for (const auto &v : x->bufferSt().vars())
      if (std::none_of(out.begin(), out.end(), [&](const NodeRef &o) { return o->identity() == v->identity(); }))
        out.push_back(v);
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeRef &a, const NodeRef &b) {
    return (a->expr ? *a->expr : "None") < (b->expr ? *b->expr : "None");
  });
  return out;
}

std::unordered_set<const LazyOp *> expandedSubtrees(const LazyOp &ast) {
  std::vector<const LazyOp *> stack;
  for (const LazyOp *x : ast.uniqueOps())
    if (x->op == Op::Expand) stack.push_back(x);
  std::unordered_set<const LazyOp *> out;
  while (!stack.empty()) {
    const LazyOp *x = stack.back();
    stack.pop_back();
    if (!out.insert(x).second) continue;
    for (const auto &s : x->src)
      if (!s.isBuffer()) stack.push_back(s.op.get());
  }
  return out;
}

} // namespace lazyjit
