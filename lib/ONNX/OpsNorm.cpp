// ONNX ops: normalizations (BatchNormalization, Instance-, Layer-, Lp- and MeanVariance-
// Normalization, LRN), Dropout at inference, the NLL and softmax cross-entropy losses, and
// DepthToSpace/SpaceToDepth. Statistics are Tensor reductions over the normalized axes; the losses
// pick each target's class with a one-hot compare instead of a gather.
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- normalization ------------------------------------------------------------------------------

void checkBatchNorm(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  floatAttr(n, "epsilon", 1e-5f);
  floatAttr(n, "momentum", 0.9f);
  intAttr(n, "spatial", 1);
  intAttr(n, "training_mode", 0);
  LAZYJIT_USER_CHECK(n.output.size() <= 3, UnsupportedError,
                     "the saved_mean and saved_var outputs (training before opset 14) are not "
                     "supported");
}

Out runBatchNorm(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  int64_t rank = x.ndim();
  LAZYJIT_USER_CHECK(rank >= 2, ShapeError, "the input {} must be [N, C, ...]",
                     dimsText(x.intShape()));
  double eps = floatAttr(n, "epsilon", 1e-5f);
  bool training = ctx.opset >= 14 ? intAttr(n, "training_mode", 0) != 0 : n.output.size() > 1;
  Tensor scale = perChannel(in[1], rank), bias = perChannel(in[2], rank);
  Tensor mean = perChannel(in[3], rank), var = perChannel(in[4], rank);
  // (at inference the running statistics, asked for or not, pass through unchanged)
  // (from opset 15 the statistics may have a wider type than x; Y keeps x's)
  if (!training)
    return {keepDType(x.sub(mean).mul(var.add(eps).rsqrt()).mul(scale).add(bias), x.dtype()), in[3],
            in[4]};
  // training: normalized with the batch's statistics, which also update the running ones
  std::vector<int64_t> axes{0};
  if (in[3].ndim() == 1)
    for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  Tensor batchMean = x.mean(axes, true), batchVar = x.var(axes, true, 0);
  double momentum = floatAttr(n, "momentum", 0.9f);
  Tensor y = x.sub(batchMean).mul(batchVar.add(eps).rsqrt()).mul(scale).add(bias);
  Tensor runMean = in[3].mul(momentum).add(batchMean.reshape(in[3].shape()).mul(1 - momentum));
  Tensor runVar = in[4].mul(momentum).add(batchVar.reshape(in[4].shape()).mul(1 - momentum));
  return {keepDType(y, x.dtype()), runMean, runVar};
}

void checkEpsilon(const NodeContext &ctx) { floatAttr(ctx.node, "epsilon", 1e-5f); }

Out runInstanceNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  spatialDims(x, "the input");
  std::vector<int64_t> axes = iota(2, x.ndim());
  double eps = floatAttr(ctx.node, "epsilon", 1e-5f);
  Tensor mean = x.mean(axes, true), var = x.var(axes, true, 0);
  return {x.sub(mean)
              .mul(var.add(eps).rsqrt())
              .mul(perChannel(in[1], x.ndim()))
              .add(perChannel(in[2], x.ndim()))};
}

DType stashType(const NodeContext &ctx) {
  int64_t code = intAttr(ctx.node, "stash_type", 1);
  std::optional<DType> dt = toDType(DataType(code));
  LAZYJIT_USER_CHECK(dt && dt->isFloating(), UnsupportedError,
                     "attribute 'stash_type' = {} is not a floating point type", code);
  return *dt;
}
void checkLayerNorm(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  floatAttr(ctx.node, "epsilon", 1e-5f);
  stashType(ctx);
}

Out runLayerNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  double eps = floatAttr(ctx.node, "epsilon", 1e-5f);
  Tensor xs = x.cast(stashType(ctx));
  std::vector<int64_t> axes = iota(axis, x.ndim());
  Tensor mean = xs.mean(axes, true);
  Tensor invStd = xs.var(axes, true, 0).add(eps).rsqrt();
  Tensor y = xs.sub(mean).mul(invStd).cast(x.dtype()).mul(in[1]);
  if (has(in, 2)) y = y.add(in[2]);
  return {y, mean, invStd};
}

void checkLRN(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  int64_t size = requiredIntAttr(n, "size");
  LAZYJIT_USER_CHECK(size > 0, Error, "attribute 'size' = {} must be positive", size);
  floatAttr(n, "alpha", 1e-4f);
  floatAttr(n, "beta", 0.75f);
  floatAttr(n, "bias", 1);
}

