// ShapeTracker: movement ops on a stack of views, index/validity expressions, real strides and view
// merging (reference shape/shapetracker.py).
#include "lazyjit/Graph/ShapeTracker.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>

namespace lazyjit {

namespace {

NodeRef idxVar(size_t i, const SInt &s) { return variable("idx" + std::to_string(i), 0, s - 1); }

std::vector<NodeRef> defaultIdxs(const Shape &shape) {
  std::vector<NodeRef> out;
  for (size_t i = 0; i < shape.size(); ++i) out.push_back(idxVar(i, shape[i]));
  return out;
}

NodeRef asNodeV(const SInt &x) { return x.toNode(); }

// idxs_to_idx: the row-major flat index of per-dimension indices.
NodeRef idxsToIdx(const Shape &shape, const std::vector<NodeRef> &idxs) {
  SInt acc = 1;
  std::vector<NodeRef> ret;
  for (size_t k = shape.size(); k-- > 0;) {
    ret.push_back(asNodeV(SInt(idxs[k]) * acc));
    acc = acc * shape[k];
  }
  return sumNodes(ret);
}

std::pair<NodeRef, NodeRef> exprThroughViews(const Views &views, NodeRef idx,
                                             NodeRef valid) {
  for (size_t k = views.size() - 1; k-- > 0;) {
    if (pyEq(valid->max, 0)) return {numNode(-1), valid};
    valid = exprNodeMask(views[k], idx, valid);
    idx = exprNodeOfView(views[k], idx);
  }
  return {idx, valid};
}

bool containsZero(const Shape &s) {
  return std::any_of(s.begin(), s.end(), [](const SInt &x) { return pyEq(x, 0); });
}

} // namespace

NodeRef exprNodeMask(const View &view, const NodeRef &idx, const NodeRef &valid) {
  std::vector<NodeRef> expr;
  if (valid) expr.push_back(valid);
  if (view.mask) {
    SInt acc = 1;
    for (size_t k = view.shape.size(); k-- > 0;) {
      const SInt &d = view.shape[k];
      const auto &[x, y] = (*view.mask)[k];
      if (!(pyEq(x, 0) && pyEq(y, d))) {
        SInt base = mod(floordiv(SInt(idx), acc), d);
        expr.push_back(asNodeV(ge(base, x)));
        expr.push_back(asNodeV(lt(base, y)));
      }
      acc = acc * d;
    }
  }
  return andNodes(expr);
}

NodeRef exprNodeOfView(const View &view, NodeRef idx) {
  if (!idx) idx = variable("idx", 0, prod(view.shape) - 1);
  std::vector<NodeRef> ret;
  if (truthy(view.offset)) ret.push_back(view.offset.toNode());
  SInt acc = 1;
  auto merged = mergeDims(view.shape, view.strides);
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {
    const auto &[d, s, real] = *it;
    ret.push_back(asNodeV(mod(floordiv(SInt(idx), acc), d) * s));
    acc = acc * d;
  }
  return sumNodes(ret);
}

NodeRef exprIdxsOfView(const View &view, const std::vector<NodeRef> &idxs) {
  LAZYJIT_INTERNAL_CHECK(idxs.size() == view.shape.size(), "need an idx for all dimensions");
  std::vector<NodeRef> ret{view.offset.toNode()};
  for (size_t i = 0; i < idxs.size(); ++i)
    if (pyNe(view.shape[i], 1) && pyNe(view.strides[i], 0))
      ret.push_back(asNodeV(SInt(idxs[i]) * view.strides[i]));
  return sumNodes(ret);
}

ViewStack::ViewStack(Views views) {
  if (views.empty()) return;
  auto r = std::allocate_shared<Rep>(NodePoolAllocator<Rep>());
  auto node = [](const SInt &x) { return x.isNode(); };
  for (const View &v : views) {
    r->symbolic = r->symbolic || std::any_of(v.shape.begin(), v.shape.end(), node) ||
                  std::any_of(v.strides.begin(), v.strides.end(), node) || v.offset.isNode() ||
                  (v.mask && std::any_of(v.mask->begin(), v.mask->end(),
                                         [](const SIntPair &p) { return p.first.isNode() || p.second.isNode(); }));
  }
  r->views = std::move(views);
  rep = std::move(r);
}

const Views &ViewStack::list() const {
  static const Views none;
  return rep ? rep->views : none;
}

size_t ViewStack::hash() const {
  if (!rep) return 0;
  size_t h = rep->hash.load(std::memory_order_relaxed);
  if (h) return h;
  h = rep->views.size();
  for (const auto &v : rep->views) hashCombine(h, v.hash());
  if (h == 0) h = 1; // 0 marks "not computed"
  rep->hash.store(h, std::memory_order_relaxed);
  return h;
}

bool ViewStack::operator==(const ViewStack &o) const {
  if (rep == o.rep) return true;
  if (size() != o.size() || hash() != o.hash()) return false;
  return rep->views == o.rep->views;
}

namespace {
/// The plain trackers of the last few concrete shapes made on this thread: an element-wise op's
/// output takes its shape's plain layout, so a chain of them shares one tracker.
struct PlainTrackers {
  static constexpr size_t kEntries = 4;
  ViewStack entries[kEntries];
  size_t next = 0;

