// Unary math and activation functions against closed forms in double, over each function's domain,
// in every float dtype, on shapes 0-d, 0-size, 1 and odd, with non-contiguous inputs; plus the ops
// that are meaningful on integers, and the special values (inf, nan, domain edges).
#include "TensorTestUtil.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

struct UnaryCase {
  const char *name;
  std::function<Tensor(const Tensor &)> op;
  std::function<double(double)> host;
  double lo, hi;  // input domain
  double f32Rtol; // float32 relative tolerance (absolute tolerance is 1e-6 for float32)
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double softplus(double x, double beta = 1) { return std::log1p(std::exp(beta * x)) / beta; }
double relu6(double x) { return std::min(std::max(x, 0.0), 6.0); }
double geluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
}

const std::vector<UnaryCase> &unaryCases() {
  static const std::vector<UnaryCase> cases{
      {"neg", [](const Tensor &x) { return -x; }, [](double x) { return -x; }, -5, 5, 0},
      {"exp", [](const Tensor &x) { return x.exp(); }, [](double x) { return std::exp(x); }, -6, 6,
       1e-5},
      {"exp2", [](const Tensor &x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -6,
       6, 1e-5},
      {"log", [](const Tensor &x) { return x.log(); }, [](double x) { return std::log(x); }, 0.01,
       50, 1e-5},
      {"log2", [](const Tensor &x) { return x.log2(); }, [](double x) { return std::log2(x); },
       0.01, 50, 1e-5},
      {"sqrt", [](const Tensor &x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0,
       20, 1e-6},
      {"rsqrt", [](const Tensor &x) { return x.rsqrt(); },
       [](double x) { return 1 / std::sqrt(x); }, 0.05, 20, 1e-6},
      {"sin", [](const Tensor &x) { return x.sin(); }, [](double x) { return std::sin(x); }, -6.5,
       6.5, 1e-5},
      {"cos", [](const Tensor &x) { return x.cos(); }, [](double x) { return std::cos(x); }, -6.5,
       6.5, 1e-5},
      {"tan", [](const Tensor &x) { return x.tan(); }, [](double x) { return std::tan(x); }, -1.2,
       1.2, 1e-5},
      {"relu", [](const Tensor &x) { return x.relu(); }, [](double x) { return std::max(x, 0.0); },
       -3, 3, 0},
      {"sigmoid", [](const Tensor &x) { return x.sigmoid(); }, sigmoid, -8, 8, 1e-5},
      {"tanh", [](const Tensor &x) { return x.tanh(); }, [](double x) { return std::tanh(x); }, -4,
       4, 1e-5},
      {"gelu", [](const Tensor &x) { return x.gelu(); }, geluTanh, -4, 4, 1e-5},
      {"quickGelu", [](const Tensor &x) { return x.quickGelu(); },
       [](double x) { return x * sigmoid(1.702 * x); }, -4, 4, 1e-5},
      {"silu", [](const Tensor &x) { return x.silu(); }, [](double x) { return x * sigmoid(x); },
       -5, 5, 1e-5},
      {"swish", [](const Tensor &x) { return x.swish(); }, [](double x) { return x * sigmoid(x); },
       -5, 5, 1e-5},
      {"elu", [](const Tensor &x) { return x.elu(); },
       [](double x) { return x > 0 ? x : std::expm1(x); }, -4, 4, 1e-5},
      {"elu(0.5)", [](const Tensor &x) { return x.elu(0.5); },
       [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }, -4, 4, 1e-5},
      {"celu", [](const Tensor &x) { return x.celu(); },
       [](double x) { return std::max(x, 0.0) + std::min(0.0, std::expm1(x)); }, -4, 4, 1e-5},
      {"celu(2)", [](const Tensor &x) { return x.celu(2); },
       [](double x) { return std::max(x, 0.0) + std::min(0.0, 2 * std::expm1(x / 2)); }, -4, 4,
       1e-5},
      {"leakyrelu", [](const Tensor &x) { return x.leakyrelu(); },
       [](double x) { return x > 0 ? x : 0.01 * x; }, -4, 4, 1e-6},
      {"leakyrelu(0.2)", [](const Tensor &x) { return x.leakyrelu(0.2); },
       [](double x) { return x > 0 ? x : 0.2 * x; }, -4, 4, 1e-6},
      {"softplus", [](const Tensor &x) { return x.softplus(); },
       [](double x) { return softplus(x); }, -6, 6, 1e-5},
      {"softplus(2)", [](const Tensor &x) { return x.softplus(2); },
       [](double x) { return softplus(x, 2); }, -3, 3, 1e-5},
      {"mish", [](const Tensor &x) { return x.mish(); },
       [](double x) { return x * std::tanh(softplus(x)); }, -4, 4, 1e-5},
      {"softsign", [](const Tensor &x) { return x.softsign(); },
       [](double x) { return x / (1 + std::fabs(x)); }, -5, 5, 1e-6},
      {"relu6", [](const Tensor &x) { return x.relu6(); }, relu6, -3, 9, 0},
      {"erf", [](const Tensor &x) { return x.erf(); }, [](double x) { return std::erf(x); }, -4, 4,
       1e-5},
      {"hardsigmoid", [](const Tensor &x) { return x.hardsigmoid(); },
       [](double x) { return std::min(1.0, std::max(0.0, x / 6 + 0.5)); }, -5, 5, 1e-6},
      {"hardsigmoid(0.2,0.5)", [](const Tensor &x) { return x.hardsigmoid(0.2, 0.5); },
       [](double x) { return std::min(1.0, std::max(0.0, 0.2 * x + 0.5)); }, -5, 5, 1e-6},
      {"hardswish", [](const Tensor &x) { return x.hardswish(); },
       [](double x) { return x * relu6(x + 3) / 6; }, -5, 5, 1e-6},
      {"hardtanh", [](const Tensor &x) { return x.hardtanh(); },
       [](double x) { return std::clamp(x, -1.0, 1.0); }, -3, 3, 0},
      {"hardtanh(-2, 0.5)", [](const Tensor &x) { return x.hardtanh(-2, 0.5); },
       [](double x) { return std::clamp(x, -2.0, 0.5); }, -3, 3, 0},
      {"abs", [](const Tensor &x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -5, 5,
       0},
      {"sign", [](const Tensor &x) { return x.sign(); },
       [](double x) { return double((x > 0) - (x < 0)); }, -5, 5, 0},
      {"reciprocal", [](const Tensor &x) { return x.reciprocal(); }, [](double x) { return 1 / x; },
       0.1, 9, 1e-6},
      {"clip", [](const Tensor &x) { return x.clip(-1.5, 0.25); },
       [](double x) { return std::clamp(x, -1.5, 0.25); }, -3, 3, 0},
      {"trunc", [](const Tensor &x) { return x.trunc(); }, [](double x) { return std::trunc(x); },
       -9, 9, 0},
      {"ceil", [](const Tensor &x) { return x.ceil(); }, [](double x) { return std::ceil(x); }, -9,
       9, 0},
      {"floor", [](const Tensor &x) { return x.floor(); }, [](double x) { return std::floor(x); },
       -9, 9, 0},
      {"square", [](const Tensor &x) { return x.square(); }, [](double x) { return x * x; }, -5, 5,
       1e-7},
      {"sinh", [](const Tensor &x) { return x.sinh(); }, [](double x) { return std::sinh(x); }, -4,
       4, 1e-5},
      {"cosh", [](const Tensor &x) { return x.cosh(); }, [](double x) { return std::cosh(x); }, -4,
       4, 1e-5},
      {"asinh", [](const Tensor &x) { return x.asinh(); }, [](double x) { return std::asinh(x); },
       -3, 3, 2e-5},
      {"acosh", [](const Tensor &x) { return x.acosh(); }, [](double x) { return std::acosh(x); },
       1, 6, 2e-5},
      {"atanh", [](const Tensor &x) { return x.atanh(); }, [](double x) { return std::atanh(x); },
       -0.95, 0.95, 2e-5},
  };
  return cases;
}

} // namespace

namespace {
bool oneOf(const char *name, std::initializer_list<const char *> names) {
  return std::any_of(names.begin(), names.end(),
                     [&](const char *n) { return std::string(n) == name; });
}

// float16/bfloat16 compute in float32 but their constants (1/ln 2, pi/2, ...) are rounded to the
// dtype as in the reference, so they get a few of their ulps.
Tol unaryTol(const UnaryCase &c, DType dt) {
  if (dt == dtypes::float64) return {1e-11, 1e-12};
  if (dt == dtypes::float16 || dt == dtypes::bfloat16) return {epsOf(dt) * 4, epsOf(dt) * 4};
  return {std::max(c.f32Rtol, 1e-7), 1e-6};
}

void checkUnary(const UnaryCase &c, DType dt, const Ints &shape, Layout l, uint64_t seed) {
  CAPTURE(dt.name());
  CAPTURE(fmtInts(shape));
  CAPTURE(std::string(layoutName(l)));
  Vals x = storeAll(randVals(static_cast<size_t>(numelOf(shape)), seed, c.lo, c.hi), dt);
  Vals expected = storeAll(hostMap(x, c.host), dt);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor out = c.op(makeView(l, x, shape, dev, dt));
    expectDType(out, dt);
    expectValues(out, shape, expected, unaryTol(c, dt));
  }
}
} // namespace

// Every function runs in float32 and float64 on an odd 2-d shape. The functions that lower to
// distinct primitives (exp2, log2, sin, sqrt, reciprocal, max, compare/where, casts) or compose
// them in a new way also run in float16/bfloat16, on 0-d, size-1, 0-size and 3-d shapes, and on
// permuted, flipped and sliced views. Each distinct kernel is compiled by the CPU backend, so the
// matrix is not taken in full for every function.
TEST_CASE("Tensor unary: every function matches its closed form") {
  const auto primitive = {"neg",  "exp",   "exp2",  "log",        "log2", "sqrt",    "rsqrt",
                          "sin",  "cos",   "relu",  "sigmoid",    "tanh", "gelu",    "abs",
                          "sign", "trunc", "floor", "reciprocal", "clip", "softplus"};
  const auto layouts = {"exp", "sigmoid", "gelu", "trunc", "abs", "sin", "log"};
  for (const UnaryCase &c : unaryCases()) {
    CAPTURE(std::string(c.name));
    checkUnary(c, dtypes::float32, {3, 7}, Layout::Contiguous, 100);
    checkUnary(c, dtypes::float64, {3, 7}, Layout::Contiguous, 101);
    if (oneOf(c.name, primitive)) {
      checkUnary(c, dtypes::float16, {3, 7}, Layout::Contiguous, 102);
      checkUnary(c, dtypes::bfloat16, {3, 7}, Layout::Contiguous, 103);
    }
    if (oneOf(c.name, layouts)) {
      for (Layout l : {Layout::Permuted, Layout::Flipped, Layout::Sliced})
        checkUnary(c, dtypes::float32, {3, 7}, l, 104);
      checkUnary(c, dtypes::float32, {}, Layout::Contiguous, 105);
      checkUnary(c, dtypes::float32, {1}, Layout::Contiguous, 106);
      checkUnary(c, dtypes::float32, {0, 2}, Layout::Contiguous, 107);
      checkUnary(c, dtypes::float16, {2, 1, 5}, Layout::Permuted, 108);
    }
  }
}

TEST_CASE("Tensor unary: special values at the edges of each domain") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : {dtypes::float32, dtypes::float64}) {
      CAPTURE(dt.name());
      auto t = [&](const Vals &v) { return make(v, {static_cast<int64_t>(v.size())}, dev, dt); };
      expectExact(t({0, -1, kInf}).log(), {3}, {-kInf, kNaN, kInf});
      expectExact(t({0, -4}).log2(), {2}, {-kInf, kNaN});
      expectExact(t({0, -1, kInf}).sqrt(), {3}, {0, kNaN, kInf});
      expectExact(t({0}).rsqrt(), {1}, {kInf});
      expectExact(t({-kInf, kInf}).exp(), {2}, {0, kInf});
      expectExact(t({2000, -2000}).exp2(), {2}, {kInf, 0});
      expectExact(t({0}).reciprocal(), {1}, {kInf});
      expectExact(t({-kInf, kInf, -1000, 1000}).sigmoid(), {4}, {0, 1, 0, 1});
      expectExact(t({-kInf, kInf}).relu(), {2}, {0, kInf});
      expectExact(t({-kInf, kInf}).tanh(), {2}, {-1, 1});
      expectExact(t({0, 0, 0}).sign(), {3}, {0, 0, 0});
      expectValues(t({1, -1}).atanh(), {2}, {kInf, -kInf});
      expectValues(t({0.5}).acosh(), {1}, {kNaN});
      // large inputs stay finite where the function is
      expectValues(t({50, -50}).softplus(), {2}, {50, std::log1p(std::exp(-50.0))}, {1e-5, 1e-6});
      expectValues(t({30, -30}).gelu(), {2}, {30, 0}, {1e-6, 1e-6});
    }
    // nan propagates through the elementwise math
    Tensor nan = make({kNaN}, {1}, dev);
    std::vector<std::function<Tensor(const Tensor &)>> fns{
        [](auto &x) { return x.exp(); },    [](auto &x) { return x.sqrt(); },
        [](auto &x) { return x.sin(); },    [](auto &x) { return -x; },
        [](auto &x) { return x.square(); }, [](auto &x) { return x.log(); }};
    for (const auto &f : fns) expectExact(f(nan), {1}, {kNaN});
  }
}

