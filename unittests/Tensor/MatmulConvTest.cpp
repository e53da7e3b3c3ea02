// matmul/dot and linear, conv2d (stride, padding in its 1-, 2- and 4-value forms, dilation, groups,
// bias, 1-d), convTranspose2d (numpy golden data) and the 2-d pools, against naive loops in double.
#include "TensorTestUtil.h"
#include "golden/TensorGolden.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

// numpy.matmul: 1-d operands get a dim that is removed again; batch dims broadcast.
std::pair<Vals, Ints> hostMatmul(const Vals &a, Ints as, const Vals &b, Ints bs) {
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec) as.insert(as.begin(), 1);
  if (bVec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Ints ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Ints batch = broadcastShape(ab, bb);
  Ints os = batch;
  os.push_back(m);
  os.push_back(n);
  int64_t nb = numelOf(batch);
  Vals out(static_cast<size_t>(nb * m * n));
  for (int64_t t = 0; t < nb; ++t) {
    int64_t sa = broadcastSource(t, ab, batch) * m * k, sb = broadcastSource(t, bb, batch) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) acc += a[sa + i * k + q] * b[sb + q * n + j];
        out[(t * m + i) * n + j] = acc;
      }
  }
  Ints res = batch;
  if (!aVec) res.push_back(m);
  if (!bVec) res.push_back(n);
  return {out, res};
}

struct ConvSpec {
  Ints x, w; // (n, cin, h, w) and (cout, cin/groups, kh, kw)
  bool bias = false;
  int64_t groups = 1;
  Ints stride{1}, dilation{1};
  Ints padding{0}; // 1 value, (pH, pW), or (left, right, top, bottom)
};

Ints pair2(const Ints &v) { return v.size() == 1 ? Ints{v[0], v[0]} : v; }

// Direct convolution in double: out[n][g*coutg+oc][oy][ox] = bias + sum x * w.
std::pair<Vals, Ints> hostConv2d(const ConvSpec &s, const Vals &x, const Vals &w, const Vals &b) {
  int64_t n = s.x[0], cin = s.x[1], h = s.x[2], wd = s.x[3];
  int64_t cout = s.w[0], cing = s.w[1], kh = s.w[2], kw = s.w[3];
  Ints st = pair2(s.stride), dl = pair2(s.dilation);
  int64_t pl, pr, pt, pb;
  if (s.padding.size() == 1)
    pl = pr = pt = pb = s.padding[0];
  else if (s.padding.size() == 2) {
    pt = pb = s.padding[0];
    pl = pr = s.padding[1];
  } else {
    pl = s.padding[0];
    pr = s.padding[1];
    pt = s.padding[2];
    pb = s.padding[3];
  }
  int64_t oh = (h + pt + pb - dl[0] * (kh - 1) - 1) / st[0] + 1;
  int64_t ow = (wd + pl + pr - dl[1] * (kw - 1) - 1) / st[1] + 1;
  int64_t coutg = cout / s.groups;
  Vals out(static_cast<size_t>(n * cout * oh * ow));
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t co = 0; co < cout; ++co) {
      int64_t g = co / coutg;
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = s.bias ? b[co] : 0;
          for (int64_t ic = 0; ic < cing; ++ic)
            for (int64_t ky = 0; ky < kh; ++ky)
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t iy = oy * st[0] - pt + ky * dl[0], ix = ox * st[1] - pl + kx * dl[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                acc += x[((bi * cin + g * cing + ic) * h + iy) * wd + ix] *
                       w[((co * cing + ic) * kh + ky) * kw + kx];
              }
          out[((bi * cout + co) * oh + oy) * ow + ox] = acc;
        }
    }
  return {out, {n, cout, oh, ow}};
}

