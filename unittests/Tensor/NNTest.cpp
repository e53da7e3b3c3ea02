// Functional nn ops and layers: layernorm, batchnorm, scaled dot-product attention (masks, causal),
// triu/tril, einsum (numpy golden), the cross-entropy losses, dropout, and nn::Linear, Conv2d,
// BatchNorm2d (eval and training) and LayerNorm forward passes.
#include "lazyjit/NN/Layers.h"
#include "TensorTestUtil.h"
#include "golden/TensorGolden.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

// (x - mean) / sqrt(var + eps) over the trailing `n` dims.
Vals hostLayernorm(const Vals &x, int64_t inner, double eps) {
  Vals out(x.size());
  for (size_t o = 0; o < x.size(); o += static_cast<size_t>(inner)) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < inner; ++i) m += x[o + i];
    m /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) v += (x[o + i] - m) * (x[o + i] - m);
    v /= static_cast<double>(inner);
    for (int64_t i = 0; i < inner; ++i) out[o + i] = (x[o + i] - m) / std::sqrt(v + eps);
  }
  return out;
}

// softmax(q k^T / sqrt(d) + mask) v for (b, lq, d) x (b, lk, d) x (b, lk, dv).
Vals hostAttention(const Vals &q, const Vals &k, const Vals &v, int64_t b, int64_t lq, int64_t lk,
                   int64_t d, int64_t dv, const std::function<double(int64_t, int64_t)> &mask) {
  Vals out(static_cast<size_t>(b * lq * dv), 0);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t i = 0; i < lq; ++i) {
      Vals s(static_cast<size_t>(lk));
      double mx = -kInf;
      for (int64_t j = 0; j < lk; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < d; ++t) acc += q[(n * lq + i) * d + t] * k[(n * lk + j) * d + t];
        s[j] = acc / std::sqrt(static_cast<double>(d)) + mask(i, j);
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (auto &e : s) sum += (e = std::exp(e - mx));
      for (int64_t j = 0; j < lk; ++j)
        for (int64_t t = 0; t < dv; ++t)
          out[(n * lq + i) * dv + t] += s[j] / sum * v[(n * lk + j) * dv + t];
    }
  return out;
}

} // namespace

TEST_CASE("Tensor nn: layernorm over the last one and two axes") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals x = randVals(30, 801, -3, 3);
    expectValues(make(x, {2, 3, 5}, dev).layernorm(), {2, 3, 5}, hostLayernorm(x, 5, 1e-5),
                 {1e-4, 1e-5});
    expectValues(make(x, {2, 3, 5}, dev).layernorm({-2, -1}, 1e-3), {2, 3, 5},
                 hostLayernorm(x, 15, 1e-3), {1e-4, 1e-5});
    expectValues(makeView(Layout::Sliced, x, {6, 5}, dev).layernorm(), {6, 5},
                 hostLayernorm(x, 5, 1e-5), {1e-4, 1e-5});
    Vals h = storeAll(x, dtypes::float16);
    expectValues(make(h, {6, 5}, dev, dtypes::float16).layernorm(), {6, 5},
                 storeAll(hostLayernorm(h, 5, 1e-5), dtypes::float16), {8e-3, 8e-3});
    // a constant row normalizes to 0
    expectValues(make({2, 2, 2}, {1, 3}, dev).layernorm(), {1, 3}, {0, 0, 0}, {0, 1e-6});
  }
}

