// ONNX ops outside the default domain: the training domain (ai.onnx.preview.training), the
// classic-ML domain (ai.onnx.ml) and the contrib ops ONNX Runtime's exporters write
// (com.microsoft).
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <cmath>
#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

constexpr std::string_view Training = "ai.onnx.preview.training";
constexpr std::string_view ML = "ai.onnx.ml";
constexpr std::string_view MS = "com.microsoft";

float requiredFloatAttr(const NodeProto &n, std::string_view name) {
  LAZYJIT_USER_CHECK(findAttr(n, name), Error, "the required attribute '{}' is missing", name);
  return floatAttr(n, name, 0);
}

/// erf(x) through the default domain's Erf (series exact to float32).
Tensor erfOf(const NodeContext &ctx, const Tensor &x) { return findOp("Erf")->run(ctx, {x})[0]; }

/// 0.5 x (1 + erf(x / sqrt 2)), in float32 for half-width inputs.
Tensor geluErf(const NodeContext &ctx, const Tensor &x) {
  if (x.dtype().isHalfWidth()) return geluErf(ctx, x.cast(dtypes::float32)).cast(x.dtype());
  return x.mul(0.5).mul(erfOf(ctx, x.mul(M_SQRT1_2)).add(1.0));
}
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), in float32 for half-width inputs.
Tensor geluTanh(const Tensor &x) {
  if (x.dtype().isHalfWidth()) return geluTanh(x.cast(dtypes::float32)).cast(x.dtype());
  Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(std::sqrt(2.0 / M_PI));
  return x.mul(0.5).mul(inner.tanh().add(1.0));
}

// ---- ai.onnx.preview.training ------------------------------------------------------------------
//
// Each optimizer takes R (the learning rate, a scalar), T (the step count, an int64 scalar) and
// then its per-tensor groups as lists: X1..Xn, G1..Gn, then one list per state (Adagrad's H,
// Momentum's V, Adam's V and H); it returns the new X1..Xn followed by the new states' lists.

/// The number of optimized tensors of a node whose groups have `lists` inputs each.
size_t trainingGroups(const NodeContext &ctx, size_t lists) {
  size_t inputs = ctx.node.input.size();
  LAZYJIT_USER_CHECK(inputs >= 2 + lists && (inputs - 2) % lists == 0, Error,
                     "it takes R, T and {} lists of equal length, not {} inputs", lists, inputs);
  size_t n = (inputs - 2) / lists;
  LAZYJIT_USER_CHECK(ctx.node.output.size() == n * (lists - 1), Error,
                     "it updates {} tensors and so has {} outputs, not {}", n, n * (lists - 1),
                     ctx.node.output.size());
  return n;
}

/// The learning rate R as a scalar of `x`'s dtype.
Tensor rateFor(const Inputs &in, const Tensor &x) {
  LAZYJIT_USER_CHECK(numel(in[0]) == 1, ShapeError, "R must be a scalar, not {}",
                     dimsText(in[0].intShape()));
  return in[0].reshape({}).cast(x.dtype());
}

void checkAdagrad(const NodeContext &ctx) {
  trainingGroups(ctx, 3);
  floatAttr(ctx.node, "decay_factor", 0);
  floatAttr(ctx.node, "epsilon", 1e-6f);
  floatAttr(ctx.node, "norm_coefficient", 0);
}
Out runAdagrad(const NodeContext &ctx, const Inputs &in) {
  size_t n = trainingGroups(ctx, 3);
  double decay = floatAttr(ctx.node, "decay_factor", 0);
  double eps = floatAttr(ctx.node, "epsilon", 1e-6f);
  double norm = floatAttr(ctx.node, "norm_coefficient", 0);
  double t = hostScalar(in[1], "T");
  Out xs, hs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor &x = in[2 + i], &g = in[2 + n + i], &h = in[2 + 2 * n + i];
    Tensor r = rateFor(in, x);
    Tensor rate = r.div(1 + t * decay);
    Tensor gr = x.mul(norm).add(g);
    Tensor hNew = h.add(gr.mul(gr));
    xs.push_back(x.sub(rate.mul(gr).div(hNew.sqrt().add(eps))));
    hs.push_back(hNew);
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

void checkAdam(const NodeContext &ctx) {
  trainingGroups(ctx, 4);
  for (std::string_view a :
       {"alpha", "beta", "epsilon", "norm_coefficient", "norm_coefficient_post"})
    floatAttr(ctx.node, a, 0);
}
Out runAdam(const NodeContext &ctx, const Inputs &in) {
  size_t n = trainingGroups(ctx, 4);
  const NodeProto &node = ctx.node;
  double alpha = floatAttr(node, "alpha", 0.9f), beta = floatAttr(node, "beta", 0.999f);
  double eps = floatAttr(node, "epsilon", 1e-6f), norm = floatAttr(node, "norm_coefficient", 0);
  double post = floatAttr(node, "norm_coefficient_post", 0);
  double t = hostScalar(in[1], "T");
  Out xs, vs, hs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor &x = in[2 + i], &g = in[2 + n + i], &v = in[2 + 2 * n + i], &h = in[2 + 3 * n + i];
    Tensor r = rateFor(in, x);
    Tensor gr = x.mul(norm).add(g);
    Tensor vNew = v.mul(alpha).add(gr.mul(1 - alpha));
    Tensor hNew = h.mul(beta).add(gr.mul(gr).mul(1 - beta));
    // the bias correction applies from the first step on (T > 0)
    Tensor rate = t > 0 ? r.mul(std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t))) : r;
    Tensor xNew = x.sub(rate.mul(vNew.div(hNew.sqrt().add(eps))));
    xs.push_back(post == 0 ? xNew : xNew.mul(1 - post));
    vs.push_back(vNew);
    hs.push_back(hNew);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