// avg or max over kh x kw windows of the last two dims (no padding, floor output size).
std::pair<Vals, Ints> hostPool(const Vals &x, const Ints &shape, Ints k, Ints st, Ints dl,
                               bool max) {
  int64_t h = shape[shape.size() - 2], w = shape.back(), outer = numelOf(shape) / (h * w);
  int64_t oh = (h - dl[0] * (k[0] - 1) - 1) / st[0] + 1,
          ow = (w - dl[1] * (k[1] - 1) - 1) / st[1] + 1;
  Vals out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double acc = max ? -kInf : 0;
        for (int64_t ky = 0; ky < k[0]; ++ky)
          for (int64_t kx = 0; kx < k[1]; ++kx) {
            double v = x[(o * h + oy * st[0] + ky * dl[0]) * w + ox * st[1] + kx * dl[1]];
            acc = max ? std::max(acc, v) : acc + v;
          }
        out.push_back(max ? acc : acc / static_cast<double>(k[0] * k[1]));
      }
  Ints os(shape.begin(), shape.end() - 2);
  os.push_back(oh);
  os.push_back(ow);
  return {out, os};
}

} // namespace

TEST_CASE("Tensor matmul: 1-d, 2-d, batched and broadcast operands") {
  struct Case {
    Ints a, b;
  };
  const std::vector<Case> cases{{{4}, {4}},       {{3, 4}, {4}},          {{4}, {4, 5}},
                                {{3, 4}, {4, 5}}, {{2, 3, 4}, {2, 4, 5}}, {{2, 1, 3, 4}, {5, 4, 2}},
                                {{1, 1}, {1, 7}}, {{3, 0}, {0, 2}},       {{2, 3, 4}, {4}},
                                {{5, 3}, {3, 1}}};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (const Case &c : cases) {
      CAPTURE(fmtInts(c.a));
      CAPTURE(fmtInts(c.b));
      Vals a = randVals(static_cast<size_t>(numelOf(c.a)), 201),
           b = randVals(static_cast<size_t>(numelOf(c.b)), 202);
      auto [ev, es] = hostMatmul(a, c.a, b, c.b);
      expectValues(make(a, c.a, dev).matmul(make(b, c.b, dev)), es, ev, {1e-5, 1e-5});
      expectValues(make(a, c.a, dev).dot(make(b, c.b, dev)), es, ev, {1e-5, 1e-5});
    }
    // non-contiguous operands: a transposed right side (x @ w.T), a flipped left side
    Vals a = randVals(15, 203), w = randVals(20, 204);
    auto [ev, es] = hostMatmul(a, {3, 5}, hostPermute(w, {4, 5}, {1, 0}), {5, 4});
    expectValues(make(a, {3, 5}, dev).matmul(make(w, {4, 5}, dev).T()), es, ev, {1e-5, 1e-5});
    expectValues(
        makeView(Layout::Flipped, a, {3, 5}, dev)
            .matmul(makeView(Layout::Permuted, hostPermute(w, {4, 5}, {1, 0}), {5, 4}, dev)),
        es, ev, {1e-5, 1e-5});
    // integer and float64 matmuls are exact / double precise
    Vals ia = randInts(6, 205, -5, 5), ib = randInts(6, 206, -5, 5);
    auto [iv, is] = hostMatmul(ia, {2, 3}, ib, {3, 2});
    Tensor ir = make(ia, {2, 3}, dev, dtypes::int32).matmul(make(ib, {3, 2}, dev, dtypes::int32));
    expectDType(ir, dtypes::int32);
    expectExact(ir, is, iv);
    auto [dv, ds] = hostMatmul(a, {3, 5}, hostPermute(w, {4, 5}, {1, 0}), {5, 4});
    expectValues(
        make(a, {3, 5}, dev, dtypes::float64).matmul(make(w, {4, 5}, dev, dtypes::float64).T()), ds,
        dv, {1e-12, 1e-12});
    // float16 accumulates in float32 and rounds once
    Vals ha = storeAll(randVals(8, 207), dtypes::float16),
         hb = storeAll(randVals(8, 208), dtypes::float16);
    auto [hv, hs] = hostMatmul(ha, {2, 4}, hb, {4, 2});
    expectValues(
        make(ha, {2, 4}, dev, dtypes::float16).matmul(make(hb, {4, 2}, dev, dtypes::float16)), hs,
        storeAll(hv, dtypes::float16), {2e-3, 2e-3});
    // a longer reduction
    Vals la = randVals(300, 209), lb = randVals(300, 210);
    auto [lv, ls] = hostMatmul(la, {300}, lb, {300});
    expectValues(make(la, {300}, dev).dot(make(lb, {300}, dev)), ls, lv, {1e-5, 1e-4});
  }
}