TEST_CASE("Tensor nn: batchnorm in inference form, with and without affine parameters") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    const Ints shape{2, 3, 2, 2};
    Vals x = randVals(24, 811, -2, 2), mean = {0.5, -1, 0}, invstd = {2, 0.5, 1.5},
         w = {1.5, -1, 0.25}, b = {0, 2, -3};
    auto host = [&](bool affine) {
      Vals out(24);
      for (int64_t i = 0; i < 24; ++i) {
        int64_t c = (i / 4) % 3;
        out[i] = (x[i] - mean[c]) * (affine ? w[c] : 1) * invstd[c] + (affine ? b[c] : 0);
      }
      return out;
    };
    Tensor tx = make(x, shape, dev);
    expectValues(tx.batchnorm(make(w, {3}, dev), make(b, {3}, dev), make(mean, {3}, dev),
                              make(invstd, {3}, dev)),
                 shape, host(true), {1e-5, 1e-6});
    expectValues(
        tx.batchnorm(std::nullopt, std::nullopt, make(mean, {3}, dev), make(invstd, {3}, dev)),
        shape, host(false), {1e-5, 1e-6});
    // invstd given at full shape (as BatchNorm2d's eval path does)
    Tensor full = make(invstd, {1, 3, 1, 1}, dev).expand({2, 3, 2, 2});
    expectValues(makeView(Layout::Permuted, x, shape, dev)
                     .batchnorm(std::nullopt, std::nullopt, make(mean, {3}, dev), full),
                 shape, host(false), {1e-5, 1e-6});
  }
}

TEST_CASE("Tensor nn: scaledDotProductAttention without mask, with float and bool masks, causal") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    const int64_t b = 2, lq = 3, lk = 5, d = 4, dv = 6;
    Vals q = randVals(b * lq * d, 821), k = randVals(b * lk * d, 822),
         v = randVals(b * lk * dv, 823);
    Tensor tq = make(q, {b, lq, d}, dev), tk = make(k, {b, lk, d}, dev),
           tv = make(v, {b, lk, dv}, dev);
    auto none = [](int64_t, int64_t) { return 0.0; };
    expectValues(tq.scaledDotProductAttention(tk, tv), {b, lq, dv},
                 hostAttention(q, k, v, b, lq, lk, d, dv, none), {1e-5, 1e-6});
    // an additive float mask
    Vals fm = randVals(lq * lk, 824, -3, 0);
    expectValues(tq.scaledDotProductAttention(tk, tv, make(fm, {lq, lk}, dev)), {b, lq, dv},
                 hostAttention(q, k, v, b, lq, lk, d, dv,
                               [&](int64_t i, int64_t j) { return fm[i * lk + j]; }),
                 {1e-5, 1e-6});
    // a bool mask: false positions get -inf
    Vals bm{1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0};
    expectValues(
        tq.scaledDotProductAttention(tk, tv, make(bm, {lq, lk}, dev, dtypes::boolean)), {b, lq, dv},
        hostAttention(q, k, v, b, lq, lk, d, dv,
                      [&](int64_t i, int64_t j) { return bm[i * lk + j] != 0 ? 0 : -kInf; }),
        {1e-5, 1e-6});
    // causal: query i sees keys 0..i (square attention)
    Tensor tk3 = tk.getitem({Index::all(), Index::range(0, 3)}),
           tv3 = tv.getitem({Index::all(), Index::range(0, 3)});
    Vals k3, v3;
    for (int64_t n = 0; n < b; ++n) {
      k3.insert(k3.end(), k.begin() + n * lk * d, k.begin() + (n * lk + 3) * d);
      v3.insert(v3.end(), v.begin() + n * lk * dv, v.begin() + (n * lk + 3) * dv);
    }
    expectValues(tq.scaledDotProductAttention(tk3, tv3, std::nullopt, 0, true), {b, lq, dv},
                 hostAttention(q, k3, v3, b, lq, 3, d, dv,
                               [](int64_t i, int64_t j) { return j <= i ? 0 : -kInf; }),
                 {1e-5, 1e-6});
  }
}

