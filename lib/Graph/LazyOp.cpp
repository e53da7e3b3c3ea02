// LazyOp structure: hashing, structural equality, buffer collection, buffer mapping, and the
// reference's FlopCounter (get_lazyop_info) and vars_from_ast.
#include "lazyjit/Graph/LazyOp.h"
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
}

bool LazyOp::operator==(const LazyOp &o) const {
  if (this == &o) return true;
  if (hash_ != o.hash_ || op != o.op || src.size() != o.src.size()) return false;
  for (size_t i = 0; i < src.size(); ++i) {
    const LazySrc &a = src[i], &b = o.src[i];
    if (a.isBuffer() != b.isBuffer()) return false;
    if (a.isBuffer() ? a.buf != b.buf : !(*a.op == *b.op)) return false;
  }
  return argEqual(arg, o.arg);
}

const std::vector<LazyBuffer *> &LazyOp::buffers() const {
  if (!buffersDone_) {
    // The union of the sources' buffers in first-seen order. A merged elementwise chain holds
    // every constant of the chain, so this runs once per op over long lists: the first op source
    // is already deduplicated and is copied whole; the rest is checked by a linear scan when that
    // is cheap (the usual case: one new buffer against the chain) and through a hash set when not.
    std::vector<LazyBuffer *> &out = buffers_;
    size_t first = 0;
    if (!src.empty() && !src[0].isBuffer()) {
      out = src[0].op->buffers();
      first = 1;
    }
    size_t rest = 0;
    for (size_t i = first; i < src.size(); ++i)
      rest += src[i].isBuffer() ? 1 : src[i].op->buffers().size();
    out.reserve(out.size() + rest);
    std::unordered_set<const LazyBuffer *> seen;
    bool hashed = rest * (out.size() + rest) > 4096;
    if (hashed)
      for (LazyBuffer *x : out) seen.insert(x);
    auto push = [&](LazyBuffer *b) {
      if (hashed) {
        if (seen.insert(b).second) out.push_back(b);
        return;
      }
      for (LazyBuffer *x : out)
        if (x == b) return;
      out.push_back(b);
    };
    for (size_t i = first; i < src.size(); ++i) {
      if (src[i].isBuffer())
        push(src[i].buf.get());
      else
        for (LazyBuffer *b : src[i].op->buffers()) push(b);
    }
    buffersDone_ = true;
  }
  return buffers_;
}

namespace {
void collectLazyops(const LazyOp *op, std::vector<const LazyOp *> &out) {
  out.push_back(op);
  for (const auto &s : op->src)
    if (!s.isBuffer()) collectLazyops(s.op.get(), out);
}
} // namespace

std::vector<const LazyOp *> LazyOp::lazyops() const {
  // preorder, every occurrence (the reference's get_lazyops), in one pass: a chain of n merged
  // elementwise ops costs O(n), not O(n^2) as concatenating the sources' lists would
  std::vector<const LazyOp *> out;
  collectLazyops(this, out);
  return out;
}

namespace {
using BufferMapping = std::unordered_map<const LazyBuffer *, LazySrc>;

LazyOpRef mapSubtree(const LazyOpRef &node, const BufferMapping &mapping);

// The sources with their leaves replaced; `changed` tells whether any source differs.
std::vector<LazySrc> mapSources(const std::vector<LazySrc> &src, const BufferMapping &mapping, bool &changed) {
  std::vector<LazySrc> ns;
  ns.reserve(src.size());
  for (const auto &s : src) {
    if (s.isBuffer()) {
      auto it = mapping.find(s.buf.get());
      bool replace = it != mapping.end() && !(it->second.isBuffer() && it->second.buf == s.buf);
      ns.push_back(replace ? it->second : s);
      changed = changed || replace;
    } else {
      LazyOpRef m = mapSubtree(s.op, mapping);
      changed = changed || m != s.op;
      ns.emplace_back(std::move(m));
    }
  }
  return ns;
}

// A subtree none of whose leaves change is shared, not copied (scheduling a merged chain maps
// every constant, most of them to themselves).
LazyOpRef mapSubtree(const LazyOpRef &node, const BufferMapping &mapping) {
  bool changed = false;
  std::vector<LazySrc> ns = mapSources(node->src, mapping, changed);
  return changed ? LazyOp::make(node->op, std::move(ns), node->arg) : node;
}
} // namespace

LazyOpRef LazyOp::mapBuffers(const std::unordered_map<const LazyBuffer *, LazySrc> &mapping) const {
  bool changed = false;
  return make(op, mapSources(src, mapping, changed), arg);
}