void checkMomentum(const NodeContext &ctx) {
  trainingGroups(ctx, 3);
  for (std::string_view a : {"alpha", "beta", "norm_coefficient"}) requiredFloatAttr(ctx.node, a);
  LAZYJIT_USER_CHECK(findAttr(ctx.node, "mode"), Error, "the required attribute 'mode' is missing");
  checkStringAttr(ctx.node, "mode", {"standard", "nesterov"});
}
Out runMomentum(const NodeContext &ctx, const Inputs &in) {
  size_t n = trainingGroups(ctx, 3);
  double alpha = requiredFloatAttr(ctx.node, "alpha"), beta = requiredFloatAttr(ctx.node, "beta");
  double norm = requiredFloatAttr(ctx.node, "norm_coefficient");
  bool nesterov = stringAttr(ctx.node, "mode", "standard") == "nesterov";
  double t = hostScalar(in[1], "T");
  Out xs, vs;
  for (size_t i = 0; i < n; ++i) {
    const Tensor &x = in[2 + i], &g = in[2 + n + i], &v = in[2 + 2 * n + i];
    Tensor r = rateFor(in, x);
    Tensor gr = x.mul(norm).add(g);
    // the gradient's coefficient is 1 at the first step
    Tensor vNew = v.mul(alpha).add(gr.mul(t > 0 ? beta : 1.0));
    xs.push_back(x.sub(r.mul(nesterov ? gr.add(vNew.mul(alpha)) : vNew)));
    vs.push_back(vNew);
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

// ---- ai.onnx.ml ---------------------------------------------------------------------------------

/// The string attributes of the classic-ML ops select their string variants, which lazyjit (no
/// string tensors) cannot run.
void rejectAttr(const NodeContext &ctx, std::string_view name) {
  LAZYJIT_USER_CHECK(!findAttr(ctx.node, name), UnsupportedError,
                     "attribute '{}' is not supported (lazyjit has no string tensors)", name);
}

/// X[..., indices] with the indices flattened; a 1-D X gives [1, k] (ONNX's reference).
Out runArrayFeatureExtractor(const NodeContext &, const Inputs &in) {
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() >= 1, ShapeError, "X must have a rank of at least 1");
  std::vector<int64_t> idx = hostInts(in[1].flatten(), "the indices");
  std::vector<int64_t> dims = x.intShape();
  int64_t last = dims.back();
  for (int64_t &i : idx) {
    LAZYJIT_USER_CHECK(i >= -last && i < last, ShapeError,
                       "index {} is out of range for the last axis of X {}", i, dimsText(dims));
    if (i < 0) i += last;
  }
  std::vector<int64_t> outDims = dims.size() == 1 ? std::vector<int64_t>{1, 0} : dims;
  outDims.back() = int64_t(idx.size());
  if (idx.empty()) return {Tensor::zeros(toShape(outDims), TensorOptions(x.dtype(), x.device()))};
  return {x.getitem({Index::ellipsis(), Index::of(idx)}).reshape(toShape(outDims))};
}

Out runBinarizer(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  double threshold = floatAttr(ctx.node, "threshold", 0);
  return {less(scalarOf(x, threshold), x).cast(x.dtype())};
}

void checkNormalizer(const NodeContext &ctx) {
  checkStringAttr(ctx.node, "norm", {"MAX", "L1", "L2"});
}
/// Each row of an [N, C] (or the one row of a [C]) input divided by its norm, kept as it is where
/// the norm is 0; the result is float. MAX divides by the row's max (not its largest magnitude),
/// as the spec writes it and ONNX Runtime does; L2 keeps the signs.
Out runNormalizer(const NodeContext &ctx, const Inputs &in) {
  Tensor x = in[0].cast(in[0].dtype() == dtypes::float64 ? dtypes::float64 : dtypes::float32);
  LAZYJIT_USER_CHECK(x.ndim() == 1 || x.ndim() == 2, ShapeError, "X must be [C] or [N, C], not {}",
                     dimsText(x.intShape()));
  std::string norm = stringAttr(ctx.node, "norm", "MAX");
  Tensor div = norm == "MAX"  ? x.max(std::vector<int64_t>{-1}, true)
               : norm == "L1" ? x.abs().sum(std::vector<int64_t>{-1}, true)
                              : x.mul(x).sum(std::vector<int64_t>{-1}, true).sqrt();
  Tensor zero = equal(div, scalarOf(div, 0));
  return {zero.where(x, x.div(zero.where(scalarOf(div, 1), div))).cast(dtypes::float32)};
}

/// A floats attribute of one value or one per feature, as a tensor that broadcasts along the last
/// axis.
Tensor perFeature(const NodeContext &ctx, std::string_view name, const Tensor &x) {
  std::vector<float> v = floatsAttr(ctx.node, name).value_or(std::vector<float>{});
  int64_t c = x.ndim() == 0 ? 1 : x.intShape().back();
  LAZYJIT_USER_CHECK(v.size() <= 1 || int64_t(v.size()) == c, ShapeError,
                     "attribute '{}' has {} values for {} features", name, v.size(), c);
  if (v.empty()) v.push_back(name == "scale" ? 1.0f : 0.0f);
  return Tensor::fromVector(v, toShape({int64_t(v.size())})).to(x.device());
}
void checkScaler(const NodeContext &ctx) {
  floatsAttr(ctx.node, "offset");
  floatsAttr(ctx.node, "scale");
}
Out runScaler(const NodeContext &ctx, const Inputs &in) {
  Tensor x = in[0].cast(dtypes::float32);
  return {x.sub(perFeature(ctx, "offset", x)).mul(perFeature(ctx, "scale", x))};
}

void checkLabelEncoder(const NodeContext &ctx) {
  LAZYJIT_USER_CHECK(ctx.opset >= 2, UnsupportedError,
                     "LabelEncoder-1 maps strings, which lazyjit does not support");
  for (std::string_view a : {"keys_strings", "values_strings", "default_string", "keys_tensor",
                             "values_tensor", "default_tensor"})
    rejectAttr(ctx, a);
  const NodeProto &n = ctx.node;
  bool intKeys = findAttr(n, "keys_int64s"), floatKeys = findAttr(n, "keys_floats");
  bool intValues = findAttr(n, "values_int64s"), floatValues = findAttr(n, "values_floats");
  LAZYJIT_USER_CHECK(intKeys != floatKeys, Error, "it needs exactly one of the keys attributes");
  LAZYJIT_USER_CHECK(intValues != floatValues, Error,
                     "it needs exactly one of the values attributes");
  size_t keys = intKeys ? intsAttr(n, "keys_int64s")->size() : floatsAttr(n, "keys_floats")->size();
  size_t values =
      intValues ? intsAttr(n, "values_int64s")->size() : floatsAttr(n, "values_floats")->size();
  LAZYJIT_USER_CHECK(keys == values, Error, "it has {} keys but {} values", keys, values);
  intAttr(n, "default_int64", -1);
  floatAttr(n, "default_float", -0.0f);
}
/// Each element replaced by the value of its key (the default where none matches), through a
/// chain of selects; float keys compare by value, with NaN matching NaN.
Out runLabelEncoder(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<double> keys, values;
  if (auto k = intsAttr(n, "keys_int64s"))
    keys.assign(k->begin(), k->end());
  else if (auto f = floatsAttr(n, "keys_floats"))
    keys.assign(f->begin(), f->end());
  DType outType = dtypes::int64;
  double dflt = double(intAttr(n, "default_int64", -1));
  if (auto v = intsAttr(n, "values_int64s")) {
    values.assign(v->begin(), v->end());
  } else {
    std::vector<float> f = *floatsAttr(n, "values_floats");
    values.assign(f.begin(), f.end());
    outType = dtypes::float32;
    dflt = floatAttr(n, "default_float", -0.0f);
  }
  LAZYJIT_USER_CHECK(x.dtype().isFloating() == bool(floatsAttr(n, "keys_floats")), DTypeError,
                     "input of {} does not match the keys' type", x.dtype().name());
  Tensor y = Tensor::full(x.shape(), dflt, TensorOptions(outType, x.device()));
  // the first matching key wins, so select from the last key back
  for (size_t i = keys.size(); i-- > 0;) {
    Tensor hit = std::isnan(keys[i]) ? isNan(x) : equal(x, scalarOf(x, keys[i]));
    y = hit.where(scalarOf(y, values[i]), y);
  }
  return {y};
}

void checkOneHotEncoder(const NodeContext &ctx) {
  rejectAttr(ctx, "cats_strings");
  LAZYJIT_USER_CHECK(intsAttr(ctx.node, "cats_int64s"), Error,
                     "the attribute 'cats_int64s' is missing");
  intAttr(ctx.node, "zeros", 1);
}
/// [..., categories] float one-hot rows; a value in no category is a zero row, or an error with
/// zeros = 0 (checked on the host).
Out runOneHotEncoder(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> cats = *intsAttr(ctx.node, "cats_int64s");
  Tensor x = in[0].dtype().isFloating() ? in[0].cast(dtypes::int64) : in[0];
  std::vector<Tensor> cols;
  for (int64_t c : cats) cols.push_back(equal(x, scalarOf(x, double(c))).cast(dtypes::float32));
  Tensor y = stackMany(std::move(cols), x.ndim());
  if (intAttr(ctx.node, "zeros", 1) == 0 && numel(x) > 0)
    LAZYJIT_USER_CHECK(y.sum(std::vector<int64_t>{-1}).min().item<float>() > 0, Error,
                       "an input value is in no category and attribute 'zeros' is 0");
  return {y};
}

void checkLinearRegressor(const NodeContext &ctx) {
  checkStringAttr(ctx.node, "post_transform", {"NONE"});
  int64_t targets = intAttr(ctx.node, "targets", 1);
  LAZYJIT_USER_CHECK(targets > 0, Error, "attribute 'targets' = {} must be positive", targets);
  LAZYJIT_USER_CHECK(floatsAttr(ctx.node, "coefficients"), Error,
                     "the attribute 'coefficients' is missing");
  floatsAttr(ctx.node, "intercepts");
}
/// Y [N, targets] = X [N, C] @ coefficients [targets, C]^T + intercepts, in float.
Out runLinearRegressor(const NodeContext &ctx, const Inputs &in) {
  Tensor x = in[0].cast(dtypes::float32);
  if (x.ndim() == 1) x = x.reshape(toShape({1, x.intShape()[0]}));
  LAZYJIT_USER_CHECK(x.ndim() == 2, ShapeError, "X must be [N, C] or [C], not {}",
                     dimsText(in[0].intShape()));
  int64_t targets = intAttr(ctx.node, "targets", 1), c = x.intShape()[1];
  std::vector<float> coef = *floatsAttr(ctx.node, "coefficients");
  LAZYJIT_USER_CHECK(int64_t(coef.size()) == targets * c, ShapeError,
                     "{} coefficients do not fit {} targets of {} features", coef.size(), targets,
                     c);
  Tensor w = Tensor::fromVector(coef, toShape({targets, c})).to(x.device());
  Tensor y = x.matmul(w.transpose());
  if (auto b = floatsAttr(ctx.node, "intercepts"); b && !b->empty()) {
    LAZYJIT_USER_CHECK(int64_t(b->size()) == targets, ShapeError, "{} intercepts for {} targets",
                       b->size(), targets);
    y = y.add(Tensor::fromVector(*b, toShape({targets})).to(x.device()));
  }
  return {y};
}

void checkImputer(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  bool floats = findAttr(n, "imputed_value_floats"), ints = findAttr(n, "imputed_value_int64s");
  LAZYJIT_USER_CHECK(floats != ints, Error,
                     "it needs exactly one of 'imputed_value_floats' and 'imputed_value_int64s'");
  floatAttr(n, "replaced_value_float", 0);
  intAttr(n, "replaced_value_int64", 0);
}
/// X with every element equal to the replaced value (a NaN replaced value matches NaNs) set to the
/// imputed value of its feature (the last axis), or the one imputed value.
Out runImputer(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  bool floats = findAttr(n, "imputed_value_floats");
  LAZYJIT_USER_CHECK(floats == x.dtype().isFloating(), DTypeError,
                     "a {} input needs the imputed values as {}", x.dtype().name(),
                     x.dtype().isFloating() ? "floats" : "int64s");
  std::vector<double> values;
  if (floats) {
    std::vector<float> v = *floatsAttr(n, "imputed_value_floats");
    values.assign(v.begin(), v.end());
  } else {
    std::vector<int64_t> v = *intsAttr(n, "imputed_value_int64s");
    values.assign(v.begin(), v.end());
  }
  int64_t c = x.ndim() == 0 ? 1 : x.intShape().back();
  LAZYJIT_USER_CHECK(values.size() == 1 || int64_t(values.size()) == c, ShapeError,
                     "{} imputed values for {} features", values.size(), c);
  double replaced = floats ? double(floatAttr(n, "replaced_value_float", 0))
                           : double(intAttr(n, "replaced_value_int64", 0));
  Tensor hit = std::isnan(replaced) ? isNan(x) : equal(x, scalarOf(x, replaced));
  Tensor fill = values.size() == 1 ? scalarOf(x, values[0])
                                   : Tensor::fromValues(values, toShape({c}),
                                                        TensorOptions(x.dtype(), x.device()));
  return {hit.where(fill, x)};
}

// ---- com.microsoft ------------------------------------------------------------------------------

Out runFastGelu(const NodeContext &, const Inputs &in) {
  return {geluTanh(has(in, 1) ? in[0].add(in[1]) : in[0])};
}
void checkFusedMatMul(const NodeContext &ctx) {
  floatAttr(ctx.node, "alpha", 1);
  intAttr(ctx.node, "transA", 0);
  intAttr(ctx.node, "transB", 0);
  for (std::string_view a : {"transBatchA", "transBatchB"})
    LAZYJIT_USER_CHECK(intAttr(ctx.node, a, 0) == 0, UnsupportedError,
                       "attribute '{}' = 1 is not supported", a);
}
/// alpha * A' @ B', where transA / transB swap the last two dims of A / B (numpy's matmul).
Out runFusedMatMul(const NodeContext &ctx, const Inputs &in) {
  auto swapLast = [](const Tensor &t) {
    LAZYJIT_USER_CHECK(t.ndim() >= 2, ShapeError, "cannot transpose a rank {} input", t.ndim());
    return t.transpose(-1, -2);
  };
  Tensor a = intAttr(ctx.node, "transA", 0) ? swapLast(in[0]) : in[0];
  Tensor b = intAttr(ctx.node, "transB", 0) ? swapLast(in[1]) : in[1];
  double alpha = floatAttr(ctx.node, "alpha", 1);
  Tensor y = a.matmul(b);
  return {alpha == 1 ? y : y.mul(alpha)};
}

void checkQuickGelu(const NodeContext &ctx) { floatAttr(ctx.node, "alpha", 1.702f); }
Out runQuickGelu(const NodeContext &ctx, const Inputs &in) {
  return {in[0].mul(in[0].mul(double(floatAttr(ctx.node, "alpha", 1.702f))).sigmoid())};
}

/// Layer normalization over the last axis (in float32 for half-width inputs): the normalized
/// values in x's dtype, the mean and 1/sqrt(var + eps).
struct LayerNormed {
  Tensor y, mean, invStd;
};
LayerNormed layerNormLast(const Tensor &x, double eps, bool simplified = false) {
  Tensor xs = x.dtype().isHalfWidth() ? x.cast(dtypes::float32) : x;
  std::vector<int64_t> last{-1};
  Tensor mean = xs.mean(last, true);
  if (simplified) {
    Tensor invStd = xs.mul(xs).mean(last, true).add(eps).rsqrt();
    return {xs.mul(invStd).cast(x.dtype()), mean, invStd};
  }
  Tensor invStd = xs.var(last, true, 0).add(eps).rsqrt();
  return {xs.sub(mean).mul(invStd).cast(x.dtype()), mean, invStd};
}

void checkSkipLayerNorm(const NodeContext &ctx) { floatAttr(ctx.node, "epsilon", 1e-12f); }
/// output = LayerNorm(input + skip + bias) * gamma + beta over the hidden (last) axis; the
/// optional outputs are the mean, 1/std (both [..., 1]) and the sum input + skip + bias.
template <bool Simplified> Out runSkipLayerNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() >= 2, ShapeError, "input must be [batch, seq, hidden], not {}",
                     dimsText(x.intShape()));
  int64_t hidden = x.intShape().back();
  for (size_t i = 2; i < in.size(); ++i)
    if (has(in, i))
      LAZYJIT_USER_CHECK(in[i].intShape() == std::vector<int64_t>{hidden}, ShapeError,
                         "input {} must be [{}], not {}", i, hidden, dimsText(in[i].intShape()));
  // SkipSimplifiedLayerNormalization has no beta: its bias is input 3
  size_t betaAt = Simplified ? SIZE_MAX : 3, biasAt = Simplified ? 3 : 4;
  // the sum and the normalization in float32 for half-width inputs, as ONNX Runtime does
  DType work = x.dtype().isHalfWidth() ? dtypes::float32 : x.dtype();
  Tensor sum = x.cast(work).add(in[1].cast(work));
  if (has(in, biasAt)) sum = sum.add(in[biasAt].cast(work));
  LayerNormed ln = layerNormLast(sum, floatAttr(ctx.node, "epsilon", 1e-12f), Simplified);
  Tensor y = ln.y.mul(in[2].cast(work));
  if (betaAt != SIZE_MAX && has(in, betaAt)) y = y.add(in[betaAt].cast(work));
  return {y.cast(x.dtype()), ln.mean, ln.invStd, sum.cast(x.dtype())};
}