TEST_CASE("Tensor linear: x @ w + b with 2-d and 1-d weights") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals x = randVals(24, 211), w = randVals(20, 212), b = randVals(5, 213);
    auto [mv, ms] = hostMatmul(x, {2, 3, 4}, w, {4, 5});
    Vals withBias = hostBinary(mv, ms, b, {5}, std::plus<>());
    expectValues(make(x, {2, 3, 4}, dev).linear(make(w, {4, 5}, dev), make(b, {5}, dev)), ms,
                 withBias, {1e-5, 1e-5});
    expectValues(make(x, {2, 3, 4}, dev).linear(make(w, {4, 5}, dev)), ms, mv, {1e-5, 1e-5});
    // a 1-d weight scales elementwise
    Vals w1 = randVals(4, 214);
    expectValues(make(x, {2, 3, 4}, dev)
                     .linear(make(w1, {4}, dev), make(b, {5}, dev).getitem({Index::range(0, 4)})),
                 {2, 3, 4},
                 hostBinary(hostBinary(x, {2, 3, 4}, w1, {4}, std::multiplies<>()), {2, 3, 4},
                            Vals(b.begin(), b.begin() + 4), {4}, std::plus<>()),
                 {1e-5, 1e-6});
  }
}

TEST_CASE("Tensor conv2d: stride, padding forms, dilation, groups, bias and 1-d") {
  const std::vector<ConvSpec> specs{
      {{1, 1, 5, 5}, {1, 1, 3, 3}},
      {{2, 3, 7, 6}, {4, 3, 3, 2}, true, 1, {2}, {1}, {1}},
      {{1, 2, 6, 7}, {3, 2, 2, 3}, false, 1, {1}, {2}, {1, 2}},
      {{1, 2, 5, 6}, {2, 2, 3, 3}, true, 1, {1, 2}, {1}, {1, 0, 2, 1}},
      {{1, 4, 5, 5}, {6, 2, 3, 3}, true, 2, {1}, {1}, {1}},
      {{1, 3, 4, 4}, {3, 1, 2, 2}, false, 3, {2}, {1}, {0}},
      {{2, 5, 3, 3}, {2, 5, 1, 1}, true},
      {{1, 1, 4, 4}, {1, 1, 4, 4}, false, 1, {1}, {1}, {3}},
  };
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (size_t i = 0; i < specs.size(); ++i) {
      const ConvSpec &s = specs[i];
      CAPTURE(i);
      Vals x = randVals(static_cast<size_t>(numelOf(s.x)), 300 + i),
           w = randVals(static_cast<size_t>(numelOf(s.w)), 400 + i);
      Vals b = randVals(static_cast<size_t>(s.w[0]), 500 + i);
      auto [ev, es] = hostConv2d(s, x, w, b);
      std::optional<Tensor> bias;
      if (s.bias) bias = make(b, {s.w[0]}, dev);
      Tensor out = make(x, s.x, dev)
                       .conv2d(make(w, s.w, dev), bias, s.groups, s.stride, s.dilation, s.padding);
      expectValues(out, es, ev, {1e-5, 1e-5});
    }
    // non-contiguous input and weight
    const ConvSpec &s = specs[1];
    Vals x = randVals(static_cast<size_t>(numelOf(s.x)), 301),
         w = randVals(static_cast<size_t>(numelOf(s.w)), 401);
    Vals b = randVals(4, 501);
    auto [ev, es] = hostConv2d(s, x, w, b);
    expectValues(makeView(Layout::Permuted, x, s.x, dev)
                     .conv2d(makeView(Layout::Flipped, w, s.w, dev), make(b, {4}, dev), 1, s.stride,
                             s.dilation, s.padding),
                 es, ev, {1e-5, 1e-5});
    // exact integer convolution
    ConvSpec si{{1, 2, 4, 4}, {2, 2, 2, 2}, false, 1, {1}, {1}, {1}};
    Vals ix = randInts(32, 601, -3, 3), iw = randInts(16, 602, -2, 2);
    auto [iv, is] = hostConv2d(si, ix, iw, {});
    expectExact(make(ix, si.x, dev, dtypes::int32)
                    .conv2d(make(iw, si.w, dev, dtypes::int32), std::nullopt, 1, {1}, {1}, {1}),
                is, iv);
    // a 1-d convolution: (n, cin, L) with (cout, cin, k) is the 2-d case with h = 1
    ConvSpec s1{{1, 2, 1, 7}, {3, 2, 1, 3}, true, 1, {1, 2}, {1}, {0, 0, 0, 0}};
    Vals x1 = randVals(14, 603), w1 = randVals(18, 604), b1 = randVals(3, 605);
    auto [v1, sh1] = hostConv2d(s1, x1, w1, b1);
    expectValues(
        make(x1, {1, 2, 7}, dev).conv2d(make(w1, {3, 2, 3}, dev), make(b1, {3}, dev), 1, {2}),
        {1, 3, 3}, v1, {1e-5, 1e-5});
  }
}

