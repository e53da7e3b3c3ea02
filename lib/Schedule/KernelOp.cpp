// KernelOp: the hash-consed kernel IR (intern table, dtype and shape at construction), and the
// analyses of a kernel AST: the reference's FlopCounter (get_lazyop_info), vars_from_ast and a row
// kernel's expanded subtrees.
#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Schedule/NodeDType.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/ProbeTable.h"
#include "lazyjit/Support/SpinLock.h"
#include "lazyjit/Support/Release.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <unordered_map>

namespace lazyjit {

// The live nodes: a node with sources in a list on its first source (KeyedList.h), a leaf (and a
// node whose first source's list is full) in an open-addressed table (ProbeTable) of pointers with
// their hashes: one allocation per rehash, none per node, where a node-based hash map would add
// one to every node the scheduler builds; a probe compares the slot's hash, not the node's.
struct KernelOpInterning {
  SpinLock mu;
  ProbeTable<const KernelOp *> nodes;
  size_t listed = 0;
  static constexpr auto linksOf = [](const KernelOp &x) -> KeyedLinks<const KernelOp> & { return x.keyed_; };
  KeyedLists<const KernelOp, decltype(linksOf)> lists{linksOf};
};

namespace {

using InternTable = KernelOpInterning;
InternTable &internTable() {
  static InternTable *t = new InternTable(); // never destroyed: nodes may outlive static destruction
  return *t;
}

// Equal with equal signs: -0.0 and 0.0 are different constants of a kernel, and so are NaN and
// -NaN (the text prints them apart); NaN payloads are not told apart.
bool sameDouble(double a, double b) {
  return ConstBuffer::sameValue(a, b) && std::signbit(a) == std::signbit(b);
}

bool identicalArg(const LazyOpArg &a, const LazyOpArg &b) {
  if (!argEqual(a, b)) return false;
  if (auto *x = std::get_if<double>(&a)) return sameDouble(*x, std::get<double>(b));
  if (auto *x = std::get_if<ConstBuffer>(&a)) return sameDouble(x->val, std::get<ConstBuffer>(b).val);
  return true;
}

size_t nodeHash(Op op, const KernelOpRefs &src, const LazyOpArg &arg) {
  size_t h = static_cast<size_t>(op) + 0x51;
  for (const auto &s : src) hashCombine(h, s->hash());
  hashCombine(h, argHash(arg));
  return h;
}

} // namespace

KernelOpRef KernelOp::make(Op op, KernelOpRefs src, LazyOpArg arg) {
  LAZYJIT_INTERNAL_CHECK(!isLoadOp(op), "a kernel cannot hold {}: it is a host step", opName(op));
  LAZYJIT_INTERNAL_CHECK(!std::holds_alternative<CustomOpRef>(arg), "a kernel cannot hold a host function ({})",
                         opName(op));
  for (const auto &s : src) LAZYJIT_INTERNAL_CHECK(s != nullptr, "{} has a null source", opName(op));
  size_t h = nodeHash(op, src, arg);
  InternTable &t = internTable();
  std::shared_ptr<KernelOp> found; // released (if ever) after the lock, whose mutex its destructor takes
  const KernelOp *key = src.empty() ? nullptr : src[0].get();
  {
    std::lock_guard lock(t.mu);
    auto match = [&](const KernelOp *node) {
      const KernelOp &x = *node;
      if (x.hash_ != h || x.op != op || x.src.size() != src.size()) return false;
      for (size_t i = 0; i < src.size(); ++i)
        if (x.src[i] != src[i]) return false;
      if (!identicalArg(x.arg, arg)) return false;
      // a dying node does not lock, and the search goes on: an equal node made while it was
      // dying may follow. Through the non-const weak_from_this, as SymbolicNode.cpp's table
      // explains: the const one locks a temporary owner
      found = const_cast<KernelOp &>(x).weak_from_this().lock();
      return found != nullptr;
    };
    if (key) t.lists.find(*key, match);
    if (!found && (!key || key->keyed_.overflow)) t.nodes.find(h, match);
    if (found) return found;
    found = std::allocate_shared<KernelOp>(NodePoolAllocator<KernelOp>(), Token(), op, std::move(src), std::move(arg), h);
    if (key && t.lists.file(*found, *key)) ++t.listed;
    else t.nodes.insert(h, found.get());
  }
  return found;
}

KernelOp::KernelOp(Token, Op op_, KernelOpRefs src_, LazyOpArg arg_, size_t hash)
    : op(op_), src(std::move(src_)), arg(std::move(arg_)), hash_(hash) {
  // the dtype and shape from the sources', each computed when it was built (a node built with the
  // wrong kind of argument or arity, which the verifier reports, has neither)
  if (isBufferOp(op)) {
    // (a STORE of a malformed node is malformed too)
    // (and so is a buffer node whose ShapeTracker has no view: it has no shape)
    if (src.size() > 1 || (!src.empty() && !src[0]->dtype_)) return;
    if (auto *m = std::get_if<MemBuffer>(&arg); m && !m->st.views.empty()) {
      dtype_ = m->dtype;
      shape_ = &m->st.shape();
    } else if (auto *c = std::get_if<ConstBuffer>(&arg); c && !c->st.views.empty()) {
      dtype_ = c->dtype;
      shape_ = &c->st.shape();
    }
    return;
  }
  int arity = opArity(op);
  if (src.empty() || src.size() > 3 || (arity >= 0 && static_cast<int>(src.size()) != arity)) return;
  if (op == Op::Cast && !std::holds_alternative<CastArg>(arg)) return;
  if ((isReduceOp(op) || isMovementOp(op)) && !std::holds_alternative<Shape>(arg)) return;
  DType srcs[3];
  for (size_t i = 0; i < src.size(); ++i) {
    if (!src[i]->dtype_) return;
    srcs[i] = *src[i]->dtype_;
  }
  dtype_ = kernelNodeDType(op, arg, std::span<const DType>(srcs, src.size()));
  if (!dtype_) return;
  shape_ = isReduceOp(op) || isMovementOp(op) ? &shapeArg() : src[0]->shape_;
  if (!shape_) dtype_.reset();
}

KernelOp::~KernelOp() {
  {
    InternTable &t = internTable();
    std::lock_guard lock(t.mu);
    // (an equal node made while this one was dying stays; the nodes filed under this one are
    // gone: each held this one as its first source until its own destructor unfiled it)
    if (keyed_.key) {
      t.lists.unfile(*this);
      --t.listed;
    } else {
      t.nodes.erase(hash_, this);
    }
  }
  // (the sources are this node's own: nothing else can see it any more)
  for (auto &s : const_cast<KernelOpRefs &>(src)) deferRelease(std::move(s));
}

size_t kernelOpCount() {
  std::lock_guard lock(internTable().mu);
  return internTable().nodes.size() + internTable().listed;
}

const ShapeTracker &KernelOp::bufferSt() const {
  if (auto *m = std::get_if<MemBuffer>(&arg)) return m->st;
  if (auto *c = std::get_if<ConstBuffer>(&arg)) return c->st;
  LAZYJIT_INTERNAL_CHECK(false, "{} has no ShapeTracker", opName(op));
}

DType KernelOp::bufferDType() const {
  if (auto *m = std::get_if<MemBuffer>(&arg)) return m->dtype;
  if (auto *c = std::get_if<ConstBuffer>(&arg)) return c->dtype;
  LAZYJIT_INTERNAL_CHECK(false, "{} has no dtype", opName(op));
}

std::vector<const KernelOp *> KernelOp::lazyops() const { return preorderOps(*this); }

std::vector<const KernelOp *> KernelOp::uniqueOps() const { return uniqueOpsOf(*this); }

std::optional<DType> kernelNodeDType(Op op, const LazyOpArg &arg, std::span<const DType> srcs) {
  auto buffer = [&]() -> std::optional<DType> {
    if (auto *m = std::get_if<MemBuffer>(&arg)) return m->dtype;
    if (auto *c = std::get_if<ConstBuffer>(&arg)) return c->dtype;
    return std::nullopt;
  };
  switch (opTypeOf(op)) {
  case OpType::Buffer: return buffer();
  case OpType::Unary:
    if (op == Op::Cast) {
      auto *c = std::get_if<CastArg>(&arg);
      return c ? std::optional<DType>(c->dtype) : std::nullopt;
    }
    return srcs[0];
  case OpType::Binary: return promote(srcs[0], srcs[1]);
  case OpType::Ternary: return srcs.size() >= 3 ? promote(srcs[1], srcs[2]) : srcs[0];
  case OpType::Reduce: return srcs[0];
  case OpType::Movement:
    if (op == Op::Expand && !srcs.empty()) return srcs[0];
    return std::nullopt;
  case OpType::Load: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<DType> kernelDTypeOf(const KernelOp &root, const KernelOp **bad) {
  if (std::optional<DType> dt = root.kernelDType()) return dt;
  // a node has no dtype when it or a node below it is malformed: the first node in post-order
  // without one is where
  const KernelOp *failed = nullptr;
  walkOps(root, [&](const KernelOp &op) { return !failed && !op.kernelDType(); },
          [&](const KernelOp &op) {
            if (!failed && !op.kernelDType()) failed = &op;
          });
  if (bad) *bad = failed;
  return std::nullopt;
}

// ---- get_lazyop_info ------------------------------------------------------------------------------

int64_t LazyOpInfo::memEstimate() const {
  int64_t s = 0;
  for (const auto &[k, v] : mem) s += v;
  return s;
}

LazyOpInfo getLazyOpInfo(const KernelOp &ast) {
  // The reference memoizes run_ast per structurally equal sub-AST and consume_flops zeroes the
  // shared counter, so a repeated subtree contributes its flops once: equal subtrees are one node
  // here, and each node's flops are taken by its first consumer in post-order.
  const KernelOp *bad = nullptr;
  std::optional<DType> dt = kernelDTypeOf(ast, &bad);
  LAZYJIT_INTERNAL_CHECK(dt.has_value(), "get_lazyop_info: {} is not allowed in a kernel AST", opName(bad->op));
  std::unordered_map<const KernelOp *, SInt> flops; // of each node left, until a consumer takes them
  auto consume = [&](const KernelOp *x) {
    SInt &f = flops.at(x);
    SInt out = f;
    f = 0;
    return out;
  };
  walkOps(ast, [](const KernelOp &) { return true; }, [&](const KernelOp &op) {
    SInt f = 0;
    switch (opTypeOf(op.op)) {
    case OpType::Buffer:
      if (op.op == Op::Store) f = consume(op.src[0].get());
      break;
    case OpType::Unary:
    case OpType::Binary:
    case OpType::Ternary:
    case OpType::Reduce:
      f = consume(op.src[0].get());
      for (size_t i = 1; i < op.src.size(); ++i) f = f + consume(op.src[i].get());
      if (op.op != Op::Cast) f = f + prod(*op.src[0]->shape());
      break;
    case OpType::Movement: // only a row kernel's EXPAND of a row value (OPT=5): no arithmetic of its own
      f = consume(op.src[0].get());
      break;
    case OpType::Load: break; // refused by make
    }
    flops.emplace(&op, f);
  });
  // The reference merges the sources' memory dicts bottom-up, later sources overriding earlier
  // ones, and a STORE overriding its source: that is every LOAD in left-to-right order, last one
  // winning, then the STORE at the root. The LOADs by their last occurrence in lazyops(), last
  // first: the reverse of the preorder is the post-order of the mirrored tree.
  std::map<int, int64_t> mem;
  walkOps(ast, [](const KernelOp &) { return true; }, [&](const KernelOp &x) {
    if (x.op == Op::Load) mem.emplace(x.memBuffer().idx, x.memBuffer().dtype.itemsize() * x.memBuffer().st.size());
  }, /*reversed=*/true);
  if (ast.op == Op::Store) mem[ast.memBuffer().idx] = ast.memBuffer().dtype.itemsize() * ast.memBuffer().st.size();
  return {*ast.shape(), *dt, flops.at(&ast), std::move(mem)};
}

std::vector<NodeRef> varsFromAst(const KernelOp &ast) {
  std::vector<NodeRef> out;
  for (const KernelOp *x : ast.uniqueOps()) {
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

std::vector<int> inPlaceInputs(const KernelOp &ast) {
  if (ast.op != Op::Store) return {};
  const MemBuffer &out = ast.memBuffer();
  if (!out.st.contiguous() || !out.st.vars().empty()) return {};
  std::vector<int> same, other;
  for (const KernelOp *x : ast.uniqueOps()) {
    if (x == &ast || x->op == Op::Const || isElementwise(x->op)) continue;
    if (x->op != Op::Load) return {}; // a reduce or EXPAND reads other elements than it writes
    const MemBuffer &in = x->memBuffer();
    (in.st == out.st && in.dtype == out.dtype ? same : other).push_back(in.idx);
  }
  std::vector<int> r;
  for (int i : same)
    if (i != out.idx && std::find(other.begin(), other.end(), i) == other.end() &&
        std::find(r.begin(), r.end(), i) == r.end())
      r.push_back(i);
  std::sort(r.begin(), r.end());
  return r;
}

std::unordered_set<const KernelOp *> expandedSubtrees(const KernelOp &ast) {
  std::vector<const KernelOp *> stack;
  for (const KernelOp *x : ast.uniqueOps())
    if (x->op == Op::Expand) stack.push_back(x);
  std::unordered_set<const KernelOp *> out;
  while (!stack.empty()) {
    const KernelOp *x = stack.back();
    stack.pop_back();
    if (!out.insert(x).second) continue;
    for (const auto &s : x->src) stack.push_back(s.get());
  }
  return out;
}

} // namespace lazyjit