TEST_CASE("Tensor nn: triu and tril with diagonal offsets") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (const Ints &shape : {Ints{3, 4}, Ints{4, 3}, Ints{2, 3, 3}}) {
      CAPTURE(fmtInts(shape));
      Vals x = iotaVals(static_cast<size_t>(numelOf(shape)), 1);
      int64_t r = shape[shape.size() - 2], c = shape.back();
      for (int64_t k : {0, 1, -1, 5}) {
        CAPTURE(k);
        Vals up(x.size()), lo(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
          int64_t row = (static_cast<int64_t>(i) / c) % r, col = static_cast<int64_t>(i) % c;
          up[i] = col - row >= k ? x[i] : 0;
          lo[i] = col - row <= k ? x[i] : 0;
        }
        expectExact(make(x, shape, dev).triu(k), shape, up);
        expectExact(make(x, shape, dev).tril(k), shape, lo);
      }
    }
    expectExact(make({1, 2, 3, 4}, {2, 2}, dev, dtypes::int32).tril(), {2, 2}, {1, 0, 3, 4});
    expectExact(make({1, 2, 3, 4}, {2, 2}, dev).T().triu(), {2, 2}, {1, 3, 0, 4});
  }
}

TEST_CASE("Tensor nn: einsum formulas (numpy golden)") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (const golden::EinsumCase &c : golden::kEinsumCases) {
      CAPTURE(std::string(c.formula));
      std::vector<Tensor> xs;
      for (const auto &in : c.inputs) xs.push_back(make(in.values, in.shape, dev));
      expectValues(Tensor::einsum(c.formula, xs), c.outShape, c.out, {1e-5, 1e-6});
    }
  }
}

TEST_CASE("Tensor nn: binary and sparse categorical cross-entropy") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals p = randVals(12, 831, 0.05, 0.95), y = randInts(12, 832, 0, 1);
    double bce = 0;
    for (size_t i = 0; i < p.size(); ++i)
      bce += -y[i] * std::log(p[i]) - (1 - y[i]) * std::log(1 - p[i]);
    expectValues(make(p, {3, 4}, dev).binaryCrossentropy(make(y, {3, 4}, dev)), {}, {bce / 12},
                 {1e-5, 1e-6});
    Vals logits = randVals(12, 833, -6, 6);
    double bcel = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      double s = 1 / (1 + std::exp(-logits[i]));
      bcel += -y[i] * std::log(s) - (1 - y[i]) * std::log(1 - s);
    }
    expectValues(make(logits, {3, 4}, dev).binaryCrossentropyLogits(make(y, {3, 4}, dev)), {},
                 {bcel / 12}, {1e-5, 1e-6});
    // sparse categorical: mean of -log softmax at the target, skipping ignoreIndex entries
    Vals z = randVals(20, 834, -3, 3), t{2, 0, -1, 4};
    auto sce = [&](int64_t ignore) {
      double sum = 0, n = 0;
      for (int64_t i = 0; i < 4; ++i) {
        if (t[i] == static_cast<double>(ignore)) continue;
        double m = -kInf, s = 0;
        for (int64_t j = 0; j < 5; ++j) m = std::max(m, z[i * 5 + j]);
        for (int64_t j = 0; j < 5; ++j) s += std::exp(z[i * 5 + j] - m);
        sum += -(z[i * 5 + static_cast<int64_t>(t[i])] - m - std::log(s));
        n += 1;
      }
      return sum / n;
    };
    expectValues(
        make(z, {4, 5}, dev).sparseCategoricalCrossentropy(make(t, {4}, dev, dtypes::int32)), {},
        {sce(-1)}, {1e-5, 1e-6});
    expectValues(make(z, {4, 5}, dev).sparseCategoricalCrossentropy(make(t, {4}, dev)), {},
                 {sce(-1)}, {1e-5, 1e-6});
    Vals t2{2, 0, 1, 4};
    t = t2;
    expectValues(
        make(z, {4, 5}, dev).sparseCategoricalCrossentropy(make(t2, {4}, dev, dtypes::int32), 0),
        {}, {sce(0)}, {1e-5, 1e-6});
    // a batch of shape (2, 2) of 5-way logits
    expectValues(
        make(z, {2, 2, 5}, dev).sparseCategoricalCrossentropy(make(t2, {2, 2}, dev, dtypes::int32)),
        {}, {sce(-1)}, {1e-5, 1e-6});
  }
}

