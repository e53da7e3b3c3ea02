// ONNX recurrent nets: RNN, GRU and LSTM with every direction, layout, activation, clip,
// peepholes and sequence_lens, unrolled over the static sequence length into Tensor ops (the steps'
// outputs stacked in small groups so long sequences compile into a few repeating kernels).
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- recurrent nets -----------------------------------------------------------------------------

enum class Cell { Rnn, Gru, Lstm };

int64_t gateCount(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }

/// An activation of the activations attribute, with its alpha and beta.
struct Activation {
  std::string name; // lower case
  float alpha = 0, beta = 0;
};

std::string lower(std::string s) {
  for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The activation functions recurrent nets take, and the alpha and beta of those that have them
/// (with the defaults of ONNX's ops of the same name).
struct ActivationParams {
  std::string_view name;
  bool usesAlpha, usesBeta;
  float alpha, beta;
};
constexpr ActivationParams activationParams[] = {
    {"relu", false, false, 0, 0},         {"tanh", false, false, 0, 0},
    {"sigmoid", false, false, 0, 0},      {"softsign", false, false, 0, 0},
    {"softplus", false, false, 0, 0},     {"affine", true, true, 1, 0},
    {"leakyrelu", true, false, 0.01f, 0}, {"thresholdedrelu", true, false, 1, 0},
    {"scaledtanh", true, true, 1, 1},     {"hardsigmoid", true, true, 0.2f, 0.5f},
    {"elu", true, false, 1, 0},
};

/// The activations of each direction in order (f; f, g; or f, g, h), with alpha and beta taken in
/// order from activation_alpha/activation_beta by the functions that use them (the defaults of
/// ONNX's activation ops for the rest), as ONNX Runtime does.
std::vector<Activation> activations(const NodeProto &n, Cell cell, int64_t numDirections) {
  std::vector<std::string> names;
  if (const AttributeProto *a = typedAttr(n, "activations", AttributeType::Strings)) {
    names = a->strings;
  } else {
    std::vector<std::string> dflt = cell == Cell::Rnn ? std::vector<std::string>{"Tanh"}
                                    : cell == Cell::Gru
                                        ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                        : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < numDirections; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  }
  size_t per = size_t(cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3);
  if (names.size() == per && numDirections == 2)
    names.insert(names.end(), names.begin(), names.end());
  LAZYJIT_USER_CHECK(names.size() == per * size_t(numDirections), Error,
                     "attribute 'activations' has {} functions; {} direction(s) need {}",
                     names.size(), numDirections, per * size_t(numDirections));
  std::vector<float> alphas = floatsAttr(n, "activation_alpha").value_or(std::vector<float>{});
  std::vector<float> betas = floatsAttr(n, "activation_beta").value_or(std::vector<float>{});
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string &name : names) {
    Activation act{lower(name)};
    auto known = std::find_if(std::begin(activationParams), std::end(activationParams),
                              [&](const ActivationParams &p) { return p.name == act.name; });
    if (known == std::end(activationParams))
      throw UnsupportedError(fmt::format("activation '{}' is not supported", name));
    act.alpha = known->usesAlpha && ai < alphas.size() ? alphas[ai++] : known->alpha;
    act.beta = known->usesBeta && bi < betas.size() ? betas[bi++] : known->beta;
    out.push_back(act);
  }
  return out;
}

Tensor activate(const Activation &a, const Tensor &x) {
  const std::string &f = a.name;
  if (f == "relu") return x.relu();
  if (f == "tanh") return x.tanh();
  if (f == "sigmoid") return x.sigmoid();
  if (f == "affine") return x * double(a.alpha) + double(a.beta);
  if (f == "leakyrelu") return x.leakyrelu(a.alpha);
  if (f == "thresholdedrelu") return x * (x > double(a.alpha)).cast(x.dtype());
  if (f == "scaledtanh") return (x * double(a.beta)).tanh() * double(a.alpha);
  if (f == "hardsigmoid") return (x * double(a.alpha) + double(a.beta)).clip(0, 1);
  if (f == "elu") return x.elu(a.alpha);
  if (f == "softsign") return x.softsign();
  return x.softplus(); // "softplus"; activations() admits nothing else
}

