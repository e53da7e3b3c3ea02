// Optimizers (reference tinygrad/nn/optim.py), written in the reference's evaluation order so the
// update kernels fuse as its do, and their state dicts.
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Support/Error.h"

#include <unordered_set>

namespace lazyjit::nn::optim {

namespace {
std::vector<Tensor> dedup(const std::vector<Tensor> &xs, bool wantGrad) {
  std::vector<Tensor> out;
  std::unordered_set<const TensorImpl *> seen;
  for (const auto &x : xs)
    if (x.requiresGrad().value_or(false) == wantGrad && seen.insert(x.id()).second) out.push_back(x);
  return out;
}

using BufferSet = std::unordered_set<const Buffer *>; // Optimizer::BufferSet

/// Whether `b` is computed from realized buffers (none of them in `written`) and constants by
/// elementwise ops only; `budget` bounds the nodes looked at (a long graph is not worth the walk).
bool elementwiseOfRealized(const LazyBuffer &b, const BufferSet &written, int &budget);

bool elementwiseOfRealized(const LazyOp &op, const BufferSet &written, int &budget) {
  if (--budget < 0 || !isElementwise(op.op)) return false;
  for (const LazySrc &s : op.src)
    if (s.isBuffer() ? !elementwiseOfRealized(*s.buf, written, budget) : !elementwiseOfRealized(*s.op, written, budget))
      return false;
  return true;
}

bool elementwiseOfRealized(const LazyBuffer &b, const BufferSet &written, int &budget) {
  if (--budget < 0) return false;
  if (b.isRealized()) return !written.count(b.realized().get());
  if (b.isUnrealizedConst()) return true;
  // an unrealized base read through a view (an expand) would be realized on its own: not fusable
  if (b.isView() || !b.op) return false;
  return elementwiseOfRealized(*b.op, written, budget);
}

/// A hyperparameter's value from the dict: one float number.
double hyperValue(const std::string &kind, const std::string &name, const Tensor &t) {
  LAZYJIT_USER_CHECK(t.dtype().isFloat() && t.numel().isInt() && t.numel().asInt() == 1, ShapeError,
                     "{} load_state_dict: hyperparameter \"{}\" is {}{} in the state dict, but must be one float "
                     "value", kind, name, t.dtype().name(), shapeText(t.shape()));
  return t.item<double>();
}

/// The kind of optimizer a state dict comes from (its kind-defining hyperparameter), or "".
std::string kindOfDict(const std::string &kind, const StateDict &dict) {
  if (dict.contains("nesterov")) return "SGD";
  if (const Tensor *adam = dict.find("adam")) return hyperValue(kind, "adam", *adam) != 0 ? "Adam" : "LAMB";
  return "";
}

/// A loadStateDictInto message as the optimizer's: "SGD load_state_dict: ... this optimizer's is".
std::string forOptimizer(const std::string &kind, std::string msg) {
  const std::string model = "the model's", mine = "this optimizer's";
  for (size_t at = msg.find(model); at != std::string::npos; at = msg.find(model, at + mine.size()))
    msg.replace(at, model.size(), mine);
  return kind + " " + msg;
}

} // namespace

Optimizer::Optimizer(std::vector<Tensor> ps, double lrValue) {
  for (auto &x : ps) {
    LAZYJIT_USER_CHECK(x.defined(), Error, "optimizer: parameter list holds an undefined Tensor");
    // if it's None, but being put into an optimizer, set it to True
    if (!x.requiresGrad()) x.setRequiresGrad(true);
  }
  params = dedup(ps, true);
  LAZYJIT_USER_CHECK(!params.empty(), Error,
                     "optimizer: must have at least one parameter (none of the {} tensors requires a "
                     "gradient)", ps.size());
  device = params[0].device();
  buffers = dedup(ps, false);
  lr = Tensor::fromValues({lrValue}, {1}, {std::nullopt, device, false}).contiguous();
}

void Optimizer::zeroGrad() {
  for (auto &p : params) p.setGrad(std::nullopt);
}

void Optimizer::realize(const std::vector<Tensor> &extra) {
  std::vector<Tensor> all = extra;
  all.insert(all.end(), params.begin(), params.end());
  all.insert(all.end(), buffers.begin(), buffers.end());
  Tensor::corealize(all);
}

Tensor Optimizer::gradOf(const char *who, size_t i) const {
  std::optional<Tensor> g = params[i].grad();
  LAZYJIT_USER_CHECK(g.has_value(), Error,
                     "{}.step: parameter {} ({} {}) has no gradient; call backward() on a loss that "
                     "depends on it before step()", who, i, params[i].dtype().name(),
                     shapeText(params[i].shape()));
  return *g;
}

Optimizer::BufferSet Optimizer::writtenBuffers() const {
  BufferSet written;
  for (const Tensor &p : params)
    if (p.lazydata()->isRealized()) written.insert(p.lazydata()->realized().get());
  for (const auto &[name, s] : stateTensors())
    if (s.lazydata()->isRealized()) written.insert(s.lazydata()->realized().get());
  return written;
}

Tensor Optimizer::stepGrad(const char *who, size_t i, const BufferSet &written) const {
  Tensor g = gradOf(who, i);
  int budget = 64;
  if (!elementwiseOfRealized(*g.lazydata(), written, budget)) g.realize();
  return g;
}

StateDict Optimizer::stateDict(const std::string &prefix) const {
  StateDict sd;
  sd.insert(prefix + "lr", lr);
  for (const Hyperparameter &h : hyperparameters())
    sd.insert(prefix + h.name, Tensor::scalar(h.value, {dtypes::float64, device, false}));
  for (const auto &[name, t] : stateTensors()) sd.insert(prefix + name, t);
  return sd;
}

void Optimizer::loadStateDict(const StateDict &dict, bool strict) {
  std::string theirs = kindOfDict(kind(), dict);
  LAZYJIT_USER_CHECK(theirs.empty() || theirs == kind(), Error,
                     "{} load_state_dict: the state dict belongs to another kind of optimizer ({}), not {}", kind(),
                     theirs, kind());
  // read every hyperparameter before anything changes
  std::vector<Hyperparameter> values;
  std::unordered_set<std::string> hyperNames;
  for (const Hyperparameter &h : hyperparameters()) {
    hyperNames.insert(h.name);
    const Tensor *t = dict.find(h.name);
    LAZYJIT_USER_CHECK(t || !strict, Error, "{} load_state_dict: the state dict has no hyperparameter \"{}\"",
                       kind(), h.name);
    if (t) values.push_back({h.name, hyperValue(kind(), h.name, *t)});
  }
  StateDict own, tensors;
  own.insert("lr", lr);
  for (const auto &[name, t] : stateTensors()) own.insert(name, t);
  for (const auto &[name, t] : dict)
    if (!hyperNames.count(name)) tensors.insert(name, t);
  try {
    loadStateDictInto(own, tensors, strict);
  } catch (const ShapeError &e) {
    throw ShapeError(forOptimizer(kind(), e.what()));
  } catch (const Error &e) {
    throw Error(forOptimizer(kind(), e.what()));
  }
  for (const Hyperparameter &h : values) setHyperparameter(h.name, h.value);
}

SGD::SGD(std::vector<Tensor> ps, double lrValue, double momentum_, double weightDecay, bool nesterov_)
    : Optimizer(std::move(ps), lrValue), momentum(momentum_), wd(weightDecay), nesterov(nesterov_) {
  if (momentum != 0)
    for (const auto &t : params) b.push_back(Tensor::zeros(t.shape(), {std::nullopt, t.device(), false}));
}

// https://pytorch.org/docs/stable/generated/torch.optim.SGD.html
void SGD::step() {
  BufferSet written = writtenBuffers();
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor &t = params[i];
    Tensor g = stepGrad("SGD", i, written);
    g = g.add(t.detach().mul(wd, true));
    if (momentum != 0) {
      // NOTE: b[i] is zero on the first run, no if required
      b[i].assign(b[i].mul(momentum, true).add(g)).realize();
      g = nesterov ? g.add(b[i].mul(momentum, true)) : b[i];
    }
    t.assign(t.detach().sub(g.mul(lr)));
  }
  realize(b);
}