TEST_CASE("Tensor unary: integer inputs for neg, abs, relu, sign, square, clip") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals v{-100, -7, -1, 0, 1, 5, 100};
    for (DType dt : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64}) {
      CAPTURE(dt.name());
      for (Layout l : {Layout::Contiguous, Layout::Flipped, Layout::Sliced}) {
        CAPTURE(std::string(layoutName(l)));
        Tensor x = makeView(l, v, {7}, dev, dt);
        expectDType(-x, dt);
        expectExact(-x, {7}, hostMap(v, [](double a) { return -a; }));
        expectExact(x.abs(), {7}, hostMap(v, [](double a) { return std::fabs(a); }));
        expectExact(x.relu(), {7}, hostMap(v, [](double a) { return std::max(a, 0.0); }));
        expectExact(x.sign(), {7}, hostMap(v, [](double a) { return double((a > 0) - (a < 0)); }));
        expectDType(x.sign(), dt);
        expectExact(x.square(), {7}, storeAll(hostMap(v, [](double a) { return a * a; }), dt));
        expectExact(x.clip(-5, 3), {7},
                    hostMap(v, [](double a) { return std::clamp(a, -5.0, 3.0); }));
      }
    }
    // unsigned: neg wraps; relu, clip and square work
    Tensor u = make({0, 1, 200}, {3}, dev, dtypes::uint8);
    expectExact(-u, {3}, {0, 255, 56});
    expectExact(u.relu(), {3}, {0, 1, 200});
    expectExact(u.clip(1, 100), {3}, {1, 1, 100});
    expectExact(u.square(), {3}, {0, 1, 64});
  }
}

TEST_CASE("Tensor unary: trunc, ceil and floor on exact integers, halves and negative zero") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : floatDTypes()) {
      CAPTURE(dt.name());
      Vals v{-2.5, -2, -1.5, -0.5, 0, 0.5, 1, 1.5, 2.75, 1000};
      Tensor x = make(v, {10}, dev, dt);
      expectExact(x.trunc(), {10}, hostMap(v, [](double a) { return std::trunc(a); }));
      expectExact(x.ceil(), {10}, hostMap(v, [](double a) { return std::ceil(a); }));
      expectExact(x.floor(), {10}, hostMap(v, [](double a) { return std::floor(a); }));
      expectDType(x.floor(), dt);
    }
  }
}

TEST_CASE("Tensor unary: abs of unsigned and bool tensors is the identity") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // relu(x) + relu(-x) wrapped: the reference's abs(uint8 5) is 0 and abs(false) is true
    expectExact(make({0, 5, 255}, {3}, dev, dtypes::uint8).abs(), {3}, {0, 5, 255});
    expectExact(make({0, 70000}, {2}, dev, dtypes::uint32).abs(), {2}, {0, 70000});
    expectExact(make({0, 1}, {2}, dev, dtypes::boolean).abs(), {2}, {0, 1});
  }
}
