// Movement ops: reshape, permute/transpose, expand, pad/pad2d/slice, shrink, flip, squeeze/
// unsqueeze/flatten, cat/stack/repeat/chunk and contiguous, on contiguous and non-contiguous
// inputs, against a host reference that maps each output index to its source index.
#include "TensorTestUtil.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

// out[o] = in[src(o)] for an output of `outShape`; src returns -1 for a padded element (`fill`).
Vals hostMove(const Vals &in, const Ints &inShape, const Ints &outShape,
              const std::function<std::optional<Ints>(const Ints &)> &src, double fill = 0) {
  Ints ost = stridesOf(outShape), ist = stridesOf(inShape);
  Vals out(static_cast<size_t>(numelOf(outShape)));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    Ints idx(outShape.size());
    for (size_t d = 0; d < outShape.size(); ++d) idx[d] = (i / ost[d]) % outShape[d];
    auto s = src(idx);
    if (!s) {
      out[i] = fill;
      continue;
    }
    int64_t at = 0;
    for (size_t d = 0; d < inShape.size(); ++d) at += (*s)[d] * ist[d];
    out[i] = in[at];
  }
  return out;
}

Vals hostPad(const Vals &in, const Ints &shape,
             const std::vector<std::pair<int64_t, int64_t>> &pads, double fill) {
  Ints os;
  for (size_t d = 0; d < shape.size(); ++d) os.push_back(shape[d] + pads[d].first + pads[d].second);
  return hostMove(
      in, shape, os,
      [&](const Ints &o) -> std::optional<Ints> {
        Ints s(o.size());
        for (size_t d = 0; d < o.size(); ++d) {
          s[d] = o[d] - pads[d].first;
          if (s[d] < 0 || s[d] >= shape[d]) return std::nullopt;
        }
        return s;
      },
      fill);
}

Vals hostShrink(const Vals &in, const Ints &shape,
                const std::vector<std::pair<int64_t, int64_t>> &b) {
  Ints os;
  for (const auto &[lo, hi] : b) os.push_back(hi - lo);
  return hostMove(in, shape, os, [&](const Ints &o) -> std::optional<Ints> {
    Ints s(o.size());
    for (size_t d = 0; d < o.size(); ++d) s[d] = o[d] + b[d].first;
    return s;
  });
}

Vals hostFlip(const Vals &in, const Ints &shape, const Ints &axes) {
  return hostMove(in, shape, shape, [&](const Ints &o) -> std::optional<Ints> {
    Ints s = o;
    for (int64_t a : axes) s[a] = shape[a] - 1 - o[a];
    return s;
  });
}

// Concatenation along `dim` (the tensors' other dims are equal).
Vals hostCat(const std::vector<Vals> &vs, const std::vector<Ints> &shapes, int64_t dim) {
  Ints os = shapes[0];
  os[dim] = 0;
  for (const auto &s : shapes) os[dim] += s[dim];
  Ints ost = stridesOf(os);
  Vals out(static_cast<size_t>(numelOf(os)));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    Ints idx(os.size());
    for (size_t d = 0; d < os.size(); ++d) idx[d] = (i / ost[d]) % os[d];
    size_t k = 0;
    while (idx[dim] >= shapes[k][dim]) idx[dim] -= shapes[k++][dim];
    Ints st = stridesOf(shapes[k]);
    int64_t at = 0;
    for (size_t d = 0; d < os.size(); ++d) at += idx[d] * st[d];
    out[i] = vs[k][at];
  }
  return out;
}

} // namespace

TEST_CASE("Tensor movement: reshape with -1, 0-size and non-contiguous inputs") {
  Vals v = iotaVals(24);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(v, {2, 3, 4}, dev);
    expectExact(x.reshape({4, 6}), {4, 6}, v);
    expectExact(x.reshape({-1}), {24}, v);
    expectExact(x.reshape({3, -1, 2}), {3, 4, 2}, v);
    expectExact(x.reshape({24, 1, 1}), {24, 1, 1}, v);
    expectExact(make({7}, {1, 1}, dev).reshape({}), {}, {7});
    expectExact(Tensor::scalar(7, {std::nullopt, dev}).reshape({1, 1, 1}), {1, 1, 1}, {7});
    expectExact(make({}, {0, 3}, dev).reshape({3, 0}), {3, 0}, {});
    expectExact(make({}, {0, 3}, dev).reshape({-1}), {0}, {});
    // reshaping permuted, flipped and sliced views reads them in logical order
    for (Layout l : {Layout::Permuted, Layout::Flipped, Layout::Sliced}) {
      CAPTURE(std::string(layoutName(l)));
      expectExact(makeView(l, v, {2, 3, 4}, dev).reshape({-1, 8}), {3, 8}, v);
      expectExact(makeView(l, v, {2, 3, 4}, dev, dtypes::int16).reshape({6, 4}), {6, 4}, v);
    }
    Tensor t = make(v, {4, 6}, dev).permute({1, 0});
    expectExact(t.reshape({3, 8}), {3, 8}, hostPermute(v, {4, 6}, {1, 0}));
  }
}

