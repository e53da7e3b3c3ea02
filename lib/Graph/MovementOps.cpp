// Movement ops on LazyBuffers (lazy.py): no-op elision, collapsing of same-type chains, pushing
// permutes through reduces/expands/reshapes, pushing movement ops into childless elementwise ops,
// and REMOVE_MOVEMENT_NOPS.
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/GraphLock.h"

#include <algorithm>
#include <numeric>

namespace lazyjit {

LazyBuffer *getMovementRoot(LazyBuffer *root, bool allowContiguous) {
  while (!root->isRealized() &&
         (root->optype == OpType::Movement ||
          (root->op->op == Op::Contiguous && allowContiguous &&
           root->op->src[0].buf->st.contiguous())))
    root = root->op->src[0].buf.get();
  return root;
}

LazyBuffer *getMovementRootContiguous(LazyBuffer *x) {
  while (!x->isRealized() && x->op->op == Op::Contiguous) x = x->op->src[0].buf.get();
  if (x->optype == OpType::Movement && x->st.contiguous()) return getMovementRoot(x, true);
  return x;
}

LazyBufferRef LazyBuffer::movementOp(const GraphOptions &o, Op mop, const LazyOpArg &arg) {
  GraphLock graph;
  switch (mop) {
  case Op::Reshape: return reshape(o, std::get<Shape>(arg));
  case Op::Expand: return expand(o, std::get<Shape>(arg));
  case Op::Shrink: return shrink(o, std::get<PadArg>(arg));
  case Op::Permute: return permute(o, std::get<std::vector<int64_t>>(arg));
  case Op::Pad: return pad(o, std::get<PadArg>(arg));
  case Op::Stride: return stride(o, std::get<std::vector<int64_t>>(arg));
  case Op::AsStrided: // (never built by lazyjit)
  case Op::Exp2: case Op::Log2: case Op::Cast: case Op::Sin: case Op::Sqrt: case Op::Recip: case Op::Neg:
  case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Max: case Op::Mod: case Op::CmpLt:
  case Op::Xor: case Op::MulAcc: case Op::Where: case Op::Sum: case Op::ReduceMax:
  case Op::Load: case Op::Const: case Op::Store:
  case Op::Empty: case Op::LoadConst: case Op::Copy: case Op::Contiguous: case Op::Custom: break;
  }
  LAZYJIT_INTERNAL_CHECK(false, "{} is not a movement op", opName(mop));
}

LazyBufferRef LazyBuffer::applyMovementOp(const GraphOptions &o, ShapeTracker nst, Op mop, LazyOpArg arg) {
  const FusionFlags &f = o.fusion;
  if (f.shuffleMovementOps && !isRealized() && optype == OpType::Binary && childless()) {
    if (mop == Op::Shrink || mop == Op::Stride || mop == Op::Permute ||
        (mop == Op::Reshape && (opTypeOf(op->op) == OpType::Unary || f.pushReshapes)))
      return op->replaceWithMovementOps(o, {{mop, arg}});
  }
  if (f.removeMovementNops && !isRealized() && nst.contiguous()) {
    // MovementOps aren't stacked any more, they each have one parent, find the root
    LazyBuffer *root = getMovementRoot(this);
    if (root != this && root->st.contiguous() && pyEq(prod(nst.shape()), prod(root->shape)))
      return root->reshape(o, nst.shape());
  }
  return createLazyBuffer(o, device, std::move(nst), OpType::Movement,
                          LazyOp::make(mop, {LazySrc(self())}, std::move(arg)), dtype(),
                          baseShared());
}

LazyBufferRef LazyBuffer::reshape(const GraphOptions &o, const Shape &arg) {
  GraphLock graph;
  if (shape == arg) return self();
  if (!isRealized() && op->op == Op::Reshape) {
    LazyBufferRef src = op->src[0].buf;
    // NOTE: this is only required in reshape and when pushing permutes (reference comment)
    src->discardChild(this);
    return src->reshape(o, arg);
  }
  return applyMovementOp(o, st.reshape(arg, o.mergeView), Op::Reshape, arg);
}

LazyBufferRef LazyBuffer::pad(const GraphOptions &o, const PadArg &arg) {
  GraphLock graph;
  if (std::all_of(arg.begin(), arg.end(),
                  [](const SIntPair &p) { return pyEq(p.first, 0) && pyEq(p.second, 0); }))
    return self();
  if (!isRealized() && op->op == Op::Pad) {
    const PadArg &prev = std::get<PadArg>(op->arg);
    PadArg sum;
    for (size_t i = 0; i < arg.size(); ++i)
      sum.emplace_back(prev[i].first + arg[i].first, prev[i].second + arg[i].second);
    return op->src[0].buf->pad(o, sum);
  }
  return applyMovementOp(o, st.pad(arg), Op::Pad, arg);
}

LazyBufferRef LazyBuffer::expand(const GraphOptions &o, const Shape &arg) {
  GraphLock graph;
  if (shape == arg) return self();
  if (!isRealized() && op->op == Op::Expand) return op->src[0].buf->expand(o, arg);
  return applyMovementOp(o, st.expand(arg), Op::Expand, arg);
}

LazyBufferRef LazyBuffer::permute(const GraphOptions &o, const std::vector<int64_t> &arg) {
  GraphLock graph;
  std::vector<int64_t> identity(shape.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (arg == identity) return self();
  if (!isRealized() && op->op == Op::Permute) {
    const auto &prev = std::get<std::vector<int64_t>>(op->arg);
    std::vector<int64_t> composed;
    for (int64_t i : arg) composed.push_back(prev.at(i));
    return op->src[0].buf->permute(o, composed);
  }
  const FusionFlags &f = o.fusion;
  if (f.shuffleMovementOps && !isRealized()) {
    if (f.pushPermutes && optype == OpType::Reduce) {
      // reduceops have one buffer input, permute it
      const Shape &rshape = op->shapeArg();
      Shape narg;
      for (int64_t a : arg) narg.push_back(rshape.at(a));
      LazyBufferRef src = op->src[0].buf;
      Op rop = op->op;
      src->discardChild(this);
      return src->permute(o, arg)->r(o, rop, narg);
    }
    // move permutes before expands (always, this is safe)
    if (op->op == Op::Expand) {
      const Shape &eshape = op->shapeArg();
      Shape narg;
      for (int64_t a : arg) narg.push_back(eshape.at(a));
      return op->src[0].buf->permute(o, arg)->expand(o, narg);
    }
    // move permutes before reshapes if we can
    if (f.pushPermutes && op->op == Op::Reshape && op->src[0].isBuffer()) {
      LazyBufferRef src = op->src[0].buf;
      auto groups = getContraction(src->shape, shape);
      if (groups && !groups->empty()) {
        src->discardChild(this);
        std::vector<int64_t> flat;
        for (int64_t i : arg) flat.insert(flat.end(), (*groups)[i].begin(), (*groups)[i].end());
        return src->permute(o, flat)->reshape(o, st.permute(arg).shape());
      }
    }
  }
  return applyMovementOp(o, st.permute(arg), Op::Permute, arg);
}

LazyBufferRef LazyBuffer::shrink(const GraphOptions &o, const PadArg &arg) {
  GraphLock graph;
  bool noop = true;
  for (size_t i = 0; i < shape.size() && i < arg.size(); ++i)
    noop = noop && pyEq(arg[i].second - arg[i].first, shape[i]);
  if (noop && arg.size() == shape.size()) return self();
  if (!isRealized() && op->op == Op::Shrink) {
    const PadArg &prev = std::get<PadArg>(op->arg);
    PadArg composed;
    for (size_t i = 0; i < arg.size(); ++i)
      composed.emplace_back(prev[i].first + arg[i].first, prev[i].first + arg[i].second);
    return op->src[0].buf->shrink(o, composed);
  }
  return applyMovementOp(o, st.shrink(arg), Op::Shrink, arg);
}

LazyBufferRef LazyBuffer::stride(const GraphOptions &o, const std::vector<int64_t> &arg) {
  GraphLock graph;
  if (std::all_of(arg.begin(), arg.end(), [](int64_t a) { return a == 1; })) return self();
  if (!isRealized() && op->op == Op::Stride) {
    const auto &prev = std::get<std::vector<int64_t>>(op->arg);
    std::vector<int64_t> mul;
    for (size_t i = 0; i < arg.size(); ++i) mul.push_back(arg[i] * prev.at(i));
    return op->src[0].buf->stride(o, mul);
  }
  return applyMovementOp(o, st.stride(arg), Op::Stride, arg);
}

} // namespace lazyjit