void checkEmbedLayerNorm(const NodeContext &ctx) {
  floatAttr(ctx.node, "epsilon", 1e-12f);
  intAttr(ctx.node, "mask_index_type", 1);
  const NodeProto &n = ctx.node;
  auto given = [&](size_t i) { return n.input.size() > i && !n.input[i].empty(); };
  LAZYJIT_USER_CHECK(given(1) == given(4), Error,
                     "segment_ids and segment_embedding are given together or not at all");
}
/// Rows of `table` at `ids` (int), checked on the host to be in range.
Tensor embed(const Tensor &table, const Tensor &ids, std::string_view what) {
  int64_t rows = table.intShape()[0];
  Tensor i = ids.cast(dtypes::int64);
  if (numel(i) > 0) {
    int64_t lo = int64_t(i.min().item<int64_t>()), hi = int64_t(i.max().item<int64_t>());
    LAZYJIT_USER_CHECK(lo >= 0 && hi < rows, ShapeError, "{} {}..{} are out of range for {} rows",
                       what, lo, hi, rows);
  }
  return table.getitem(i);
}
/// BERT's embedding: LayerNorm(word[ids] + position[pos] + segment[seg]) * gamma + beta, the mask
/// index (the number of ones of each mask row, int32) and the embedding sum.
Out runEmbedLayerNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &ids = in[0];
  LAZYJIT_USER_CHECK(ids.ndim() == 2, ShapeError, "input_ids must be [batch, seq], not {}",
                     dimsText(ids.intShape()));
  int64_t batch = ids.intShape()[0], seq = ids.intShape()[1];
  for (size_t i : {2, 3, 4})
    if (has(in, i))
      LAZYJIT_USER_CHECK(in[i].ndim() == 2, ShapeError, "input {} must be a 2-D table, not {}", i,
                         dimsText(in[i].intShape()));
  Tensor pos = has(in, 8) ? in[8]
                          : Tensor::arange(double(seq), TensorOptions(dtypes::int64, ids.device()))
                                .reshape(toShape({1, seq}));
  Tensor sum = embed(in[2], ids, "input ids").add(embed(in[3], pos, "position ids"));
  if (has(in, 1)) sum = sum.add(embed(in[4], in[1], "segment ids"));
  LayerNormed ln = layerNormLast(sum, floatAttr(ctx.node, "epsilon", 1e-12f));
  Tensor y = ln.y.mul(in[5]);
  if (has(in, 6)) y = y.add(in[6]);
  // ONNX Runtime counts the mask's ones
  Tensor maskIndex =
      has(in, 7) ? equal(in[7], scalarOf(in[7], 1)).cast(dtypes::int32).sum(std::vector<int64_t>{1})
                 : Tensor::zeros(toShape({batch}), TensorOptions(dtypes::int32, ids.device()));
  return {y, maskIndex.cast(dtypes::int32), sum};
}