LazyBufferRef LazyOp::replaceWithMovementOps(const std::vector<std::pair<Op, LazyOpArg>> &ops) const {
  LAZYJIT_INTERNAL_CHECK(isElementwise(op), "replace_with_movement_ops on {}", opName(op));
  std::vector<LazyBufferRef> srcs;
  for (const auto &z : src) {
    if (z.isBuffer()) {
      LazyBufferRef y = z.buf;
      for (const auto &[mop, marg] : ops) y = y->movementOp(mop, marg);
      srcs.push_back(y);
    } else {
      srcs.push_back(z.op->replaceWithMovementOps(ops));
    }
  }
  std::vector<LazyBufferRef> rest(srcs.begin() + 1, srcs.end());
  return srcs[0]->e(op, rest, arg);
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
Counter *runAst(const LazyOp &ast, CounterMemo &memo, std::deque<Counter> &store) {
  if (auto it = memo.find(&ast); it != memo.end()) return it->second;
  Counter *s[3] = {nullptr, nullptr, nullptr};
  std::vector<Counter *> more;
  for (size_t i = 0; i < ast.src.size(); ++i) {
    const auto &x = ast.src[i];
    LAZYJIT_INTERNAL_CHECK(!x.isBuffer(), "get_lazyop_info on an AST with LazyBuffer leaves");
    Counter *c = runAst(*x.op, memo, store);
    if (i < 3) s[i] = c;
    else more.push_back(c);
  }
  Counter &c = store.emplace_back();
  switch (opTypeOf(ast.op)) {
  case OpType::Buffer: {
    if (ast.op == Op::Load) {
      const auto &m = ast.memBuffer();
      c = {&m.st.shape(), m.dtype, 0};
    } else if (ast.op == Op::Const) {
      const auto &k = ast.constBuffer();
      c = {&k.st.shape(), k.dtype, 0};
    } else {
      const auto &m = ast.memBuffer();
      c = {&m.st.shape(), m.dtype, s[0]->consume()};
    }
    break;
  }
  case OpType::Unary:
    if (ast.op == Op::Cast)
      c = {s[0]->shape, std::get<CastArg>(ast.arg).dtype, s[0]->consume()};
    else
      c = {s[0]->shape, s[0]->dtype, s[0]->consume() + prod(*s[0]->shape)};
    break;
  case OpType::Binary:
    c = {s[0]->shape, promote(s[0]->dtype, s[1]->dtype), s[0]->consume() + s[1]->consume() + prod(*s[0]->shape)};
    break;
  case OpType::Ternary: {
    SInt f = s[0]->consume();
    for (size_t i = 1; i < ast.src.size(); ++i) f = f + (i < 3 ? s[i] : more[i - 3])->consume();
    f = f + prod(*s[0]->shape);
    DType dt = ast.src.size() >= 3 ? promote(s[1]->dtype, s[2]->dtype) : s[0]->dtype;
    c = {s[0]->shape, dt, f};
    break;
  }
  case OpType::Reduce:
    c = {&ast.shapeArg(), s[0]->dtype, s[0]->consume() + prod(*s[0]->shape)};
    break;
  case OpType::Movement:
  case OpType::Load:
    LAZYJIT_INTERNAL_CHECK(false, "get_lazyop_info: {} is not allowed in a kernel AST",
                           opName(ast.op));
  }
  memo.emplace(&ast, &c);
  return &c;
}

} // namespace

LazyOpInfo getLazyOpInfo(const LazyOp &ast) {
  CounterMemo memo;
  std::deque<Counter> store;
  Counter *c = runAst(ast, memo, store);
  // The reference merges the sources' memory dicts bottom-up, later sources overriding earlier
  // ones, and a STORE overriding its source: that is every LOAD in left-to-right order, last one
  // winning, then the STORE at the root.
  std::map<int, int64_t> mem;
  for (const LazyOp *x : ast.lazyops())
    if (x->op == Op::Load) mem[x->memBuffer().idx] = x->memBuffer().dtype.itemsize() * x->memBuffer().st.size();
  if (ast.op == Op::Store) mem[ast.memBuffer().idx] = ast.memBuffer().dtype.itemsize() * ast.memBuffer().st.size();
  return {*c->shape, c->dtype, c->flops, std::move(mem)};
}

std::vector<NodeRef> varsFromAst(const LazyOp &ast) {
  std::vector<NodeRef> out;
  for (const LazyOp *x : ast.lazyops()) {
    if (!isBufferOp(x->op)) continue;
    for (const auto &v : x->bufferSt().vars())
      if (std::none_of(out.begin(), out.end(), [&](const NodeRef &o) { return o->key() == v->key(); }))
        out.push_back(v);
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeRef &a, const NodeRef &b) {
    return (a->expr ? *a->expr : "None") < (b->expr ? *b->expr : "None");
  });
  return out;
}

} // namespace lazyjit
