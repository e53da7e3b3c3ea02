// The reference's mlops: every differentiable primitive with its forward over LazyBuffers and its
// backward formula, each written in the reference's evaluation order.
//
// The order matters: whether an elementwise source is merged into its consumer depends on which
// LazyBuffers are alive when the consumer is built. A Python temporary dies when the call that
// consumes it returns, a C++ temporary at the end of the full expression, so each formula is a
// sequence of statements whose locals are reassigned or reset exactly where Python drops them.
#include "TensorInternals.h"
#include "lazyjit/Tensor/Function.h"
#include "lazyjit/Support/NodePool.h"

#include <cmath>
#include <numeric>

namespace lazyjit {

namespace {

using Bufs = std::vector<LazyBufferRef>;

// ---- unary / movement-free ----------------------------------------------------------------------

struct ContiguousFn : Function {
  std::string_view name() const override { return "Contiguous"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->contiguous(opts); }
  Bufs backward(const LazyBufferRef &g) override { return {g}; }
};

struct ContiguousBackwardFn : Function {
  std::string_view name() const override { return "ContiguousBackward"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]; }
  Bufs backward(const LazyBufferRef &g) override { return {g->contiguous(opts)}; }
};

struct CastFn : Function {
  DType dtype, inputDType;
  bool bitcast;
  CastFn(DType dt, bool bc) : dtype(dt), inputDType(dt), bitcast(bc) {}
  std::string_view name() const override { return "Cast"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    inputDType = in[0]->dtype();
    return in[0]->cast(opts, dtype, bitcast);
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->cast(opts, inputDType, bitcast)}; }
};

struct ZeroFn : Function {
  std::string_view name() const override { return "Zero"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->constLike(opts, 0); }
  Bufs backward(const LazyBufferRef &g) override { return {g->constLike(opts, 0)}; }
};

struct NegFn : Function {
  std::string_view name() const override { return "Neg"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->e(opts, Op::Neg); }
  Bufs backward(const LazyBufferRef &g) override { return {g->e(opts, Op::Neg)}; }
};

struct SinFn : Function {
  LazyBufferRef x;
  std::string_view name() const override { return "Sin"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    return x->e(opts, Op::Sin);
  }
  Bufs backward(const LazyBufferRef &g) override {
    // x.const(pi/2).e(SUB, x).e(SIN).e(MUL, grad)
    LazyBufferRef t = x->constLike(opts, M_PI / 2);
    t = t->e(opts, Op::Sub, {x});
    t = t->e(opts, Op::Sin);
    t = t->e(opts, Op::Mul, {g});
    return {t};
  }
};

// NOTE (reference): maximum(x, 0) behaves differently where x=0
struct ReluFn : Function {
  LazyBufferRef ret;
  std::string_view name() const override { return "Relu"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    LazyBufferRef zero = in[0]->constLike(opts, 0);
    ret = in[0]->e(opts, Op::Max, {zero});
    return ret;
  }
  Bufs backward(const LazyBufferRef &g) override {
    // ret.const(0).e(CMPLT, ret).e(MUL, grad)
    LazyBufferRef t = ret->constLike(opts, 0);
    t = t->e(opts, Op::CmpLt, {ret});
    t = t->e(opts, Op::Mul, {g});
    return {t};
  }
};

struct LogFn : Function {
  LazyBufferRef x;
  std::string_view name() const override { return "Log"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    // x.e(LOG2).e(MUL, x.const(log(2)))
    LazyBufferRef t = x->e(opts, Op::Log2);
    LazyBufferRef c = x->constLike(opts, std::log(2.0));
    return t->e(opts, Op::Mul, {c});
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->e(opts, Op::Div, {x})}; }
};

struct ExpFn : Function {
  LazyBufferRef ret;
  std::string_view name() const override { return "Exp"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    // x.e(MUL, x.const(1/log(2))).e(EXP2)
    LazyBufferRef c = in[0]->constLike(opts, 1 / std::log(2.0));
    LazyBufferRef t = in[0]->e(opts, Op::Mul, {c});
    c.reset();
    ret = t->e(opts, Op::Exp2);
    return ret;
  }
  Bufs backward(const LazyBufferRef &g) override { return {ret->e(opts, Op::Mul, {g})}; }
};