void checkAttention(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  int64_t heads = requiredIntAttr(n, "num_heads");
  LAZYJIT_USER_CHECK(heads > 0, Error, "attribute 'num_heads' = {} must be positive", heads);
  if (auto sizes = intsAttr(n, "qkv_hidden_sizes"))
    LAZYJIT_USER_CHECK(sizes->size() == 3, Error, "attribute 'qkv_hidden_sizes' needs 3 values");
  intAttr(n, "unidirectional", 0);
  floatAttr(n, "mask_filter_value", -10000.0f);
  floatAttr(n, "scale", 0);
  LAZYJIT_USER_CHECK(intAttr(n, "do_rotary", 0) == 0, UnsupportedError,
                     "attribute 'do_rotary' = 1 is not supported");
  LAZYJIT_USER_CHECK(intAttr(n, "past_present_share_buffer", 0) == 0, UnsupportedError,
                     "attribute 'past_present_share_buffer' = 1 is not supported");
  LAZYJIT_USER_CHECK(n.input.size() <= 6 || n.input[6].empty(), UnsupportedError,
                     "input past_sequence_length is not supported");
}

/// The additive mask [batch, 1 or seq, total] of Attention's mask_index: 1-D [batch] (the end of
/// each row's keys) or [2 * batch] (ends, then starts), 2-D [batch, total] and 3-D
/// [batch, seq, total] 0/1 masks, and Megatron's 4-D [batch, 1, max_seq, max_seq] 0/1 mask, of
/// which rows past..past + seq and columns 0..total apply.
Tensor attentionMask(const Tensor &m, int64_t batch, int64_t seq, int64_t past, double filter,
                     const Tensor &like) {
  int64_t total = past + seq;
  std::vector<int64_t> d = m.intShape();
  Tensor keep;
  if (d.size() == 1) {
    LAZYJIT_USER_CHECK(d[0] == batch || d[0] == 2 * batch, ShapeError,
                       "a 1-D mask_index must be [{}] or [{}], not {}", batch, 2 * batch,
                       dimsText(d));
    Tensor j = Tensor::arange(double(total), TensorOptions(dtypes::int32, like.device()))
                   .reshape(toShape({1, 1, total}));
    Tensor idx = m.cast(dtypes::int32);
    Tensor end = sliceAxis(idx, 0, 0, batch).reshape(toShape({batch, 1, 1}));
    keep = less(j, end);
    if (d[0] == 2 * batch)
      keep = logicalAnd(
          keep,
          greaterOrEqual(j, sliceAxis(idx, 0, batch, 2 * batch).reshape(toShape({batch, 1, 1}))));
  } else if (d.size() == 2) {
    LAZYJIT_USER_CHECK(d == (std::vector<int64_t>{batch, total}), ShapeError,
                       "a 2-D mask_index must be [{}, {}], not {}", batch, total, dimsText(d));
    keep = logicalNot(equal(m, scalarOf(m, 0))).reshape(toShape({batch, 1, total}));
  } else if (d.size() == 3) {
    LAZYJIT_USER_CHECK(d == (std::vector<int64_t>{batch, seq, total}), ShapeError,
                       "a 3-D mask_index must be [{}, {}, {}], not {}", batch, seq, total,
                       dimsText(d));
    keep = logicalNot(equal(m, scalarOf(m, 0)));
  } else if (d.size() == 4) {
    LAZYJIT_USER_CHECK(d[0] == batch && d[1] == 1 && d[2] == d[3] && d[2] >= total, ShapeError,
                       "a 4-D mask_index must be [{}, 1, max_seq, max_seq] with max_seq >= {}, "
                       "not {}",
                       batch, total, dimsText(d));
    Tensor rows = sliceAxis(sliceAxis(m, 2, past, total), 3, 0, total);
    keep = logicalNot(equal(rows, scalarOf(rows, 0))).reshape(toShape({batch, seq, total}));
  } else {
    throw UnsupportedError(fmt::format("a mask_index of rank {} is not supported", d.size()));
  }
  return keep.where(scalarOf(like, 0), scalarOf(like, filter));
}

