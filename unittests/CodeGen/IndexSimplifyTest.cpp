// Valid-aware index simplification (lib/CodeGen/IndexSimplify.h), checked exhaustively: for every
// value of the loop variables the simplified valid equals the original, and where it holds the
// simplified index equals the original. The col2im view stack loses its carries; random view
// stacks (pad, shrink, reshape, permute, expand) keep the guarantee.
#include "IndexSimplify.h"
#include "lazyjit/Graph/ShapeTracker.h"

#include <doctest/doctest.h>

#include <functional>
#include <random>

using namespace lazyjit;

namespace {

size_t countDivMod(const Node &n) {
  size_t c = (n.kind == NodeKind::Div || n.kind == NodeKind::Mod) ? 1 : 0;
  if (n.a) c += countDivMod(*n.a);
  for (const auto &x : n.nodes) c += countDivMod(*x);
  return c;
}

// Every combination of values of `vars` (one variable per axis of `shape`).
void forAll(const Shape &shape, const std::function<void(const std::map<std::string, int64_t> &)> &f) {
  std::vector<int64_t> cur(shape.size(), 0);
  std::map<std::string, int64_t> values;
  for (;;) {
    for (size_t i = 0; i < shape.size(); ++i) values["i" + std::to_string(i)] = cur[i];
    f(values);
    size_t i = shape.size();
    while (i > 0 && ++cur[i - 1] == shape[i - 1].asInt()) cur[--i] = 0;
    if (i == 0) return;
  }
}

struct Check {
  size_t points = 0, validPoints = 0, mismatches = 0;
  SimplifiedIndex before, after;
};

// Simplifies the ShapeTracker's (index, valid) and compares both at every point.
Check checkExhaustively(const ShapeTracker &st) {
  const Shape &shape = st.shape();
  std::vector<NodeRef> idxs;
  for (size_t i = 0; i < shape.size(); ++i)
    idxs.push_back(shape[i].asInt() > 1 ? variable("i" + std::to_string(i), 0, shape[i].asInt() - 1) : numNode(0));
  auto [idx, valid] = st.exprIdxs(idxs);
  SimplifiedIndex s = simplifyUnderValid(idx, valid);
  Check c;
  c.before = {idx, valid};
  c.after = s;
  forAll(shape, [&](const std::map<std::string, int64_t> &v) {
    ++c.points;
    bool ok = evalNode(*valid, v) != 0, ok2 = evalNode(*s.valid, v) != 0;
    if (ok != ok2) {
      ++c.mismatches;
      return;
    }
    if (!ok) return;
    ++c.validPoints;
    if (evalNode(*idx, v) != evalNode(*s.idx, v)) ++c.mismatches;
  });
  return c;
}

} // namespace

TEST_CASE("Index simplification: the col2im view stack loses its carries under the valid") {
  // the backward of the reference's pool trick for a 5x5 kernel over 24x24 (2 images, 2 channels):
  // G[n, c, 400, 25] read as x[n, c, h, w] summed over a 6x6 window
  ShapeTracker st = ShapeTracker::fromShape({2, 2, 400, 25})
                        .reshape({2, 2, 20, 20, 5, 5})
                        .permute({0, 1, 4, 2, 5, 3})
                        .pad({{0, 0}, {0, 0}, {0, 0}, {0, 5}, {0, 0}, {0, 5}})
                        .reshape({2, 2, 125, 125})
                        .pad({{0, 0}, {0, 0}, {0, 19}, {0, 19}})
                        .reshape({2, 2, 6, 24, 6, 24})
                        .permute({0, 1, 3, 5, 2, 4});
  REQUIRE(st.views.size() >= 2);
  Check c = checkExhaustively(st);
  CHECK(c.mismatches == 0);
  CHECK(c.validPoints == 2 * 2 * 400 * 25); // every element of G is read exactly once
  const SimplifiedIndex &s = c.after;
  const NodeRef &idx = c.before.idx;
  MESSAGE("before: ", idx->render(), "\nafter:  ", s.idx->render(), "\nvalid:  ", s.valid->render());
  // (h + 24*r4) // 25 and % 25, (w + 24*r5) // 25 and % 25: the carries //125 and the % of the
  // batch-channel index are gone
  CHECK(countDivMod(*s.idx) == 4);
  CHECK(countDivMod(*idx) > 8);
  CHECK(s.idx->render().find("//125") == std::string::npos);
  CHECK(countDivMod(*s.valid) <= 2);
}

