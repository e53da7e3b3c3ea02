// The nn builtins of the script language: every layer of the reference's nn/__init__.py with its
// constructor keywords and attributes, the nn and optim class tables, and the attribute names the
// name checker accepts on nn objects. The optimizers and state dicts are in OptimStateBuiltins.cpp.
#include "Builtins.h"

#include "lazyjit/Support/Error.h"

#include <map>

namespace lazyjit::script {

// ---- argument helpers ---------------------------------------------------------------------------

double doubleArg(CallArgs &a, size_t i, std::string_view name, double dflt) {
  auto v = a.take(i, name);
  return v ? toDouble(*v, name) : dflt;
}
bool boolArg(CallArgs &a, size_t i, std::string_view name, bool dflt) {
  auto v = a.take(i, name);
  return v ? toBool(*v, name) : dflt;
}

namespace {

int64_t intArg(CallArgs &a, size_t i, std::string_view name, int64_t dflt) {
  auto v = a.take(i, name);
  return v ? toInt(*v, name) : dflt;
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

} // namespace

/// The layer's tensors by their state-dict names ("weight", "running_mean"), as references.
void visitLayerTensors(const LayerV &l,
                       const std::function<void(const std::string &, Tensor &)> &f) {
  nn::Members m("", f);
  m("", *l.module);
}

namespace {

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