TEST_CASE(
    "Tensor convTranspose2d: stride, padding, output padding, dilation, groups (numpy golden)") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (const golden::ConvTransposeCase &c : golden::kConvTransposeCases) {
      CAPTURE(std::string(c.name));
      std::optional<Tensor> bias;
      if (c.hasBias) bias = make(c.bias, {static_cast<int64_t>(c.bias.size())}, dev);
      Tensor out = make(c.x, c.xShape, dev)
                       .convTranspose2d(make(c.w, c.wShape, dev), bias, c.groups, c.stride,
                                        c.dilation, c.padding, c.outputPadding);
      expectValues(out, c.outShape, c.out, {1e-5, 1e-5});
    }
  }
}

TEST_CASE("Tensor pooling: avgPool2d and maxPool2d with kernel, stride and dilation") {
  struct Case {
    Ints shape, k;
    std::optional<Ints> stride;
    Ints dilation;
  };
  const std::vector<Case> cases{
      {{1, 2, 5, 6}, {2, 2}, std::nullopt, {1}}, {{1, 1, 5, 5}, {3, 3}, Ints{1, 1}, {1}},
      {{2, 6, 7}, {2, 3}, Ints{1, 2}, {1}},      {{1, 1, 7, 7}, {2, 2}, Ints{1, 1}, {2}},
      {{1, 1, 4, 4}, {4, 4}, std::nullopt, {1}}, {{1, 3, 3}, {1, 1}, std::nullopt, {1}}};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case &c = cases[i];
      CAPTURE(i);
      Vals x = randVals(static_cast<size_t>(numelOf(c.shape)), 700 + i, -5, 5);
      Ints st = c.stride ? *c.stride : c.k;
      Ints dl = pair2(c.dilation);
      auto [av, as] = hostPool(x, c.shape, c.k, st, dl, false);
      auto [mv, ms] = hostPool(x, c.shape, c.k, st, dl, true);
      Tensor t = make(x, c.shape, dev);
      expectValues(t.avgPool2d(c.k, c.stride, c.dilation), as, av, {1e-5, 1e-6});
      expectExact(t.maxPool2d(c.k, c.stride, c.dilation), ms, mv);
    }
    // a single kernel value is a square kernel; a flipped view pools in logical order
    Vals x = randVals(36, 710);
    auto [mv, ms] = hostPool(x, {1, 1, 6, 6}, {3, 3}, {3, 3}, {1, 1}, true);
    expectExact(make(x, {1, 1, 6, 6}, dev).maxPool2d({3}), ms, mv);
    expectExact(makeView(Layout::Flipped, x, {1, 1, 6, 6}, dev).maxPool2d({3}), ms, mv);
    auto [iv, is] = hostPool(randInts(16, 711, -9, 9), {1, 4, 4}, {2, 2}, {2, 2}, {1, 1}, true);
    expectExact(make(randInts(16, 711, -9, 9), {1, 4, 4}, dev, dtypes::int32).maxPool2d(), is, iv);
  }
}
