// The Tensor methods of the script language, registered from lazyjit/Tensor/TensorOps.def (the
// table Tensor.h declares them from) with the binders of TensorBinders.h, and the attributes read
// without a call (shape, dtype, ...).
#include "Builtins.h"
#include "TensorBinders.h"

#include "lazyjit/Support/Error.h"

#include <functional>
#include <map>

namespace lazyjit::script {

// ---- subscripts (x[...] and x.__getitem__) -------------------------------------------------------

namespace {

// Tensor(list, dtype=dtypes.int32, requires_grad=False) for a (nested) list inside an index.
Tensor intIndexTensor(const Value &v, const std::string &device) {
  std::vector<double> flat;
  std::vector<int64_t> shape;
  std::function<void(const Value &, size_t)> walk = [&](const Value &x, size_t depth) {
    if (!x.is<SeqV>()) {
      if (depth != shape.size()) throw Error("an index list is ragged");
      flat.push_back(static_cast<double>(toInt(x, "an index in a list")));
      return;
    }
    const auto &items = x.as<SeqV>().items;
    if (depth == shape.size())
      shape.push_back(static_cast<int64_t>(items.size()));
    else if (shape[depth] != static_cast<int64_t>(items.size()))
      throw Error("an index list is ragged");
    for (const auto &y : items) walk(y, depth + 1);
  };
  walk(v, 0);
  Shape s(shape.begin(), shape.end());
  return Tensor::fromValues(flat, s, {dtypes::int32, device, false});
}

} // namespace

void spreadIndexSequence(std::vector<Value> &items) {
  auto allInts = [](const Value &v) {
    for (const auto &x : v.as<SeqV>().items)
      if (!x.is<int64_t>()) return false;
    return true;
  };
  if (items.size() == 1 && items[0].is<SeqV>() &&
      (!items[0].as<SeqV>().isList || !allInts(items[0]))) {
    auto inner = std::move(items[0].as<SeqV>().items);
    items = std::move(inner);
  }
}

std::vector<Index> tensorIndices(const std::vector<Value> &items, const std::string &device) {
  std::vector<Index> idx;
  for (const auto &it : items) {
    if (it.is<SliceV>()) {
      const SliceV &s = it.as<SliceV>();
      int64_t step = s.step.value_or(1);
      if (step == 0) throw Error("slice step cannot be zero");
      idx.push_back(Index::range(s.start, s.stop, step));
    } else if (it.is<NoneV>()) {
      idx.push_back(Index::newAxis());
    } else if (it.is<EllipsisV>()) {
      idx.push_back(Index::ellipsis());
    } else if (it.is<int64_t>() || it.is<bool>()) {
      idx.push_back(Index::at(toInt(it, "index")));
    } else if (it.is<Tensor>()) {
      idx.push_back(Index::of(it.as<Tensor>()));
    } else if (it.is<SeqV>()) {
      // a list or tuple inside the index: an int32 tensor of its values
      idx.push_back(Index::of(intIndexTensor(it, device)));
    } else {
      throw Error(fmt::format("a Tensor index must be an int, a slice, None, ..., a Tensor or a "
                              "list of ints, got {}",
                              typeName(it)));
    }
  }
  return idx;
}

void setTensorItem(Tensor &self, std::vector<Value> items, const Value &v) {
  spreadIndexSequence(items);
  std::vector<Index> idx = tensorIndices(items, self.device());
  if (v.is<Tensor>()) self.setItem(idx, v.as<Tensor>());
  else self.setItem(idx, toDouble(v, "the assigned value"));
}

namespace binders {

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

/// Each intermediate is released as soon as the next callable has consumed it (the reference's
/// reduce over the list).
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


// ---- custom binders -----------------------------------------------------------------------------

template <class Call> Value To::bind(Tensor &self, CallArgs &a, Call call) {
  auto d = a.need(0, "device");
  a.finish();
  if (d.is<NoneV>()) return std::move(self);
  if (!d.is<std::string>()) throw Error("to(): device must be a string");
  return call(d.as<std::string>());
}
template <class Call> Value FullLike::bind(Tensor &, CallArgs &a, Call call) {
  double v = toDouble(a.need(0, "fill_value"), "fill_value");
  auto o = tensorOptions(a);
  a.finish();
  return call(v, o);
}
template <class Call> Value Reshape::bind(Tensor &self, CallArgs &a, Call call) {
  auto dims = a.shapeArgs(0, "shape");
  a.finish();
  Shape s; // None keeps a dim, as in the reference
  for (size_t i = 0; i < dims.size(); ++i)
    s.push_back(dims[i].is<NoneV>() && i < self.shape().size() ? self.shape()[i]
                                                               : toSInt(dims[i], "shape"));
  return call(s);
}
template <class Call> Value Expand::bind(Tensor &, CallArgs &a, Call call) {
  auto dims = a.shapeArgs(0, "shape");
  a.finish();
  return call(toShape(dims, "shape"));
}
template <class Call> Value GetItem::bind(Tensor &self, CallArgs &a, Call call) {
  // x.__getitem__(v) is x[v]
  std::vector<Value> items;
  items.push_back(a.need(0, "indices"));
  a.finish();
  spreadIndexSequence(items);
  if (items.size() == 1 && items[0].is<Tensor>()) return call(std::move(items[0].as<Tensor>()));
  return call(tensorIndices(items, self.device()));
}
template <class Call> Value Gather::bind(Tensor &, CallArgs &a, Call call) {
  auto idx = toTensor(a.need(0, "idx"), "idx");
  int64_t dim = toInt(a.need(1, "dim"), "dim");
  a.finish();
  return call(std::move(idx), dim);
}
template <class Call> Value Cat::bind(Tensor &, CallArgs &a, Call call) {
  std::vector<Tensor> others;
  for (auto &v : a.rest(0)) others.push_back(toTensor(std::move(v), "cat"));
  int64_t dim = intOr(a.take(SIZE_MAX, "dim"), 0, "dim");
  a.finish();
  return call(std::move(others), dim);
}
template <class Call> Value Squeeze::bind(Tensor &, CallArgs &a, Call call) {
  auto dim = optInt(a.take(0, "dim"), "dim");
  a.finish();
  return call(dim);
}
template <class Call> Value Pad2d::bind(Tensor &, CallArgs &a, Call call) {
  auto p = toInts(a.need(0, "padding"), "padding");
  double v = doubleOr(a.take(1, "value"), 0, "value");
  a.finish();
  return call(p, v);
}
template <class Call> Value Transpose::bind(Tensor &, CallArgs &a, Call call) {
  int64_t x = intOr(a.take(0, "ax1"), 1, "ax1");
  int64_t y = intOr(a.take(1, "ax2"), 0, "ax2");
  a.finish();
  return call(x, y);
}
/// matmul(x, reverse=False): the reverse form is x @ self (the reference's __rmatmul__).
template <class Call> Value Matmul::bind(Tensor &self, CallArgs &a, Call call) {
  auto x = toTensor(a.need(0, "x"), "x");
  bool rev = boolOr(a.take(1, "reverse"), false, "reverse");
  a.finish();
  if (rev) return std::move(x).matmul(std::move(self));
  return call(std::move(x));
}
template <class Call> Value Linear::bind(Tensor &, CallArgs &a, Call call) {
  auto w = toTensor(a.need(0, "weight"), "weight");
  auto b = optTensor(a.take(1, "bias"), "bias");
  a.finish();
  return call(std::move(w), std::move(b));
}
template <class Call> Value Layernorm::bind(Tensor &, CallArgs &a, Call call) {
  auto ax = intsOr(a.take(0, "axis"), {-1}, "axis");
  double eps = doubleOr(a.take(1, "eps"), 1e-5, "eps");
  a.finish();
  return call(ax, eps);
}
template <class Call> Value Batchnorm::bind(Tensor &, CallArgs &a, Call call) {
  auto w = optTensor(a.take(0, "weight"), "weight");
  auto b = optTensor(a.take(1, "bias"), "bias");
  auto m = toTensor(a.need(2, "mean"), "mean");
  auto is = toTensor(a.need(3, "invstd"), "invstd");
  a.finish();
  return call(std::move(w), std::move(b), std::move(m), std::move(is));
}
template <class Call> Value Attention::bind(Tensor &, CallArgs &a, Call call) {
  auto k = toTensor(a.need(0, "key"), "key");
  auto v = toTensor(a.need(1, "value"), "value");
  auto m = optTensor(a.take(2, "attn_mask"), "attn_mask");
  double p = doubleOr(a.take(3, "dropout_p"), 0, "dropout_p");
  bool causal = boolOr(a.take(4, "is_causal"), false, "is_causal");
  a.finish();
  return call(std::move(k), std::move(v), std::move(m), p, causal);
}
template <class Call> Value Multinomial::bind(Tensor &, CallArgs &a, Call call) {
  int64_t n = intOr(a.take(0, "num_samples"), 1, "num_samples");
  bool replacement = boolOr(a.take(1, "replacement"), false, "replacement");
  a.finish();
  return call(n, replacement);
}
template <class Call> Value SparseCrossentropy::bind(Tensor &, CallArgs &a, Call call) {
  auto y = toTensor(a.need(0, "Y"), "Y");
  int64_t ig = intOr(a.take(1, "ignore_index"), -1, "ignore_index");
  a.finish();
  return call(std::move(y), ig);
}
template <class Call> Value Clip::bind(Tensor &, CallArgs &a, Call call) {
  double lo = toDouble(a.need(0, "min_"), "min_");
  double hi = toDouble(a.need(1, "max_"), "max_");
  a.finish();
  return call(lo, hi);
}
template <class Call> Value Hardtanh::bind(Tensor &, CallArgs &a, Call call) {
  double lo = doubleOr(a.take(0, "min_val"), -1, "min_val");
  double hi = doubleOr(a.take(1, "max_val"), 1, "max_val");
  a.finish();
  return call(lo, hi);
}
template <class Call> Value Hardsigmoid::bind(Tensor &, CallArgs &a, Call call) {
  double alpha = doubleOr(a.take(0, "alpha"), 1.0 / 6, "alpha");
  double beta = doubleOr(a.take(1, "beta"), 0.5, "beta");
  a.finish();
  return call(alpha, beta);
}
template <class Call> Value Interpolate::bind(Tensor &, CallArgs &a, Call call) {
  std::vector<int64_t> size = toInts(a.need(0, "size"), "size");
  std::string mode = "linear";
  if (auto m = a.take(1, "mode")) {
    if (!m->is<std::string>()) throw Error("interpolate: mode must be a string, not " + typeName(*m));
    mode = m->as<std::string>();
  }
  bool align = boolOr(a.take(2, "align_corners"), false, "align_corners");
  a.finish();
  return call(size, mode, align);
}
template <class Call> Value Where::bind(Tensor &, CallArgs &a, Call call) {
  auto x = a.need(0, "input_");
  auto y = a.need(1, "other");
  a.finish();
  return call(toOperand(std::move(x), "input_"), toOperand(std::move(y), "other"));
}

// ---- script methods -----------------------------------------------------------------------------

Value Realize::bind(Tensor &self, CallArgs &a) {
  a.finish();
  self.realize();
  return std::move(self);
}
Value Backward::bind(Tensor &self, CallArgs &a) {
  a.finish();
  self.backward();
  return std::move(self);
}
Value Sequential::bind(Tensor &self, CallArgs &a) { return sequential(std::move(self), a); }
Value Assign::bind(Tensor &self, CallArgs &a) {
  auto x = toTensor(a.need(0, "x"), "x");
  a.finish();
  self.assign(x);
  return std::move(self);
}
Value SetItem::bind(Tensor &self, CallArgs &a) {
  Value index = a.need(0, "indices"), v = a.need(1, "value");
  a.finish();
  std::vector<Value> items;
  items.push_back(std::move(index));
  setTensorItem(self, std::move(items), v);
  return NoneV{};
}
Value ToInPlace::bind(Tensor &self, CallArgs &a) {
  auto d = a.need(0, "device");
  a.finish();
  if (!d.is<NoneV>() && !d.is<std::string>()) throw Error("to_(): device must be a string or None");
  self.to_(d.is<NoneV>() ? std::nullopt : std::optional<std::string>(d.as<std::string>()));
  return NoneV{};
}
Value Numel::bind(Tensor &self, CallArgs &a) {
  a.finish();
  return fromSInt(self.numel());
}
Value ElementSize::bind(Tensor &self, CallArgs &a) {
  a.finish();
  return self.elementSize();
}
Value NBytes::bind(Tensor &self, CallArgs &a) {
  a.finish();
  return fromSInt(self.numel() * self.elementSize());
}
Value IsFloatingPoint::bind(Tensor &self, CallArgs &a) {
  a.finish();
  return self.isFloatingPoint();
}
Value Item::bind(Tensor &self, CallArgs &a) {
  a.finish();
  if (self.dtype().isFloating()) return self.item<double>();
  if (self.dtype().isBool()) return self.item<bool>();
  return self.item<int64_t>();
}
Value Chunk::bind(Tensor &self, CallArgs &a) {
  int64_t num = toInt(a.need(0, "num"), "num");
  int64_t dim = intOr(a.take(1, "dim"), 0, "dim");
  a.finish();
  SeqV t;
  for (auto &x : self.chunk(num, dim)) t.items.emplace_back(std::move(x));
  return Value(std::move(t));
}
Value Neg::bind(Tensor &self, CallArgs &a) {
  a.finish();
  return std::move(self).neg();
}

} // namespace binders

namespace {

using MethodFn = Value (*)(Tensor &&self, CallArgs &a);

Value shapeValue(const Shape &s) {
  SeqV t;
  for (const auto &d : s) t.items.push_back(binders::fromSInt(d));
  return Value(std::move(t));
}

// Every entry of TensorOps.def: a table entry's binder gets `call`, which calls the entry's method
// on the receiver (as a temporary, so it is released when the method returns). Overloads (getitem)
// share a script name and a binder; the first entry registers it.
#define LAZYJIT_TENSOR_METHOD(Name, ScriptName, Params, Args, ...)                                 \
  {ScriptName, [](Tensor &&self, CallArgs &a) -> Value {                                           \
     return binders::__VA_ARGS__::bind(self, a, [&self](auto &&...xs) -> Tensor {                  \
       return std::move(self).Name(std::forward<decltype(xs)>(xs)...);                             \
     });                                                                                           \
   }},
#define LAZYJIT_TENSOR_SCRIPT_METHOD(ScriptName, Binder)                                           \
  {ScriptName, [](Tensor &&self, CallArgs &a) -> Value { return binders::Binder::bind(self, a); }},

const std::map<std::string_view, MethodFn> &methods() {
  static const std::map<std::string_view, MethodFn> table = {
#include "lazyjit/Tensor/TensorOps.def"
  };
  return table;
}

} // namespace

bool isTensorMethod(std::string_view name) { return methods().count(name) != 0; }

bool isTensorProperty(std::string_view name) {
  return name == "T" || name == "shape" || name == "dtype" || name == "ndim" || name == "device" ||
         name == "training" || name == "requires_grad" || name == "grad" || name == "no_grad" ||
         name == "default_type";
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
  if (name == "training") return Tensor::isTraining();
  if (name == "no_grad") return Tensor::gradDisabled();
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
