// The builtin objects of the script language: Tensor (its creators, `Tensor(data)` and unbound
// methods such as `Tensor.cat(a, b)`), Variable and its bind, the dtypes namespace, and the
// dispatch of calls and attributes to the nn/optim values of NNBuiltins.cpp and
// OptimStateBuiltins.cpp.
#include "Builtins.h"
#include "Script.h"

#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Error.h"

#include <cstring>
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

// Tensor(data): a number or a nested list of numbers. Integers are also kept exactly (a double
// holds them only up to 2^53).
void flattenData(const Value &v, size_t depth, std::vector<double> &out, Shape &shape,
                 std::vector<int64_t> &ints, bool &allInt) {
  if (v.is<SeqV>()) {
    const auto &items = v.as<SeqV>().items;
    if (shape.size() == depth)
      shape.push_back(static_cast<int64_t>(items.size()));
    else if (shape[depth] != SInt(static_cast<int64_t>(items.size())))
      throw Error("Tensor(): the nested lists have different lengths");
    for (const auto &x : items) flattenData(x, depth + 1, out, shape, ints, allInt);
    return;
  }
  if (depth != shape.size()) throw Error("Tensor(): the nested lists have different depths");
  out.push_back(toDouble(v, "Tensor() data"));
  allInt = allInt && (v.is<int64_t>() || v.is<bool>());
  ints.push_back(v.is<int64_t>() ? v.as<int64_t>() : v.is<bool>() ? int64_t(v.as<bool>()) : 0);
}

Value makeTensor(CallArgs &a) {
  Value data = a.need(0, "data");
  auto dev = a.take(1, "device");
  auto dt = a.take(2, "dtype");
  auto rg = a.take(3, "requires_grad");
  a.finish();
  TensorOptions o;
  if (dt && !dt->is<NoneV>()) o.dtype = toDType(*dt, "dtype");
  if (rg && !rg->is<NoneV>()) o.requiresGrad = toBool(*rg, "requires_grad");
  if (dev && !dev->is<NoneV>()) {
    if (!dev->is<std::string>()) throw Error("Tensor(): device must be a string");
    o.device = dev->as<std::string>();
  }
  if (data.is<Tensor>()) return data;
  if (data.isNumber()) return Tensor::scalar(toDouble(data, "data"), o);
  std::vector<double> flat;
  std::vector<int64_t> ints;
  bool allInt = true;
  Shape shape;
  flattenData(data, 0, flat, shape, ints, allInt);
  if (static_cast<int64_t>(flat.size()) != prodInt(shape))
    throw Error("Tensor(): the nested lists are ragged");
  if (allInt && o.dtype && o.dtype->isInt() && !ints.empty()) {
    // exact integers, wrapped into narrower dtypes as numpy's astype does, converted on the host
    DType dt = *o.dtype;
    std::vector<uint8_t> bytes(ints.size() * static_cast<size_t>(dt.itemsize()));
    dispatchDType(dt, [&]<typename T>() {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        for (size_t i = 0; i < ints.size(); ++i) {
          T x = static_cast<T>(ints[i]);
          std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
        }
    });
    Tensor t = Tensor::fromBytes(bytes.data(), bytes.size(), shape, dt, o.device);
    t.setRequiresGrad(o.requiresGrad);
    return t;
  }
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

Value len(CallArgs &a) {
  Value v = a.need(0, "obj");
  a.finish();
  if (v.is<SeqV>()) return static_cast<int64_t>(v.as<SeqV>().items.size());
  if (v.is<DictV>()) return static_cast<int64_t>(v.as<DictV>().items.size());
  if (v.is<std::string>()) return static_cast<int64_t>(v.as<std::string>().size());
  if (v.is<Tensor>()) {
    const Tensor &t = v.as<Tensor>();
    if (t.ndim() == 0) throw Error("len() of a 0-d tensor");
    return toInt(Value(t.shape()[0]), "len() of a tensor with a symbolic first dim");
  }
  throw Error(fmt::format("object of type '{}' has no len()", typeName(v)));
}

/// "nn.Conv2d" -> ("nn", "Conv2d")
std::pair<std::string, std::string> splitClass(const std::string &name) {
  size_t dot = name.find('.');
  if (dot == std::string::npos) return {"", name};
  return {name.substr(0, dot), name.substr(dot + 1)};
}

} // namespace