TEST_CASE("Tensor movement: permute, transpose and T") {
  Vals v = iotaVals(24, -5);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(v, {2, 3, 4}, dev);
    expectExact(x.permute({2, 0, 1}), {4, 2, 3}, hostPermute(v, {2, 3, 4}, {2, 0, 1}));
    expectExact(x.permute({-1, 0, -2}), {4, 2, 3}, hostPermute(v, {2, 3, 4}, {2, 0, 1}));
    expectExact(x.permute({0, 1, 2}), {2, 3, 4}, v);
    expectExact(x.transpose(), {3, 2, 4}, hostPermute(v, {2, 3, 4}, {1, 0, 2}));
    expectExact(x.transpose(-1, 0), {4, 3, 2}, hostPermute(v, {2, 3, 4}, {2, 1, 0}));
    Tensor m = make(iotaVals(6), {2, 3}, dev);
    expectExact(m.T(), {3, 2}, {0, 3, 1, 4, 2, 5});
    expectExact(m.T().T(), {2, 3}, iotaVals(6));
    // a permute of a flipped view
    expectExact(makeView(Layout::Flipped, v, {2, 3, 4}, dev).permute({1, 2, 0}), {3, 4, 2},
                hostPermute(v, {2, 3, 4}, {1, 2, 0}));
    expectExact(Tensor::scalar(3, {std::nullopt, dev}).permute({}), {}, {3});
  }
}

TEST_CASE("Tensor movement: expand size-1 dims, -1 keeps a dim") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor c = make({1, 2, 3}, {3, 1}, dev);
    expectExact(c.expand({3, 4}), {3, 4}, {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
    expectExact(c.expand({-1, 2}), {3, 2}, {1, 1, 2, 2, 3, 3});
    expectExact(make({5}, {1}, dev).expand({4}), {4}, Vals(4, 5));
    expectExact(make({1, 2}, {1, 2}, dev).expand({0, 2}), {0, 2}, {});
    expectExact(make({1, 2}, {1, 1, 2}, dev, dtypes::int8).expand({2, 2, -1}), {2, 2, 2},
                {1, 2, 1, 2, 1, 2, 1, 2});
    // expand a sliced view, then reduce it
    expectExact(makeView(Layout::Sliced, {4, 5}, {2, 1}, dev).expand({2, 3}).sum(Ints{1}), {2},
                {12, 15});
  }
}

