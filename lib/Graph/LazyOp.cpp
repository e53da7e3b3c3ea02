// LazyOp structure: hashing, structural equality, buffer collection, buffer mapping.
#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Graph/GraphLock.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Graph/WalkMarks.h"
#include "lazyjit/Support/Release.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/StridePrefetch.h"

#include <algorithm>
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
  GraphLock graph;
  if (leafCount_) pool_detail::deallocate(leaves_, leafCount_ * sizeof(LazyBuffer *));
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

LazyOp::LazyOp(Op op_, LazySrcs &&src_, LazyOpArg &&arg_)
    : op(op_), src(std::move(src_)), arg(std::move(arg_)) {
  size_t h = static_cast<size_t>(op) + 0x51;
  for (const auto &s : src) {
    hashCombine(h, s.isBuffer() ? std::hash<const void *>{}(s.buf.get()) : s.op->hash());
    // the first of equal serials (only a source reached twice has one): any rule that equal ops
    // apply alike would do
    LazyBuffer *leaf = s.isBuffer() ? s.buf.get() : s.op->newestLeaf_;
    if (leaf && (!newestLeaf_ || leaf->serial_ > newestLeaf_->serial_)) newestLeaf_ = leaf;
  }
  hashCombine(h, argHash(arg));
  hash_ = h;
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

std::span<LazyBuffer *const> LazyOp::buffers() const {
  if (!leavesDone_) {
    // The leaves in first-seen depth-first order, found without recursion (a merged chain is as
    // deep as it is long) and without filling the sources' caches (a chain of n ops would keep
    // n lists of up to n leaves). A shared subtree is walked once: when the walk meets it again,
    // all its leaves have been seen. Walked ops and seen leaves are marked in the nodes.
    struct Item {
      const LazyOp *op;
      LazyBuffer *buf;
    };
    std::vector<Item> stack{{this, nullptr}};
    std::vector<LazyBuffer *> found;
    WalkMarks marks;
    StridePrefetch ahead;
    while (!stack.empty()) {
      Item it = stack.back();
      stack.pop_back();
      if (it.buf) {
        if (marks.flag(*it.buf)) found.push_back(it.buf);
        continue;
      }
      if (marks.of(*it.op)) continue;
      marks.set(*it.op, 1);
      ahead.visit(it.op);
      for (size_t i = it.op->src.size(); i-- > 0;) {
        const LazySrc &s = it.op->src[i];
        stack.push_back(s.isBuffer() ? Item{nullptr, s.buf.get()} : Item{s.op.get(), nullptr});
      }
    }
    if (!found.empty()) {
      leaves_ = static_cast<LazyBuffer **>(pool_detail::allocate(found.size() * sizeof(LazyBuffer *)));
      std::copy(found.begin(), found.end(), leaves_);
      leafCount_ = static_cast<uint32_t>(found.size());
    }
    leavesDone_ = true;
  }
  return {leaves_, leafCount_};
}

std::vector<const LazyOp *> LazyOp::lazyops() const { return preorderOps(*this); }

std::vector<const LazyOp *> LazyOp::uniqueOps() const { return uniqueOpsOf(*this); }

LazyOpRef LazyOp::mapBuffers(const std::unordered_map<const LazyBuffer *, LazySrc> &mapping) const {
  // Post-order without recursion (postorderOnce). A subtree none of whose leaves change is shared,
  // not copied (scheduling a merged chain maps every constant, most of them to themselves);
  // `mapped` holds each visited node's replacement, null when it is unchanged. The root is always
  // rebuilt.
  std::unordered_map<const LazyOp *, LazyOpRef> mapped;
  LazyOpRef root;
  postorderOnce(*this, [&](const LazyOp &x) { return mapped.count(&x) != 0; }, [&](const LazyOp &n) {
    const LazyOp *node = &n;
    bool changed = false;
    LazySrcs ns;
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
  });
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
    LazyBufferRefs rest(fin.srcs.begin() + 1, fin.srcs.end());
    done.emplace(fin.node, fin.srcs[0]->e(o, fin.node->op, rest, fin.node->arg));
  }
  return done.at(this);
}

} // namespace lazyjit
