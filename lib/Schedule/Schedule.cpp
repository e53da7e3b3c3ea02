// The scheduler walk (LazyBuffer.schedule of the reference) and its AST fixing steps:
// _ast_reduceops, _ast_binaryops and _replace_bufferops, in the order the reference runs them.
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Graph/GraphLock.h"
#include "KernelBuild.h"
#include "lazyjit/Schedule/NodeDType.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/PtrSet.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

namespace lazyjit {

using namespace schedule_detail;

namespace {

using BufferMap = std::unordered_map<const LazyBuffer *, LazySrc>;

// _ast_reduceops: a reduce inlines its elementwise input if that input has <= 1 child.
LazyOpRef astReduceOps(const LazyOp &op, const FusionFlags &flags) {
  LazySrc src = op.src[0];
  if (src.isBuffer() && !src.buf->isRealized()) {
    LAZYJIT_INTERNAL_CHECK(src.buf->op, "an unrealized source must have an op");
    if (flags.mergeElementwiseIntoReduce && src.buf->optype == OpType::Binary &&
        src.buf->atMostOneChild())
      src = LazySrc(src.buf->op);
  }
  return LazyOp::make(op.op, {src}, op.arg);
}

// ---- OPT=5: row fusion (not in the reference) ----------------------------------------------------
//
// An element-wise kernel of shape S that reads a broadcast of an unrealized buffer R of the row
// shape (S with the trailing "row" axes set to 1) — softmax's max and sum, layernorm's mean and
// inverse deviation — computes R itself instead of loading it: the leaf becomes EXPAND(tree of R)
// where a reduce R is REDUCE(its source over S) and an element-wise R is its op over such trees.
// Reduce sources are fused as the reference fuses them (_ast_reduceops) and may themselves read
// broadcast row buffers (softmax's sum reads the max). Every reduce of the kernel reduces the same
// trailing axes, so the lowering computes the row values of one outer index, inner ones first, with
// one pass over the row each, and then the output row: each row is read once from memory.
class RowFusion {
public:
  RowFusion(const Shape &shape, const FusionFlags &flags) : shape(shape), flags(flags) {}

  /// `op` (over the kernel's shape) with every fusable broadcast leaf replaced, and every
  /// element-wise leaf that reads such a broadcast computed here too (softmax's exp(x - max) is
  /// read by the sum and by the division: recomputing it from the cached row is cheaper than
  /// writing it and reading it back).
  LazyOpRef inlineBroadcasts(const LazyOpRef &op) {
    BufferMap m;
    for (LazyBuffer *b : op->buffers()) {
      if (LazyBuffer *root = broadcastRoot(b)) {
        if (LazyOpRef e = expandOf(root)) m.emplace(b, LazySrc(e));
      } else if (LazyOpRef t = elementwiseOf(b)) {
        m.emplace(b, LazySrc(t));
      }
    }
    return m.empty() ? op : op->mapBuffers(m);
  }
  bool fused() const { return !expands.empty(); }
  const std::vector<bool> &axes() const { return rowAxes; }
  /// elementwiseOf, for a reduce's source that is a buffer.
  LazyOpRef computeHere(LazyBuffer *b) { return elementwiseOf(b); }

private:
  const Shape &shape;
  const FusionFlags &flags;
  std::vector<bool> rowAxes; // empty until the first candidate decides them
  Shape rowShape;
  std::unordered_map<const LazyBuffer *, LazyOpRef> expands, trees, elementwise;
  int reduces = 0;

