// LazyBuffer construction, children, and the creation/elementwise/reduce ops of lazy.py. The dedup
// cache is in LazyCache.cpp, movement ops and their pushing rules in MovementOps.cpp.
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/GraphLock.h"
#include "LazyCache.h"
#include "lazyjit/Support/Release.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/PtrSet.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <iterator>
#include <limits>
#include <mutex>
#include <unordered_map>

namespace lazyjit {

// ---- WeakBufferSet --------------------------------------------------------------------------------

namespace {
template <typename T> void eraseOne(PtrList<T> &v, const void *x) { v.erase(x); }
} // namespace

WeakBufferSet::~WeakBufferSet() {
  for (LazyBuffer *b : items) eraseOne(b->memberOf_, this);
}

void WeakBufferSet::add(LazyBuffer *b) {
  if (items.contains(b)) return;
  items.push_back(b);
  b->memberOf_.push_back(this);
}

void WeakBufferSet::discard(const LazyBuffer *b) {
  if (items.erase(b)) eraseOne(const_cast<LazyBuffer *>(b)->memberOf_, this);
}

std::vector<LazyBufferRef> WeakBufferSet::live() const {
  std::vector<LazyBufferRef> out;
  out.reserve(items.size());
  for (LazyBuffer *b : items) out.push_back(b->shared_from_this());
  return out;
}

// ---- flags ------------------------------------------------------------------------------------------

GraphOptions GraphOptions::forLevel(int opt) {
  GraphOptions o;
  o.fusion = FusionFlags::forLevel(opt);
  return o;
}

GraphOptions GraphOptions::from(const Config &c) {
  GraphOptions o = forLevel(c.opt);
  o.lazyCache = c.lazyCache;
  o.mergeView = c.mergeView;
  o.reduceSplitThreshold = c.reduceSplitThreshold;
  return o;
}

// ---- construction -------------------------------------------------------------------------------

namespace {
// The graph is built from one thread at a time (see LazyBuffer.h), so a plain counter suffices.
size_t &liveCounter() {
  static size_t n = 0;
  return n;
}
} // namespace

size_t liveLazyBufferCount() { return liveCounter(); }

namespace {
uint64_t nextSerial() {
  // Each thread takes serials in blocks, one atomic add per block: a locked instruction per buffer
  // waited for the stores before it, the new nodes' lines, to reach the cache (a sixth of building
  // a long chain). Serials stay unique and rise within a thread; threads building graphs of their
  // own never compare each other's.
  static std::atomic<uint64_t> blocks{0};
  constexpr uint64_t kBlock = 4096;
  thread_local uint64_t next = 0, end = 0;
  if (next == end) {
    next = blocks.fetch_add(kBlock, std::memory_order_relaxed);
    end = next + kBlock;
  }
  return next++;
}
} // namespace

const std::string &internDevice(const std::string &device) {
  // this thread's last answer first, without a lock: a graph is built on one device at a time
  thread_local const std::string *last = nullptr;
  if (last && (last == &device || *last == device)) return *last;
  static std::mutex mu;
  static auto *names = new std::deque<std::string>(); // never freed: buffers may outlive statics
  std::lock_guard<std::mutex> lock(mu);
  for (const std::string &n : *names)
    if (n == device) return *(last = &n);
  names->push_back(device);
  return *(last = &names->back());
}

LazyBuffer::LazyBuffer(const std::string &device_, ShapeTracker st_, OpType optype_, LazyOpRef op_,
                       DType dtype, std::shared_ptr<Buffer> realized, LazyBufferRef base)
    : device(internDevice(device_)), st(std::move(st_)), shape(st.shape()), op(std::move(op_)), optype(optype_),
      dtype_(dtype), base_(std::move(base)), realized_(std::move(realized)), serial_(nextSerial()) {
  checkConstruction(optype, base_.get(), st);
  const LazyBuffer *b = base_ ? base_.get() : this; // (`base` is the argument here)
  if (!b->realized_ && b->op && b->op->op == Op::LoadConst) bits_ |= kUnrealizedConst;
  if (st.views.symbolic()) bits_ |= kSymbolic;
  ++liveCounter();
}

using graph_detail::leaveCache;

LazyBuffer::~LazyBuffer() {
  GraphLock graph;
  --liveCounter();
  if (inCache_ || keyed_.head) leaveCache(this);
  // leave every set first: nothing may see this buffer as a live child while its members go
  for (WeakBufferSet *set : memberOf_) eraseOne(set->items, this);
  // the cold part's sets unlink their members (other buffers) as they die: under the graph lock,
  // not after this body with the other fields
  cold_.reset();
  if (op) op->owners_.erase(this);
  deferRelease(std::move(op));
  deferRelease(std::move(base_));
}

void LazyBuffer::checkConstruction(OpType optype, const LazyBuffer *base, const ShapeTracker &st) {
  LAZYJIT_INTERNAL_CHECK(optype != OpType::Movement || (base && base->optype != OpType::Movement),
                         "MovementOps must be based");
  LAZYJIT_INTERNAL_CHECK(base || st.contiguous(), "unbased LazyBuffers must be contiguous");
}

LazyBufferRef LazyBuffer::create(const std::string &device, ShapeTracker st, OpType optype, LazyOpRef op,
                                 DType dtype, std::shared_ptr<Buffer> realized,
                                 LazyBufferRef base) {
  GraphLock graph;
  auto ret = std::allocate_shared<LazyBuffer>(NodePoolAllocator<LazyBuffer>(), device, std::move(st), optype,
                                              std::move(op), dtype, std::move(realized), base);
  if (ret->op) ret->linkOp();
  if (base) base->views.add(ret.get());
  return ret;
}

// ---- children ---------------------------------------------------------------------------------------

void LazyBuffer::linkOp() {
  // Link the ops of this tree that are not linked yet. A merged source op was linked when its
  // own buffer was created, so the walk stops there: building a chain links each op once.
  const LazyOp *root = op.get();
  root->owners_.push_back(this);
  if (root->linked_) return;
  root->linked_ = true;
  // the ops to link, on the native stack until 16 are pending (a new op's sources are mostly
  // buffers or linked ops: a heap stack was one allocation per buffer built)
  const LazyOp *local[16];
  size_t pending = 0;
  std::vector<const LazyOp *> spill; // pushed after `local` filled up: popped first
  auto push = [&](const LazyOp *x) {
    if (pending < std::size(local)) local[pending++] = x;
    else spill.push_back(x);
  };
  push(root);
  while (pending || !spill.empty()) {
    const LazyOp *n;
    if (!spill.empty()) {
      n = spill.back();
      spill.pop_back();
    } else {
      n = local[--pending];
    }
    for (const LazySrc &s : n->src) {
      if (s.isBuffer()) {
        if (!s.buf->users_.contains(n)) s.buf->users_.push_back(n);
        continue;
      }
      const LazyOp *m = s.op.get();
      if (!m->parents_.contains(n)) m->parents_.push_back(n);
      if (!m->linked_) {
        m->linked_ = true;
        push(m);
      }
    }
  }
}

size_t LazyBuffer::childCount(size_t atMost) const {
  GraphLock graph;
  if (atMost == 0) return 0;
  std::vector<const LazyBuffer *> found;
  // whether `c` is a child not seen yet, and the count reached atMost with it
  auto count = [&](const LazyBuffer *c) {
    if ((cold_ && cold_->discarded.contains(c)) || std::find(found.begin(), found.end(), c) != found.end())
      return false;
    found.push_back(c);
    return found.size() >= atMost;
  };
  if (cold_)
    for (LazyBuffer *c : cold_->realizedChildren.items)
      if (count(c)) return atMost;
  if (users_.empty()) return found.size();
  // walk up from the ops that read this buffer; the op graph is a DAG, so remember what was seen
  std::vector<const LazyOp *> stack(users_.begin(), users_.end());
  PtrSet<LazyOp> seen;
  while (!stack.empty()) {
    const LazyOp *n = stack.back();
    stack.pop_back();
    if (!seen.insert(n)) continue;
    for (LazyBuffer *c : n->owners_)
      if (count(c)) return atMost;
    for (const LazyOp *p : n->parents_) stack.push_back(p);
  }
  return found.size();
}

LazyBuffer::Cold &LazyBuffer::cold() {
  if (!cold_) cold_ = std::make_unique<Cold>();
  return *cold_;
}

const std::shared_ptr<Buffer> &LazyBuffer::outputBuffer() const {
  static const std::shared_ptr<Buffer> none;
  return cold_ ? cold_->outputBuffer : none;
}

void LazyBuffer::setOutputBuffer(std::shared_ptr<Buffer> b) {
  GraphLock graph;
  if (b || cold_) cold().outputBuffer = std::move(b);
}

void LazyBuffer::discardChild(const LazyBuffer *child) {
  GraphLock graph;
  cold().discarded.add(const_cast<LazyBuffer *>(child));
}

void LazyBuffer::readdAsChild(const LazyOp &o) {
  GraphLock graph;
  for (const LazySrc &s : o.src)
    if (s.isBuffer() && s.buf->cold_) s.buf->cold_->discarded.discard(this);
}

void LazyBuffer::noLongerUnrealizedConst() {
  if (!(bits_ & kUnrealizedConst)) return; // (nor are its views: they took the base's answer)
  bits_ &= static_cast<uint8_t>(~kUnrealizedConst);
  for (const LazyBufferRef &v : views.live()) v->bits_ &= static_cast<uint8_t>(~kUnrealizedConst);
}

void LazyBuffer::dropOp() {
  GraphLock graph;
  if (!op) return;
  if (!base_) noLongerUnrealizedConst();
  for (LazyBuffer *x : op->buffers()) x->cold().realizedChildren.add(this);
  op->owners_.erase(this);
  deferRelease(std::move(op));
  op = nullptr;
}

void LazyBuffer::setRealized(std::shared_ptr<Buffer> b) {
  GraphLock graph;
  LAZYJIT_INTERNAL_CHECK(!base_, "no setting realized of based LazyBuffers");
  LAZYJIT_INTERNAL_CHECK(b != nullptr, "a realized LazyBuffer's storage is never taken back");
  realized_ = std::move(b);
  noLongerUnrealizedConst();
}

bool LazyBuffer::isUnrealizedContiguousConst() const {
  return isUnrealizedConst() && st.contiguous();
}

std::string LazyBuffer::repr() const {
  std::string o = op ? std::string(opName(op->op)) : (isRealized() ? "<realized>" : "<none>");
  return "<LB " + renderShape(shape) + " " + std::string(dtype().name()) + " op=" + o +
         " st=" + st.repr() + ">";
}

// ---- creation / special ops -----------------------------------------------------------------------

LazyBufferRef LazyBuffer::loadop(const GraphOptions &o, Op op, const Shape &shape, DType dtype,
                                 const std::string &device, LazyOpArg arg, LazyBufferRef src) {
  GraphLock graph;
  LazySrcs srcs;
  if (src) srcs.emplace_back(std::move(src));
  return createLazyBuffer(o, device, ShapeTracker::fromShape(shape), OpType::Load,
                          LazyOp::make(op, std::move(srcs), std::move(arg)), dtype);
}

LazyBufferRef LazyBuffer::constLike(const GraphOptions &o, double val) {
  GraphLock graph;
  // Deliberate deviation: the reference goes through dtypes.from_np(dtype.np), which turns a
  // bfloat16 constant into float64 (bfloat16 has no numpy type); lazyjit keeps the dtype.
  Shape ones(shape.size(), SInt(1));
  return loadop(o, Op::LoadConst, {}, dtype(), device, val)->reshape(o, ones)->expand(o, shape);
}

LazyBufferRef LazyBuffer::copyToDevice(const GraphOptions &o, const std::string &dev) {
  GraphLock graph;
  // back off a COPY if it's a double COPY
  if (!isRealized() && op && op->op == Op::Copy && op->src[0].buf->device == dev)
    return op->src[0].buf;
  return loadop(o, Op::Copy, shape, dtype(), dev, {}, contiguous(o));
}

LazyBufferRef LazyBuffer::contiguous(const GraphOptions &o) {
  GraphLock graph;
  // all LoadOps are already contiguous (except CONST)
  if (!isRealized() && isLoadOp(op->op) && op->op != Op::LoadConst) return self();
  if (st.contiguous() && st.size() == base()->st.size() && !isUnrealizedConst()) {
    // this will turn into nothing, it's based and a copy
    return createLazyBuffer(o, device, ShapeTracker::fromShape(shape), OpType::Load,
                            LazyOp::make(Op::Contiguous, {LazySrc(self())}), dtype(),
                            baseShared());
  }
  return loadop(o, Op::Contiguous, shape, dtype(), device, {}, self());
}

LazyBufferRef LazyBuffer::cast(const GraphOptions &o, DType dt, bool bitcast) {
  GraphLock graph;
  return e(o, Op::Cast, {}, CastArg{dt, bitcast});
}

// ---- _push_movement_ops -------------------------------------------------------------------------

namespace {

// In place; a source replaced stays alive until every source is pushed (the reference builds a new
// tuple while the old one still holds them), so the child counts the later ones see are the same.
void pushMovementOps(const GraphOptions &o, LazyBufferRefs &srcs) {
  const FusionFlags &f = o.fusion;
  LazyBufferRefs replaced;
  for (LazyBufferRef &x : srcs) {
    std::vector<std::pair<Op, LazyOpArg>> mops;
    LazyBuffer *bx = x.get();
    // backwalk all the movement ops. don't push PAD or EXPAND
    while (!bx->isRealized() && bx->optype == OpType::Movement && bx->op->op != Op::Expand &&
           (f.shufflePadOps || bx->op->op != Op::Pad) && bx->atMostOneChild()) {
      mops.emplace_back(bx->op->op, bx->op->arg);
      bx = bx->op->src[0].buf.get();
    }
    // NOTE: can't push pads past anything where f(0, 0) != 0 or f(0) != 0 (isUnsafePadOp: Ops.def)
    if (!mops.empty() && !bx->isRealized() && bx->optype == OpType::Binary &&
        bx->atMostOneChild()) {
      bool noPad = std::none_of(mops.begin(), mops.end(),
                                [](const auto &m) { return m.first == Op::Pad; });
      bool safe = true;
      if (!noPad)
        for (const LazyOp *y : bx->op->uniqueOps()) safe = safe && !isUnsafePadOp(y->op);
      if (noPad || safe) {
        std::reverse(mops.begin(), mops.end());
        LazyBufferRef pushed = bx->op->replaceWithMovementOps(o, mops);
        replaced.push_back(std::exchange(x, std::move(pushed)));
      }
    }
  }
}

} // namespace

// ---- elementwise ops ------------------------------------------------------------------------------

LazyBufferRef LazyBuffer::e(const GraphOptions &o, Op eop, const LazyBufferRefs &rest, LazyOpArg arg) {
  GraphLock graph;
  const FusionFlags &f = o.fusion;
  LazyBufferRefs srcs;
  srcs.push_back(self());
  srcs.insert(srcs.end(), rest.begin(), rest.end());

  // if we are separated from other binary ops by movement ops, we push those movement ops above
  if (f.shuffleMovementOps) pushMovementOps(o, srcs);

  const std::string &outDevice = srcs[0]->device;
  const Shape &outShape = srcs[0]->shape; // (srcs holds srcs[0] until the end)
  DType outDType = srcs[0]->dtype();
  if (eop == Op::Cast) {
    outDType = std::get<CastArg>(arg).dtype;
  } else {
    for (const auto &x : srcs) outDType = promote(outDType, x->dtype());
  }

  // push all contiguous to the end of BinaryOps
  auto pushable = [](const LazyBufferRef &x) {
    return !x->isRealized() && x->op->op == Op::Contiguous &&
           x->op->src[0].buf->atMostOneChild();
  };
  if (f.pushContiguous && std::any_of(srcs.begin(), srcs.end(), pushable)) {
    LazyBufferRefs ns;
    for (LazyBufferRef x : srcs) {
      if (pushable(x)) {
        LazyBufferRef inner = x->op->src[0].buf;
        inner->discardChild(x.get());
        x = inner;
      }
      ns.push_back(x);
    }
    LazyBufferRefs tail(ns.begin() + 1, ns.end());
    return ns[0]->e(o, eop, tail, arg)->contiguous(o);
  }

  LazySrcs opSrcs;
  opSrcs.reserve(srcs.size());
  for (const auto &x : srcs) {
    // remove the buffers from any (childless) BinaryOps that feed into this
    if (f.mergeElementwiseOps && x->optype == OpType::Binary && x->childless() &&
        !x->isRealized())
      opSrcs.emplace_back(x->op);
    else
      opSrcs.emplace_back(x);
  }
  return createLazyBuffer(o, outDevice, ShapeTracker::fromShape(outShape), OpType::Binary,
                          LazyOp::make(eop, std::move(opSrcs), std::move(arg)), outDType);
}

// ---- reduce ops -----------------------------------------------------------------------------------

LazyBufferRef LazyBuffer::reduceOp(const GraphOptions &o, Op rop, const Shape &newShape) {
  if (shape == newShape) return self();
  LazyBufferRefs srcs{self()};
  if (o.fusion.shuffleMovementOps) pushMovementOps(o, srcs);
  Shape unbound;
  for (const auto &s : newShape) unbound.push_back(s.isInt() ? s : SInt(s.node()->unbind()));
  return createLazyBuffer(o, device, ShapeTracker::fromShape(newShape), OpType::Reduce,
                          LazyOp::make(rop, {LazySrc(srcs[0])}, unbound), dtype());
}

LazyBufferRef LazyBuffer::r(const GraphOptions &o, Op rop, const Shape &newShape) {
  GraphLock graph;
  bool hasZero = std::any_of(shape.begin(), shape.end(), [](const SInt &s) { return pyEq(s, 0); });
  if (!allInt(shape) || hasZero ||
      floorDiv(prodInt(shape), prodInt(newShape)) < o.reduceSplitThreshold)
    return reduceOp(o, rop, newShape);
  // choose the largest divisor (>=16) to split on, penalize large strides
  auto strides = st.realStrides();
  bool found = false;
  double bestH = 0;
  int64_t bestDiv = 0, bestDim = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (pyEq(shape[i], newShape[i])) continue;
    int64_t divisor = gcd64(256, shape[i].asInt());
    double stride = std::numeric_limits<double>::infinity();
    if (strides[i] && truthy(*strides[i])) stride = static_cast<double>(strides[i]->asInt());
    double h = static_cast<double>(divisor) / stride;
    // tuple max: heuristic, then divisor, then the axis index
    if (!found || h > bestH || (h == bestH && (divisor > bestDiv || (divisor == bestDiv)))) {
      found = true;
      bestH = h;
      bestDiv = divisor;
      bestDim = static_cast<int64_t>(i);
    }
  }
  if (!found || bestDiv < 16 || bestH < 0.1) return reduceOp(o, rop, newShape);
  auto splitted = [&](std::vector<SInt> mid) {
    Shape s(shape.begin(), shape.begin() + bestDim);
    s.push_back(shape[bestDim].asInt() / bestDiv);
    s.insert(s.end(), mid.begin(), mid.end());
    s.insert(s.end(), shape.begin() + bestDim + 1, shape.end());
    return s;
  };
  LAZYJIT_LOG(Graph, 2, "reduce split: {} -> axis {} by {}", renderShape(shape), bestDim, bestDiv);
  return reshape(o, splitted({SInt(bestDiv)}))
      ->reduceOp(o, rop, splitted({SInt(1)}))
      ->reshape(o, splitted({}))
      ->reduceOp(o, rop, newShape);
}

} // namespace lazyjit
