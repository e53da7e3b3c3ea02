// The Tensor methods of the script language: every C++ Tensor method under the reference's
// snake_case name, with the reference's Python parameter names, defaults and argument forms
// (`reshape(2, 3)` and `reshape((2, 3))`, `sum(axis=(0, 1), keepdim=True)`, ...).
#include "Builtins.h"

#include "lazyjit/Support/Error.h"

#include <map>

namespace lazyjit::script {

namespace {

using MethodFn = Value (*)(Tensor &&self, CallArgs &a);

// ---- argument helpers ---------------------------------------------------------------------------

Shape toShape(const std::vector<Value> &dims, std::string_view what) {
  Shape s;
  for (const auto &d : dims) s.push_back(toSInt(d, what));
  return s;
}

std::vector<int64_t> intsOf(const std::vector<Value> &xs, std::string_view what) {
  std::vector<int64_t> out;
  for (const auto &x : xs) out.push_back(toInt(x, what));
  return out;
}

Tensor::Axes axesArg(std::optional<Value> v) {
  if (!v || v->is<NoneV>()) return std::nullopt;
  return toInts(*v, "axis");
}

std::optional<int64_t> optInt(std::optional<Value> v, std::string_view what) {
  if (!v || v->is<NoneV>()) return std::nullopt;
  return toInt(*v, what);
}

int64_t intOr(std::optional<Value> v, int64_t dflt, std::string_view what) {
  return v ? toInt(*v, what) : dflt;
}
double doubleOr(std::optional<Value> v, double dflt, std::string_view what) {
  return v ? toDouble(*v, what) : dflt;
}
bool boolOr(std::optional<Value> v, bool dflt, std::string_view what) {
  return v ? toBool(*v, what) : dflt;
}
std::optional<Tensor> optTensor(std::optional<Value> v, std::string_view what) {
  if (!v || v->is<NoneV>()) return std::nullopt;
  return toTensor(std::move(*v), what);
}
/// An int or a tuple (the reference's make_pair and friends).
std::vector<int64_t> intsOr(std::optional<Value> v, std::vector<int64_t> dflt,
                            std::string_view what) {
  return v ? toInts(*v, what) : dflt;
}

/// The shrink/pad argument: a tuple with one (begin, end) pair or None per dim.
std::vector<std::optional<SIntPair>> padArg(Value v, std::string_view what) {
  std::vector<std::optional<SIntPair>> out;
  for (auto &item : toSeq(v, what)) {
    if (item.is<NoneV>()) {
      out.emplace_back(std::nullopt);
      continue;
    }
    auto &pair = toSeq(item, what);
    if (pair.size() != 2)
      throw Error(fmt::format("{}: each entry must be None or a (begin, end) pair, got {}", what,
                              repr(item)));
    out.emplace_back(SIntPair(toSInt(pair[0], what), toSInt(pair[1], what)));
  }
  return out;
}

Value fromSInt(const SInt &x) { return x.isInt() ? Value(x.asInt()) : Value(x); }

Value shapeValue(const Shape &s) {
  SeqV t;
  for (const auto &d : s) t.items.push_back(fromSInt(d));
  return Value(std::move(t));
}

Value tensorsValue(std::vector<Tensor> ts) {
  SeqV t;
  for (auto &x : ts) t.items.emplace_back(std::move(x));
  return Value(std::move(t));
}

std::vector<Tensor> tensorsOf(std::vector<Value> vs, std::string_view what) {
  std::vector<Tensor> out;
  for (auto &v : vs) out.push_back(toTensor(std::move(v), what));
  return out;
}

/// x.sequential(ll): each callable of the list (a layer, Tensor.relu, ...) applied in order, each
/// intermediate released as soon as the next callable has consumed it (the reference's reduce).
Value sequential(Tensor &&self, CallArgs &a) {
  Value ll = a.need(0, "ll");
  a.finish();
  Value x(std::move(self));
  for (auto &f : toSeq(ll, "sequential()'s argument")) {
    std::vector<Value> arg;
    arg.push_back(std::move(x));
    CallArgs call("call", std::move(arg), {});
    x = callValue(Value(f), call);
  }
  return x;
}

// ---- the table ----------------------------------------------------------------------------------

#define METHOD(pyname, ...)                                                                        \
  {                                                                                                \
    pyname, [](Tensor &&self, CallArgs &a) -> Value { __VA_ARGS__ }                                \
  }
#define NOARGS(pyname, call) METHOD(pyname, a.finish(); return std::move(self).call();)
#define BINARY(pyname, call)                                                                       \
  METHOD(pyname, auto x = a.need(0, "x");                                                          \
         bool rev = boolOr(a.take(1, "reverse"), false, "reverse"); a.finish();                    \
         return std::move(self).call(toOperand(std::move(x), "x"), rev);)
#define COMPARE(pyname, call)                                                                      \
  METHOD(pyname, auto x = a.need(0, "x"); a.finish();                                              \
         return std::move(self).call(toOperand(std::move(x), "x"));)
#define REDUCE(pyname, call)                                                                       \
  METHOD(pyname, auto axis = axesArg(a.take(0, "axis"));                                           \
         bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim"); a.finish();                   \
         return std::move(self).call(axis, keep);)

const std::map<std::string_view, MethodFn> &methods() {
  static const std::map<std::string_view, MethodFn> table = {
    // data
    METHOD("realize", a.finish(); self.realize(); return std::move(self);),
    METHOD("to", auto d = a.need(0, "device"); a.finish();
           if (d.is<NoneV>()) return std::move(self);
           if (!d.is<std::string>()) throw Error("to(): device must be a string");
           return std::move(self).to(d.as<std::string>());),
    NOARGS("detach", detach),
    METHOD("backward", a.finish(); self.backward(); return std::move(self);),
    METHOD("sequential", return sequential(std::move(self), a);),
    METHOD("assign", auto x = toTensor(a.need(0, "x"), "x"); a.finish(); self.assign(x);
           return std::move(self);),
    NOARGS("contiguous", contiguous),
    NOARGS("contiguous_backward", contiguousBackward),
    METHOD("full_like", double v = toDouble(a.need(0, "fill_value"), "fill_value");
           auto o = tensorOptions(a); a.finish(); return std::move(self).fullLike(v, o);),
    METHOD("zeros_like", auto o = tensorOptions(a); a.finish();
           return std::move(self).zerosLike(o);),
    METHOD("ones_like", auto o = tensorOptions(a); a.finish(); return std::move(self).onesLike(o);),
    METHOD("numel", a.finish(); return fromSInt(self.numel());),
    METHOD("element_size", a.finish(); return self.elementSize();),
    METHOD("nbytes", a.finish(); return fromSInt(self.numel() * self.elementSize());),
    METHOD("is_floating_point", a.finish(); return self.isFloatingPoint();),
    METHOD("item", a.finish(); if (self.dtype().isFloating()) return self.item<double>();
           if (self.dtype().isBool()) return self.item<bool>(); return self.item<int64_t>();),
    // movement
    METHOD("reshape", auto dims = a.shapeArgs(0, "shape"); a.finish();
           Shape s; // None keeps a dim, as in the reference
           for (size_t i = 0; i < dims.size(); ++i) s.push_back(
               dims[i].is<NoneV>() && i < self.shape().size() ? self.shape()[i]
                                                              : toSInt(dims[i], "shape"));
           return std::move(self).reshape(s);),
    METHOD("expand", auto dims = a.shapeArgs(0, "shape"); a.finish();
           return std::move(self).expand(toShape(dims, "shape"));),
    METHOD("permute", auto dims = a.shapeArgs(0, "order"); a.finish();
           return std::move(self).permute(intsOf(dims, "order"));),
    METHOD("flip", auto dims = a.shapeArgs(0, "axis"); a.finish();
           return std::move(self).flip(intsOf(dims, "axis"));),
    METHOD("shrink", auto arg = padArg(a.need(0, "arg"), "shrink"); a.finish();
           return std::move(self).shrink(arg);),
    METHOD("pad", auto arg = padArg(a.need(0, "arg"), "pad");
           double v = doubleOr(a.take(1, "value"), 0, "value"); a.finish();
           return std::move(self).pad(arg, v);),
    METHOD("slice", auto arg = padArg(a.need(0, "arg"), "slice");
           double v = doubleOr(a.take(1, "value"), 0, "value"); a.finish();
           return std::move(self).slice(arg, v);),
    METHOD("gather", auto idx = toTensor(a.need(0, "idx"), "idx");
           int64_t dim = toInt(a.need(1, "dim"), "dim"); a.finish();
           return std::move(self).gather(std::move(idx), dim);),
    METHOD("cat", auto others = tensorsOf(a.rest(0), "cat");
           int64_t dim = intOr(a.take(SIZE_MAX, "dim"), 0, "dim"); a.finish();
           return std::move(self).cat(std::move(others), dim);),
    METHOD("repeat", auto r = a.shapeArgs(0, "repeats"); a.finish();
           return std::move(self).repeat(intsOf(r, "repeats"));),
    METHOD("chunk", int64_t num = toInt(a.need(0, "num"), "num");
           int64_t dim = intOr(a.take(1, "dim"), 0, "dim"); a.finish();
           return tensorsValue(self.chunk(num, dim));),
    METHOD("squeeze", auto dim = optInt(a.take(0, "dim"), "dim"); a.finish();
           return std::move(self).squeeze(dim);),
    METHOD("unsqueeze", int64_t dim = toInt(a.need(0, "dim"), "dim"); a.finish();
           return std::move(self).unsqueeze(dim);),
    METHOD("pad2d", auto p = toInts(a.need(0, "padding"), "padding");
           double v = doubleOr(a.take(1, "value"), 0, "value"); a.finish();
           return std::move(self).pad2d(p, v);),
    NOARGS("T", T),
    METHOD("transpose", int64_t x = intOr(a.take(0, "ax1"), 1, "ax1");
           int64_t y = intOr(a.take(1, "ax2"), 0, "ax2"); a.finish();
           return std::move(self).transpose(x, y);),
    METHOD("flatten", int64_t d = intOr(a.take(0, "start_dim"), 0, "start_dim"); a.finish();
           return std::move(self).flatten(d);),
    // reductions
    REDUCE("sum", sum),
    REDUCE("max", max),
    REDUCE("min", min),
    REDUCE("mean", mean),
    METHOD("var", auto axis = axesArg(a.take(0, "axis"));
           bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim");
           int64_t c = intOr(a.take(2, "correction"), 1, "correction"); a.finish();
           return std::move(self).var(axis, keep, c);),
    METHOD("std", auto axis = axesArg(a.take(0, "axis"));
           bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim");
           int64_t c = intOr(a.take(2, "correction"), 1, "correction"); a.finish();
           return std::move(self).std(axis, keep, c);),
    METHOD("softmax", int64_t ax = intOr(a.take(0, "axis"), -1, "axis"); a.finish();
           return std::move(self).softmax(ax);),
    METHOD("log_softmax", int64_t ax = intOr(a.take(0, "axis"), -1, "axis"); a.finish();
           return std::move(self).logSoftmax(ax);),
    METHOD("argmax", auto ax = optInt(a.take(0, "axis"), "axis");
           bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim"); a.finish();
           return std::move(self).argmax(ax, keep);),
    METHOD("argmin", auto ax = optInt(a.take(0, "axis"), "axis");
           bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim"); a.finish();
           return std::move(self).argmin(ax, keep);),
    METHOD("cumsum", int64_t ax = intOr(a.take(0, "axis"), 0, "axis"); a.finish();
           return std::move(self).cumsum(ax);),
    // processing
    METHOD("avg_pool2d", auto k = intsOr(a.take(0, "kernel_size"), {2, 2}, "kernel_size");
           auto st = a.take(1, "stride"); auto d = intsOr(a.take(2, "dilation"), {1}, "dilation");
           a.finish(); std::optional<std::vector<int64_t>> s;
           if (st && !st->is<NoneV>()) s = toInts(*st, "stride");
           return std::move(self).avgPool2d(k, s, d);),
    METHOD("max_pool2d", auto k = intsOr(a.take(0, "kernel_size"), {2, 2}, "kernel_size");
           auto st = a.take(1, "stride"); auto d = intsOr(a.take(2, "dilation"), {1}, "dilation");
           a.finish(); std::optional<std::vector<int64_t>> s;
           if (st && !st->is<NoneV>()) s = toInts(*st, "stride");
           return std::move(self).maxPool2d(k, s, d);),
    METHOD("conv2d", auto w = toTensor(a.need(0, "weight"), "weight");
           auto b = optTensor(a.take(1, "bias"), "bias");
           int64_t g = intOr(a.take(2, "groups"), 1, "groups");
           auto s = intsOr(a.take(3, "stride"), {1}, "stride");
           auto d = intsOr(a.take(4, "dilation"), {1}, "dilation");
           auto p = intsOr(a.take(5, "padding"), {0}, "padding"); a.finish();
           return std::move(self).conv2d(std::move(w), std::move(b), g, s, d, p);),
    METHOD("conv_transpose2d", auto w = toTensor(a.need(0, "weight"), "weight");
           auto b = optTensor(a.take(1, "bias"), "bias");
           int64_t g = intOr(a.take(2, "groups"), 1, "groups");
           auto s = intsOr(a.take(3, "stride"), {1}, "stride");
           auto d = intsOr(a.take(4, "dilation"), {1}, "dilation");
           auto p = intsOr(a.take(5, "padding"), {0}, "padding");
           auto op = intsOr(a.take(6, "output_padding"), {0}, "output_padding"); a.finish();
           return std::move(self).convTranspose2d(std::move(w), std::move(b), g, s, d, p, op);),
    METHOD("dot", auto w = toTensor(a.need(0, "w"), "w"); a.finish();
           return std::move(self).dot(std::move(w));),
    METHOD("matmul", auto x = toTensor(a.need(0, "x"), "x");
           bool rev = boolOr(a.take(1, "reverse"), false, "reverse"); a.finish();
           if (rev) return std::move(x).matmul(std::move(self));
           return std::move(self).matmul(std::move(x));),
    METHOD("linear", auto w = toTensor(a.need(0, "weight"), "weight");
           auto b = optTensor(a.take(1, "bias"), "bias"); a.finish();
           return std::move(self).linear(std::move(w), std::move(b));),
    METHOD("layernorm", auto ax = intsOr(a.take(0, "axis"), {-1}, "axis");
           double eps = doubleOr(a.take(1, "eps"), 1e-5, "eps"); a.finish();
           return std::move(self).layernorm(ax, eps);),
    METHOD(
        "batchnorm", auto w = optTensor(a.take(0, "weight"), "weight");
        auto b = optTensor(a.take(1, "bias"), "bias"); auto m = toTensor(a.need(2, "mean"), "mean");
        auto is = toTensor(a.need(3, "invstd"), "invstd"); a.finish();
        return std::move(self).batchnorm(std::move(w), std::move(b), std::move(m), std::move(is));),
    METHOD("dropout", double p = doubleOr(a.take(0, "p"), 0.5, "p"); a.finish();
           return std::move(self).dropout(p);),
    METHOD("scaled_dot_product_attention", auto k = toTensor(a.need(0, "key"), "key");
           auto v = toTensor(a.need(1, "value"), "value");
           auto m = optTensor(a.take(2, "attn_mask"), "attn_mask");
           double p = doubleOr(a.take(3, "dropout_p"), 0, "dropout_p");
           bool causal = boolOr(a.take(4, "is_causal"), false, "is_causal"); a.finish();
           return std::move(self).scaledDotProductAttention(std::move(k), std::move(v),
                                                            std::move(m), p, causal);),
    METHOD("triu", int64_t k = intOr(a.take(0, "k"), 0, "k"); a.finish();
           return std::move(self).triu(k);),
    METHOD("tril", int64_t k = intOr(a.take(0, "k"), 0, "k"); a.finish();
           return std::move(self).tril(k);),
    METHOD("binary_crossentropy", auto y = toTensor(a.need(0, "y"), "y"); a.finish();
           return std::move(self).binaryCrossentropy(std::move(y));),
    METHOD("binary_crossentropy_logits", auto y = toTensor(a.need(0, "y"), "y"); a.finish();
           return std::move(self).binaryCrossentropyLogits(std::move(y));),
    METHOD("sparse_categorical_crossentropy", auto y = toTensor(a.need(0, "Y"), "Y");
           int64_t ig = intOr(a.take(1, "ignore_index"), -1, "ignore_index"); a.finish();
           return std::move(self).sparseCategoricalCrossentropy(std::move(y), ig);),
    // unary
    NOARGS("neg", neg),
    NOARGS("__neg__", neg),
    NOARGS("log", log),
    NOARGS("log2", log2),
    NOARGS("exp", exp),
    NOARGS("exp2", exp2),
    NOARGS("relu", relu),
    NOARGS("sigmoid", sigmoid),
    NOARGS("sin", sin),
    NOARGS("sqrt", sqrt),
    NOARGS("rsqrt", rsqrt),
    NOARGS("cos", cos),
    NOARGS("tan", tan),
    NOARGS("trunc", trunc),
    NOARGS("ceil", ceil),
    NOARGS("floor", floor),
    NOARGS("square", square),
    NOARGS("abs", abs),
    NOARGS("sign", sign),
    NOARGS("reciprocal", reciprocal),
    NOARGS("swish", swish),
    NOARGS("silu", silu),
    NOARGS("relu6", relu6),
    NOARGS("hardswish", hardswish),
    NOARGS("tanh", tanh),
    NOARGS("sinh", sinh),
    NOARGS("cosh", cosh),
    NOARGS("atanh", atanh),
    NOARGS("asinh", asinh),
    NOARGS("acosh", acosh),
    NOARGS("gelu", gelu),
    NOARGS("quick_gelu", quickGelu),
    NOARGS("mish", mish),
    NOARGS("softsign", softsign),
    METHOD("clip", double lo = toDouble(a.need(0, "min_"), "min_");
           double hi = toDouble(a.need(1, "max_"), "max_"); a.finish();
           return std::move(self).clip(lo, hi);),
    METHOD("elu", double al = doubleOr(a.take(0, "alpha"), 1.0, "alpha"); a.finish();
           return std::move(self).elu(al);),
    METHOD("celu", double al = doubleOr(a.take(0, "alpha"), 1.0, "alpha"); a.finish();
           return std::move(self).celu(al);),
    METHOD("hardtanh", double lo = doubleOr(a.take(0, "min_val"), -1, "min_val");
           double hi = doubleOr(a.take(1, "max_val"), 1, "max_val"); a.finish();
           return std::move(self).hardtanh(lo, hi);),
    METHOD("leakyrelu", double s = doubleOr(a.take(0, "neg_slope"), 0.01, "neg_slope"); a.finish();
           return std::move(self).leakyrelu(s);),
    METHOD("softplus", double b = doubleOr(a.take(0, "beta"), 1, "beta"); a.finish();
           return std::move(self).softplus(b);),
    // binary and ternary
    BINARY("add", add),
    BINARY("sub", sub),
    BINARY("mul", mul),
    BINARY("div", div),
    BINARY("pow", pow),
    BINARY("xor", xorWith),
    COMPARE("maximum", maximum),
    COMPARE("minimum", minimum),
    COMPARE("lt", lt),
    COMPARE("gt", gt),
    COMPARE("le", le),
    COMPARE("ge", ge),
    COMPARE("eq", eq),
    COMPARE("ne", ne),
    METHOD("where", auto x = a.need(0, "input_"); auto y = a.need(1, "other"); a.finish();
           return std::move(self).where(toOperand(std::move(x), "input_"),
                                        toOperand(std::move(y), "other"));),
    // casts
    METHOD("cast", DType dt = toDType(a.need(0, "dtype"), "dtype"); a.finish();
           return std::move(self).cast(dt);),
    METHOD("bitcast", DType dt = toDType(a.need(0, "dtype"), "dtype"); a.finish();
           return std::move(self).bitcast(dt);),
    NOARGS("float", toFloat),
    NOARGS("half", half),
  };
  return table;
}

#undef METHOD
#undef NOARGS
#undef BINARY
#undef COMPARE
#undef REDUCE

} // namespace

bool isTensorMethod(std::string_view name) { return methods().count(name) != 0; }

bool isTensorProperty(std::string_view name) {
  return name == "T" || name == "shape" || name == "dtype" || name == "ndim" || name == "device" ||
         name == "training" || name == "requires_grad" || name == "grad" || name == "no_grad";
}

Value callTensorMethod(Tensor &&self, const std::string &name, CallArgs &args) {
  auto it = methods().find(name);
  if (it == methods().end()) throw Error(fmt::format("'Tensor' object has no method '{}'", name));
  if (!self.defined()) throw Error(fmt::format("{}() called on an undefined Tensor", name));
  return it->second(std::move(self), args);
}

Value getTensorProperty(Tensor &&self, const std::string &name) {
  if (name == "T") return std::move(self).T();
  if (name == "shape") return shapeValue(self.shape());
  if (name == "dtype") return self.dtype();
  if (name == "ndim") return self.ndim();
  if (name == "device") return self.device();
  if (name == "training") return Tensor::training;
  if (name == "no_grad") return Tensor::noGrad;
  if (name == "requires_grad") {
    std::optional<bool> r = self.requiresGrad();
    return r ? Value(*r) : Value(NoneV{});
  }
  if (name == "grad") {
    std::optional<Tensor> g = self.grad();
    return g ? Value(std::move(*g)) : Value(NoneV{});
  }
  if (isTensorMethod(name))
    throw Error(fmt::format("method '{}' must be called: write {}(...)", name, name));
  throw Error(fmt::format("'Tensor' object has no attribute '{}'", name));
}

TensorOptions tensorOptions(CallArgs &a) {
  TensorOptions o;
  if (auto r = a.take(SIZE_MAX, "requires_grad"); r && !r->is<NoneV>())
    o.requiresGrad = toBool(*r, "requires_grad");
  if (auto d = a.take(SIZE_MAX, "dtype"); d && !d->is<NoneV>()) o.dtype = toDType(*d, "dtype");
  if (auto d = a.take(SIZE_MAX, "device"); d && !d->is<NoneV>()) {
    if (!d->is<std::string>()) throw Error("device must be a string such as 'CPU'");
    o.device = d->as<std::string>();
  }
  return o;
}

} // namespace lazyjit::script