/// Multi-head self-attention with packed Q, K, V weights: Q, K, V = input @ weights + bias split
/// by qkv_hidden_sizes, softmax(Q K^T * scale + masks) V per head. `past` [2, batch, heads,
/// past_seq, head] is put before K and V; `present` is the K and V used.
Out runAttention(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() == 3, ShapeError, "input must be [batch, seq, hidden], not {}",
                     dimsText(x.intShape()));
  LAZYJIT_USER_CHECK(in[1].ndim() == 2, ShapeError, "weights must be 2-D, not {}",
                     dimsText(in[1].intShape()));
  int64_t batch = x.intShape()[0], seq = x.intShape()[1];
  int64_t heads = requiredIntAttr(n, "num_heads");
  int64_t width = in[1].intShape()[1];
  std::vector<int64_t> sizes =
      intsAttr(n, "qkv_hidden_sizes").value_or(std::vector<int64_t>(3, width / 3));
  LAZYJIT_USER_CHECK(sizes[0] + sizes[1] + sizes[2] == width && sizes[0] == sizes[1], ShapeError,
                     "qkv hidden sizes {} do not fit weights {}", dimsText(sizes),
                     dimsText(in[1].intShape()));
  for (int64_t s : sizes)
    LAZYJIT_USER_CHECK(s % heads == 0, ShapeError, "hidden size {} is not a multiple of {} heads",
                       s, heads);
  Tensor qkv = x.matmul(in[1]);
  if (has(in, 2)) qkv = qkv.add(in[2]);
  auto split = [&](int64_t from, int64_t size) {
    return sliceAxis(qkv, 2, from, from + size)
        .reshape(toShape({batch, seq, heads, size / heads}))
        .permute({0, 2, 1, 3});
  };
  Tensor q = split(0, sizes[0]), k = split(sizes[0], sizes[1]),
         v = split(sizes[0] + sizes[1], sizes[2]);
  int64_t past = 0;
  if (has(in, 4)) {
    const Tensor &p = in[4];
    std::vector<int64_t> pd = p.intShape();
    LAZYJIT_USER_CHECK(pd.size() == 5 && pd[0] == 2 && pd[1] == batch && pd[2] == heads &&
                           pd[4] == sizes[0] / heads && sizes[1] == sizes[2],
                       ShapeError, "past {} must be [2, {}, {}, past_seq, {}]", dimsText(pd), batch,
                       heads, sizes[0] / heads);
    past = pd[3];
    k = takeAt(p, 0, 0).cat({k}, 2);
    v = takeAt(p, 0, 1).cat({v}, 2);
  }
  int64_t total = past + seq;
  double scale = floatAttr(n, "scale", 0);
  if (scale == 0) scale = 1 / std::sqrt(double(sizes[0] / heads));
  Tensor scores = q.matmul(k.permute({0, 1, 3, 2})).mul(scale);
  double filter = floatAttr(n, "mask_filter_value", -10000.0f);
  if (has(in, 3))
    scores = scores.add(attentionMask(in[3], batch, seq, past, filter, scores)
                            .reshape(toShape({batch, 1, -1, total})));
  if (intAttr(n, "unidirectional", 0)) {
    // query i (at position past + i) sees keys 0..past + i
    Tensor i = Tensor::arange(double(seq), TensorOptions(dtypes::int32, x.device()))
                   .reshape(toShape({seq, 1}));
    Tensor j = Tensor::arange(double(total), TensorOptions(dtypes::int32, x.device()))
                   .reshape(toShape({1, total}));
    scores = scores.add(
        lessOrEqual(j, i.add(int64_t(past))).where(scalarOf(scores, 0), scalarOf(scores, filter)));
  }
  if (has(in, 5)) scores = scores.add(in[5]);
  Tensor out =
      scores.softmax(-1).matmul(v).permute({0, 2, 1, 3}).reshape(toShape({batch, seq, sizes[2]}));
  if (ctx.node.output.size() < 2 || ctx.node.output[1].empty()) return {out};
  LAZYJIT_USER_CHECK(sizes[1] == sizes[2], ShapeError,
                     "output present needs K and V of one size, not qkv hidden sizes {}",
                     dimsText(sizes));
  return {out, Tensor::stack({k, v}, 0)};
}