int64_t numDirections(const NodeProto &n) {
  return stringAttr(n, "direction", "forward") == "bidirectional" ? 2 : 1;
}

template <Cell C> void checkRecurrent(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkStringAttr(n, "direction", {"forward", "reverse", "bidirectional"});
  int64_t layout = intAttr(n, "layout", 0);
  LAZYJIT_USER_CHECK(layout == 0 || layout == 1, UnsupportedError,
                     "attribute 'layout' = {} is not supported (0 or 1)", layout);
  LAZYJIT_USER_CHECK(intAttr(n, "hidden_size", 1) >= 1, Error, "hidden_size must be positive");
  if (typedAttr(n, "clip", AttributeType::Float))
    LAZYJIT_USER_CHECK(floatAttr(n, "clip", 0) > 0, Error, "clip must be positive");
  activations(n, C, numDirections(n));
  if (C == Cell::Gru) intAttr(n, "linear_before_reset", 0);
  if (C == Cell::Lstm) intAttr(n, "input_forget", 0);
}

/// One direction's weights: W [G*H, I], R [G*H, H] and the biases Wb, Rb [G*H] (undefined when
/// the node has none).
struct DirectionWeights {
  Tensor w, r, wb, rb;
};

/// The gate pre-activations, clipped when the node has `clip`.
Tensor clipped(const Tensor &x, std::optional<float> clip) {
  return clip ? x.clip(-double(*clip), double(*clip)) : x;
}