Out runLRN(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2, ShapeError, "the input {} must be [N, C, ...]",
                     dimsText(dims));
  int64_t size = requiredIntAttr(n, "size");
  double alpha = floatAttr(n, "alpha", 1e-4f), beta = floatAttr(n, "beta", 0.75f);
  double bias = floatAttr(n, "bias", 1);
  // the sum of squares over the channels [c - (size-1)/2, c + ceil((size-1)/2)]: a window sum
  // over the channel axis of [N, 1, C, rest]
  int64_t rest = product(dims, 2, dims.size());
  Tensor sq = x.mul(x).reshape(toShape({dims[0], 1, dims[1], rest}));
  sq = sq.pad2d({0, 0, (size - 1) / 2, size / 2});
  Tensor sum = sq.avgPool2d({size, 1}, std::vector<int64_t>{1, 1}).mul(double(size));
  Tensor denom = sum.reshape(x.shape()).mul(alpha / double(size)).add(bias).pow(beta);
  return {x.div(denom)};
}

void checkMVN(const NodeContext &ctx) { intsAttr(ctx.node, "axes"); }
Out runMVN(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> axes = intsAttr(ctx.node, "axes").value_or(std::vector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) a = normalizeAxis(a, x.ndim(), "axis");
  Tensor mean = x.mean(axes, true);
  Tensor stdDev = x.mul(x).mean(axes, true).sub(mean.mul(mean)).sqrt();
  return {x.sub(mean).div(stdDev.add(1e-9))};
}

void checkLpNorm(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  int64_t p = intAttr(ctx.node, "p", 2);
  LAZYJIT_USER_CHECK(p == 1 || p == 2, UnsupportedError, "attribute 'p' = {} is not 1 or 2", p);
}
Out runLpNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  std::vector<int64_t> axes{axis};
  Tensor norm =
      intAttr(ctx.node, "p", 2) == 1 ? x.abs().sum(axes, true) : x.mul(x).sum(axes, true).sqrt();
  return {x.div(norm)};
}

// ---- Dropout ------------------------------------------------------------------------------------

void checkDropout(const NodeContext &ctx) {
  floatAttr(ctx.node, "ratio", 0.5f);
  intAttr(ctx.node, "seed", 0);
  intAttr(ctx.node, "is_test", 0);
}

/// Dropout at inference: the input, and a mask of all kept (bool from opset 10, the input's type
/// before). Before opset 7 is_test=0 asks for training; runtimes run those models for inference
/// alike, and so does this. From opset 12 a true training_mode input with a nonzero ratio drops
/// values at random, which is not supported.
Out runDropout(const NodeContext &ctx, const Inputs &in) {
  if (ctx.opset >= 12 && has(in, 2) && hostScalar(in[2], "the training_mode input") != 0) {
    double ratio = has(in, 1) ? hostScalar(in[1], "the ratio input") : 0.5;
    LAZYJIT_USER_CHECK(ratio == 0, UnsupportedError,
                       "training-mode dropout (random, ratio {}) is not supported", ratio);
  }
  Tensor mask = ctx.opset >= 10 ? Tensor::ones(in[0].shape(), TensorOptions(dtypes::boolean))
                                : in[0].onesLike();
  return {in[0], mask};
}

// ---- losses -------------------------------------------------------------------------------------

void checkLoss(const NodeContext &ctx) {
  checkStringAttr(ctx.node, "reduction", {"none", "sum", "mean"});
  intAttr(ctx.node, "ignore_index", 0);
}

/// NegativeLogLikelihoodLoss of log-probabilities `logp` [N, C, d...] and class indices `target`
/// [N, d...], weighted by `weight` [C] when given.
Tensor nllLoss(const NodeContext &ctx, const Tensor &logp, const Tensor &target,
               const Tensor &weight) {
  const NodeProto &n = ctx.node;
  std::vector<int64_t> dims = logp.intShape(), td = target.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2, ShapeError, "the input {} must be [N, C, ...]",
                     dimsText(dims));
  std::vector<int64_t> expect = dims;
  expect.erase(expect.begin() + 1);
  LAZYJIT_USER_CHECK(td == expect && target.dtype().isInt(), ShapeError,
                     "the target {} ({}) must be integers of shape {}", dimsText(td),
                     target.dtype().name(), dimsText(expect));
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> classShape(size_t(rank), 1);
  classShape[1] = dims[1];
  Tensor classes =
      Tensor::arange(double(dims[1]), TensorOptions(target.dtype())).reshape(toShape(classShape));
  Tensor hit = target.unsqueeze(1).eq(classes); // [N, C, d...]; a target out of range hits nothing
  std::vector<int64_t> classAxis{1};
  Tensor picked = hit.where(logp, 0).sum(classAxis);
  Tensor w = weight.defined() ? hit.where(weight.reshape(toShape(classShape)), 0).sum(classAxis)
                              : hit.cast(logp.dtype()).sum(classAxis);
  if (findAttr(n, "ignore_index")) {
    Tensor kept = target.ne(double(intAttr(n, "ignore_index", 0)));
    w = kept.where(w, 0);
    picked = kept.where(picked, 0);
  }
  Tensor loss = picked.neg().mul(w);
  std::string reduction = stringAttr(n, "reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.sum().div(w.sum());
}

