// Optimizers (reference tinygrad/nn/optim.py), written in the reference's evaluation order so the
// update kernels fuse as its do.
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Graph/ShapeText.h"
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

SGD::SGD(std::vector<Tensor> ps, double lrValue, double momentum_, double weightDecay, bool nesterov_)
    : Optimizer(std::move(ps), lrValue), momentum(momentum_), wd(weightDecay), nesterov(nesterov_) {
  if (momentum != 0)
    for (const auto &t : params) b.push_back(Tensor::zeros(t.shape(), {std::nullopt, t.device(), false}));
}

// https://pytorch.org/docs/stable/generated/torch.optim.SGD.html
void SGD::step() {
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor &t = params[i];
    Tensor g = gradOf("SGD", i).realize();
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

void LAMB::step() {
  t.assign(t.add(1)).realize();
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor &p = params[i];
    Tensor g = gradOf(adam ? "Adam" : "LAMB", i).realize();
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

LAMB Adam(std::vector<Tensor> params, double lr, double b1, double b2, double eps) {
  return LAMB(std::move(params), lr, b1, b2, eps, 0.0, true);
}

LAMB AdamW(std::vector<Tensor> params, double lr, double b1, double b2, double eps, double wd) {
  return LAMB(std::move(params), lr, b1, b2, eps, wd, true);
}

} // namespace lazyjit::nn::optim
