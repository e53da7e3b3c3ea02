// The optim and nn.state builtins of the script language: the optimizers of nn/optim.py with their
// methods and attributes, get_state_dict / get_parameters of nn/state.py and the dicts they
// return, and the walk that finds every live tensor for exec_count().
#include "Builtins.h"

#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Function.h"

namespace lazyjit::script {

namespace {

Value tensorList(const std::vector<Tensor> &ts) {
  SeqV s{{}, true};
  for (const auto &t : ts) s.items.emplace_back(t);
  return s;
}

std::vector<Tensor> tensorListArg(Value &v, std::string_view what) {
  std::vector<Tensor> out;
  for (auto &x : toSeq(v, what)) out.push_back(toTensor(Value(x), what));
  return out;
}

} // namespace

// ---- optimizers ---------------------------------------------------------------------------------

OptimV makeOptim(const std::string &cls, CallArgs &a) {
  Value ps = a.need(0, "params");
  if (!ps.is<SeqV>())
    throw Error(
        fmt::format("{}(): params must be a list of tensors (such as get_parameters(model)), "
                    "got {}",
                    cls, typeName(ps)));
  std::vector<Tensor> params = tensorListArg(ps, "params");
  double lr = doubleArg(a, 1, "lr", 0.001);
  std::shared_ptr<nn::optim::Optimizer> opt;
  if (cls == "SGD") {
    double mom = doubleArg(a, 2, "momentum", 0), wd = doubleArg(a, 3, "weight_decay", 0);
    bool nesterov = boolArg(a, 4, "nesterov", false);
    a.finish();
    opt = std::make_shared<nn::optim::SGD>(std::move(params), lr, mom, wd, nesterov);
  } else {
    double b1 = doubleArg(a, 2, "b1", 0.9), b2 = doubleArg(a, 3, "b2", 0.999);
    double eps = doubleArg(a, 4, "eps", cls == "LAMB" ? 1e-6 : 1e-8);
    double wd = cls == "Adam" ? 0.0 : doubleArg(a, 5, "wd", cls == "AdamW" ? 0.01 : 0.0);
    bool adam = cls == "LAMB" ? boolArg(a, 6, "adam", false) : true;
    a.finish();
    opt = std::make_shared<nn::optim::LAMB>(std::move(params), lr, b1, b2, eps, wd, adam);
  }
  return OptimV{cls, std::move(opt)};
}

Value callOptimMethod(OptimV &o, const std::string &name, CallArgs &a) {
  if (name == "zero_grad") {
    a.finish();
    o.opt->zeroGrad();
    return NoneV{};
  }
  if (name == "step") {
    a.finish();
    o.opt->step();
    return NoneV{};
  }
  if (name == "realize") {
    auto extra = a.take(0, "extra");
    a.finish();
    std::vector<Tensor> ts;
    if (extra && !extra->is<NoneV>()) ts = tensorListArg(*extra, "extra");
    o.opt->realize(ts);
    return NoneV{};
  }
  throw Error(fmt::format("'{}' object has no method '{}'", o.cls, name));
}

Value optimAttribute(const OptimV &o, const std::string &name) {
  const nn::optim::Optimizer &opt = *o.opt;
  if (name == "lr") return opt.lr;
  if (name == "params") return tensorList(opt.params);
  if (name == "buffers") return tensorList(opt.buffers);
  if (name == "device") return opt.device;
  if (auto *s = dynamic_cast<const nn::optim::SGD *>(&opt)) {
    if (name == "momentum") return s->momentum;
    if (name == "wd") return s->wd;
    if (name == "nesterov") return s->nesterov;
    if (name == "b") return tensorList(s->b);
  } else if (auto *l = dynamic_cast<const nn::optim::LAMB *>(&opt)) {
    if (name == "b1") return l->b1;
    if (name == "b2") return l->b2;
    if (name == "eps") return l->eps;
    if (name == "wd") return l->wd;
    if (name == "adam") return l->adam;
    if (name == "t") return l->t;
    if (name == "m") return tensorList(l->m);
    if (name == "v") return tensorList(l->v);
  }
  if (name == "zero_grad" || name == "step" || name == "realize")
    throw Error(fmt::format("method '{}' must be called: write {}(...)", name, name));
  throw Error(fmt::format("'{}' object has no attribute '{}'", o.cls, name));
}

void setOptimAttribute(OptimV &o, const std::string &name, Value &&v) {
  if (name != "lr")
    throw Error(fmt::format("cannot assign {}.{}: only lr can be assigned", o.cls, name));
  if (v.is<Tensor>()) {
    o.opt->lr = std::move(v.as<Tensor>());
    return;
  }
  // a Python float: the step multiplies by a constant, as the reference's float lr does
  double lr = toDouble(v, o.cls + ".lr");
  o.opt->lr = Tensor::scalar(lr, {dtypes::float32, o.opt->device, false});
}

// ---- state dicts --------------------------------------------------------------------------------

namespace {

std::string stripDots(const std::string &s) {
  size_t b = s.find_first_not_of('.');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of('.') - b + 1);
}

void dictInsert(DictV &d, std::string key, Value v) {
  for (auto &[k, x] : d.items)
    if (k == key) {
      x = std::move(v);
      return;
    }
  d.items.emplace_back(std::move(key), std::move(v));
}

// The reference's get_state_dict: tensors keyed by their path, walking lists, dicts and objects.
void stateDict(const Value &obj, const std::string &prefix, DictV &out) {
  if (obj.is<Tensor>()) {
    if (obj.as<Tensor>().defined()) dictInsert(out, stripDots(prefix), obj.as<Tensor>());
  } else if (obj.is<SeqV>()) {
    const auto &items = obj.as<SeqV>().items;
    for (size_t i = 0; i < items.size(); ++i)
      stateDict(items[i], prefix + std::to_string(i) + ".", out);
  } else if (obj.is<DictV>()) {
    for (const auto &[k, v] : obj.as<DictV>().items) stateDict(v, prefix + k + ".", out);
  } else if (obj.is<LayerV>()) {
    visitLayerTensors(obj.as<LayerV>(), [&](const std::string &name, Tensor &t) {
      dictInsert(out, stripDots(prefix + name), t);
    });
  } else if (obj.is<OptimV>()) {
    // the optimizer's __dict__ in the reference's order
    const auto &o = *obj.as<OptimV>().opt;
    stateDict(tensorList(o.params), prefix + "params.", out);
    stateDict(tensorList(o.buffers), prefix + "buffers.", out);
    stateDict(o.lr, prefix + "lr.", out);
    if (auto *s = dynamic_cast<const nn::optim::SGD *>(&o)) {
      stateDict(tensorList(s->b), prefix + "b.", out);
    } else if (auto *l = dynamic_cast<const nn::optim::LAMB *>(&o)) {
      stateDict(l->t, prefix + "t.", out);
      stateDict(tensorList(l->m), prefix + "m.", out);
      stateDict(tensorList(l->v), prefix + "v.", out);
    }
  }
}

} // namespace