/// A recurrent net unrolled over the sequence: Y [T, D, B, H], Y_h [D, B, H], (LSTM) Y_c.
template <Cell C> Out runRecurrent(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  bool batchFirst = intAttr(n, "layout", 0) == 1;
  std::string direction = stringAttr(n, "direction", "forward");
  int64_t dirs = numDirections(n);
  std::vector<Activation> acts = activations(n, C, dirs);
  size_t per = acts.size() / size_t(dirs);
  std::optional<float> clip;
  if (typedAttr(n, "clip", AttributeType::Float)) clip = floatAttr(n, "clip", 0);
  int64_t g = gateCount(C);

  Tensor x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() == 3, ShapeError, "X must be 3-D, not {}", dimsText(x.intShape()));
  if (batchFirst) x = x.permute({1, 0, 2});
  std::vector<int64_t> xd = x.intShape();
  int64_t T = xd[0], B = xd[1], I = xd[2];
  std::vector<int64_t> rd = in[2].intShape();
  LAZYJIT_USER_CHECK(rd.size() == 3 && rd[0] == dirs && rd[1] % g == 0 && rd[1] / g == rd[2],
                     ShapeError, "R {} must be [{}, {}*hidden_size, hidden_size]", dimsText(rd),
                     dirs, g);
  int64_t H = rd[2];
  LAZYJIT_USER_CHECK(intAttr(n, "hidden_size", H) == H, ShapeError,
                     "hidden_size {} does not match R {}", intAttr(n, "hidden_size", H),
                     dimsText(rd));
  LAZYJIT_USER_CHECK(in[1].intShape() == (std::vector<int64_t>{dirs, g * H, I}), ShapeError,
                     "W {} must be [{}, {}, {}]", dimsText(in[1].intShape()), dirs, g * H, I);
  if (has(in, 3))
    LAZYJIT_USER_CHECK(in[3].intShape() == (std::vector<int64_t>{dirs, 2 * g * H}), ShapeError,
                       "B {} must be [{}, {}]", dimsText(in[3].intShape()), dirs, 2 * g * H);

  // sequence_lens: steps at or past a batch entry's length leave its state alone and output 0
  std::vector<int64_t> lens(size_t(B), T);
  if (has(in, 4)) {
    lens = hostInts(in[4], "sequence_lens");
    LAZYJIT_USER_CHECK(int64_t(lens.size()) == B, ShapeError,
                       "sequence_lens has {} values for a batch of {}", lens.size(), B);
    for (int64_t l : lens)
      LAZYJIT_USER_CHECK(l >= 0 && l <= T, ShapeError,
                         "sequence length {} is out of range for {} steps", l, T);
  }
  bool full = std::all_of(lens.begin(), lens.end(), [&](int64_t l) { return l == T; });

  auto initialState = [&](size_t i, std::string_view what) {
    if (!has(in, i)) return Tensor();
    Tensor s = batchFirst ? in[i].permute({1, 0, 2}) : in[i];
    LAZYJIT_USER_CHECK(s.intShape() == (std::vector<int64_t>{dirs, B, H}), ShapeError,
                       "{} {} does not match {} directions, batch {}, hidden size {}", what,
                       dimsText(in[i].intShape()), dirs, B, H);
    return s;
  };
  Tensor h0 = initialState(5, "initial_h");
  Tensor c0 = C == Cell::Lstm ? initialState(6, "initial_c") : Tensor();
  Tensor peep = C == Cell::Lstm && has(in, 7) ? in[7] : Tensor();
  if (peep.defined())
    LAZYJIT_USER_CHECK(peep.intShape() == (std::vector<int64_t>{dirs, 3 * H}), ShapeError,
                       "P {} must be [{}, {}]", dimsText(peep.intShape()), dirs, 3 * H);

  // where reversed steps read: step t of batch entry b is time len_b - 1 - t (t < len_b)
  Tensor reverseIndex;
  if (!full) {
    std::vector<int32_t> idx;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        idx.push_back(int32_t(t < lens[size_t(b)] ? lens[size_t(b)] - 1 - t : t));
    reverseIndex = Tensor::fromVector(idx, toShape({T, B, 1}));
  }
  auto reverseTime = [&](const Tensor &s) {
    if (full) return s.flip({0});
    std::vector<int64_t> d = s.intShape();
    return s.gather(reverseIndex.expand(toShape(d)), 0);
  };
  auto stepMask = [&](int64_t t) {
    std::vector<bool> m;
    for (int64_t b = 0; b < B; ++b) m.push_back(t < lens[size_t(b)]);
    return Tensor::fromVector(m, toShape({B, 1}));
  };

  std::vector<Tensor> ys, hs, cs;
  DType dt = x.dtype();
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation *f = &acts[size_t(d) * per];
    DirectionWeights wts;
    wts.w = takeAt(in[1], 0, d);
    wts.r = takeAt(in[2], 0, d);
    if (has(in, 3)) {
      Tensor b = takeAt(in[3], 0, d);
      wts.wb = sliceAxis(b, 0, 0, g * H);
      wts.rb = sliceAxis(b, 0, g * H, 2 * g * H);
    }
    // the input projections of every step at once: [T, B, G*H]
    Tensor xw = x.matmul(wts.w.transpose());
    if (wts.wb.defined()) xw = xw + wts.wb;
    if (reverse) xw = reverseTime(xw);
    Tensor h = h0.defined() ? takeAt(h0, 0, d) : Tensor::zeros(toShape({B, H}), TensorOptions(dt));
    Tensor c = c0.defined() ? takeAt(c0, 0, d) : Tensor::zeros(toShape({B, H}), TensorOptions(dt));
    Tensor pi, po, pf;
    if (peep.defined()) {
      Tensor p = takeAt(peep, 0, d);
      pi = sliceAxis(p, 0, 0, H);
      po = sliceAxis(p, 0, H, 2 * H);
      pf = sliceAxis(p, 0, 2 * H, 3 * H);
    }
    auto gate = [&](const Tensor &v, int64_t k) { return sliceAxis(v, 1, k * H, (k + 1) * H); };
    // GRU's candidate gate multiplies r into h before (default) or after R_h
    Tensor rt = wts.r.transpose();
    Tensor rtZR = C == Cell::Gru ? sliceAxis(rt, 1, 0, 2 * H) : rt;
    Tensor rtH = C == Cell::Gru ? sliceAxis(rt, 1, 2 * H, 3 * H) : Tensor();
    bool linearBeforeReset = C == Cell::Gru && intAttr(n, "linear_before_reset", 0) != 0;
    bool inputForget = C == Cell::Lstm && intAttr(n, "input_forget", 0) != 0;

    std::vector<Tensor> steps;
    for (int64_t t = 0; t < T; ++t) {
      Tensor xt = takeAt(xw, 0, t);
      Tensor hNew, cNew;
      if (C == Cell::Rnn) {
        Tensor pre = xt + h.matmul(rtZR);
        if (wts.rb.defined()) pre = pre + wts.rb;
        hNew = activate(f[0], clipped(pre, clip));
      } else if (C == Cell::Gru) {
        Tensor hr = h.matmul(rtZR);
        if (wts.rb.defined()) hr = hr + sliceAxis(wts.rb, 0, 0, 2 * H);
        Tensor z = activate(f[0], clipped(gate(xt, 0) + gate(hr, 0), clip));
        Tensor r = activate(f[0], clipped(gate(xt, 1) + gate(hr, 1), clip));
        Tensor rbH = wts.rb.defined() ? sliceAxis(wts.rb, 0, 2 * H, 3 * H) : Tensor();
        Tensor cand;
        if (linearBeforeReset) {
          Tensor hh = h.matmul(rtH);
          if (rbH.defined()) hh = hh + rbH;
          cand = gate(xt, 2) + r * hh;
        } else {
          cand = gate(xt, 2) + (r * h).matmul(rtH);
          if (rbH.defined()) cand = cand + rbH;
        }
        Tensor hc = activate(f[1], clipped(cand, clip));
        hNew = (1.0 - z) * hc + z * h;
      } else {
        Tensor pre = xt + h.matmul(rt);
        if (wts.rb.defined()) pre = pre + wts.rb;
        Tensor gi = gate(pre, 0), go = gate(pre, 1), gf = gate(pre, 2), gc = gate(pre, 3);
        if (pi.defined()) {
          gi = gi + pi * c;
          gf = gf + pf * c;
        }
        Tensor i = activate(f[0], clipped(gi, clip));
        Tensor fg = inputForget ? 1.0 - i : activate(f[0], clipped(gf, clip));
        Tensor cc = activate(f[1], clipped(gc, clip));
        cNew = fg * c + i * cc;
        if (po.defined()) go = go + po * cNew;
        Tensor o = activate(f[0], clipped(go, clip));
        hNew = o * activate(f[2], cNew);
      }
      if (full) {
        steps.push_back(hNew);
        h = hNew;
        if (C == Cell::Lstm) c = cNew;
      } else {
        Tensor m = stepMask(t);
        steps.push_back(m.where(hNew, Tensor::zeros(toShape({B, H}), TensorOptions(dt))));
        h = m.where(hNew, h);
        if (C == Cell::Lstm) c = m.where(cNew, c);
      }
      // each step's states are buffers of their own: else a cell state (element-wise from step to
      // step, never reduced) is recomputed inside every later step's kernels, which grow with the
      // sequence (a 33-step LSTM compiled for 1.4 s, 74 s under the fuzzer's sanitizers)
      h = h.contiguous();
      if (C == Cell::Lstm) c = c.contiguous();
    }
    Tensor y = T > 0 ? stackMany(steps, 0) : Tensor::zeros(toShape({0, B, H}), TensorOptions(dt));
    if (reverse && T > 0) y = reverseTime(y);
    ys.push_back(y);
    hs.push_back(h);
    cs.push_back(c);
  }
  Tensor y = Tensor::stack(ys, 1), yh = Tensor::stack(hs, 0);
  Tensor yc = C == Cell::Lstm ? Tensor::stack(cs, 0) : Tensor();
  if (batchFirst) {
    y = y.permute({2, 0, 1, 3});
    yh = yh.permute({1, 0, 2});
    if (yc.defined()) yc = yc.permute({1, 0, 2});
  }
  if (C == Cell::Lstm) return {y, yh, yc};
  return {y, yh};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    OpDef{"RNN", 3, 6, 2, checkRecurrent<Cell::Rnn>, runRecurrent<Cell::Rnn>},
    OpDef{"GRU", 3, 6, 2, checkRecurrent<Cell::Gru>, runRecurrent<Cell::Gru>},
    OpDef{"LSTM", 3, 8, 3, checkRecurrent<Cell::Lstm>, runRecurrent<Cell::Lstm>},
};

} // namespace

std::span<const OpDef> rnnOps() { return opTable; }

} // namespace lazyjit::onnx::ops
