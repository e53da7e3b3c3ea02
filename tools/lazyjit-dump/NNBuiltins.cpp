// The nn, optim and nn.state builtins of the script language: every layer of the reference's
// nn/__init__.py with its constructor keywords and attributes, the optimizers of nn/optim.py,
// get_state_dict / get_parameters of nn/state.py, and the walk that finds every live tensor for
// exec_count().
#include "Builtins.h"

#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Function.h"

#include <map>

namespace lazyjit::script {

namespace {

// ---- argument helpers ---------------------------------------------------------------------------

int64_t intArg(CallArgs &a, size_t i, std::string_view name, int64_t dflt) {
  auto v = a.take(i, name);
  return v ? toInt(*v, name) : dflt;
}
double doubleArg(CallArgs &a, size_t i, std::string_view name, double dflt) {
  auto v = a.take(i, name);
  return v ? toDouble(*v, name) : dflt;
}
bool boolArg(CallArgs &a, size_t i, std::string_view name, bool dflt) {
  auto v = a.take(i, name);
  return v ? toBool(*v, name) : dflt;
}
/// An int or a tuple of ints (the reference stores what it is given; C++ takes a vector).
std::vector<int64_t> intsArg(CallArgs &a, size_t i, std::string_view name, int64_t dflt) {
  auto v = a.take(i, name);
  return v ? toInts(*v, name) : std::vector<int64_t>{dflt};
}

Value intsValue(const std::vector<int64_t> &xs, bool scalarIfOne) {
  if (scalarIfOne && xs.size() == 1) return xs[0];
  SeqV t;
  for (int64_t x : xs) t.items.emplace_back(x);
  return t;
}

template <typename L> LayerV wrap(std::string cls, L layer) {
  auto p = std::make_shared<L>(std::move(layer));
  return LayerV{std::move(cls), p, [p](Tensor x) { return (*p)(std::move(x)); }};
}

// ---- layers -------------------------------------------------------------------------------------

using LayerFn = LayerV (*)(CallArgs &a);

LayerV makeConv(CallArgs &a, bool transposed, bool oneDim) {
  const char *cls = transposed ? (oneDim ? "ConvTranspose1d" : "ConvTranspose2d")
                               : (oneDim ? "Conv1d" : "Conv2d");
  int64_t in = toInt(a.need(0, "in_channels"), "in_channels");
  int64_t out = toInt(a.need(1, "out_channels"), "out_channels");
  Value kv = a.need(2, "kernel_size");
  if (oneDim) {
    // Conv1d and ConvTranspose1d take ints (the C++ API's 1-d constructors)
    int64_t k = toInt(kv, "kernel_size");
    int64_t s = intArg(a, 3, "stride", 1), p = intArg(a, 4, "padding", 0);
    int64_t op = transposed ? intArg(a, 5, "output_padding", 0) : 0;
    size_t at = transposed ? 6 : 5;
    int64_t d = intArg(a, at, "dilation", 1), g = intArg(a, at + 1, "groups", 1);
    bool b = boolArg(a, at + 2, "bias", true);
    a.finish();
    if (transposed) return wrap(cls, nn::ConvTranspose1d(in, out, k, s, p, op, d, g, b));
    return wrap(cls, nn::Conv1d(in, out, k, s, p, d, g, b));
  }
  auto k = toInts(kv, "kernel_size");
  auto s = intsArg(a, 3, "stride", 1), p = intsArg(a, 4, "padding", 0);
  std::vector<int64_t> op =
      transposed ? intsArg(a, 5, "output_padding", 0) : std::vector<int64_t>{0};
  size_t at = transposed ? 6 : 5;
  auto d = intsArg(a, at, "dilation", 1);
  int64_t g = intArg(a, at + 1, "groups", 1);
  bool b = boolArg(a, at + 2, "bias", true);
  a.finish();
  if (transposed) return wrap(cls, nn::ConvTranspose2d(in, out, k, s, p, op, d, g, b));
  return wrap(cls, nn::Conv2d(in, out, k, s, p, d, g, b));
}

Shape normalizedShape(const Value &v) {
  Shape s;
  for (int64_t d : toInts(v, "normalized_shape")) s.push_back(d);
  return s;
}

const std::map<std::string, LayerFn> &layerClasses() {
  static const std::map<std::string, LayerFn> table = {
      {"Linear",
       [](CallArgs &a) {
         int64_t in = toInt(a.need(0, "in_features"), "in_features");
         int64_t out = toInt(a.need(1, "out_features"), "out_features");
         bool b = boolArg(a, 2, "bias", true);
         a.finish();
         return wrap("Linear", nn::Linear(in, out, b));
       }},
      {"Conv2d", [](CallArgs &a) { return makeConv(a, false, false); }},
      {"Conv1d", [](CallArgs &a) { return makeConv(a, false, true); }},
      {"ConvTranspose2d", [](CallArgs &a) { return makeConv(a, true, false); }},
      {"ConvTranspose1d", [](CallArgs &a) { return makeConv(a, true, true); }},
      {"BatchNorm2d",
       [](CallArgs &a) {
         int64_t sz = toInt(a.need(0, "sz"), "sz");
         double eps = doubleArg(a, 1, "eps", 1e-5);
         bool affine = boolArg(a, 2, "affine", true);
         bool track = boolArg(a, 3, "track_running_stats", true);
         double mom = doubleArg(a, 4, "momentum", 0.1);
         a.finish();
         return wrap("BatchNorm2d", nn::BatchNorm2d(sz, eps, affine, track, mom));
       }},
      {"LayerNorm",
       [](CallArgs &a) {
         Shape s = normalizedShape(a.need(0, "normalized_shape"));
         double eps = doubleArg(a, 1, "eps", 1e-5);
         bool affine = boolArg(a, 2, "elementwise_affine", true);
         a.finish();
         return wrap("LayerNorm", nn::LayerNorm(s, eps, affine));
       }},
      {"LayerNorm2d",
       [](CallArgs &a) {
         Shape s = normalizedShape(a.need(0, "normalized_shape"));
         double eps = doubleArg(a, 1, "eps", 1e-5);
         bool affine = boolArg(a, 2, "elementwise_affine", true);
         a.finish();
         if (s.size() != 1)
           throw Error("LayerNorm2d(): normalized_shape must be the number of channels");
         return wrap("LayerNorm2d", nn::LayerNorm2d(s[0].asInt(), eps, affine));
       }},
      {"GroupNorm",
       [](CallArgs &a) {
         int64_t g = toInt(a.need(0, "num_groups"), "num_groups");
         int64_t c = toInt(a.need(1, "num_channels"), "num_channels");
         double eps = doubleArg(a, 2, "eps", 1e-5);
         bool affine = boolArg(a, 3, "affine", true);
         a.finish();
         return wrap("GroupNorm", nn::GroupNorm(g, c, eps, affine));
       }},
      {"InstanceNorm",
       [](CallArgs &a) {
         int64_t n = toInt(a.need(0, "num_features"), "num_features");
         double eps = doubleArg(a, 1, "eps", 1e-5);
         bool affine = boolArg(a, 2, "affine", true);
         a.finish();
         return wrap("InstanceNorm", nn::InstanceNorm(n, eps, affine));
       }},
      {"Embedding",
       [](CallArgs &a) {
         int64_t v = toInt(a.need(0, "vocab_size"), "vocab_size");
         int64_t e = toInt(a.need(1, "embed_size"), "embed_size");
         a.finish();
         return wrap("Embedding", nn::Embedding(v, e));
       }},
  };
  return table;
}

/// The tensor attributes of a layer class (None when the layer was built without them).
std::vector<std::string_view> tensorAttrsOf(const std::string &cls) {
  if (cls == "Embedding") return {"weight"};
  if (cls == "BatchNorm2d")
    return {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  return {"weight", "bias"};
}

/// The layer's tensors by their state-dict names ("weight", "running_mean"), as references.
void visitLayerTensors(const LayerV &l,
                       const std::function<void(const std::string &, Tensor &)> &f) {
  nn::Members m("", f);
  m("", *l.module);
}

// The non-tensor attributes of a layer (the reference's __dict__ entries that are not tensors).
std::optional<Value> scalarAttribute(const LayerV &l, const std::string &name) {
  nn::Module *m = l.module.get();
  if (auto *c = dynamic_cast<nn::Conv2d *>(m)) {
    if (name == "kernel_size") return intsValue(c->kernelSize, false);
    if (name == "stride") return intsValue(c->stride, true);
    if (name == "padding") return intsValue(c->padding, true);
    if (name == "dilation") return intsValue(c->dilation, true);
    if (name == "groups") return c->groups;
    if (auto *t = dynamic_cast<nn::ConvTranspose2d *>(m); t && name == "output_padding")
      return intsValue(t->outputPadding, true);
  } else if (auto *b = dynamic_cast<nn::BatchNorm2d *>(m)) {
    if (name == "eps") return b->eps;
    if (name == "momentum") return b->momentum;
    if (name == "track_running_stats") return b->trackRunningStats;
  } else if (auto *n = dynamic_cast<nn::LayerNorm *>(m)) {
    if (name == "normalized_shape") {
      SeqV t;
      for (const auto &d : n->normalizedShape) t.items.emplace_back(d.asInt());
      return t;
    }
    if (name == "axis") return intsValue(n->axis, false);
    if (name == "eps") return n->eps;
    if (name == "elementwise_affine") return n->weight.has_value();
  } else if (auto *g = dynamic_cast<nn::GroupNorm *>(m)) {
    if (name == "num_groups") return g->numGroups;
    if (name == "num_channels") return g->numChannels;
    if (name == "eps") return g->eps;
  } else if (auto *i = dynamic_cast<nn::InstanceNorm *>(m)) {
    if (name == "num_features") return i->numFeatures;
    if (name == "eps") return i->eps;
  } else if (auto *e = dynamic_cast<nn::Embedding *>(m)) {
    if (name == "vocab_size") return e->vocabSize;
    if (name == "embed_size") return e->embedSize;
  }
  return std::nullopt;
}

const char *const kLayerAttrNames[] = {"weight",
                                       "bias",
                                       "running_mean",
                                       "running_var",
                                       "num_batches_tracked",
                                       "kernel_size",
                                       "stride",
                                       "padding",
                                       "dilation",
                                       "groups",
                                       "output_padding",
                                       "eps",
                                       "momentum",
                                       "track_running_stats",
                                       "normalized_shape",
                                       "axis",
                                       "elementwise_affine",
                                       "num_groups",
                                       "num_channels",
                                       "num_features",
                                       "vocab_size",
                                       "embed_size"};
const char *const kOptimAttrNames[] = {
    "zero_grad", "step", "lr", "params", "buffers", "device", "momentum", "wd", "nesterov",
    "b",         "b1",   "b2", "eps",    "adam",    "t",      "m",        "v",  "realize"};
const char *const kOtherAttrNames[] = {"keys",  "values",         "items",         "get",
                                       "n",     "requires_grad",  "grad",          "optim",
                                       "state", "get_parameters", "get_state_dict"};

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

// ---- state dicts --------------------------------------------------------------------------------

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

// ---- the interface of Value.h -------------------------------------------------------------------

const std::vector<std::string> &nnClasses() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto &[k, f] : layerClasses()) n.push_back(k);
    return n;
  }();
  return names;
}

