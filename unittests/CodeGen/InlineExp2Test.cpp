// The float32 exp2 that CPU row kernels compute inline (inlineExp2F32, LowerCPUVector.cpp), in each
// of its three forms: the clamped polynomial with two-factor scaling (any target; its clamps keep a
// NaN, which no select restores at the end: NaNs of either sign are among the arguments), the same with
// vscalefps (AVX-512), and vrndscaleps/vreduceps/vscalefps without clamps (AVX-512 with DQ). Each is
// compiled for the host on 16 lanes and compared with the C library over a sweep of arguments, the
// ends of the float range and the IEEE special values. Forms the host cannot run are skipped with
// the reason.
#include "HostJit.h"
#include "LowerCPU.h"
#include "TestSkip.h"

#include <doctest/doctest.h>

#include <llvm/TargetParser/Host.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace lazyjit;

namespace {

using Fn = void (*)(const float *, float *);

// JIT-compiles `void f(const float *in, float *out)`: out[0..16) = exp2(in[0..16)) on one
// <16 x float>, in the given form.
class Exp2Form {
public:
  Exp2Form(bool avx512, bool dq) : jit("inline-exp2") {
    llvm::Module &m = jit.module();
    auto *ptr = llvm::PointerType::get(m.getContext(), 0);
    auto *f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(m.getContext()), {ptr, ptr}, false),
                                     llvm::GlobalValue::ExternalLinkage, "t_exp2", &m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(m.getContext(), "entry", f));
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), 16);
    llvm::Value *x = b.CreateAlignedLoad(vt, f->getArg(0), llvm::Align(4));
    b.CreateAlignedStore(inlineExp2F32(b, x, avx512, dq), f->getArg(1), llvm::Align(4));
    b.CreateRetVoid();
    jit.compile();
    fn = jit.lookup<Fn>("t_exp2");
  }
  std::vector<float> operator()(const std::vector<float> &xs) const {
    std::vector<float> out(xs.size());
    for (size_t i = 0; i < xs.size(); i += 16) {
      float in[16], res[16];
      for (size_t l = 0; l < 16; ++l) in[l] = i + l < xs.size() ? xs[i + l] : 0.0f;
      fn(in, res);
      for (size_t l = 0; l < 16 && i + l < xs.size(); ++l) out[i + l] = res[l];
    }
    return out;
  }

private:
  testing::HostJit jit;
  Fn fn;
};

bool hostHas(const char *feature) {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  auto it = features.find(feature);
  return it != features.end() && it->second;
}

// The arguments: a sweep over every exponent the result can have (from 0 through the subnormals to
// inf) at a step that is not a multiple of 1/2 (so rounding to the nearest k is exercised both
// ways), the halfway points themselves, the ends, and the special values.
std::vector<float> arguments() {
  std::vector<float> xs;
  for (int i = 0; i <= 40000; ++i) xs.push_back(-160.0f + 290.0f * static_cast<float>(i) / 40000.0f);
  for (int k = -160; k <= 130; ++k) {
    xs.push_back(static_cast<float>(k) + 0.5f);
    xs.push_back(static_cast<float>(k) - 0.5f);
  }
  float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 127.0f, 127.99f, 128.0f, 128.5f, -126.0f, -149.0f, -149.5f, -150.0f,
                  -151.0f, 1e30f, -1e30f, 3e38f, -3e38f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                  -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::signaling_NaN(),
                  8388608.5f, -8388609.0f})
    xs.push_back(v);
  return xs;
}

// Compares each result with exp2f: NaN for NaN, equal for infinite or zero results, else within
// 3e-7 relative plus one subnormal step (the polynomial's error, and the rounding of a subnormal).
void checkForm(const Exp2Form &form) {
  std::vector<float> xs = arguments(), got = form(xs);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    float want = std::exp2(xs[i]), g = got[i];
    CAPTURE(xs[i]);
    if (std::isnan(want)) {
      CHECK(std::isnan(g));
      continue;
    }
    if (std::isinf(want) || want == 0.0f) {
      CHECK(g == want);
      continue;
    }
    double err = std::fabs(static_cast<double>(g) - want);
    double tol = 3e-7 * std::fabs(static_cast<double>(want)) + std::numeric_limits<float>::denorm_min();
    if (err > tol) FAIL_CHECK("exp2(", xs[i], ") = ", g, ", the C library says ", want);
    if (std::fabs(want) >= std::numeric_limits<float>::min()) worst = std::max(worst, err / std::fabs(want));
  }
  MESSAGE("worst relative error over normal results: ", worst);
}

} // namespace

TEST_CASE("Inline exp2: the clamped polynomial with two-factor scaling matches the C library") {
  checkForm(Exp2Form(false, false));
}

TEST_CASE("Inline exp2: vscalefps (AVX-512) matches the C library" * doctest::test_suite("avx512")) {
  if (!hostHas("avx512f")) {
    test::skip("this host has no AVX-512F to run vscalefps");
    return;
  }
  checkForm(Exp2Form(true, false));
}

TEST_CASE("Inline exp2: vreduceps and vscalefps without clamps (AVX-512 DQ) match the C library" * doctest::test_suite("avx512")) {
  if (!hostHas("avx512f") || !hostHas("avx512dq")) {
    test::skip("this host has no AVX-512F and DQ to run vreduceps and vscalefps");
    return;
  }
  checkForm(Exp2Form(true, true));
}