struct SqrtFn : Function {
  LazyBufferRef ret;
  std::string_view name() const override { return "Sqrt"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    ret = in[0]->e(opts, Op::Sqrt);
    return ret;
  }
  Bufs backward(const LazyBufferRef &g) override {
    // grad.e(DIV, ret.e(MUL, ret.const(2)))
    LazyBufferRef two = ret->constLike(opts, 2);
    LazyBufferRef d = ret->e(opts, Op::Mul, {two});
    two.reset();
    return {g->e(opts, Op::Div, {d})};
  }
};

// NOTE (reference): the implicit derivative of sigmoid is not stable
struct SigmoidFn : Function {
  LazyBufferRef ret;
  std::string_view name() const override { return "Sigmoid"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    const LazyBufferRef &l = in[0];
    // x.const(1).e(DIV, x.const(1).e(ADD, x.e(MUL, x.const(-1/log(2))).e(EXP2))), in that order
    LazyBufferRef one = l->constLike(opts, 1);
    LazyBufferRef one2 = l->constLike(opts, 1);
    LazyBufferRef c = l->constLike(opts, -1 / std::log(2.0));
    LazyBufferRef ex = l->e(opts, Op::Mul, {c});
    c.reset();
    ex = ex->e(opts, Op::Exp2);
    LazyBufferRef den = one2->e(opts, Op::Add, {ex});
    ex.reset();
    one2.reset();
    ret = one->e(opts, Op::Div, {den});
    return ret;
  }
  Bufs backward(const LazyBufferRef &g) override {
    // ret.e(MUL, ret.const(1).e(SUB, ret)).e(MUL, grad)
    LazyBufferRef one = ret->constLike(opts, 1);
    LazyBufferRef s = one->e(opts, Op::Sub, {ret});
    one.reset();
    LazyBufferRef t = ret->e(opts, Op::Mul, {s});
    s.reset();
    t = t->e(opts, Op::Mul, {g});
    return {t};
  }
};

// ---- binary -----------------------------------------------------------------------------------------

/// Less and Xor: forward only (the reference has no backward for them).
struct NoGradBinaryFn : Function {
  Op op;
  explicit NoGradBinaryFn(Op o) : op(o) {}
  std::string_view name() const override { return op == Op::CmpLt ? "Less" : "Xor"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->e(opts, op, {in[1]}); }
};

struct AddFn : Function {
  std::string_view name() const override { return "Add"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->e(opts, Op::Add, {in[1]}); }
  Bufs backward(const LazyBufferRef &g) override {
    return {needsInputGrad(0) ? g : nullptr, needsInputGrad(1) ? g : nullptr};
  }
};

struct SubFn : Function {
  std::string_view name() const override { return "Sub"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->e(opts, Op::Sub, {in[1]}); }
  Bufs backward(const LazyBufferRef &g) override {
    LazyBufferRef a = needsInputGrad(0) ? g : nullptr;
    LazyBufferRef b = needsInputGrad(1) ? g->e(opts, Op::Neg) : nullptr;
    return {a, b};
  }
};

struct MulFn : Function {
  LazyBufferRef x, y;
  std::string_view name() const override { return "Mul"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    y = in[1];
    return x->e(opts, Op::Mul, {y});
  }
  Bufs backward(const LazyBufferRef &g) override {
    LazyBufferRef a = needsInputGrad(0) ? y->e(opts, Op::Mul, {g}) : nullptr;
    LazyBufferRef b = needsInputGrad(1) ? x->e(opts, Op::Mul, {g}) : nullptr;
    return {a, b};
  }
};

struct DivFn : Function {
  LazyBufferRef x, y;
  std::string_view name() const override { return "Div"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    y = in[1];
    return x->e(opts, Op::Div, {y});
  }
  Bufs backward(const LazyBufferRef &g) override {
    LazyBufferRef a = needsInputGrad(0) ? g->e(opts, Op::Div, {y}) : nullptr;
    LazyBufferRef b;
    if (needsInputGrad(1)) {
      // grad.e(NEG).e(MUL, x).e(DIV, y.e(MUL, y))
      b = g->e(opts, Op::Neg);
      b = b->e(opts, Op::Mul, {x});
      LazyBufferRef yy = y->e(opts, Op::Mul, {y});
      b = b->e(opts, Op::Div, {yy});
    }
    return {a, b};
  }
};

// ---- ternary ----------------------------------------------------------------------------------------

struct WhereFn : Function {
  LazyBufferRef x;
  std::string_view name() const override { return "Where"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    return x->e(opts, Op::Where, {in[1], in[2]});
  }
  Bufs backward(const LazyBufferRef &g) override {
    LazyBufferRef b, c;
    if (needsInputGrad(1)) {
      LazyBufferRef zero = g->constLike(opts, 0);
      b = x->e(opts, Op::Where, {g, zero});
    }
    if (needsInputGrad(2)) {
      LazyBufferRef zero = g->constLike(opts, 0);
      c = x->e(opts, Op::Where, {zero, g});
    }
    return {nullptr, b, c};
  }
};