TEST_CASE(
    "Tensor nn: dropout is the identity outside training and scales kept values in training") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals x = randVals(400, 841, 0.5, 2);
    Tensor t = make(x, {20, 20}, dev);
    expectExact(t.dropout(0.5), {20, 20}, x);
    Tensor::TrainingGuard guard(true);
    expectExact(t.dropout(0), {20, 20}, x);
    Tensor::manualSeed(5);
    Vals d = t.dropout(0.25).toVector<double>();
    int zeros = 0;
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] == 0)
        ++zeros;
      else
        CHECK(d[i] == doctest::Approx(x[i] / 0.75).epsilon(1e-6));
    }
    CHECK(zeros == doctest::Approx(100).epsilon(0.35)); // 400 * 0.25, binomial sd ~ 8.7
  }
}

TEST_CASE("Tensor nn: Linear, Conv2d and LayerNorm layers compute with their own weights") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor::manualSeed(11);
    nn::Linear lin(4, 3);
    CHECK(fmtInts(lin.weight.intShape()) == "[3, 4]");
    REQUIRE(lin.bias);
    CHECK(fmtInts(lin.bias->intShape()) == "[3]");
    Vals w = lin.weight.toVector<double>(), b = lin.bias->toVector<double>();
    // kaiming_uniform(a=sqrt(5)) bound = sqrt(6 / ((1 + 5) * fan_in)) = 1/2; bias bound 1/sqrt(4)
    for (double v : w) CHECK(std::fabs(v) <= 0.5 + 1e-6);
    for (double v : b) CHECK(std::fabs(v) <= 0.5 + 1e-6);
    Vals x = randVals(8, 851);
    // layers create their weights on the default device; move them to the device under test
    lin.weight = lin.weight.to(dev);
    lin.bias = lin.bias->to(dev);
    Tensor y = lin(make(x, {2, 4}, dev));
    CHECK(y.device() == dev);
    Vals mv(6);
    for (int i = 0; i < 2; ++i)
      for (int o = 0; o < 3; ++o) {
        double acc = b[o];
        for (int k = 0; k < 4; ++k) acc += x[i * 4 + k] * w[o * 4 + k];
        mv[i * 3 + o] = acc;
      }
    expectValues(y, {2, 3}, mv, {1e-5, 1e-6});
    nn::Linear noBias(4, 2, false);
    CHECK(!noBias.bias);

    nn::Conv2d conv(2, 3, {3}, {2}, {1});
    CHECK(fmtInts(conv.weight.intShape()) == "[3, 2, 3, 3]");
    conv.weight = conv.weight.to(dev);
    conv.bias = conv.bias->to(dev);
    Vals cw = conv.weight.toVector<double>(), cb = conv.bias->toVector<double>();
    Vals cx = randVals(2 * 2 * 5 * 5, 852);
    Tensor cy = conv(make(cx, {2, 2, 5, 5}, dev));
    Vals expected(2 * 3 * 3 * 3);
    for (int n = 0; n < 2; ++n)
      for (int co = 0; co < 3; ++co)
        for (int oy = 0; oy < 3; ++oy)
          for (int ox = 0; ox < 3; ++ox) {
            double acc = cb[co];
            for (int ci = 0; ci < 2; ++ci)
              for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx) {
                  int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
                  if (iy < 0 || iy >= 5 || ix < 0 || ix >= 5) continue;
                  acc +=
                      cx[((n * 2 + ci) * 5 + iy) * 5 + ix] * cw[((co * 2 + ci) * 3 + ky) * 3 + kx];
                }
            expected[((n * 3 + co) * 3 + oy) * 3 + ox] = acc;
          }
    expectValues(cy, {2, 3, 3, 3}, expected, {1e-5, 1e-6});

    nn::LayerNorm ln({3, 4});
    ln.weight = ln.weight->to(dev).mul(2); // gamma 2, beta 0.5
    ln.bias = ln.bias->to(dev).add(0.5);
    Vals lx = randVals(24, 853, -2, 2);
    expectValues(ln(make(lx, {2, 3, 4}, dev)), {2, 3, 4},
                 hostMap(hostLayernorm(lx, 12, 1e-5), [](double v) { return 2 * v + 0.5; }),
                 {1e-4, 1e-5});
    nn::LayerNorm plain({4}, 1e-3, false);
    CHECK(!plain.weight);
    expectValues(plain(make(lx, {6, 4}, dev)), {6, 4}, hostLayernorm(lx, 4, 1e-3), {1e-4, 1e-5});
  }
}

