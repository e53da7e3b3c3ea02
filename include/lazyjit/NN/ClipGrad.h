// Gradient clipping, as PyTorch's torch.nn.utils.clip_grad_norm_ and clip_grad_value_.
//
//   loss.backward();
//   Tensor norm = nn::clipGradNorm(opt.params, 1.0); // the norm before clipping
//   opt.step();
//
// clipGradNorm computes the total norm of all the gradients in one fused reduction (the flattened
// gradients concatenated: one kernel for up to kClipGroup gradients) and realizes it with the
// gradients; it then sets each gradient to `g * clip_coef` lazily, an elementwise expression of
// realized buffers, which the optimizer's step computes inside its update kernels (Optim.h):
// clipping costs the norm's kernel and no kernel per parameter.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <vector>

namespace lazyjit::nn {

/// Gradients per concatenated reduction (larger groups make kernels with many masked loads).
inline constexpr size_t kClipGroup = 16;

/// Scales the gradients of `params` (those that have one) by clip_coef = min(maxNorm /
/// (total_norm + 1e-6), 1), where total_norm is the `normType`-norm of all of them together
/// (the norm of the per-gradient norms; normType may be infinity: the largest |g|). Returns
/// total_norm, a realized 0-d float32 tensor (float64 if a gradient is float64); 0 when no
/// parameter has a gradient. maxNorm must be >= 0 and normType > 0.
Tensor clipGradNorm(const std::vector<Tensor> &params, double maxNorm, double normType = 2.0);

/// Clamps the gradients of `params` (those that have one) to [-clipValue, clipValue], lazily.
/// clipValue must be >= 0.
void clipGradValue(const std::vector<Tensor> &params, double clipValue);

} // namespace lazyjit::nn