// ---- reduce -----------------------------------------------------------------------------------------

struct SumFn : Function {
  Shape newShape, inputShape;
  explicit SumFn(Shape s) : newShape(std::move(s)) {}
  std::string_view name() const override { return "Sum"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    inputShape = in[0]->shape;
    return in[0]->r(opts, Op::Sum, newShape);
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->expand(opts, inputShape)}; }
};

struct MaxFn : Function {
  Shape newShape;
  LazyBufferRef x, ret;
  explicit MaxFn(Shape s) : newShape(std::move(s)) {}
  std::string_view name() const override { return "Max"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    ret = x->r(opts, Op::ReduceMax, newShape);
    return ret;
  }
  Bufs backward(const LazyBufferRef &g) override {
    // 1s in locations where the max was chosen (can be two locations):
    // max_is_1s = x.const(1.0).e(SUB, x.e(CMPLT, ret.expand(x.shape)))
    LazyBufferRef one = x->constLike(opts, 1.0);
    LazyBufferRef ex = ret->expand(opts, x->shape);
    LazyBufferRef lt = x->e(opts, Op::CmpLt, {ex});
    ex.reset();
    LazyBufferRef maxIs1s = one->e(opts, Op::Sub, {lt});
    one.reset();
    lt.reset();
    // div = max_is_1s.r(SUM, grad.shape).expand(x.shape)
    LazyBufferRef div = maxIs1s->r(opts, Op::Sum, g->shape);
    div = div->expand(opts, x->shape);
    // max_is_1s.e(DIV, div).e(MUL, grad.expand(x.shape))
    LazyBufferRef out = maxIs1s->e(opts, Op::Div, {div});
    LazyBufferRef ge = g->expand(opts, x->shape);
    out = out->e(opts, Op::Mul, {ge});
    return {out};
  }
};

// ---- movement ---------------------------------------------------------------------------------------

// NOTE (reference): this is sum in reverse
struct ExpandFn : Function {
  Shape shape, inputShape;
  explicit ExpandFn(Shape s) : shape(std::move(s)) {}
  std::string_view name() const override { return "Expand"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    inputShape = in[0]->shape;
    return in[0]->expand(opts, shape);
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->r(opts, Op::Sum, inputShape)}; }
};

struct ReshapeFn : Function {
  Shape shape, inputShape;
  explicit ReshapeFn(Shape s) : shape(std::move(s)) {}
  std::string_view name() const override { return "Reshape"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    inputShape = in[0]->shape;
    return in[0]->reshape(opts, shape);
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->reshape(opts, inputShape)}; }
};

struct PermuteFn : Function {
  std::vector<int64_t> order;
  explicit PermuteFn(std::vector<int64_t> o) : order(std::move(o)) {}
  std::string_view name() const override { return "Permute"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->permute(opts, order); }
  Bufs backward(const LazyBufferRef &g) override {
    // argsort(order)
    std::vector<int64_t> inv(order.size());
    for (size_t i = 0; i < order.size(); ++i) inv[order[i]] = static_cast<int64_t>(i);
    return {g->permute(opts, inv)};
  }
};

struct PadFn : Function {
  PadArg arg, narg;
  explicit PadFn(PadArg a) : arg(std::move(a)) {}
  std::string_view name() const override { return "Pad"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    for (size_t i = 0; i < arg.size(); ++i) narg.emplace_back(arg[i].first, in[0]->shape[i] + arg[i].first);
    return in[0]->pad(opts, arg);
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->shrink(opts, narg)}; }
};

struct ShrinkFn : Function {
  PadArg arg, narg;
  explicit ShrinkFn(PadArg a) : arg(std::move(a)) {}
  std::string_view name() const override { return "Shrink"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    for (size_t i = 0; i < arg.size(); ++i) narg.emplace_back(arg[i].first, in[0]->shape[i] - arg[i].second);
    return in[0]->shrink(opts, arg);
  }
  Bufs backward(const LazyBufferRef &g) override {
    for (const auto &[a, b] : narg)
      LAZYJIT_USER_CHECK(a.isInt() && b.isInt(), UnsupportedError,
                         "backward: Shrink: a symbolic shrink has no backward (the pad back to the "
                         "input would be symbolic); detach() the shrunk tensor");
    return {g->pad(opts, narg)};
  }
};