const std::vector<std::string> &optimClasses() {
  static const std::vector<std::string> names = {"SGD", "Adam", "AdamW", "LAMB"};
  return names;
}

std::optional<Value> makeNNObject(const std::string &module, const std::string &cls,
                                  CallArgs &args) {
  if (module == "nn") {
    auto it = layerClasses().find(cls);
    if (it == layerClasses().end()) return std::nullopt;
    return Value(it->second(args));
  }
  if (module == "optim") {
    for (const auto &c : optimClasses())
      if (c == cls) return Value(makeOptim(cls, args));
  }
  return std::nullopt;
}

Value callLayer(LayerV &l, CallArgs &a) {
  Tensor x = toTensor(a.need(0, "x"), "the input of " + l.cls);
  a.finish();
  return l.call(std::move(x));
}

Value layerAttribute(const LayerV &l, const std::string &name) {
  std::optional<Tensor> found;
  visitLayerTensors(l, [&](const std::string &n, Tensor &t) {
    if (n == name) found = t;
  });
  if (found) return *found;
  for (std::string_view a : tensorAttrsOf(l.cls))
    if (a == name) return NoneV{}; // built without it (bias=False, affine=False)
  if (auto v = scalarAttribute(l, name)) return std::move(*v);
  throw Error(fmt::format("'{}' object has no attribute '{}'", l.cls, name));
}

void setLayerAttribute(LayerV &l, const std::string &name, Value &&v) {
  bool done = false;
  visitLayerTensors(l, [&](const std::string &n, Tensor &t) {
    if (n != name || done) return;
    Tensor nt = toTensor(std::move(v), l.cls + "." + name);
    t = std::move(nt);
    done = true;
  });
  if (done) return;
  for (std::string_view a : tensorAttrsOf(l.cls))
    if (a == name)
      throw Error(fmt::format("cannot assign {}.{}: this layer was built without it", l.cls, name));
  if (scalarAttribute(l, name))
    throw Error(fmt::format("cannot assign {}.{}: only the tensors of a layer can be assigned",
                            l.cls, name));
  throw Error(fmt::format("'{}' object has no attribute '{}'", l.cls, name));
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

bool isNNAttribute(std::string_view name) {
  for (const char *a : kLayerAttrNames)
    if (name == a) return true;
  for (const char *a : kOptimAttrNames)
    if (name == a) return true;
  for (const char *a : kOtherAttrNames)
    if (name == a) return true;
  for (const auto &c : nnClasses())
    if (name == c) return true;
  for (const auto &c : optimClasses())
    if (name == c) return true;
  return false;
}

} // namespace lazyjit::script