  // R if `v` is exactly R broadcast along trailing axes to the kernel's shape, R an unrealized
  // reduce or element-wise buffer that could be computed here.
  LazyBuffer *broadcastRoot(LazyBuffer *v) {
    if (!v->isView() || v->shape != shape) return nullptr;
    LazyBuffer *r = v->base();
    if (r->isRealized() || !r->op || r->isUnrealizedConst() ||
        (r->optype != OpType::Reduce && r->optype != OpType::Binary) || r->shape.size() != shape.size() ||
        r->op->op == Op::Where)
      return nullptr;
    std::vector<bool> axes(shape.size(), false);
    for (size_t i = 0; i < shape.size(); ++i) {
      if (!shape[i].isInt() || !r->shape[i].isInt()) return nullptr;
      if (r->shape[i] == shape[i]) continue;
      if (r->shape[i].asInt() != 1) return nullptr;
      axes[i] = true;
    }
    // the view reads R contiguously along the kept axes and repeats it along the row axes
    ShapeTracker st = v->st.simplify();
    if (st.views.size() != 1) return nullptr;
    const View &view = st.views[0];
    Shape want = stridesForShape(r->shape);
    if (view.mask || !pyEq(view.offset, 0)) return nullptr;
    for (size_t i = 0; i < shape.size(); ++i)
      if (!pyEq(view.strides[i], axes[i] ? SInt(0) : want[i])) return nullptr;
    if (rowAxes.empty()) {
      // the row axes must be the innermost ones (ignoring 1s), and the row not too long
      int64_t elems = 1;
      bool seenRow = false;
      for (size_t i = 0; i < shape.size(); ++i) {
        if (axes[i]) {
          seenRow = true;
          elems *= shape[i].asInt();
        } else if (seenRow && shape[i].asInt() != 1) {
          return nullptr;
        }
      }
      if (!seenRow || elems > kMaxRowKernelElements || elems < kMinRowKernelElements) return nullptr;
      rowAxes = axes;
      rowShape = r->shape;
    }
    if (axes != rowAxes) return nullptr;
    if (r->optype == OpType::Reduce && !reduceOverRow(r)) return nullptr;
    return r;
  }

  // The op of `b` with its broadcasts inlined, if `b` is an unrealized element-wise buffer of the
  // kernel's shape that reads a broadcast row value; null otherwise.
  LazyOpRef elementwiseOf(LazyBuffer *b) {
    if (auto it = elementwise.find(b); it != elementwise.end()) return it->second;
    LazyOpRef t;
    if (!b->isView() && !b->isRealized() && b->op && b->optype == OpType::Binary && b->shape == shape &&
        b->op->op != Op::Where) {
      bool readsRow = false;
      for (LazyBuffer *x : b->op->buffers()) readsRow = readsRow || broadcastRoot(x) != nullptr;
      if (readsRow) t = inlineBroadcasts(b->op);
    }
    elementwise.emplace(b, t);
    return t;
  }

  // A reduce buffer from the kernel's shape to the row shape.
  bool reduceOverRow(const LazyBuffer *r) const {
    const LazySrc &src = r->op->src[0];
    return r->shape == rowShape && src.isBuffer() && src.buf->shape == shape;
  }

  // EXPAND(tree of R), one node per R; null when R would take the kernel past its reduce budget.
  LazyOpRef expandOf(LazyBuffer *r) {
    if (auto it = expands.find(r); it != expands.end()) return it->second;
    LazyOpRef t = treeOf(r);
    if (!t) return nullptr;
    LazyOpRef e = LazyOp::make(Op::Expand, {LazySrc(t)}, shape);
    expands.emplace(r, e);
    return e;
  }