struct FlipFn : Function {
  std::vector<int64_t> axis, arg;
  explicit FlipFn(std::vector<int64_t> a) : axis(std::move(a)) {}
  std::string_view name() const override { return "Flip"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    arg.assign(in[0]->shape.size(), 1);
    for (int64_t a : axis) arg[a] = -1;
    return in[0]->stride(opts, arg);
  }
  Bufs backward(const LazyBufferRef &g) override { return {g->stride(opts, arg)}; }
};

template <typename F, typename... A> Tensor applyFn(FunctionInputs in, A &&...args) {
  return Function::apply(std::allocate_shared<F>(NodePoolAllocator<F>(), std::forward<A>(args)...), std::move(in));
}

} // namespace

Tensor mlContiguous(const Tensor &x) { return applyFn<ContiguousFn>({x}); }
Tensor mlContiguousBackward(const Tensor &x) { return applyFn<ContiguousBackwardFn>({x}); }
Tensor mlCast(const Tensor &x, DType dtype, bool bitcast) { return applyFn<CastFn>({x}, dtype, bitcast); }
Tensor mlZero(const Tensor &x) { return applyFn<ZeroFn>({x}); }
Tensor mlNeg(const Tensor &x) { return applyFn<NegFn>({x}); }
Tensor mlSin(const Tensor &x) { return applyFn<SinFn>({x}); }
Tensor mlRelu(const Tensor &x) { return applyFn<ReluFn>({x}); }
Tensor mlLog(const Tensor &x) { return applyFn<LogFn>({x}); }
Tensor mlExp(const Tensor &x) { return applyFn<ExpFn>({x}); }
Tensor mlSqrt(const Tensor &x) { return applyFn<SqrtFn>({x}); }
Tensor mlSigmoid(const Tensor &x) { return applyFn<SigmoidFn>({x}); }

Tensor mlBinary(Op op, const Tensor &x, const Tensor &y) {
  switch (op) {
  case Op::Add: return applyFn<AddFn>({x, y});
  case Op::Sub: return applyFn<SubFn>({x, y});
  case Op::Mul: return applyFn<MulFn>({x, y});
  case Op::Div: return applyFn<DivFn>({x, y});
  case Op::CmpLt:
  case Op::Xor: return applyFn<NoGradBinaryFn>({x, y}, op);
  // (no binary mlop: MAX is Relu's, MOD has none)
  case Op::Max: case Op::Mod:
  case Op::Exp2: case Op::Log2: case Op::Cast: case Op::Sin: case Op::Sqrt: case Op::Recip: case Op::Neg:
  case Op::MulAcc: case Op::Where: case Op::Sum: case Op::ReduceMax:
  case Op::Load: case Op::Const: case Op::Store:
  case Op::Reshape: case Op::Permute: case Op::Expand: case Op::Pad: case Op::Shrink: case Op::Stride:
  case Op::AsStrided:
  case Op::Empty: case Op::LoadConst: case Op::Copy: case Op::Contiguous: case Op::Custom: break;
  }
  LAZYJIT_INTERNAL_CHECK(false, "mlBinary: {} is not a binary mlop", opName(op));
  return Tensor();
}

Tensor mlWhere(const Tensor &x, const Tensor &y, const Tensor &z) { return applyFn<WhereFn>({x, y, z}); }

Tensor mlReduce(Op op, const Tensor &x, const Shape &newShape) {
  if (op == Op::Sum) return applyFn<SumFn>({x}, newShape);
  LAZYJIT_INTERNAL_CHECK(op == Op::ReduceMax, "mlReduce: {} is not a reduce mlop", opName(op));
  return applyFn<MaxFn>({x}, newShape);
}

Tensor mlExpand(const Tensor &x, const Shape &shape) { return applyFn<ExpandFn>({x}, shape); }
Tensor mlReshape(const Tensor &x, const Shape &shape) { return applyFn<ReshapeFn>({x}, shape); }
Tensor mlPermute(const Tensor &x, const std::vector<int64_t> &order) { return applyFn<PermuteFn>({x}, order); }
Tensor mlPad(const Tensor &x, const PadArg &arg) { return applyFn<PadFn>({x}, arg); }
Tensor mlShrink(const Tensor &x, const PadArg &arg) { return applyFn<ShrinkFn>({x}, arg); }
Tensor mlFlip(const Tensor &x, const std::vector<int64_t> &axis) { return applyFn<FlipFn>({x}, axis); }

} // namespace lazyjit
