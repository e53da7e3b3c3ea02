// Gradient clipping (see ClipGrad.h): PyTorch's clip_grad_norm_ and clip_grad_value_ with the
// norm as one concatenated reduction and the scale left for the optimizer's kernels.
#include "lazyjit/NN/ClipGrad.h"
#include "lazyjit/Support/Error.h"

#include <cmath>

namespace lazyjit::nn {

namespace {

/// The parameters that have a gradient, and their gradients.
struct WithGrad {
  std::vector<Tensor> params, grads;
};

WithGrad withGrad(const std::vector<Tensor> &params) {
  WithGrad out;
  for (const Tensor &p : params) {
    LAZYJIT_USER_CHECK(p.defined(), Error, "clip_grad: the parameter list holds an undefined Tensor");
    if (std::optional<Tensor> g = p.grad()) {
      out.params.push_back(p);
      out.grads.push_back(*g);
    }
  }
  return out;
}

/// |g|^p flattened (g^2 for p = 2, |g| for p = 1 and for the inf norm), in `acc` on `device`.
Tensor powered(const Tensor &g, double normType, DType acc, const std::string &device) {
  Tensor x = g.flatten().cast(acc).to(device);
  if (normType == 2) return x.square();
  if (normType == 1 || std::isinf(normType)) return x.abs();
  return x.abs().pow(normType);
}

/// sum(|g|^p) (max |g| for the inf norm) over grads[begin, end), one concatenated reduction.
Tensor reduceGroup(const std::vector<Tensor> &grads, size_t begin, size_t end, double normType, DType acc,
                   const std::string &device) {
  Tensor first = powered(grads[begin], normType, acc, device);
  std::vector<Tensor> rest;
  for (size_t i = begin + 1; i < end; ++i) rest.push_back(powered(grads[i], normType, acc, device));
  Tensor all = rest.empty() ? first : first.cat(rest);
  return std::isinf(normType) ? all.max() : all.sum();
}

/// The total norm of `grads` (PyTorch's norm of the per-gradient norms), lazily.
Tensor totalNorm(const std::vector<Tensor> &grads, double normType, DType acc) {
  const std::string &device = grads[0].device();
  Tensor total;
  for (size_t begin = 0; begin < grads.size(); begin += kClipGroup) {
    Tensor part = reduceGroup(grads, begin, std::min(grads.size(), begin + kClipGroup), normType, acc, device);
    total = !total.defined() ? part : std::isinf(normType) ? total.maximum(part) : total.add(part);
  }
  if (std::isinf(normType) || normType == 1) return total;
  return normType == 2 ? total.sqrt() : total.pow(1.0 / normType);
}

/// g * min(maxNorm / (norm + 1e-6), 1), with the realized 0-d `norm` broadcast to g's shape
/// before any arithmetic, so the product is an elementwise expression of realized buffers.
Tensor scaled(const Tensor &g, const Tensor &norm, double maxNorm) {
  Tensor n = norm.device() == g.device() ? norm : norm.to(g.device());
  n = n.reshape(Shape(g.shape().size(), SInt(1))).expand(g.shape());
  Tensor coef = n.add(1e-6).div(maxNorm, true).minimum(1.0);
  if (g.dtype() == coef.dtype()) return g.mul(coef);
  return g.cast(coef.dtype()).mul(coef).cast(g.dtype());
}

} // namespace

Tensor clipGradNorm(const std::vector<Tensor> &params, double maxNorm, double normType) {
  LAZYJIT_USER_CHECK(maxNorm >= 0, Error, "clip_grad_norm: max_norm must be >= 0, but it is {}", maxNorm);
  LAZYJIT_USER_CHECK(normType > 0, Error, "clip_grad_norm: norm_type must be > 0 (or inf), but it is {}",
                     normType);
  WithGrad w = withGrad(params);
  if (w.grads.empty()) return Tensor::scalar(0.0, {dtypes::float32, std::nullopt, false});
  DType acc = dtypes::float32;
  for (const Tensor &g : w.grads) {
    LAZYJIT_USER_CHECK(g.dtype().isFloat(), DTypeError, "clip_grad_norm: a gradient is {}, not a float dtype",
                       g.dtype().name());
    if (g.dtype() == dtypes::float64) acc = dtypes::float64;
  }
  Tensor norm = totalNorm(w.grads, normType, acc);
  // the gradients are realized with the norm: the step would realize them anyway, and then the
  // scaled gradients below read only realized buffers
  std::vector<Tensor> outs = w.grads;
  outs.push_back(norm);
  Tensor::corealize(outs);
  for (size_t i = 0; i < w.params.size(); ++i) w.params[i].setGrad(scaled(w.grads[i], norm, maxNorm));
  return norm;
}

void clipGradValue(const std::vector<Tensor> &params, double clipValue) {
  LAZYJIT_USER_CHECK(clipValue >= 0, Error, "clip_grad_value: clip_value must be >= 0, but it is {}", clipValue);
  WithGrad w = withGrad(params);
  for (size_t i = 0; i < w.params.size(); ++i) w.params[i].setGrad(w.grads[i].clip(-clipValue, clipValue));
}

} // namespace lazyjit::nn