TEST_CASE("Index simplification: a valid that can never hold becomes 0, a constant one is untouched") {
  NodeRef x = variable("x", 0, 9);
  // x < 3 and 5 < x
  NodeRef never = andNodes({lt(x, 3).node(), lt(SInt(x) * -1, -5).node()});
  CHECK(simplifyUnderValid((SInt(x) * 2).toNode(), never).valid->render() == "0");
  NodeRef idx = floordiv(SInt(x), 4).node();
  auto s = simplifyUnderValid(idx, numNode(1));
  CHECK(s.idx == idx);
  // x < 4: x // 4 is 0
  CHECK(simplifyUnderValid(idx, lt(x, 4).node()).idx->render() == "0");
  // a lower bound: 4 <= x (rendered ((x*-1)<-3)) and x < 8 make x // 4 the constant 1
  NodeRef both = andNodes({lt(x, 8).node(), lt(SInt(x) * -1, -3).node()});
  CHECK(simplifyUnderValid(idx, both).idx->render() == "1");
}

TEST_CASE("Index simplification: random view stacks keep the index wherever the valid holds") {
  std::mt19937 rng(20240531);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  size_t stacks = 0, multiView = 0, simplified = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Shape shape;
    for (int64_t d = pick(1, 3); d > 0; --d) shape.push_back(pick(1, 6));
    ShapeTracker st = ShapeTracker::fromShape(shape);
    for (int step = pick(2, 6); step > 0; --step) {
      Shape cur = st.shape();
      int64_t n = static_cast<int64_t>(cur.size()), total = prodInt(cur);
      // reshapes of padded views are what stack views: they come up most
      static const int kOps[] = {0, 0, 0, 1, 2, 2, 2, 2, 3, 4};
      switch (kOps[pick(0, 9)]) {
      case 0: { // pad
        if (total > 400) break;
        PadArg arg;
        for (int64_t i = 0; i < n; ++i) arg.emplace_back(pick(0, 2), pick(0, 3));
        st = st.pad(arg);
        break;
      }
      case 1: { // shrink
        PadArg arg;
        for (int64_t i = 0; i < n; ++i) {
          int64_t d = cur[i].asInt(), b = pick(0, d - 1);
          arg.emplace_back(b, pick(b + 1, d));
        }
        st = st.shrink(arg);
        break;
      }
      case 2: { // reshape: merge two adjacent axes or split one
        Shape next = cur;
        int64_t i = pick(0, n - 1);
        int64_t d = cur[i].asInt();
        std::vector<int64_t> divisors;
        for (int64_t f = 2; f < d; ++f)
          if (d % f == 0) divisors.push_back(f);
        if (!divisors.empty() && pick(0, 1)) {
          int64_t f = divisors[pick(0, static_cast<int64_t>(divisors.size()) - 1)];
          next[i] = d / f;
          next.insert(next.begin() + i + 1, f);
        } else if (i + 1 < n) {
          next[i] = d * cur[i + 1].asInt();
          next.erase(next.begin() + i + 1);
        }
        st = st.reshape(next);
        break;
      }
      case 3: { // permute
        std::vector<int64_t> perm(n);
        for (int64_t i = 0; i < n; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng);
        st = st.permute(perm);
        break;
      }
      case 4: { // expand a size-1 axis
        Shape next = cur;
        for (auto &d : next)
          if (d.asInt() == 1 && total < 200) {
            d = pick(2, 3);
            break;
          }
        st = st.expand(next);
        break;
      }
      }
    }
    if (prodInt(st.shape()) > 6000) continue;
    CAPTURE(st.shape().size());
    Check c = checkExhaustively(st);
    CHECK(c.mismatches == 0);
    ++stacks;
    multiView += st.views.size() > 1;
    simplified += c.after.idx->key() != c.before.idx->key() || c.after.valid->key() != c.before.valid->key();
  }
  MESSAGE(stacks, " view stacks, ", multiView, " with several views, ", simplified, " simplified");
  CHECK(stacks > 400);
  CHECK(multiView > 40);
  CHECK(simplified > 10);
}