LAMB::LAMB(std::vector<Tensor> ps, double lrValue, double b1_, double b2_, double eps_, double wd_, bool adam_)
    : Optimizer(std::move(ps), lrValue), b1(b1_), b2(b2_), eps(eps_), wd(wd_), adam(adam_),
      // on the parameters' device (the reference's is on the default device, so a model on
      // another device could not take a step: b1 ** t would mix devices)
      t(Tensor::fromValues({0}, {1}, {std::nullopt, device, false}).realize()) {
  for (const auto &p : params) m.push_back(Tensor::zeros(p.shape(), {std::nullopt, p.device(), false}));
  for (const auto &p : params) v.push_back(Tensor::zeros(p.shape(), {std::nullopt, p.device(), false}));
}

std::vector<Optimizer::Hyperparameter> SGD::hyperparameters() const {
  return {{"momentum", momentum}, {"weight_decay", wd}, {"nesterov", nesterov ? 1.0 : 0.0}};
}

void SGD::setHyperparameter(const std::string &name, double value) {
  if (name == "momentum") momentum = value;
  else if (name == "weight_decay") wd = value;
  else if (name == "nesterov") nesterov = value != 0;
}

std::vector<std::pair<std::string, Tensor>> SGD::stateTensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < b.size(); ++i) out.emplace_back("b." + std::to_string(i), b[i]);
  return out;
}