TEST_CASE("Tensor nn: BatchNorm2d in eval and training mode, running statistics") {
  const Ints shape{2, 3, 2, 2};
  Vals x = randVals(24, 861, -2, 3);
  // per-channel batch mean and biased / unbiased variance
  Vals mean(3, 0), var(3, 0);
  for (int64_t i = 0; i < 24; ++i) mean[(i / 4) % 3] += x[i] / 8;
  for (int64_t i = 0; i < 24; ++i)
    var[(i / 4) % 3] += (x[i] - mean[(i / 4) % 3]) * (x[i] - mean[(i / 4) % 3]) / 8;
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    nn::BatchNorm2d bn(3);
    bn.runningMean = bn.runningMean.to(dev);
    bn.runningVar = bn.runningVar.to(dev);
    bn.numBatchesTracked = bn.numBatchesTracked.to(dev);
    bn.weight = bn.weight->to(dev);
    bn.bias = bn.bias->to(dev);
    Tensor tx = make(x, shape, dev);
    // eval with the initial statistics (mean 0, var 1)
    Vals eval = hostMap(x, [](double v) { return v / std::sqrt(1 + 1e-5); });
    expectValues(bn(tx), shape, eval, {1e-5, 1e-6});
    {
      Tensor::TrainingGuard guard(true);
      Vals train(24);
      for (int64_t i = 0; i < 24; ++i) {
        int64_t c = (i / 4) % 3;
        train[i] = (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5);
      }
      expectValues(bn(tx), shape, train, {1e-4, 1e-5});
      Vals rm, rv;
      for (int c = 0; c < 3; ++c) {
        rm.push_back(0.1 * mean[c]);
        rv.push_back(0.9 + 0.1 * var[c] * 8 / 7);
      }
      expectValues(bn.runningMean, {3}, rm, {1e-5, 1e-6});
      expectValues(bn.runningVar, {3}, rv, {1e-5, 1e-6});
      expectExact(bn.numBatchesTracked, {1}, {1});
    }
    // eval uses the updated running statistics
    Vals rm = bn.runningMean.toVector<double>(), rv = bn.runningVar.toVector<double>();
    Vals evalAfter(24);
    for (int64_t i = 0; i < 24; ++i) {
      int64_t c = (i / 4) % 3;
      evalAfter[i] = (x[i] - rm[c]) / std::sqrt(rv[c] + 1e-5);
    }
    expectValues(bn(tx), shape, evalAfter, {1e-5, 1e-6});
    // without affine parameters or running statistics
    nn::BatchNorm2d plain(3, 1e-3, false, false);
    CHECK(!plain.weight);
    Tensor::TrainingGuard guard(true);
    Vals train(24);
    for (int64_t i = 0; i < 24; ++i)
      train[i] = (x[i] - mean[(i / 4) % 3]) / std::sqrt(var[(i / 4) % 3] + 1e-3);
    expectValues(plain(tx), shape, train, {1e-4, 1e-5});
    expectExact(plain.runningMean, {3}, {0, 0, 0});
  }
}
