// The scheduler walk (LazyBuffer.schedule of the reference) and its AST fixing steps:
// _ast_reduceops, _ast_binaryops and _replace_bufferops, in the order the reference runs them.
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Logging.h"

#include <algorithm>
#include <unordered_map>

namespace lazyjit {

namespace {

using BufferMap = std::unordered_map<const LazyBuffer *, LazySrc>;

// _ast_reduceops: a reduce inlines its elementwise input if that input has <= 1 child.
LazyOpRef astReduceOps(const LazyOp &op) {
  LazySrc src = op.src[0];
  if (src.isBuffer() && !src.buf->isRealized()) {
    LAZYJIT_INTERNAL_CHECK(src.buf->op, "an unrealized source must have an op");
    if (FusionFlags::current().mergeElementwiseIntoReduce && src.buf->optype == OpType::Binary &&
        src.buf->children.size() <= 1)
      src = LazySrc(src.buf->op);
  }
  return LazyOp::make(op.op, {src}, op.arg);
}

// _ast_binaryops: late-merges one upstream reduce (and the elementwise op above it) into the
// elementwise kernel that consumes it.
LazyOpRef astBinaryOps(const LazyOp &op, const Shape &shape) {
  const auto &bufs = op.buffers();
  std::vector<std::pair<const LazyBuffer *, std::optional<LazySrc>>> realSrcs;
  for (LazyBuffer *b : bufs) realSrcs.emplace_back(b, std::nullopt);
  auto slot = [&](const LazyBuffer *b) -> std::optional<LazySrc> * {
    for (auto &p : realSrcs)
      if (p.first == b) return &p.second;
    return nullptr;
  };

  // NOTE: contiguous does not always mean the same size with SHRINK (reference comment)
  std::vector<std::pair<LazyBufferRef, LazyBuffer *>> psrcs;
  for (LazyBuffer *buf : bufs) {
    if (buf->children.size() > 1) continue;
    LazyBuffer *root = getMovementRootContiguous(buf);
    if (root->optype == OpType::Reduce && !root->isRealized() &&
        pyEq(prod(root->shape), prod(buf->shape)) && root->children.size() <= 1)
      psrcs.emplace_back(buf->shared_from_this(), root);
  }
  Shape intermediate = shape;
  std::vector<std::pair<const LazyBuffer *, LazySrc>> extra;
  if (FusionFlags::current().mergeOneReduceIntoElementwise && !psrcs.empty()) {
    // NOTE: right now we can't handle multiple, as we'd have to check for loop
    auto [buf, root] = psrcs[0];
    LazyOpRef top = astReduceOps(*root->op);
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
  // reshape all the late ops into the output shape
  BufferMap mapping;
  for (auto &[b, src] : realSrcs) {
    if (!src) src = LazySrc(const_cast<LazyBuffer *>(b)->reshape(intermediate));
    mapping.emplace(b, *src);
  }
  for (auto &[b, src] : extra) mapping.emplace(b, src);
  LazyOpRef ast = op.mapBuffers(mapping);
  if (intermediate != shape) return LazyOp::make(Op::Reshape, {LazySrc(ast)}, shape);
  return ast;
}

// _replace_bufferops: leaves become LOAD(MemBuffer) of the deduplicated base buffers, or CONST.
std::pair<LazyOpRef, std::vector<LazyBufferRef>> replaceBufferOps(const LazyOpRef &op) {
  std::vector<LazyBufferRef> baseBufs;
  for (LazyBuffer *x : op->buffers()) {
    if (x->isUnrealizedConst()) continue;
    LazyBufferRef b = x->baseShared();
    if (std::none_of(baseBufs.begin(), baseBufs.end(), [&](const auto &y) { return y == b; }))
      baseBufs.push_back(b);
  }
  BufferMap replacements;
  for (LazyBuffer *x : op->buffers()) {
    ShapeTracker st = x->st.simplify().unbind();
    auto it = std::find_if(baseBufs.begin(), baseBufs.end(),
                           [&](const auto &y) { return y.get() == x->base(); });
    if (it != baseBufs.end()) {
      int idx = static_cast<int>(it - baseBufs.begin()) + 1;
      replacements.emplace(x, LazySrc(LazyOp::make(Op::Load, {}, MemBuffer{idx, x->dtype(), st})));
    } else if (!x->isRealized() && x->base()->op->op == Op::LoadConst) {
      double v = std::get<double>(x->base()->op->arg);
      replacements.emplace(x,
                           LazySrc(LazyOp::make(Op::Const, {}, ConstBuffer{v, x->dtype(), st})));
    } else {
      LAZYJIT_INTERNAL_CHECK(false, "schedule: not handled {}", x->repr());
    }
  }
  LazyOpRef root = op;
  if (op->op == Op::Reshape || op->op == Op::Contiguous) {
    const LazySrc &s = op->src[0];
    if (s.isBuffer()) return {replacements.at(s.buf.get()).op, baseBufs};
    root = s.op;
  }
  return {root->mapBuffers(replacements), baseBufs};
}

VarVals mergeVarVals(const std::vector<const ShapeTracker *> &sts) {
  VarVals out;
  for (const ShapeTracker *st : sts)
    for (auto &[name, vv] : st->varVals()) {
      auto [it, fresh] = out.emplace(name, vv);
      LAZYJIT_USER_CHECK(fresh || it->second.second == vv.second, Error,
                         "schedule: variable {} is bound to both {} and {}", name,
                         it->second.second, vv.second);
    }
  return out;
}

} // namespace

namespace {
// Nothing to schedule for this buffer: already in this walk, realized, or an inlined constant.
bool nothingToSchedule(const LazyBuffer *b, const SeenSet &seen) {
  return seen.contains(b) || b->isRealized() || b->isUnrealizedConst();
}
} // namespace

std::vector<ScheduleItem> schedule(const LazyBufferRef &self, SeenSet &seen) {
  if (nothingToSchedule(self.get(), seen)) return {};
  seen.add(self);
  if (self->isView()) return schedule(self->baseShared(), seen);

  LazyOpRef op = self->op;
  if (self->optype == OpType::Binary)
    op = astBinaryOps(*op, self->shape);
  else if (self->optype == OpType::Reduce)
    op = astReduceOps(*op);

  // schedule the past
  std::vector<ScheduleItem> ret;
  for (LazyBuffer *x : op->buffers()) {
    if (nothingToSchedule(x, seen)) continue; // without taking a reference to it
    auto sub = schedule(x->shared_from_this(), seen);
    ret.insert(ret.end(), std::make_move_iterator(sub.begin()), std::make_move_iterator(sub.end()));
  }

  std::vector<const ShapeTracker *> sts{&self->st};
  for (const LazyBuffer *b : op->buffers()) sts.push_back(&b->st);
  VarVals varVals = mergeVarVals(sts);

  auto [ast, baseBufs] = replaceBufferOps(op);

  // check if we can reuse the output buffer; if it's aliased, don't use it
  if (self->outputBuffer) {
    for (size_t i = 0; i < baseBufs.size(); ++i) {
      if (baseBufs[i]->realized() != self->outputBuffer) continue;
      bool nonContig = false;
      for (const LazyOp *x : ast->lazyops())
        if (x->op == Op::Load && x->memBuffer().idx == static_cast<int>(i) + 1 &&
            !x->memBuffer().st.contiguous())
          nonContig = true;
      if (nonContig) {
        self->outputBuffer = nullptr;
        break;
      }
    }
  }

  if (!isLoadOp(ast->op)) {
    LazyOpInfo info = getLazyOpInfo(*ast);
    LAZYJIT_INTERNAL_CHECK(info.dtype == self->dtype(), "schedule: dtype mismatch {} != {}",
                           info.dtype.name(), self->dtype().name());
    ast = LazyOp::make(Op::Store, {LazySrc(ast)},
                       MemBuffer{0, self->dtype(), ShapeTracker::fromShape(info.shape)});
  } else {
    for (size_t i = 0; i < ast->src.size(); ++i) {
      const LazySrc &s = ast->src[i];
      LAZYJIT_INTERNAL_CHECK(!s.isBuffer() && s.op->op == Op::Load &&
                                 s.op->memBuffer().idx == static_cast<int>(i) + 1 &&
                                 s.op->memBuffer().st.contiguous(),
                             "schedule: bad LoadOps src {}", i);
    }
  }

  VarVals used;
  for (const auto &v : varsFromAst(*ast)) {
    std::string name = v->expr ? *v->expr : "None";
    auto it = varVals.find(name);
    LAZYJIT_USER_CHECK(it != varVals.end(), Error,
                       "schedule: variable {} has no bound value; bind it before realizing",
                       v->render());
    used.emplace(name, it->second);
  }
  LAZYJIT_LOG(Schedule, 3, "scheduled {} for {}", opName(ast->op), self->repr());
  ret.push_back(ScheduleItem{ast, self, std::move(baseBufs), std::move(used)});
  return ret;
}

std::vector<ScheduleItem> schedule(const LazyBufferRef &out) {
  SeenSet seen;
  return schedule(out, seen);
}

std::vector<ScheduleItem> scheduleMany(const std::vector<LazyBufferRef> &outs) {
  SeenSet seen;
  std::vector<ScheduleItem> ret;
  for (const auto &o : outs) {
    auto s = schedule(o, seen);
    ret.insert(ret.end(), std::make_move_iterator(s.begin()), std::make_move_iterator(s.end()));
  }
  return ret;
}

} // namespace lazyjit
