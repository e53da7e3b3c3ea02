// The float64 math the NVPTX backend emits instead of libdevice (exp2, log2, sin as IR polynomials)
// is target-independent IR, so it is compiled for the host here and compared with the C library
// over a sweep of arguments and the IEEE special values. (The float32 paths use PTX instructions,
// ex2.approx and sqrt.rn, and the float64 helpers; they need a GPU to run.)
#include "HostJit.h"
#include "NVPTXMath.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace lazyjit;

namespace {

using Fn = double (*)(double);

// JIT-compiles `double f(double x) { return <op>(x); }` through NVPTXMath for the host.
class HostMath {
public:
  HostMath() : jit("nvptx-math") {
    llvm::Module &m = jit.module();
    llvm::LLVMContext &ctx = m.getContext();
    NVPTXMath math;
    for (auto [op, name] : {std::pair{Op::Exp2, "t_exp2"}, {Op::Log2, "t_log2"}, {Op::Sin, "t_sin"}}) {
      auto *d = llvm::Type::getDoubleTy(ctx);
      auto *f = llvm::Function::Create(llvm::FunctionType::get(d, {d}, false), llvm::GlobalValue::ExternalLinkage,
                                       name, &m);
      llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
      b.CreateRet(math.unary(b, op, f->getArg(0)));
    }
    jit.compile();
    exp2 = jit.lookup<Fn>("t_exp2");
    log2 = jit.lookup<Fn>("t_log2");
    sin = jit.lookup<Fn>("t_sin");
  }
  Fn exp2, log2, sin;

private:
  testing::HostJit jit;
};

HostMath &hostMath() {
  static HostMath m;
  return m;
}

// Relative error, with an absolute floor near zero (for sin at its zeros).
double relErr(double got, double want, double floor = 1e-300) {
  if (got == want) return 0;
  return std::fabs(got - want) / std::max(std::fabs(want), floor);
}

std::vector<double> sweep(double lo, double hi, int n) {
  std::vector<double> xs;
  for (int i = 0; i <= n; ++i) xs.push_back(lo + (hi - lo) * i / n);
  return xs;
}

} // namespace

TEST_CASE("NVPTX math: float64 exp2 matches the C library") {
  Fn f = hostMath().exp2;
  double worst = 0;
  for (double x : sweep(-1074.5, 1023.9, 20011)) worst = std::max(worst, relErr(f(x), std::exp2(x)));
  for (double x : sweep(-2, 2, 4001)) worst = std::max(worst, relErr(f(x), std::exp2(x)));
  CHECK(worst < 1e-14);
  CHECK(f(0) == 1);
  CHECK(f(10) == 1024);
  CHECK(f(-INFINITY) == 0);
  CHECK(f(INFINITY) == INFINITY);
  CHECK(f(1024) == INFINITY);
  CHECK(f(-1080) == 0);
  CHECK(std::isnan(f(NAN)));
  CHECK(f(-1070) == std::exp2(-1070.0)); // subnormal results
}

TEST_CASE("NVPTX math: float64 log2 matches the C library") {
  Fn f = hostMath().log2;
  double worst = 0;
  for (double x : sweep(1e-6, 4, 40001)) worst = std::max(worst, relErr(f(x), std::log2(x), 1e-12));
  for (double e : sweep(-1070, 1020, 2091)) {
    double x = std::exp2(e) * 1.2345;
    worst = std::max(worst, relErr(f(x), std::log2(x)));
  }
  CHECK(worst < 1e-14);
  CHECK(f(1) == 0);
  CHECK(f(8) == 3);
  CHECK(f(0) == -INFINITY);
  CHECK(f(-0.0) == -INFINITY);
  CHECK(f(INFINITY) == INFINITY);
  CHECK(std::isnan(f(-1)));
  CHECK(std::isnan(f(-INFINITY)));
  CHECK(std::isnan(f(NAN)));
  CHECK(relErr(f(std::numeric_limits<double>::denorm_min()), -1074) < 1e-15);
  CHECK(relErr(f(1 + 1e-10), std::log2(1 + 1e-10)) < 1e-12);
}

TEST_CASE("NVPTX math: float64 sin matches the C library") {
  Fn f = hostMath().sin;
  double worst = 0;
  // absolute error against an absolute scale of 1 (sin's range): what the differential tests need
  for (double x : sweep(-100, 100, 200001)) worst = std::max(worst, std::fabs(f(x) - std::sin(x)));
  for (double x : sweep(-1e6, 1e6, 20001)) worst = std::max(worst, std::fabs(f(x) - std::sin(x)));
  CHECK(worst < 1e-14);
  // relative accuracy near zero
  for (double x : {1e-300, 1e-20, 1e-8, -3e-5, 0.1, -0.7}) CHECK(relErr(f(x), std::sin(x)) < 1e-15);
  CHECK(f(0) == 0);
  CHECK(std::isnan(f(INFINITY)));
  CHECK(std::isnan(f(-INFINITY)));
  CHECK(std::isnan(f(NAN)));
}