  const ViewStack *find(const Shape &shape) const {
    for (const auto &e : entries) {
      if (e.empty()) continue;
      if (e.back().shape == shape) return &e;
    }
    return nullptr;
  }
};
thread_local PlainTrackers plainTrackers;

/// The last few expands of concrete trackers made on this thread, by source stack (its identity:
/// the entry keeps it alive, so its address names no other stack) and shape: a scalar operand
/// expands the shared (1, ..., 1) plain tracker to the other operand's shape at every op.
struct ExpandMemo {
  static constexpr size_t kEntries = 4;
  struct Entry {
    ViewStack src, out;
  };
  Entry entries[kEntries];
  size_t next = 0;

  const ViewStack *find(const ViewStack &src, const Shape &shape) const {
    for (const auto &e : entries)
      if (e.src.sameAs(src) && !e.out.empty() && e.out.back().shape == shape) return &e.out;
    return nullptr;
  }
  void put(const ViewStack &src, const ViewStack &out) {
    entries[next] = Entry{src, out};
    next = (next + 1) % kEntries;
  }
};
thread_local ExpandMemo expandMemo;
} // namespace

ShapeTracker ShapeTracker::fromShape(const Shape &shape) {
  bool concrete = std::all_of(shape.begin(), shape.end(), [](const SInt &s) { return s.isInt(); });
  if (concrete)
    if (const ViewStack *hit = plainTrackers.find(shape)) return ShapeTracker{*hit};
  Views v;
  v.push_back(View::create(shape));
  ShapeTracker st{ViewStack(std::move(v))};
  if (concrete) {
    plainTrackers.entries[plainTrackers.next] = st.views;
    plainTrackers.next = (plainTrackers.next + 1) % PlainTrackers::kEntries;
  }
  return st;
}

int64_t ShapeTracker::size() const {
  if (containsZero(shape())) return 0;
  SInt ret = exprIdxs().first->max;
  while (!ret.isInt()) ret = ret.node()->max;
  return ret.asInt() + 1;
}

ShapeTracker ShapeTracker::withLast(View v) const {
  Views out;
  out.reserve(views.size());
  out.insert(out.end(), views.begin(), views.end() - 1);
  out.push_back(std::move(v));
  return ShapeTracker{ViewStack(std::move(out))};
}

ShapeTracker ShapeTracker::pad(const PadArg &arg) const { return withLast(views.back().pad(arg)); }
ShapeTracker ShapeTracker::shrink(const PadArg &arg) const { return withLast(views.back().shrink(arg)); }
ShapeTracker ShapeTracker::expand(const Shape &newShape) const {
  bool memo = !views.symbolic() && std::all_of(newShape.begin(), newShape.end(), [](const SInt &s) { return s.isInt(); });
  if (memo)
    if (const ViewStack *hit = expandMemo.find(views, newShape)) return ShapeTracker{*hit};
  ShapeTracker out = withLast(views.back().expand(newShape));
  if (memo) expandMemo.put(views, out.views);
  return out;
}
ShapeTracker ShapeTracker::permute(const std::vector<int64_t> &axis) const {
  return withLast(views.back().permute(axis));
}
ShapeTracker ShapeTracker::stride(const std::vector<int64_t> &mul) const {
  return withLast(views.back().stride(mul));
}

// (concrete, every dim at least 1, and a count that fits: the element count as a plain product)
static std::optional<int64_t> positiveCount(const Shape &s) {
  int64_t n = 1;
  for (const SInt &d : s)
    if (!d.isInt() || d.asInt() < 1 || __builtin_mul_overflow(n, d.asInt(), &n)) return std::nullopt;
  return n;
}

ShapeTracker ShapeTracker::reshape(const Shape &newShape, bool mergeView) const {
  // A plain tracker (one contiguous view) reshapes to the plain tracker of the new shape, as
  // View::reshape does (the reference's `if self.contiguous: return View.create(new_shape)`),
  // shared from the per-thread table instead of a new stack: a scalar operand reshapes a 0-d
  // constant to (1, ..., 1) at every op.
  if (mergeView && views.size() == 1 && views.back().contiguous)
    if (auto n = positiveCount(newShape); n && n == positiveCount(shape())) return fromShape(newShape);
  if (mergeView)
    if (auto v = views.back().reshape(newShape)) return withLast(std::move(*v));
  // The size check of View::reshape runs in both paths so a bad reshape always throws.
  if (!mergeView) (void)views.back().reshape(newShape);
  Views out(views.begin(), views.end());
  out.push_back(View::create(newShape));
  return ShapeTracker{ViewStack(std::move(out))};
}

// True when an index variable has a top-level `idxK*k` term and also occurs inside another
// (non-affine) term: real_strides reports the top-level stride and ignores the rest.
static bool hasAmbiguousStrides(const ShapeTracker &two) {
  NodeRef idx = two.exprIdxs().first;
  std::vector<NodeRef> terms = idx->kind == NodeKind::Sum ? idx->nodes : std::vector<NodeRef>{idx};
  std::vector<const NodeClass *> topVars;
  for (const auto &t : terms) {
    const NodeRef &base = t->kind == NodeKind::Mul ? t->a : t;
    if (base->isVar()) topVars.push_back(base->identity());
  }
  for (const auto &t : terms) {
    const NodeRef &base = t->kind == NodeKind::Mul ? t->a : t;
    if (base->isVar()) continue;
    for (const auto &v : t->vars())
      if (std::find(topVars.begin(), topVars.end(), v->identity()) != topVars.end()) return true;
  }
  return false;
}

static std::optional<View> mergeViews(const View &vm2, const View &vm1) {
  if (vm2.hasMask() || pyNe(vm1.offset, 0)) return std::nullopt;
  // Deliberate fix of a reference bug: the reference merges through such strides and the merged
  // view then reads other elements; lazyjit keeps the two views.
  if (hasAmbiguousStrides(ShapeTracker{{vm2, vm1}})) return std::nullopt;
  auto rs = ShapeTracker{{vm2, vm1}}.realStrides();
  Shape strides;
  for (const auto &s : rs) {
    if (!s) return std::nullopt;
    strides.push_back(*s);
  }
  return View::create(vm1.shape, strides, vm2.offset, vm1.mask);
}

ShapeTracker ShapeTracker::simplify() && {
  if (views.size() < 2) return std::move(*this);
  return static_cast<const ShapeTracker &>(*this).simplify();
}

ShapeTracker ShapeTracker::simplify() const & {
  std::optional<Views> out; // copied at the first merge: most stacks have one view or do not merge
  while (true) {
    const Views &cur = out ? *out : views.list();
    if (cur.size() < 2) break;
    auto merged = mergeViews(cur[cur.size() - 2], cur.back());
    if (!merged) break;
    if (!out) out.emplace(cur.begin(), cur.end());
    out->pop_back();
    out->back() = std::move(*merged);
  }
  return out ? ShapeTracker{ViewStack(std::move(*out))} : *this;
}

std::pair<NodeRef, NodeRef> ShapeTracker::exprIdxs(std::optional<std::vector<NodeRef>> idxs) const {
  std::vector<NodeRef> ix = idxs ? *idxs : defaultIdxs(shape());
  NodeRef idx = exprIdxsOfView(views.back(), ix);
  NodeRef valid = exprNodeMask(views.back(), idxsToIdx(views.back().shape, ix));
  return exprThroughViews(views.list(), idx, valid);
}

std::pair<NodeRef, NodeRef> ShapeTracker::exprNode(NodeRef idx) const {
  if (!idx) idx = variable("idx", 0, prod(shape()) - 1);
  return exprThroughViews(views.list(), exprNodeOfView(views.back(), idx), exprNodeMask(views.back(), idx));
}

std::vector<std::optional<SInt>> ShapeTracker::realStrides(bool ignoreValid) const {
  if (views.size() == 1 && !views.back().mask) {
    std::vector<std::optional<SInt>> out;
    for (const auto &s : views.back().strides) out.emplace_back(s);
    return out;
  }
  std::vector<NodeRef> idxs = defaultIdxs(shape());
  auto [idx, valid] = exprIdxs(idxs);
  std::vector<std::optional<SInt>> ret(views.back().shape.size());
  std::vector<NodeRef> terms = idx->kind == NodeKind::Sum ? idx->nodes : std::vector<NodeRef>{idx};
  for (const auto &t : terms) {
    NodeRef maybeIdx = t;
    SInt maybeStride = 1;
    if (t->kind == NodeKind::Mul) {
      maybeIdx = t->a;
      maybeStride = t->b;
    }
    for (size_t i = 0; i < idxs.size(); ++i) {
      if (pyEq(idxs[i], maybeIdx)) {
        ret[i] = maybeStride;
        break;
      }
    }
  }
  auto idxVars = idx->vars(), validVars = valid->vars();
  auto inSet = [](const std::vector<NodeRef> &set, const NodeRef &n) {
    if (n->isNum()) return false;
    return std::any_of(set.begin(), set.end(), [&](const NodeRef &v) { return v->identity() == n->identity(); });
  };
  for (size_t i = 0; i < idxs.size(); ++i) {
    if (inSet(validVars, idxs[i]) && !ignoreValid)
      ret[i] = std::nullopt;
    else if (!inSet(idxVars, idxs[i]))
      ret[i] = SInt(0);
  }
  return ret;
}

std::vector<int64_t> ShapeTracker::unitStrideAxes(bool ignoreValid) const {
  std::vector<int64_t> out;
  auto rs = realStrides(ignoreValid);
  for (size_t i = 0; i < rs.size(); ++i)
    if (rs[i] && pyEq(*rs[i], 1)) out.push_back(static_cast<int64_t>(i));
  return out;
}

bool ShapeTracker::axisIsMasked(int64_t axis) const {
  auto [idx, valid] = exprIdxs();
  std::string name = "idx" + std::to_string(axis);
  for (const auto &v : valid->vars())
    if (v->expr && *v->expr == name) return true;
  return false;
}

std::vector<NodeRef> ShapeTracker::vars() const {
  std::vector<NodeRef> out;
  if (!views.symbolic()) return out;
  for (const auto &v : views)
    for (const auto &x : v.vars()) {
      bool dup = std::any_of(out.begin(), out.end(), [&](const NodeRef &o) { return o->identity() == x->identity(); });
      if (!dup) out.push_back(x);
    }
  return out;
}

std::map<std::string, std::pair<NodeRef, int64_t>> ShapeTracker::varVals() const {
  std::map<std::string, std::pair<NodeRef, int64_t>> out;
  for (const auto &v : vars()) {
    if (!v->boundValue()) continue;
    auto [unbound, val] = v->unbindVar();
    auto [it, fresh] = out.emplace(*v->expr, std::make_pair(unbound, val));
    LAZYJIT_USER_CHECK(fresh || it->second.second == val, Error,
                       "variable {} is bound to both {} and {}", *v->expr, it->second.second, val);
  }
  return out;
}

ShapeTracker ShapeTracker::unbind() && {
  if (!views.symbolic()) return std::move(*this);
  return static_cast<const ShapeTracker &>(*this).unbind();
}

ShapeTracker ShapeTracker::unbind() const & {
  // without variables there is nothing to unbind (vars() allocates nothing then): the same views
  if (vars().empty()) return *this;
  Views out;
  for (const auto &v : views) out.push_back(v.unbind());
  return ShapeTracker{ViewStack(std::move(out))};
}

std::string ShapeTracker::repr() const {
  std::string s = "ShapeTracker(views=(";
  for (size_t i = 0; i < views.size(); ++i) s += (i ? ", " : "") + views[i].repr();
  if (views.size() == 1) s += ",";
  return s + "))";
}

std::optional<std::vector<std::vector<int64_t>>> getContraction(const Shape &oldShape,
                                                               const Shape &newShape) {
  std::vector<SInt> accOld, accNew;
  SInt a = 1;
  for (const auto &s : oldShape) accOld.push_back(a = a * s);
  a = 1;
  for (const auto &s : newShape) accNew.push_back(a = a * s);
  std::vector<int64_t> split;
  for (const auto &acc : accNew) {
    if (pyEq(acc, 1)) {
      split.push_back(0);
      continue;
    }
    auto it = std::find_if(accOld.begin(), accOld.end(), [&](const SInt &x) { return pyEq(x, acc); });
    if (it == accOld.end()) return std::nullopt;
    split.push_back(static_cast<int64_t>(it - accOld.begin()) + 1);
  }
  std::vector<std::vector<int64_t>> out;
  for (size_t j = 0; j < split.size(); ++j) {
    int64_t st = j == 0 ? 0 : split[j - 1];
    int64_t ed = j + 1 < split.size() ? split[j] : static_cast<int64_t>(oldShape.size());
    std::vector<int64_t> g;
    for (int64_t k = st; k < ed; ++k) g.push_back(k);
    out.push_back(g);
  }
  return out;
}

} // namespace lazyjit
