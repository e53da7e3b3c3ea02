// An element-wise kernel writes its output over an input that dies with it (Realize.cpp,
// inPlaceInputs): only when nothing else can read that input again (no tensor, view, graph node or
// later kernel), only on a device whose kernels allow it (the CPU), and never when the input is
// read at other addresses than the output's. Values are checked against closed forms computed here.
#include "TensorTestUtil.h"

#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Jit.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {
const void *storage(const Tensor &t) { return t.lazydata()->realized()->ptr(); }

Vals iota(int64_t n, double scale) {
  Vals v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i % 97) * scale - 1.5;
  return v;
}

void checkNear(const std::vector<float> &got, const Vals &want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }
}

/// Softmax of rows x cols values against its closed form (the row's max subtracted, in double).
void checkSoftmax(const std::vector<float> &got, const Vals &xs, int64_t rows, int64_t cols) {
  REQUIRE(got.size() == xs.size());
  for (int64_t r = 0; r < rows; ++r) {
    auto at = [&](int64_t c) { return static_cast<size_t>(r * cols + c); };
    double m = -kInf, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, xs[at(c)]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xs[at(c)] - m);
    for (int64_t c = 0; c < cols; ++c) {
      CAPTURE(r);
      CAPTURE(c);
      CHECK(got[at(c)] == doctest::Approx(std::exp(xs[at(c)] - m) / s).epsilon(1e-5));
    }
  }
}

/// The reference's four softmax kernels, whatever OPT the tests run with.
Config atOpt2() {
  Config c = config();
  c.opt = 2;
  return c;
}

/// The storage of every item's output, in the order the items ran.
struct Outputs {
  Outputs() {
    setScheduleObserver([this](const ScheduleItem &si, const Program *) { ptrs.push_back(si.out->realized()->ptr()); });
  }
  ~Outputs() { setScheduleObserver(nullptr); }
  std::vector<const void *> ptrs;
};
} // namespace

TEST_CASE("In place: a kernel writes over an input that nothing else holds, and over no other") {
  const int64_t n = 64 * 48;
  Vals xs = iota(n, 0.25);
  Vals twice(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) twice[i] = std::max(xs[i] * 2 + 1, 0.0);

  SUBCASE("the input's last holder is the kernel: its storage becomes the output's") {
    Tensor y;
    const void *in = nullptr;
    {
      Tensor a = Tensor::fromValues(xs, {64, 48}, {std::nullopt, "CPU"});
      a.realize();
      in = storage(a);
      y = (a * 2 + 1).relu();
    }
    y.realize();
    CHECK(storage(y) == in);
    checkNear(y.toVector<float>(), twice);
  }
  SUBCASE("a tensor still holds the input: a new buffer, and the input keeps its values") {
    Tensor a = Tensor::fromValues(xs, {64, 48}, {std::nullopt, "CPU"});
    a.realize();
    Tensor y = (a * 2 + 1).relu();
    y.realize();
    CHECK(storage(y) != storage(a));
    checkNear(y.toVector<float>(), twice);
    checkNear(a.toVector<float>(), xs);
  }
  SUBCASE("a view of the input is alive: it still reads the input's values") {
    Tensor y, v;
    {
      Tensor a = Tensor::fromValues(xs, {64, 48}, {std::nullopt, "CPU"});
      a.realize();
      v = a.reshape({48, 64});
      y = (a * 2 + 1).relu();
    }
    y.realize();
    checkNear(y.toVector<float>(), twice);
    checkNear(v.toVector<float>(), xs);
  }
  SUBCASE("the input is also read transposed: a new buffer") {
    Tensor y;
    const void *in = nullptr;
    {
      Tensor a = Tensor::fromValues(Vals(xs.begin(), xs.begin() + 48 * 48), {48, 48}, {std::nullopt, "CPU"});
      a.realize();
      in = storage(a);
      y = a + a.transpose(0, 1);
    }
    y.realize();
    CHECK(storage(y) != in);
    std::vector<float> got = y.toVector<float>();
    for (int64_t i = 0; i < 48; ++i)
      for (int64_t j = 0; j < 48; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        CHECK(got[static_cast<size_t>(i * 48 + j)] ==
              doctest::Approx(xs[static_cast<size_t>(i * 48 + j)] + xs[static_cast<size_t>(j * 48 + i)]));
      }
  }
  SUBCASE("LAZYJIT_REUSE_INPUTS=0 and the interpreter write a new buffer") {
    for (const char *dev : {"CPU", "INTERP"}) {
      CAPTURE(dev);
      Config c = config();
      c.reuseInputs = std::string(dev) != "CPU";
      ScopedConfig scoped(c);
      Tensor y;
      const void *in = nullptr;
      {
        Tensor a = Tensor::fromValues(xs, {64, 48}, {std::nullopt, dev});
        a.realize();
        in = storage(a);
        y = (a * 2 + 1).relu();
      }
      y.realize();
      CHECK(storage(y) != in);
      checkNear(y.toVector<float>(), twice);
    }
  }
}

TEST_CASE("In place: softmax at OPT=2 divides over its own exponentials, which no one else reads") {
  // max, exp(x - max), sum, exp / sum: the fourth kernel's output takes the second's storage
  ScopedConfig opt2(atOpt2());
  const int64_t rows = 32, cols = 200;
  Vals xs = iota(rows * cols, 0.05);
  Tensor x = Tensor::fromValues(xs, {rows, cols}, {std::nullopt, "CPU"});
  x.realize();
  Tensor y = x.softmax();
  Outputs outs;
  y.realize();
  REQUIRE(outs.ptrs.size() == 4);
  CHECK(outs.ptrs[3] == outs.ptrs[1]);
  CHECK(outs.ptrs[1] != storage(x));
  checkSoftmax(y.toVector<float>(), xs, rows, cols);
  checkNear(x.toVector<float>(), xs);
}

TEST_CASE("In place: a Jit over softmax gives the function's values on every call and replay") {
  // the plain calls write the division over the exponentials; the capture holds every buffer it
  // records, so no captured kernel writes over an input the replay reads again
  ScopedConfig opt2(atOpt2());
  const int64_t rows = 16, cols = 96;
  Jit jit([](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0].softmax()}; });
  for (int call = 0; call < 5; ++call) {
    CAPTURE(call);
    Vals xs = iota(rows * cols, 0.03 * (call + 1));
    Tensor x = Tensor::fromValues(xs, {rows, cols}, {std::nullopt, "CPU"});
    x.realize();
    int64_t inPlace = globalCounters().inPlaceCount;
    std::vector<float> got = jit({x})[0].toVector<float>();
    if (call == 0) CHECK(globalCounters().inPlaceCount == inPlace + 1);
    checkSoftmax(got, xs, rows, cols);
  }
  CHECK(jit.captured());
}