TEST_CASE("Tensor movement: pad with values, shrink, slice and pad2d") {
  Vals v = iotaVals(6, 1);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(v, {2, 3}, dev);
    expectExact(x.pad({SIntPair(1, 2), SIntPair(0, 1)}), {5, 4},
                hostPad(v, {2, 3}, {{1, 2}, {0, 1}}, 0));
    expectExact(x.pad({SIntPair(0, 0), SIntPair(2, 0)}, -1.5), {2, 5},
                hostPad(v, {2, 3}, {{0, 0}, {2, 0}}, -1.5));
    expectExact(x.pad({std::nullopt, SIntPair(1, 1)}, 9), {2, 5},
                hostPad(v, {2, 3}, {{0, 0}, {1, 1}}, 9));
    expectExact(x.pad({SIntPair(0, 0), SIntPair(0, 0)}, 9), {2, 3}, v);
    expectExact(make({}, {0, 2}, dev).pad({SIntPair(1, 1), std::nullopt}, 4), {2, 2}, Vals(4, 4));
    expectExact(make({1, 2}, {2}, dev, dtypes::int32).pad({SIntPair(1, 0)}, -7), {3}, {-7, 1, 2});
    expectExact(makeView(Layout::Permuted, v, {2, 3}, dev).pad({SIntPair(1, 0), SIntPair(0, 1)}, 3),
                {3, 4}, hostPad(v, {2, 3}, {{1, 0}, {0, 1}}, 3));
    // shrink
    expectExact(x.shrink({SIntPair(0, 1), SIntPair(1, 3)}), {1, 2},
                hostShrink(v, {2, 3}, {{0, 1}, {1, 3}}));
    expectExact(x.shrink({std::nullopt, SIntPair(2, 3)}), {2, 1}, {3, 6});
    expectExact(x.shrink({SIntPair(1, 1), std::nullopt}), {0, 3}, {});
    expectExact(makeView(Layout::Flipped, v, {2, 3}, dev).shrink({SIntPair(1, 2), SIntPair(0, 2)}),
                {1, 2}, {4, 5});
    // slice pads out-of-range bounds with the value
    expectExact(x.slice({SIntPair(-1, 2), SIntPair(1, 5)}, 8), {3, 4},
                {8, 8, 8, 8, 2, 3, 8, 8, 5, 6, 8, 8});
    // pad2d: (left, right) of the last dim, then (top, bottom); negative values crop
    Vals img = iotaVals(12);
    Tensor im = make(img, {1, 3, 4}, dev);
    expectExact(im.pad2d({1, 2}), {1, 3, 7}, hostPad(img, {1, 3, 4}, {{0, 0}, {0, 0}, {1, 2}}, 0));
    expectExact(im.pad2d({1, 0, 2, 1}, -1), {1, 6, 5},
                hostPad(img, {1, 3, 4}, {{0, 0}, {2, 1}, {1, 0}}, -1));
    expectExact(im.pad2d({-1, -1, 0, -1}), {1, 2, 2},
                hostShrink(img, {1, 3, 4}, {{0, 1}, {0, 2}, {1, 3}}));
  }
}

TEST_CASE("Tensor movement: flip along single, multiple and negative axes") {
  Vals v = iotaVals(30);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(v, {2, 3, 5}, dev);
    expectExact(x.flip({0}), {2, 3, 5}, hostFlip(v, {2, 3, 5}, {0}));
    expectExact(x.flip({-1}), {2, 3, 5}, hostFlip(v, {2, 3, 5}, {2}));
    expectExact(x.flip({0, 2}), {2, 3, 5}, hostFlip(v, {2, 3, 5}, {0, 2}));
    expectExact(x.flip({}), {2, 3, 5}, v);
    expectExact(x.flip({1}).flip({1}), {2, 3, 5}, v);
    expectExact(makeView(Layout::Permuted, v, {2, 3, 5}, dev).flip({1}), {2, 3, 5},
                hostFlip(v, {2, 3, 5}, {1}));
    expectExact(make({1, 2, 3}, {3}, dev, dtypes::uint8).flip({0}), {3}, {3, 2, 1});
  }
}

TEST_CASE("Tensor movement: squeeze, unsqueeze and flatten") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals v = iotaVals(6);
    Tensor x = make(v, {1, 2, 1, 3}, dev);
    expectExact(x.squeeze(), {2, 3}, v);
    expectExact(x.squeeze(0), {2, 1, 3}, v);
    expectExact(x.squeeze(-2), {1, 2, 3}, v);
    expectExact(x.squeeze(1), {1, 2, 1, 3}, v); // not size 1: unchanged
    expectExact(make({4}, {1}, dev).squeeze(), {}, {4});
    expectExact(Tensor::scalar(4, {std::nullopt, dev}).squeeze(0), {}, {4});
    expectExact(make(v, {2, 3}, dev).unsqueeze(0), {1, 2, 3}, v);
    expectExact(make(v, {2, 3}, dev).unsqueeze(1), {2, 1, 3}, v);
    expectExact(make(v, {2, 3}, dev).unsqueeze(-1), {2, 3, 1}, v);
    expectExact(Tensor::scalar(4, {std::nullopt, dev}).unsqueeze(0), {1}, {4});
    Vals w = iotaVals(24);
    Tensor y = make(w, {2, 3, 4}, dev);
    expectExact(y.flatten(), {24}, w);
    expectExact(y.flatten(1), {2, 12}, w);
    expectExact(y.flatten(-1), {2, 3, 4}, w);
    expectExact(makeView(Layout::Permuted, w, {2, 3, 4}, dev).flatten(1), {2, 12}, w);
    expectExact(make({}, {2, 0, 3}, dev).flatten(1), {2, 0}, {});
  }
}