// ---- dispatch -----------------------------------------------------------------------------------

Value callMethod(Value &&self, const std::string &name, CallArgs &args) {
  if (self.is<Tensor>()) return callTensorMethod(std::move(self.as<Tensor>()), name, args);
  if (self.is<OptimV>()) return callOptimMethod(self.as<OptimV>(), name, args);
  if (self.is<DictV>()) return callDictMethod(self.as<DictV>(), name, args);
  if (self.is<BuiltinV>()) {
    const std::string &obj = self.as<BuiltinV>().name;
    if (obj == "Tensor") {
      if (auto it = creators().find(name); it != creators().end()) return it->second(args);
      if (name == "train") {
        auto v = args.take(0, "val");
        args.finish();
        return TrainV{v ? toBool(*v, "val") : true};
      }
      if (isTensorMethod(name)) {
        // an unbound method: Tensor.cat(a, b, dim=1) is a.cat(b, dim=1)
        auto first = args.popFront();
        if (!first) throw Error(fmt::format("Tensor.{}() needs a Tensor argument", name));
        return callTensorMethod(toTensor(std::move(*first), "self"), name, args);
      }
      throw Error(fmt::format("Tensor has no attribute '{}'", name));
    }
    if (obj == "nn" || obj == "optim") {
      if (auto v = makeNNObject(obj, name, args)) return std::move(*v);
      throw Error(fmt::format("{} has no {} '{}'", obj, obj == "nn" ? "layer" : "optimizer", name));
    }
    if (obj == "nn.state" && (name == "get_parameters" || name == "get_state_dict"))
      return callValue(BuiltinV{name}, args);
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
  if (self.is<LayerV>()) {
    Value attr = layerAttribute(self.as<LayerV>(), name);
    return callValue(std::move(attr), args);
  }
  throw Error(fmt::format("'{}' object has no method '{}'", typeName(self), name));
}

Value getAttribute(Value &&self, const std::string &name) {
  if (self.is<Tensor>()) return getTensorProperty(std::move(self.as<Tensor>()), name);
  if (self.is<LayerV>()) return layerAttribute(self.as<LayerV>(), name);
  if (self.is<OptimV>()) return optimAttribute(self.as<OptimV>(), name);
  if (self.is<CounterV>() && name == "n") {
    const CounterV &c = self.as<CounterV>();
    return c.stop->value_or(globalCounters().kernelCount) - c.start;
  }
  if (self.is<BuiltinV>()) {
    const std::string &obj = self.as<BuiltinV>().name;
    if (obj == "dtypes") {
      if (auto dt = DType::fromName(name)) return *dt;
      throw Error(fmt::format("dtypes has no dtype '{}'", name));
    }
    if (obj == "Tensor" && name == "training") return Tensor::isTraining();
    if (obj == "Tensor" && name == "no_grad") return Tensor::gradDisabled();
    if (obj == "Tensor" && name == "default_type") return Tensor::defaultType;
    if (obj == "Tensor" && isTensorMethod(name)) return MethodRefV{name};
    if (obj == "nn" && name == "optim") return BuiltinV{"optim"};
    if (obj == "nn" && name == "state") return BuiltinV{"nn.state"};
    if (obj == "nn.state" && (name == "get_parameters" || name == "get_state_dict"))
      return BuiltinV{name};
    if ((obj == "nn" || obj == "optim") && isBuiltinMember(obj, name))
      return BuiltinV{obj + "." + name};
    if (isBuiltinMember(obj, name))
      throw Error(fmt::format("{}.{} must be called: write {}.{}(...)", obj, name, obj, name));
    throw Error(fmt::format("{} has no attribute '{}'", obj, name));
  }
  throw Error(fmt::format("'{}' object has no attribute '{}'", typeName(self), name));
}

void setAttribute(Value &&self, const std::string &name, Value &&v) {
  if (self.is<BuiltinV>() && self.as<BuiltinV>().name == "Tensor") {
    if (name == "training") {
      Tensor::training = toBool(v, "Tensor.training");
      return;
    }
    if (name == "no_grad") {
      Tensor::noGrad = toBool(v, "Tensor.no_grad");
      return;
    }
    if (name == "default_type") {
      if (!v.is<DType>()) throw Error(fmt::format("Tensor.default_type must be a dtype, not a {}", typeName(v)));
      Tensor::defaultType = v.as<DType>();
      return;
    }
    throw Error(fmt::format("cannot assign Tensor.{}: only Tensor.training, Tensor.no_grad and "
                            "Tensor.default_type can be assigned",
                            name));
  }
  if (self.is<Tensor>()) {
    Tensor &t = self.as<Tensor>();
    if (!t.defined()) throw Error("assignment to an attribute of an undefined Tensor");
    if (name == "requires_grad") {
      if (v.is<NoneV>())
        t.setRequiresGrad(std::nullopt);
      else
        t.setRequiresGrad(toBool(v, "requires_grad"));
      return;
    }
    if (name == "grad") {
      if (v.is<NoneV>())
        t.setGrad(std::nullopt);
      else
        t.setGrad(toTensor(std::move(v), "grad"));
      return;
    }
    throw Error(
        fmt::format("cannot assign Tensor.{}: only requires_grad and grad can be assigned", name));
  }
  if (self.is<LayerV>()) return setLayerAttribute(self.as<LayerV>(), name, std::move(v));
  if (self.is<OptimV>()) return setOptimAttribute(self.as<OptimV>(), name, std::move(v));
  throw Error(fmt::format("cannot assign attribute '{}' of a {}", name, typeName(self)));
}

Value callValue(Value &&callee, CallArgs &args) {
  if (callee.is<LayerV>()) return callLayer(callee.as<LayerV>(), args);
  if (callee.is<MethodRefV>()) {
    const std::string &name = callee.as<MethodRefV>().name;
    auto first = args.popFront();
    if (!first) throw Error(fmt::format("Tensor.{}() needs a Tensor argument", name));
    return callTensorMethod(toTensor(std::move(*first), "self"), name, args);
  }
  if (callee.is<BuiltinV>()) {
    const std::string &name = callee.as<BuiltinV>().name;
    if (name == "Tensor") return makeTensor(args);
    if (name == "Variable") return makeVariable(args);
    if (name == "len") return len(args);
    if (name == "get_parameters") {
      Value obj = args.need(0, "obj");
      args.finish();
      return getParameters(std::move(obj));
    }
    if (name == "get_state_dict") return getStateDict(args.need(0, "obj"), args);
    auto [module, cls] = splitClass(name);
    if (!module.empty())
      if (auto v = makeNNObject(module, cls, args)) return std::move(*v);
  }
  throw Error(fmt::format("'{}' object is not callable", typeName(callee)));
}

const char *const kBuiltinNames[] = {"Tensor",         "Variable",       "dtypes", "nn",
                                     "optim",          "get_parameters", "len",    "print",
                                     "get_state_dict", "exec_count"};

bool isBuiltinName(std::string_view name) {
  for (const char *n : kBuiltinNames)
    if (name == n) return true;
  return false;
}

bool isKnownAttribute(std::string_view name) {
  return isTensorMethod(name) || isTensorProperty(name) || name == "bind" || isNNAttribute(name) ||
         creators().count(name) || name == "train";
}

bool isBuiltinMember(std::string_view object, std::string_view name) {
  if (object == "Tensor")
    return creators().count(name) || isTensorMethod(name) || name == "training" ||
           name == "no_grad" || name == "train" || name == "default_type";
  if (object == "dtypes") return DType::fromName(name).has_value();
  if (object == "nn") {
    if (name == "optim" || name == "state") return true;
    for (const auto &c : nnClasses())
      if (name == c) return true;
  }
  if (object == "optim")
    for (const auto &c : optimClasses())
      if (name == c) return true;
  return false;
}

} // namespace lazyjit::script
