// ONNX signal-processing ops: the Hann, Hamming and Blackman windows, DFT, STFT and
// MelWeightMatrix. The transforms are matrix products with cosine and sine tables built on the
// host (in float64, so long transforms keep their precision).
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <cmath>
#include <fmt/format.h>
#include <numbers>

namespace lazyjit::onnx::ops {

namespace {

// ---- signal processing --------------------------------------------------------------------------

DType outputDataType(const NodeProto &n) {
  auto to = DataType(intAttr(n, "output_datatype", int64_t(DataType::Float)));
  std::optional<DType> dt = toDType(to);
  LAZYJIT_USER_CHECK(dt, UnsupportedError, "output_datatype {} is not supported", int32_t(to));
  return *dt;
}

void checkWindow(const NodeContext &ctx) {
  outputDataType(ctx.node);
  intAttr(ctx.node, "periodic", 1);
}

/// sum_k (-1)^k a_k cos(2 pi k n / N) for n < size, N = size (periodic) or size - 1.
template <double A0, double A1, double A2> Out runWindow(const NodeContext &ctx, const Inputs &in) {
  double sizeValue = hostScalar(in[0], "the window size");
  LAZYJIT_USER_CHECK(sizeValue >= 0, ShapeError, "the window size {} is negative", sizeValue);
  int64_t size = int64_t(sizeValue);
  bool periodic = intAttr(ctx.node, "periodic", 1) != 0;
  double len = double(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    if (len == 0) { // a symmetric window of one value
      w[size_t(i)] = 1;
      continue;
    }
    double a = 2 * std::numbers::pi * double(i) / len;
    w[size_t(i)] = A0 - A1 * std::cos(a) + A2 * std::cos(2 * a);
  }
  return {Tensor::fromValues(w, toShape({size}), TensorOptions(outputDataType(ctx.node)))};
}

/// The DFT along the last dim of a signal of N values (re, and im when defined), zero-padded or
/// truncated to `length`, keeping the first `bins` frequencies; (re, im) in float64.
std::pair<Tensor, Tensor> dftLastDim(const Tensor &re, const Tensor &im, int64_t length,
                                     int64_t bins, bool inverse) {
  int64_t n = re.intShape().back();
  std::vector<double> c(size_t(n * bins), 0), s(size_t(n * bins), 0);
  for (int64_t i = 0; i < std::min(n, length); ++i)
    for (int64_t k = 0; k < bins; ++k) {
      // the angle's turns reduced exactly first, so sin(pi) terms stay tiny
      double a = 2 * std::numbers::pi * double((i * k) % length) / double(length);
      c[size_t(i * bins + k)] = std::cos(a);
      s[size_t(i * bins + k)] = std::sin(a);
    }
  Tensor cm = Tensor::fromVector(c, toShape({n, bins}));
  Tensor sm = Tensor::fromVector(s, toShape({n, bins}));
  Tensor a = re.cast(dtypes::float64);
  Tensor outRe = a.matmul(cm), outIm = a.matmul(sm);
  // forward: e^{-i}: (a + ib)(cos - i sin); inverse: e^{+i}, scaled by 1 / length
  if (inverse) {
    if (im.defined()) {
      Tensor b = im.cast(dtypes::float64);
      outRe = outRe - b.matmul(sm);
      outIm = outIm + b.matmul(cm);
    }
    return {outRe / double(length), outIm / double(length)};
  }
  outIm = outIm.neg();
  if (im.defined()) {
    Tensor b = im.cast(dtypes::float64);
    outRe = outRe + b.matmul(sm);
    outIm = outIm + b.matmul(cm);
  }
  return {outRe, outIm};
}

/// A signal [..., 1 or 2] split into its real and imaginary parts (undefined when real).
std::pair<Tensor, Tensor> splitComplex(const Tensor &x, std::string_view what) {
  int64_t last = x.ndim() - 1;
  int64_t c = x.intShape().back();
  LAZYJIT_USER_CHECK(c == 1 || c == 2, ShapeError,
                     "{} {} must end in a dim of 1 (real) or 2 (complex)", what,
                     dimsText(x.intShape()));
  return {takeAt(x, last, 0), c == 2 ? takeAt(x, last, 1) : Tensor()};
}

void checkDft(const NodeContext &ctx) {
  if (ctx.opset < 20) intAttr(ctx.node, "axis", 1);
  bool inverse = intAttr(ctx.node, "inverse", 0) != 0,
       onesided = intAttr(ctx.node, "onesided", 0) != 0;
  LAZYJIT_USER_CHECK(!(inverse && onesided), UnsupportedError,
                     "an inverse DFT with onesided = 1 is not supported");
}

Out runDft(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t rank = x.ndim();
  LAZYJIT_USER_CHECK(rank >= 2, ShapeError, "the input {} must be [..., signal, 1 or 2]",
                     dimsText(x.intShape()));
  // from opset 20 the axis is an optional input, -2 (the last signal dim) by default
  int64_t axis = ctx.opset >= 20 ? (has(in, 2) ? hostInt(in[2], "the axis input") : -2)
                                 : intAttr(ctx.node, "axis", 1);
  axis = normalizeAxis(axis, rank, "axis");
  LAZYJIT_USER_CHECK(axis != rank - 1, ShapeError, "axis {} is the real/imaginary dim", axis);
  bool inverse = intAttr(ctx.node, "inverse", 0) != 0,
       onesided = intAttr(ctx.node, "onesided", 0) != 0;
  auto [re, im] = splitComplex(x, "the input");
  LAZYJIT_USER_CHECK(!(onesided && im.defined()), UnsupportedError,
                     "a onesided DFT of a complex signal is not supported");
  // the signal axis last
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  re = re.permute(perm);
  if (im.defined()) im = im.permute(perm);
  int64_t n = x.intShape()[size_t(axis)];
  int64_t length = n;
  if (has(in, 1)) length = int64_t(hostScalar(in[1], "dft_length"));
  LAZYJIT_USER_CHECK(length >= 1, ShapeError, "dft_length {} must be positive", length);
  int64_t bins = onesided ? length / 2 + 1 : length;
  auto [outRe, outIm] = dftLastDim(re, im, length, bins, inverse);
  Tensor y = Tensor::stack({outRe, outIm}, -1).cast(x.dtype());
  // back to the input's order: the signal axis returns to `axis`
  std::vector<int64_t> inv(static_cast<size_t>(rank));
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  inv[size_t(rank - 1)] = rank - 1;
  return {y.permute(inv)};
}

void checkStft(const NodeContext &ctx) { intAttr(ctx.node, "onesided", 1); }

Out runStft(const NodeContext &ctx, const Inputs &in) {
  const Tensor &signal = in[0];
  LAZYJIT_USER_CHECK(signal.ndim() == 3, ShapeError,
                     "the signal {} must be [batch, length, 1 or 2]", dimsText(signal.intShape()));
  int64_t step = int64_t(hostScalar(in[1], "frame_step"));
  LAZYJIT_USER_CHECK(step >= 1, ShapeError, "frame_step {} must be positive", step);
  int64_t frameLength = -1;
  if (has(in, 2)) {
    LAZYJIT_USER_CHECK(in[2].ndim() == 1, ShapeError, "the window {} must be 1-D",
                       dimsText(in[2].intShape()));
    frameLength = in[2].intShape()[0];
  }
  if (has(in, 3)) {
    int64_t given = int64_t(hostScalar(in[3], "frame_length"));
    LAZYJIT_USER_CHECK(frameLength < 0 || given == frameLength, ShapeError,
                       "frame_length {} does not match the window of {}", given, frameLength);
    frameLength = given;
  }
  LAZYJIT_USER_CHECK(frameLength >= 1, ShapeError,
                     "STFT needs a window or a positive frame_length");
  int64_t length = signal.intShape()[1];
  LAZYJIT_USER_CHECK(length >= frameLength, ShapeError,
                     "the signal of {} values is shorter than a frame of {}", length, frameLength);
  int64_t frames = 1 + (length - frameLength) / step;
  std::vector<int32_t> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < frameLength; ++i) idx.push_back(int32_t(f * step + i));
  Tensor index = Tensor::fromVector(idx, toShape({frames, frameLength}));
  // [batch, frames, frameLength, 1 or 2]
  Tensor framed = signal.getitem({Index::all(), Index::of(index), Index::all()});
  auto [re, im] = splitComplex(framed, "the signal");
  bool onesided = intAttr(ctx.node, "onesided", 1) != 0;
  LAZYJIT_USER_CHECK(!(onesided && im.defined()), UnsupportedError,
                     "a onesided STFT of a complex signal is not supported");
  if (has(in, 2)) {
    Tensor w = in[2].cast(re.dtype());
    re = re * w;
    if (im.defined()) im = im * w;
  }
  int64_t bins = onesided ? frameLength / 2 + 1 : frameLength;
  auto [outRe, outIm] = dftLastDim(re, im, frameLength, bins, false);
  return {Tensor::stack({outRe, outIm}, -1).cast(signal.dtype())};
}

void checkMel(const NodeContext &ctx) { outputDataType(ctx.node); }

/// Triangular filters over the spectrogram bins, as ONNX's reference computes them (the edge
/// frequencies in float32, the mel points in float64, floored to bins).
Out runMelWeightMatrix(const NodeContext &ctx, const Inputs &in) {
  int64_t mels = int64_t(hostScalar(in[0], "num_mel_bins"));
  int64_t dftLength = int64_t(hostScalar(in[1], "dft_length"));
  int64_t sampleRate = int64_t(hostScalar(in[2], "sample_rate"));
  float lowerHz = float(hostScalar(in[3], "lower_edge_hertz"));
  float upperHz = float(hostScalar(in[4], "upper_edge_hertz"));
  LAZYJIT_USER_CHECK(mels >= 1 && dftLength >= 1 && sampleRate >= 1, ShapeError,
                     "num_mel_bins, dft_length and sample_rate must be positive");
  int64_t specBins = dftLength / 2 + 1;
  auto toMel = [](float hz) { return 2595.0f * std::log10(1.0f + hz / 700.0f); };
  float lowMel = toMel(lowerHz), highMel = toMel(upperHz);
  float melStep = (highMel - lowMel) / float(mels + 2);
  std::vector<int64_t> points;
  for (int64_t i = 0; i < mels + 2; ++i) {
    double mel = double(i) * double(melStep) + double(lowMel);
    double hz = 700 * (std::pow(10.0, mel / 2595) - 1);
    points.push_back(int64_t(std::floor(double(dftLength + 1) * hz / double(sampleRate))));
  }
  std::vector<double> w(size_t(specBins * mels), 0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < specBins) w[size_t(j * mels + i)] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    int64_t lo = points[size_t(i)], center = points[size_t(i + 1)], hi = points[size_t(i + 2)];
    if (center == lo)
      set(center, i, 1);
    else
      for (int64_t j = lo; j <= center; ++j) set(j, i, double(j - lo) / double(center - lo));
    if (hi > center)
      for (int64_t j = center; j < hi; ++j) set(j, i, double(hi - j) / double(hi - center));
  }
  return {
      Tensor::fromValues(w, toShape({specBins, mels}), TensorOptions(outputDataType(ctx.node)))};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    OpDef{"HannWindow", 1, 1, 1, checkWindow, runWindow<0.5, 0.5, 0.0>},
    OpDef{"HammingWindow", 1, 1, 1, checkWindow, runWindow<25.0 / 46, 21.0 / 46, 0.0>},
    OpDef{"BlackmanWindow", 1, 1, 1, checkWindow, runWindow<0.42, 0.5, 0.08>},
    OpDef{"DFT", 1, 3, 1, checkDft, runDft},
    OpDef{"STFT", 2, 4, 1, checkStft, runStft},
    OpDef{"MelWeightMatrix", 5, 5, 1, checkMel, runMelWeightMatrix},
};

} // namespace

std::span<const OpDef> signalOps() { return opTable; }

} // namespace lazyjit::onnx::ops