void LAMB::step() {
  BufferSet written = writtenBuffers();
  t.assign(t.add(1)).realize();
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor &p = params[i];
    Tensor g = stepGrad(adam ? "Adam" : "LAMB", i, written);
    m[i].assign(m[i].mul(b1, true).add(g.mul(1.0 - b1, true))).realize();
    v[i].assign(v[i].mul(b2, true).add(g.mul(g).mul(1.0 - b2, true))).realize();
    Tensor mHat = m[i].div(t.pow(b1, true).sub(1.0, true));
    Tensor vHat = v[i].div(t.pow(b2, true).sub(1.0, true));
    Tensor up = mHat.div(vHat.sqrt().add(eps)).add(p.detach().mul(wd, true));
    if (!adam) {
      Tensor r1 = p.detach().square().sum().sqrt();
      Tensor r2 = up.square().sum().sqrt();
      Tensor r = r1.gt(0).where(r2.gt(0).where(r1.div(r2), 1.0), 1.0);
      p.assign(p.detach().sub(lr.mul(r).mul(up)));
    } else {
      p.assign(p.detach().sub(lr.mul(1.0).mul(up)));
    }
  }
  std::vector<Tensor> extra{t};
  extra.insert(extra.end(), m.begin(), m.end());
  extra.insert(extra.end(), v.begin(), v.end());
  realize(extra);
}

std::vector<Optimizer::Hyperparameter> LAMB::hyperparameters() const {
  return {{"b1", b1}, {"b2", b2}, {"eps", eps}, {"weight_decay", wd}, {"adam", adam ? 1.0 : 0.0}};
}

void LAMB::setHyperparameter(const std::string &name, double value) {
  // "adam" defines the kind, which loadStateDict has checked
  if (name == "b1") b1 = value;
  else if (name == "b2") b2 = value;
  else if (name == "eps") eps = value;
  else if (name == "weight_decay") wd = value;
}

std::vector<std::pair<std::string, Tensor>> LAMB::stateTensors() const {
  std::vector<std::pair<std::string, Tensor>> out{{"t", t}};
  for (size_t i = 0; i < m.size(); ++i) out.emplace_back("m." + std::to_string(i), m[i]);
  for (size_t i = 0; i < v.size(); ++i) out.emplace_back("v." + std::to_string(i), v[i]);
  return out;
}

LAMB Adam(std::vector<Tensor> params, double lr, double b1, double b2, double eps) {
  return LAMB(std::move(params), lr, b1, b2, eps, 0.0, true);
}

LAMB AdamW(std::vector<Tensor> params, double lr, double b1, double b2, double eps, double wd) {
  return LAMB(std::move(params), lr, b1, b2, eps, wd, true);
}

} // namespace lazyjit::nn::optim