const OpDef opTable[] = {
    OpDef{"Adagrad", 5, SIZE_MAX, SIZE_MAX, checkAdagrad, runAdagrad, Training},
    OpDef{"Adam", 6, SIZE_MAX, SIZE_MAX, checkAdam, runAdam, Training},
    OpDef{"Momentum", 5, SIZE_MAX, SIZE_MAX, checkMomentum, runMomentum, Training},

    OpDef{"ArrayFeatureExtractor", 2, 2, 1, noCheck, runArrayFeatureExtractor, ML},
    OpDef{"Binarizer", 1, 1, 1, [](const NodeContext &ctx) { floatAttr(ctx.node, "threshold", 0); },
          runBinarizer, ML},
    OpDef{"Normalizer", 1, 1, 1, checkNormalizer, runNormalizer, ML},
    OpDef{"Scaler", 1, 1, 1, checkScaler, runScaler, ML},
    OpDef{"LabelEncoder", 1, 1, 1, checkLabelEncoder, runLabelEncoder, ML},
    OpDef{"OneHotEncoder", 1, 1, 1, checkOneHotEncoder, runOneHotEncoder, ML},
    OpDef{"LinearRegressor", 1, 1, 1, checkLinearRegressor, runLinearRegressor, ML},
    OpDef{"Imputer", 1, 1, 1, checkImputer, runImputer, ML},

    OpDef{"Gelu", 1, 1, 1, noCheck,
          [](const NodeContext &ctx, const Inputs &in) -> Out { return {geluErf(ctx, in[0])}; },
          MS},
    OpDef{"BiasGelu", 2, 2, 1, noCheck,
          [](const NodeContext &ctx, const Inputs &in) -> Out {
            return {geluErf(ctx, in[0].add(in[1]))};
          },
          MS},
    OpDef{"FastGelu", 1, 2, 1, noCheck, runFastGelu, MS},
    OpDef{"QuickGelu", 1, 1, 1, checkQuickGelu, runQuickGelu, MS},
    OpDef{"FusedMatMul", 2, 2, 1, checkFusedMatMul, runFusedMatMul, MS},
    OpDef{"SkipLayerNormalization", 3, 5, 4, checkSkipLayerNorm, runSkipLayerNorm<false>, MS},
    OpDef{"SkipSimplifiedLayerNormalization", 3, 4, 4, checkSkipLayerNorm, runSkipLayerNorm<true>,
          MS},
    OpDef{"EmbedLayerNormalization", 7, 9, 3, checkEmbedLayerNorm, runEmbedLayerNorm, MS},
    OpDef{"Attention", 2, 7, 2, checkAttention, runAttention, MS},
};

} // namespace

std::span<const OpDef> domainOps() { return opTable; }

} // namespace lazyjit::onnx::ops