Out runNLLLoss(const NodeContext &ctx, const Inputs &in) {
  return {nllLoss(ctx, in[0], in[1], has(in, 2) ? in[2] : Tensor())};
}

Out runSCELoss(const NodeContext &ctx, const Inputs &in) {
  LAZYJIT_USER_CHECK(in[0].ndim() >= 2, ShapeError, "the scores {} must be [N, C, ...]",
                     dimsText(in[0].intShape()));
  Tensor logp = in[0].logSoftmax(1);
  return {nllLoss(ctx, logp, in[1], has(in, 2) ? in[2] : Tensor()), logp};
}

// ---- DepthToSpace, SpaceToDepth -----------------------------------------------------------------

void checkDepthToSpace(const NodeContext &ctx) {
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(b > 0, Error, "attribute 'blocksize' = {} must be positive", b);
  checkStringAttr(ctx.node, "mode", {"DCR", "CRD"});
}

Out runDepthToSpace(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> d = in[0].intShape();
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(d.size() == 4 && d[1] % (b * b) == 0, ShapeError,
                     "the input {} must be [N, C, H, W] with C a multiple of blocksize^2 = {}",
                     dimsText(d), b * b);
  int64_t c = d[1] / (b * b);
  Tensor y = stringAttr(ctx.node, "mode", "DCR") == "DCR"
                 ? in[0].reshape(toShape({d[0], b, b, c, d[2], d[3]})).permute({0, 3, 4, 1, 5, 2})
                 : in[0].reshape(toShape({d[0], c, b, b, d[2], d[3]})).permute({0, 1, 4, 2, 5, 3});
  return {y.reshape(toShape({d[0], c, d[2] * b, d[3] * b}))};
}

void checkSpaceToDepth(const NodeContext &ctx) {
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(b > 0, Error, "attribute 'blocksize' = {} must be positive", b);
}

Out runSpaceToDepth(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> d = in[0].intShape();
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(d.size() == 4 && d[2] % b == 0 && d[3] % b == 0, ShapeError,
                     "the input {} must be [N, C, H, W] with H and W multiples of blocksize {}",
                     dimsText(d), b);
  Tensor y =
      in[0].reshape(toShape({d[0], d[1], d[2] / b, b, d[3] / b, b})).permute({0, 3, 5, 1, 2, 4});
  return {y.reshape(toShape({d[0], d[1] * b * b, d[2] / b, d[3] / b}))};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    OpDef{"BatchNormalization", 5, 5, 5, checkBatchNorm, runBatchNorm},
    OpDef{"InstanceNormalization", 3, 3, 1, checkEpsilon, runInstanceNorm},
    OpDef{"LayerNormalization", 2, 3, 3, checkLayerNorm, runLayerNorm},
    OpDef{"LRN", 1, 1, 1, checkLRN, runLRN},
    OpDef{"MeanVarianceNormalization", 1, 1, 1, checkMVN, runMVN},
    OpDef{"LpNormalization", 1, 1, 1, checkLpNorm, runLpNorm},
    OpDef{"Dropout", 1, 3, 2, checkDropout, runDropout},
    OpDef{"NegativeLogLikelihoodLoss", 2, 3, 1, checkLoss, runNLLLoss},
    OpDef{"SoftmaxCrossEntropyLoss", 2, 3, 2, checkLoss, runSCELoss},
    OpDef{"DepthToSpace", 1, 1, 1, checkDepthToSpace, runDepthToSpace},
    OpDef{"SpaceToDepth", 1, 1, 1, checkSpaceToDepth, runSpaceToDepth},
};

} // namespace

std::span<const OpDef> normOps() { return opTable; }

} // namespace lazyjit::onnx::ops