Value callDictMethod(DictV &d, const std::string &name, CallArgs &a) {
  if (name == "get") {
    Value key = a.need(0, "key");
    auto dflt = a.take(1, "default");
    a.finish();
    if (!key.is<std::string>()) return dflt ? std::move(*dflt) : Value(NoneV{});
    for (auto &[k, v] : d.items)
      if (k == key.as<std::string>()) return v;
    return dflt ? std::move(*dflt) : Value(NoneV{});
  }
  if (name != "keys" && name != "values" && name != "items")
    throw Error(fmt::format("'dict' object has no method '{}'", name));
  a.finish();
  SeqV out{{}, true};
  for (auto &[k, v] : d.items) {
    if (name == "keys")
      out.items.emplace_back(k);
    else if (name == "values")
      out.items.push_back(v);
    else
      out.items.emplace_back(SeqV{{Value(k), v}, false});
  }
  return out;
}

Value getStateDict(Value &&obj, CallArgs &a) {
  auto prefix = a.take(1, "prefix");
  auto tensorType = a.take(2, "tensor_type");
  a.finish();
  if (tensorType && !(tensorType->is<BuiltinV>() && tensorType->as<BuiltinV>().name == "Tensor"))
    throw Error("get_state_dict(): tensor_type must be Tensor");
  std::string p;
  if (prefix) {
    if (!prefix->is<std::string>()) throw Error("get_state_dict(): prefix must be a string");
    p = prefix->as<std::string>();
  }
  DictV out;
  stateDict(obj, p, out);
  return out;
}

Value getParameters(Value &&obj) {
  DictV d;
  stateDict(obj, "", d);
  SeqV out{{}, true};
  for (auto &[k, v] : d.items) out.items.push_back(std::move(v));
  return out;
}

void collectTensors(const Value &v, std::vector<Tensor> &out,
                    std::unordered_set<const TensorImpl *> &seen) {
  std::vector<Tensor> stack;
  if (v.is<Tensor>()) {
    stack.push_back(v.as<Tensor>());
  } else if (v.is<SeqV>()) {
    for (const auto &x : v.as<SeqV>().items) collectTensors(x, out, seen);
  } else if (v.is<DictV>()) {
    for (const auto &[k, x] : v.as<DictV>().items) collectTensors(x, out, seen);
  } else if (v.is<LayerV>() || v.is<OptimV>()) {
    DictV d;
    stateDict(v, "", d);
    collectTensors(d, out, seen);
  }
  // a tensor, its gradient and the inputs its autograd graph keeps alive (iteratively)
  while (!stack.empty()) {
    Tensor t = std::move(stack.back());
    stack.pop_back();
    if (!t.defined() || !seen.insert(t.id()).second) continue;
    out.push_back(t);
    if (auto g = t.grad()) stack.push_back(*g);
    if (const auto &fn = t.gradFn())
      for (const Tensor &p : fn->parents()) stack.push_back(p);
  }
}

} // namespace lazyjit::script