TEST_CASE("Tensor movement: cat, stack, repeat and chunk") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals a = iotaVals(6), b = iotaVals(4, 100), c = iotaVals(2, -10);
    Tensor ta = make(a, {2, 3}, dev), tb = make(b, {2, 2}, dev), tc = make(c, {2, 1}, dev);
    expectExact(ta.cat({tb, tc}, 1), {2, 6}, hostCat({a, b, c}, {{2, 3}, {2, 2}, {2, 1}}, 1));
    expectExact(ta.cat({tb.flip({1}).cat({tc}, -1)}, -1), {2, 6},
                hostCat({a, hostFlip(b, {2, 2}, {1}), c}, {{2, 3}, {2, 2}, {2, 1}}, 1));
    Vals d = iotaVals(9, 50);
    expectExact(ta.cat({make(d, {3, 3}, dev)}), {5, 3}, hostCat({a, d}, {{2, 3}, {3, 3}}, 0));
    expectExact(ta.cat({make({}, {0, 3}, dev)}), {2, 3}, a);
    expectExact(makeView(Layout::Permuted, a, {2, 3}, dev)
                    .cat({makeView(Layout::Sliced, a, {2, 3}, dev)}, 0),
                {4, 3}, hostCat({a, a}, {{2, 3}, {2, 3}}, 0));
    expectExact(make({1, 2}, {2}, dev, dtypes::int32).cat({make({3}, {1}, dev, dtypes::int32)}),
                {3}, {1, 2, 3});
    // stack
    Tensor s1 = make({1, 2, 3}, {3}, dev), s2 = make({4, 5, 6}, {3}, dev);
    expectExact(Tensor::stack({s1, s2}), {2, 3}, {1, 2, 3, 4, 5, 6});
    expectExact(Tensor::stack({s1, s2}, 1), {3, 2}, {1, 4, 2, 5, 3, 6});
    expectExact(Tensor::stack({s1, s2, s1}, -1), {3, 3}, {1, 4, 1, 2, 5, 2, 3, 6, 3});
    expectExact(Tensor::stack({Tensor::scalar(1, {std::nullopt, dev}),
                               Tensor::scalar(2, {std::nullopt, dev})}),
                {2}, {1, 2});
    // repeat
    Vals r = {1, 2, 3, 4, 5, 6};
    Tensor tr = make(r, {2, 3}, dev);
    expectExact(tr.repeat({2, 1}), {4, 3}, hostCat({r, r}, {{2, 3}, {2, 3}}, 0));
    expectExact(tr.repeat({1, 2}), {2, 6}, hostCat({r, r}, {{2, 3}, {2, 3}}, 1));
    expectExact(make({1, 2}, {2}, dev).repeat({2, 3}), {2, 6},
                {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2});
    expectExact(tr.repeat({0, 1}), {0, 3}, {});
    expectExact(tr.T().repeat({1, 2}), {3, 4}, {1, 4, 1, 4, 2, 5, 2, 5, 3, 6, 3, 6});
    // chunk: ceil(7 / 3) = 3 rows per chunk, the last one shorter
    Vals q = iotaVals(14);
    std::vector<Tensor> ch = make(q, {7, 2}, dev).chunk(3);
    REQUIRE(ch.size() == 3);
    expectExact(ch[0], {3, 2}, Vals(q.begin(), q.begin() + 6));
    expectExact(ch[1], {3, 2}, Vals(q.begin() + 6, q.begin() + 12));
    expectExact(ch[2], {1, 2}, Vals(q.begin() + 12, q.end()));
    std::vector<Tensor> cc = make(q, {2, 7}, dev).chunk(2, -1);
    REQUIRE(cc.size() == 2);
    expectExact(cc[1], {2, 3}, {4, 5, 6, 11, 12, 13});
    CHECK(make(q, {7, 2}, dev).chunk(10).size() == 7);
  }
}

TEST_CASE("Tensor movement: contiguous materializes a view in logical order") {
  Vals v = randVals(20, 111);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (Layout l : allLayouts()) {
      CAPTURE(std::string(layoutName(l)));
      Tensor c = makeView(l, v, {4, 5}, dev).contiguous();
      c.realize();
      CHECK(c.lazydata()->isRealized());
      expectExact(c, {4, 5}, v);
      expectExact(c.contiguousBackward(), {4, 5}, v);
    }
    // detach and to() keep the values
    expectExact(make({1, 2}, {2}, dev).detach(), {2}, {1, 2});
    std::string other = dev == "CPU" ? "INTERP" : "CPU";
    Tensor moved = make({1, 2, 3}, {3}, dev).flip({0}).to(other);
    CHECK(moved.device() == other);
    expectExact(moved * 2, {3}, {6, 4, 2});
  }
}
