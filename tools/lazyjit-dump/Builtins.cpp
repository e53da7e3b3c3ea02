// The builtin objects of the script language: Tensor (its creators, `Tensor(data)` and unbound
// methods such as `Tensor.cat(a, b)`), Variable and its bind, the dtypes namespace, and the nn
// layers (Linear, Conv2d, BatchNorm2d, LayerNorm) with their tensor attributes.
#include "Builtins.h"
#include "Script.h"

#include "lazyjit/Support/Error.h"

#include <map>

namespace lazyjit::script {

namespace {

using CreatorFn = Value (*)(CallArgs &a);

Shape shapeOf(const std::vector<Value> &dims) {
  Shape s;
  for (const auto &d : dims) s.push_back(toSInt(d, "shape"));
  return s;
}

#define CREATOR(pyname, ...)                                                                       \
  {                                                                                                \
    pyname, [](CallArgs &a) -> Value { __VA_ARGS__ }                                               \
  }
// f(*shape, dtype=, device=)
#define SHAPED(pyname, call)                                                                       \
  CREATOR(pyname, auto dims = a.shapeArgs(0, "shape"); auto o = tensorOptions(a); a.finish();      \
          return Tensor::call(shapeOf(dims), o);)

std::optional<Value> kwOnly(CallArgs &a, std::string_view name) { return a.take(SIZE_MAX, name); }
double kwDouble(CallArgs &a, std::string_view name, double dflt) {
  auto v = kwOnly(a, name);
  return v ? toDouble(*v, name) : dflt;
}

const std::map<std::string_view, CreatorFn> &creators() {
  static const std::map<std::string_view, CreatorFn> table = {
    SHAPED("empty", empty),
    SHAPED("zeros", zeros),
    SHAPED("ones", ones),
    SHAPED("rand", rand),
    SHAPED("randn", randn),
    SHAPED("scaled_uniform", scaledUniform),
    SHAPED("glorot_uniform", glorotUniform),
    CREATOR("full", auto shape = a.need(0, "shape");
            double v = toDouble(a.need(1, "fill_value"), "fill_value"); auto o = tensorOptions(a);
            a.finish(); std::vector<Value> dims;
            if (shape.is<SeqV>()) dims = std::move(shape.as<SeqV>().items);
            else dims.push_back(std::move(shape)); return Tensor::full(shapeOf(dims), v, o);),
    CREATOR(
        "arange", double start = toDouble(a.need(0, "start"), "start");
        auto stop = a.take(1, "stop"); auto step = a.take(2, "step"); auto o = tensorOptions(a);
        a.finish(); if (!stop || stop->is<NoneV>()) {
          if (step) return Tensor::arange(0, start, toDouble(*step, "step"), o);
          return Tensor::arange(start, o);
        } return Tensor::arange(start, toDouble(*stop, "stop"), step ? toDouble(*step, "step") : 1,
                                o);),
    CREATOR("eye", int64_t n = toInt(a.need(0, "dim"), "dim"); auto o = tensorOptions(a);
            a.finish(); return Tensor::eye(n, o);),
    CREATOR("randint", auto dims = a.shapeArgs(0, "shape");
            int64_t lo = static_cast<int64_t>(kwDouble(a, "low", 0));
            int64_t hi = static_cast<int64_t>(kwDouble(a, "high", 10)); auto o = tensorOptions(a);
            a.finish(); return Tensor::randint(shapeOf(dims), lo, hi, o);),
    CREATOR("normal", auto dims = a.shapeArgs(0, "shape"); double m = kwDouble(a, "mean", 0);
            double s = kwDouble(a, "std", 1); auto o = tensorOptions(a); a.finish();
            return Tensor::normal(shapeOf(dims), m, s, o);),
    CREATOR("uniform", auto dims = a.shapeArgs(0, "shape"); double lo = kwDouble(a, "low", 0);
            double hi = kwDouble(a, "high", 1); auto o = tensorOptions(a); a.finish();
            return Tensor::uniform(shapeOf(dims), lo, hi, o);),
    CREATOR("kaiming_uniform", auto dims = a.shapeArgs(0, "shape");
            double al = kwDouble(a, "a", 0.01); auto o = tensorOptions(a); a.finish();
            return Tensor::kaimingUniform(shapeOf(dims), al, o);),
    CREATOR("kaiming_normal", auto dims = a.shapeArgs(0, "shape");
            double al = kwDouble(a, "a", 0.01); auto o = tensorOptions(a); a.finish();
            return Tensor::kaimingNormal(shapeOf(dims), al, o);),
    CREATOR("manual_seed", auto s = a.take(0, "seed"); a.finish();
            Tensor::manualSeed(static_cast<uint64_t>(s ? toInt(*s, "seed") : 0)); return NoneV{};),
    CREATOR("stack", auto ts = a.need(0, "tensors"); int64_t dim = 0;
            if (auto d = a.take(1, "dim")) dim = toInt(*d, "dim"); a.finish();
            std::vector<Tensor> xs;
            for (auto &t
                 : toSeq(ts, "tensors")) xs.push_back(toTensor(std::move(t), "tensors"));
            return Tensor::stack(std::move(xs), dim);),
    CREATOR(
        "einsum", auto f = a.need(0, "formula"); auto rest = a.rest(1); a.finish();
        if (!f.is<std::string>()) throw Error("einsum(): formula must be a string");
        if (rest.size() == 1 && rest[0].is<SeqV>()) {
          auto items = std::move(rest[0].as<SeqV>().items);
          rest = std::move(items);
        } std::vector<Tensor>
            xs;
        for (auto &t
             : rest) xs.push_back(toTensor(std::move(t), "operands"));
        return Tensor::einsum(f.as<std::string>(), std::move(xs));),
    CREATOR("corealize", auto ts = a.need(0, "lst"); a.finish(); std::vector<Tensor> xs;
            for (auto &t
                 : toSeq(ts, "lst")) xs.push_back(toTensor(std::move(t), "lst"));
            Tensor::corealize(xs); return NoneV{};),
  };
  return table;
}

#undef CREATOR
#undef SHAPED

// Tensor(data): a number or a nested list of numbers.
void flattenData(const Value &v, size_t depth, std::vector<double> &out, Shape &shape) {
  if (v.is<SeqV>()) {
    const auto &items = v.as<SeqV>().items;
    if (shape.size() == depth)
      shape.push_back(static_cast<int64_t>(items.size()));
    else if (shape[depth] != SInt(static_cast<int64_t>(items.size())))
      throw Error("Tensor(): the nested lists have different lengths");
    for (const auto &x : items) flattenData(x, depth + 1, out, shape);
    return;
  }
  if (depth != shape.size()) throw Error("Tensor(): the nested lists have different depths");
  out.push_back(toDouble(v, "Tensor() data"));
}

Value makeTensor(CallArgs &a) {
  Value data = a.need(0, "data");
  auto dev = a.take(1, "device");
  auto dt = a.take(2, "dtype");
  a.finish();
  TensorOptions o;
  if (dt && !dt->is<NoneV>()) o.dtype = toDType(*dt, "dtype");
  if (dev && !dev->is<NoneV>()) {
    if (!dev->is<std::string>()) throw Error("Tensor(): device must be a string");
    o.device = dev->as<std::string>();
  }
  if (data.is<Tensor>()) return data;
  if (data.isNumber()) return Tensor::scalar(toDouble(data, "data"), o);
  std::vector<double> flat;
  Shape shape;
  flattenData(data, 0, flat, shape);
  if (static_cast<int64_t>(flat.size()) != prodInt(shape))
    throw Error("Tensor(): the nested lists are ragged");
  return Tensor::fromValues(flat, shape, o);
}

Value makeVariable(CallArgs &a) {
  Value name = a.need(0, "expr");
  int64_t lo = toInt(a.need(1, "nmin"), "nmin");
  int64_t hi = toInt(a.need(2, "nmax"), "nmax");
  a.finish();
  if (!name.is<std::string>()) throw Error("Variable(): the name must be a string");
  const std::string &n = name.as<std::string>();
  bool ident = !n.empty() && (std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_');
  for (char c : n) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ident) throw Error(fmt::format("Variable(): the name '{}' is not an identifier", n));
  return SInt(Variable(n, lo, hi));
}

// ---- nn -----------------------------------------------------------------------------------------

const char *const kNNClasses[] = {"Linear", "Conv2d", "BatchNorm2d", "LayerNorm"};
const char *const kLayerAttrs[] = {"weight", "bias", "running_mean", "running_var",
                                   "num_batches_tracked"};

Value makeLayer(const std::string &cls, CallArgs &a) {
  LayerV l;
  if (cls == "Linear") {
    int64_t in = toInt(a.need(0, "in_features"), "in_features");
    int64_t out = toInt(a.need(1, "out_features"), "out_features");
    auto b = a.take(2, "bias");
    a.finish();
    l.linear = std::make_shared<nn::Linear>(in, out, b ? toBool(*b, "bias") : true);
  } else if (cls == "Conv2d") {
    int64_t in = toInt(a.need(0, "in_channels"), "in_channels");
    int64_t out = toInt(a.need(1, "out_channels"), "out_channels");
    auto k = toInts(a.need(2, "kernel_size"), "kernel_size");
    auto ints = [&](size_t i, const char *n, int64_t d) {
      auto v = a.take(i, n);
      return v ? toInts(*v, n) : std::vector<int64_t>{d};
    };
    auto stride = ints(3, "stride", 1), padding = ints(4, "padding", 0);
    auto dilation = ints(5, "dilation", 1);
    auto g = a.take(6, "groups");
    auto b = a.take(7, "bias");
    a.finish();
    l.conv =
        std::make_shared<nn::Conv2d>(in, out, k, stride, padding, dilation,
                                     g ? toInt(*g, "groups") : 1, b ? toBool(*b, "bias") : true);
  } else if (cls == "BatchNorm2d") {
    int64_t sz = toInt(a.need(0, "sz"), "sz");
    auto eps = a.take(1, "eps");
    auto affine = a.take(2, "affine");
    auto track = a.take(3, "track_running_stats");
    auto mom = a.take(4, "momentum");
    a.finish();
    l.batchnorm = std::make_shared<nn::BatchNorm2d>(
        sz, eps ? toDouble(*eps, "eps") : 1e-5, affine ? toBool(*affine, "affine") : true,
        track ? toBool(*track, "track_running_stats") : true,
        mom ? toDouble(*mom, "momentum") : 0.1);
  } else {
    Value shape = a.need(0, "normalized_shape");
    auto eps = a.take(1, "eps");
    auto affine = a.take(2, "elementwise_affine");
    a.finish();
    Shape s;
    for (int64_t d : toInts(shape, "normalized_shape")) s.push_back(d);
    l.layernorm =
        std::make_shared<nn::LayerNorm>(s, eps ? toDouble(*eps, "eps") : 1e-5,
                                        affine ? toBool(*affine, "elementwise_affine") : true);
  }
  return l;
}

Value optTensorValue(const std::optional<Tensor> &t) { return t ? Value(*t) : Value(NoneV{}); }

Value layerAttribute(const LayerV &l, const std::string &name) {
  if (l.linear && name == "weight") return l.linear->weight;
  if (l.linear && name == "bias") return optTensorValue(l.linear->bias);
  if (l.conv && name == "weight") return l.conv->weight;
  if (l.conv && name == "bias") return optTensorValue(l.conv->bias);
  if (l.batchnorm && name == "weight") return optTensorValue(l.batchnorm->weight);
  if (l.batchnorm && name == "bias") return optTensorValue(l.batchnorm->bias);
  if (l.batchnorm && name == "running_mean") return l.batchnorm->runningMean;
  if (l.batchnorm && name == "running_var") return l.batchnorm->runningVar;
  if (l.batchnorm && name == "num_batches_tracked") return l.batchnorm->numBatchesTracked;
  if (l.layernorm && name == "weight") return optTensorValue(l.layernorm->weight);
  if (l.layernorm && name == "bias") return optTensorValue(l.layernorm->bias);
  throw Error(fmt::format("the layer has no attribute '{}'", name));
}

Value callLayer(LayerV &l, CallArgs &a) {
  Tensor x = toTensor(a.need(0, "x"), "x");
  a.finish();
  if (l.linear) return (*l.linear)(x);
  if (l.conv) return (*l.conv)(x);
  if (l.batchnorm) return (*l.batchnorm)(x);
  return (*l.layernorm)(x);
}

} // namespace

// ---- dispatch -----------------------------------------------------------------------------------

Value callMethod(Value &&self, const std::string &name, CallArgs &args) {
  if (self.is<Tensor>()) return callTensorMethod(std::move(self.as<Tensor>()), name, args);
  if (self.is<BuiltinV>()) {
    const std::string &obj = self.as<BuiltinV>().name;
    if (obj == "Tensor") {
      if (auto it = creators().find(name); it != creators().end()) return it->second(args);
      if (isTensorMethod(name)) {
        // an unbound method: Tensor.cat(a, b, dim=1) is a.cat(b, dim=1)
        auto first = args.popFront();
        if (!first) throw Error(fmt::format("Tensor.{}() needs a Tensor argument", name));
        return callTensorMethod(toTensor(std::move(*first), "self"), name, args);
      }
      throw Error(fmt::format("Tensor has no attribute '{}'", name));
    }
    if (obj == "nn") {
      for (const char *c : kNNClasses)
        if (name == c) return makeLayer(name, args);
      throw Error(fmt::format("nn has no layer '{}'", name));
    }
    throw Error(fmt::format("{} has no attribute '{}'", obj, name));
  }
  if (self.is<SInt>() && name == "bind") {
    int64_t v = toInt(args.need(0, "val"), "val");
    args.finish();
    const SInt &s = self.as<SInt>();
    if (!s.isNode() || !s.node()->isVar())
      throw Error(fmt::format("bind(): {} is not a Variable", s.render()));
    return SInt(s.node()->bind(v));
  }
  throw Error(fmt::format("'{}' object has no method '{}'", typeName(self), name));
}

Value getAttribute(Value &&self, const std::string &name) {
  if (self.is<Tensor>()) return getTensorProperty(std::move(self.as<Tensor>()), name);
  if (self.is<LayerV>()) return layerAttribute(self.as<LayerV>(), name);
  if (self.is<BuiltinV>()) {
    const std::string &obj = self.as<BuiltinV>().name;
    if (obj == "dtypes") {
      if (auto dt = DType::fromName(name)) return *dt;
      throw Error(fmt::format("dtypes has no dtype '{}'", name));
    }
    if (obj == "Tensor" && name == "training") return Tensor::training;
    if (isBuiltinMember(obj, name))
      throw Error(fmt::format("{}.{} must be called: write {}.{}(...)", obj, name, obj, name));
    throw Error(fmt::format("{} has no attribute '{}'", obj, name));
  }
  throw Error(fmt::format("'{}' object has no attribute '{}'", typeName(self), name));
}

Value callValue(Value &&callee, CallArgs &args) {
  if (callee.is<LayerV>()) return callLayer(callee.as<LayerV>(), args);
  if (callee.is<BuiltinV>()) {
    const std::string &name = callee.as<BuiltinV>().name;
    if (name == "Tensor") return makeTensor(args);
    if (name == "Variable") return makeVariable(args);
  }
  throw Error(fmt::format("'{}' object is not callable", typeName(callee)));
}

bool isBuiltinName(std::string_view name) {
  return name == "Tensor" || name == "Variable" || name == "dtypes" || name == "nn";
}

bool isKnownAttribute(std::string_view name) {
  if (isTensorMethod(name) || isTensorProperty(name) || name == "bind") return true;
  for (const char *a : kLayerAttrs)
    if (name == a) return true;
  return false;
}

bool isBuiltinMember(std::string_view object, std::string_view name) {
  if (object == "Tensor")
    return creators().count(name) || isTensorMethod(name) || name == "training";
  if (object == "dtypes") return DType::fromName(name).has_value();
  if (object == "nn") {
    for (const char *c : kNNClasses)
      if (name == c) return true;
  }
  return false;
}

} // namespace lazyjit::script