  // The op tree computing R over the row shape, with its fusable sources inlined.
  LazyOpRef treeOf(LazyBuffer *r) {
    if (auto it = trees.find(r); it != trees.end()) return it->second;
    LazyOpRef t;
    if (r->optype == OpType::Reduce) {
      if (reduces >= kMaxRowKernelReduces) return nullptr;
      ++reduces;
      t = inlineBroadcasts(astReduceOps(*r->op, flags));
    } else {
      // an element-wise op over the row shape: reduces and element-wise buffers of that shape
      // among its leaves are computed here too
      BufferMap m;
      for (LazyBuffer *x : r->op->buffers()) {
        if (x->isView() || x->isRealized() || !x->op || x->isUnrealizedConst() || x->shape != rowShape) continue;
        bool reduce = x->optype == OpType::Reduce && reduceOverRow(x);
        // (a WHERE's buffer may have a larger dtype than its values: see scheduleItem)
        if (!reduce && (x->optype != OpType::Binary || x->op->op == Op::Where)) continue;
        if (LazyOpRef sub = treeOf(x)) m.emplace(x, LazySrc(sub));
      }
      t = m.empty() ? r->op : r->op->mapBuffers(m);
    }
    trees.emplace(r, t);
    return t;
  }
};

// Whether `op` reads a LazyBuffer of shape `full` outside its EXPANDs (a row kernel's final pass
// needs a leaf of the kernel's shape).
bool readsOutsideRows(const LazyOp &op, const Shape &full) {
  std::vector<const LazyOp *> stack{&op};
  PtrSet<LazyOp> seen;
  while (!stack.empty()) {
    const LazyOp *x = stack.back();
    stack.pop_back();
    if (x->op == Op::Expand || !seen.insert(x)) continue;
    for (const auto &s : x->src) {
      if (s.isBuffer()) {
        if (s.buf->shape == full) return true;
      } else {
        stack.push_back(s.op.get());
      }
    }
  }
  return false;
}

// Row fusion inside a reduce's source (OPT=5): cross-entropy's sum of log_softmax(x) * y computes
// the row's max and sum itself. The reduce must reduce every row axis, so that each row's values
// are complete before its final pass accumulates.
LazyOpRef rowFuseReduce(const LazyOpRef &reduce, const LazyBuffer &buf, const FusionFlags &flags) {
  if (!flags.rowFusion || !rowReduceDevice(buf.device) || !buf.op->src[0].isBuffer()) return reduce;
  const Shape &full = buf.op->src[0].buf->shape;
  RowFusion rows(full, flags);
  const LazySrc &src = reduce->src[0];
  LazyOpRef fused;
  if (src.isBuffer()) {
    LazyOpRef t = rows.computeHere(src.buf.get());
    if (!t) return reduce;
    fused = t;
  } else {
    fused = rows.inlineBroadcasts(src.op);
  }
  if (!rows.fused() || !readsOutsideRows(*fused, full)) return reduce;
  const Shape &out = reduce->shapeArg();
  for (size_t i = 0; i < out.size(); ++i)
    if (rows.axes()[i] && !pyEq(out[i], 1)) return reduce;
  return LazyOp::make(reduce->op, {LazySrc(fused)}, reduce->arg);
}

// _ast_binaryops: late-merges one upstream reduce (and the elementwise op above it) into the
// elementwise kernel that consumes it.
LazyOpRef astBinaryOps(const LazyOpRef &opRef, const Shape &shape, const std::string &device,
                       const GraphOptions &o) {
  const FusionFlags &flags = o.fusion;
  if (flags.rowFusion && rowKernelDevice(device)) {
    RowFusion rows(shape, flags);
    LazyOpRef fused = rows.inlineBroadcasts(opRef);
    if (rows.fused()) return fused;
  }
  const LazyOp &op = *opRef;
  const auto &bufs = op.buffers();
  std::vector<std::pair<const LazyBuffer *, std::optional<LazySrc>>> realSrcs;
  realSrcs.reserve(bufs.size());
  for (LazyBuffer *b : bufs) realSrcs.emplace_back(b, std::nullopt);
  std::unordered_map<const LazyBuffer *, size_t> slotOf; // built when a reduce is merged
  auto slot = [&](const LazyBuffer *b) -> std::optional<LazySrc> * {
    if (slotOf.empty())
      for (size_t i = 0; i < realSrcs.size(); ++i) slotOf.emplace(realSrcs[i].first, i);
    auto it = slotOf.find(b);
    return it == slotOf.end() ? nullptr : &realSrcs[it->second].second;
  };

  // NOTE: contiguous does not always mean the same size with SHRINK (reference comment)
  std::vector<std::pair<LazyBufferRef, LazyBuffer *>> psrcs;
  for (LazyBuffer *buf : bufs) {
    // the reference tests len(buf.children) first; the tests are pure, and counting children
    // walks the graph, so the cheap ones go first. An unrealized constant's movement root is its
    // CONST (or the constant's own view), never a reduce: a fused chain has one such leaf per op,
    // and walking each one's views here was a third of scheduling a 20,000-op chain's misses
    if (buf->isUnrealizedConst()) continue;
    LazyBuffer *root = getMovementRootContiguous(buf);
    if (root->optype == OpType::Reduce && !root->isRealized() &&
        pyEq(prod(root->shape), prod(buf->shape)) && buf->atMostOneChild() &&
        root->atMostOneChild())
      psrcs.emplace_back(buf->shared_from_this(), root);
  }
  Shape intermediate = shape;
  std::vector<std::pair<const LazyBuffer *, LazySrc>> extra;
  if (flags.mergeOneReduceIntoElementwise && !psrcs.empty()) {
    // NOTE: right now we can't handle multiple, as we'd have to check for loop
    auto [buf, root] = psrcs[0];
    LazyOpRef top = rowFuseReduce(astReduceOps(*root->op, flags), *root, flags);
    *slot(buf.get()) = LazySrc(top);
    // the reduce op buffers are not modified
    for (LazyBuffer *x : top->buffers()) {
      if (auto *s = slot(x))
        *s = LazySrc(x->shared_from_this());
      else
        extra.emplace_back(x, LazySrc(x->shared_from_this()));
    }
    // if the ReduceOp is followed by a reshape, we push this reshape before all the inputs
    if (buf->shape != root->shape) {
      intermediate = root->shape;
      LAZYJIT_INTERNAL_CHECK(buf->shape == shape, "shape mismatch {} != {}",
                             renderShape(buf->shape), renderShape(shape));
    }
  }
  // reshape all the late ops into the output shape (a source already in it is its own reshape:
  // it keeps no slot, so a fused chain's leaves are not each referenced once more here)
  bool identity = extra.empty(); // every source maps to itself: the op is its own AST
  for (auto &[b, src] : realSrcs) {
    if (!src && b->shape != intermediate) src = LazySrc(const_cast<LazyBuffer *>(b)->reshape(o, intermediate));
    identity = identity && (!src || (src->isBuffer() && src->buf.get() == b));
  }
  if (identity) return opRef;
  BufferMap mapping;
  for (auto &[b, src] : realSrcs)
    mapping.emplace(b, src ? *src : LazySrc(const_cast<LazyBuffer *>(b)->shared_from_this()));
  for (auto &[b, src] : extra) mapping.emplace(b, src);
  LazyOpRef ast = op.mapBuffers(mapping);
  if (intermediate != shape) return LazyOp::make(Op::Reshape, {LazySrc(ast)}, shape);
  return ast;
}

} // namespace

namespace {
// Nothing to schedule for this buffer: already in this walk, realized, or an inlined constant.
bool nothingToSchedule(const LazyBuffer *b, const SeenSet &seen) {
  // (the constant first: a fused chain's leaves are mostly constants, and it is a bit of the leaf,
  // where isRealized reads the base)
  return b->isUnrealizedConst() || seen.contains(b) || b->isRealized();
}

// The kernel of `self`, whose op has been fixed up and whose sources are scheduled.
ScheduleItem scheduleItem(const LazyBufferRef &self, const LazyOpRef &op) {
  VarVals varVals;
  mergeVarVals(varVals, self->st);
  if (isLoadOp(op->op) && op->op != Op::Contiguous) { // (CONTIGUOUS is a kernel of its source)
    // (a variable bound to two values is an error for a host step's inputs too)
    for (const LazyBuffer *b : op->buffers()) mergeVarVals(varVals, b->st);
    // EMPTY, COPY and CUSTOM run on the host: the item carries the step and its inputs, not an op
    // tree; each source is read whole (its base, contiguous)
    Inputs in = inputsOf(*op);
    for (size_t i = 0; i < op->src.size(); ++i) {
      const LazySrc &s = op->src[i];
      LAZYJIT_INTERNAL_CHECK(s.isBuffer() && in.idx.count(s.buf->base()) && in.idx.at(s.buf->base()) == static_cast<int>(i) + 1 &&
                                 s.buf->st.simplify().unbind().contiguous(),
                             "schedule: bad LoadOps src {}", i);
    }
    LAZYJIT_INTERNAL_CHECK(op->op == Op::Empty || op->op == Op::Copy || op->op == Op::Custom,
                           "schedule: {} is not a host step", opName(op->op));
    LAZYJIT_LOG(Schedule, 3, "scheduled {} for {}", opName(op->op), self->repr());
    HostStep step{op->op, op->op == Op::Custom ? std::get<CustomOpRef>(op->arg) : nullptr};
    return ScheduleItem{nullptr, self, std::move(in.bufs), {}, std::move(step)};
  }

  auto [ast, baseBufs, vars, leafVarVals] = replaceBufferOps(op, std::move(varVals));
  varVals = std::move(leafVarVals);

  // check if we can reuse the output buffer; if it's aliased, don't use it
  if (self->outputBuffer()) {
    for (size_t i = 0; i < baseBufs.size(); ++i) {
      if (baseBufs[i]->realized() != self->outputBuffer()) continue;
      bool nonContig = false;
      for (const KernelOp *x : ast->uniqueOps())
        if (x->op == Op::Load && x->memBuffer().idx == static_cast<int>(i) + 1 &&
            !x->memBuffer().st.contiguous())
          nonContig = true;
      if (nonContig) {
        self->setOutputBuffer(nullptr);
        break;
      }
    }
  }

  // the kernel IR computed the dtype and shape of every node when it was built
  const KernelOp *bad = nullptr;
  std::optional<DType> dt = kernelDTypeOf(*ast, &bad);
  LAZYJIT_INTERNAL_CHECK(dt.has_value(), "schedule: {} is not allowed in a kernel AST", opName(bad->op));
  // The buffer's dtype is the max over all sources of its op, the kernel's over the values: a
  // WHERE whose condition has the larger dtype (`bool.gt(0)` is float32) computes its values in
  // the smaller one. The reference asserts here; the kernel casts to the buffer's dtype.
  if (*dt != self->dtype()) {
    LAZYJIT_INTERNAL_CHECK(ast->op == Op::Where, "schedule: dtype mismatch {} != {}", dt->name(),
                           self->dtype().name());
    ast = KernelOp::make(Op::Cast, {ast}, CastArg{self->dtype(), false});
  }
  ShapeTracker out = ShapeTracker::fromShape(*ast->shape());
  addVars(vars, out);
  ast = KernelOp::store(ast, 0, self->dtype(), std::move(out));

  VarVals used;
  std::stable_sort(vars.begin(), vars.end(), [](const NodeRef &a, const NodeRef &b) {
    return (a->expr ? *a->expr : "None") < (b->expr ? *b->expr : "None");
  });
  for (const auto &v : vars) {
    std::string name = v->expr ? *v->expr : "None";
    auto it = varVals.find(name);
    LAZYJIT_USER_CHECK(it != varVals.end(), Error,
                       "schedule: variable {} has no bound value; bind it before realizing",
                       v->render());
    used.emplace(name, it->second);
  }
  LAZYJIT_LOG(Schedule, 3, "scheduled {} for {}", opName(ast->op), self->repr());
  return ScheduleItem{ast, self, std::move(baseBufs), std::move(used), std::nullopt};
}

// device kind -> whether it also takes reduces of rows. The built-in devices are in it from its
// construction (on first use), so that what fuses depends on no registration having run: not on
// whether the Runtime library is linked, nor on which devices were created. Others (the test's
// emulated GPU) are registered while other threads may schedule.
struct RowKernelDevices {
  std::mutex mu;
  // the devices whose compilers take row kernels: the CPU and NVPTX lowerings and the
  // interpreter. On CUDA a reduce over whole rows does not compute its row values itself: that
  // kernel would run the whole batch on one block.
  std::unordered_map<std::string, bool> kinds{{"CPU", true}, {"CUDA", false}, {"INTERP", true}};
};
RowKernelDevices &rowKernelDevices() {
  static RowKernelDevices devices;
  return devices;
}

std::string deviceKind(const std::string &device) { return device.substr(0, device.find(':')); }

} // namespace

void registerRowKernelDevice(const std::string &device, bool reducesOfRows) {
  RowKernelDevices &d = rowKernelDevices();
  std::lock_guard lock(d.mu);
  d.kinds[deviceKind(device)] = reducesOfRows;
}

bool rowKernelDevice(const std::string &device) {
  RowKernelDevices &d = rowKernelDevices();
  std::lock_guard lock(d.mu);
  return d.kinds.count(deviceKind(device)) != 0;
}

bool rowReduceDevice(const std::string &device) {
  RowKernelDevices &d = rowKernelDevices();
  std::lock_guard lock(d.mu);
  auto it = d.kinds.find(deviceKind(device));
  return it != d.kinds.end() && it->second;
}

std::vector<ScheduleItem> schedule(const LazyBufferRef &out, SeenSet &seen, const GraphOptions &o) {
  GraphLock graph; // the walk marks nodes and reads their links
  const FusionFlags &flags = o.fusion;
  // The reference's recursion (schedule the sources, then this buffer) with an explicit stack:
  // a chain of a million kernels must not need a million native frames.
  struct Frame {
    LazyBufferRef self;
    LazyOpRef op;
    size_t next = 0; // the next source buffer to schedule
  };
  std::vector<Frame> stack;
  auto enter = [&](LazyBufferRef b) {
    for (;;) {
      if (nothingToSchedule(b.get(), seen)) return;
      seen.add(b);
      if (!b->isView()) break;
      b = b->baseShared();
    }
    LazyOpRef op = b->op;
    if (b->optype == OpType::Binary)
      op = astBinaryOps(op, b->shape, b->device, o);
    else if (b->optype == OpType::Reduce)
      op = rowFuseReduce(astReduceOps(*op, flags), *b, flags);
    stack.push_back(Frame{std::move(b), std::move(op)});
  };
  std::vector<ScheduleItem> ret;
  enter(out);
  while (!stack.empty()) {
    Frame &f = stack.back();
    const auto &bufs = f.op->buffers();
    if (f.next < bufs.size()) {
      LazyBuffer *x = bufs[f.next++];
      // schedule the past, without taking a reference to what is already done
      if (!nothingToSchedule(x, seen)) enter(x->shared_from_this());
      continue;
    }
    Frame done = std::move(f);
    stack.pop_back();
    ret.push_back(scheduleItem(done.self, done.op));
  }
  return ret;
}

std::vector<ScheduleItem> scheduleMany(const std::vector<LazyBufferRef> &outs, const GraphOptions &o) {
  GraphLock graph; // the walk marks nodes and reads their links
  SeenSet seen;
  std::vector<ScheduleItem> ret;
  for (const auto &out : outs) {
    auto s = schedule(out, seen, o);
    ret.insert(ret.end(), std::make_move_iterator(s.begin()), std::make_move_iterator(s.end()));
  }
  return ret;
}

} // namespace lazyjit
