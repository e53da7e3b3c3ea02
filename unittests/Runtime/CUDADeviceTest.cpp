// The CUDA device: architecture selection (runs everywhere), and on a machine with a GPU the
// device itself: copies, kernels at GPU scale against the interpreter (grouped reductions, row
// softmax and layernorm, matvec, matmul, padding, symbolic shapes reused without recompiling),
// IEEE special values of the math, out-of-memory messages and device names. The GPU tests are the
// doctest suite "cuda", run as the CTest entry RuntimeTests-cuda: without a GPU each says why it
// is skipped (test::skip) and CTest reports the entry as skipped; the "no device" test, in the
// main entry, then checks that reason instead.
#include "GPUPrograms.h"
#include "KernelTestUtil.h"
#include "TestSkip.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/CUDADevice.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

using namespace lazyjit;
using gpuprograms::input;

namespace {

bool haveCUDA() {
  std::string why;
  if (deviceAvailable("CUDA", &why)) return true;
  test::skip("no CUDA device: " + why);
  return false;
}

} // namespace

TEST_CASE("CUDA: PTX targets the GPU's compute capability, newest LLVM knows at most") {
  CHECK(cudaArchFor(9, 0) == "sm_90");
  CHECK(cudaArchFor(8, 0) == "sm_80");
  CHECK(cudaArchFor(8, 6) == "sm_86");
  CHECK(cudaArchFor(8, 9) == "sm_89");
  CHECK(cudaArchFor(8, 8) == "sm_87");  // not an LLVM processor: the newest older one
  CHECK(cudaArchFor(10, 0) == "sm_90"); // Blackwell: sm_90 PTX, JIT-compiled by the driver
  CHECK(cudaArchFor(12, 0) == "sm_90");
  CHECK(cudaArchFor(7, 5) == "sm_75");
  CHECK(cudaArchFor(9, 0, "sm_80") == "sm_80"); // CUDA_ARCH overrides
  CHECK_THROWS_WITH_AS(cudaArchFor(9, 0, "hopper"), doctest::Contains("CUDA_ARCH='hopper'"), Error);
  CHECK(cudaPtxFeaturesFor(12040) == "+ptx80");
  CHECK(cudaPtxFeaturesFor(13000) == "+ptx80");
  CHECK(cudaPtxFeaturesFor(11080) == "+ptx78");
  CHECK(cudaPtxFeaturesFor(11020) == "+ptx72");
}

TEST_CASE("CUDA: without a driver or a GPU, opening the device says which is missing") {
  std::string why;
  if (deviceAvailable("CUDA", &why)) {
    CUDADeviceInfo info = cudaDeviceInfo();
    MESSAGE("CUDA device present: ", info.name, " (compute capability ", info.major, ".", info.minor, ", PTX for ",
            info.arch, " ", info.ptxFeatures, ", driver ", info.driverVersion, ")");
    CHECK(info.major >= 3);
    CHECK(info.arch.rfind("sm_", 0) == 0);
    return;
  }
  MESSAGE("no CUDA device here: ", why);
  CHECK(why.rfind("CUDA: ", 0) == 0);
  bool named = why.find("libcuda.so.1") != std::string::npos || why.find("no CUDA device") != std::string::npos ||
               why.find("cuInit") != std::string::npos;
  CHECK_MESSAGE(named, "the reason does not say what is missing: ", why);
  // every later use reports the same reason, as a DeviceError
  CHECK_THROWS_WITH_AS(getDevice("CUDA"), doctest::Contains(why.c_str()), DeviceError);
  CHECK_THROWS_WITH_AS(Buffer("CUDA", 16, dtypes::float32), doctest::Contains(why.c_str()), DeviceError);
  CHECK_THROWS_WITH_AS(Tensor::ones({4}).to("CUDA").toVector<float>(), doctest::Contains(why.c_str()), DeviceError);
}

TEST_SUITE_BEGIN("cuda");

TEST_CASE("CUDA: a device that does not exist is named in the error") {
  if (!haveCUDA()) return;
  CHECK_THROWS_WITH_AS(getDevice("CUDA:4096"), doctest::Contains("there is no device CUDA:4096"), DeviceError);
}

TEST_CASE("CUDA: buffers copy to the device and back, directly and through the CPU") {
  if (!haveCUDA()) return;
  std::vector<float> host = {1, -2, 3.5f, 0, 1e30f, -1e-30f, 7, 8};
  Buffer dev("CUDA", 8, dtypes::float32);
  dev.copyIn(host.data(), host.size() * sizeof(float));
  std::vector<float> back(8);
  dev.copyOut(back.data(), back.size() * sizeof(float));
  CHECK(back == host);
  // CPU -> CUDA -> CPU through Tensor.to (COPY schedule items)
  Tensor t = Tensor::fromVector(host, {8});
  CHECK(t.to("CUDA").to("CPU").toVector<float>() == host);
  CHECK(t.to("CUDA").toVector<float>() == host);
  // CUDA -> CUDA (staged through the host)
  CHECK(t.to("CUDA").contiguous().toVector<float>() == host);
  // an empty tensor
  CHECK(Tensor::zeros({0, 3}, {dtypes::float32, "CUDA"}).toVector<float>().empty());
}

TEST_CASE("CUDA: elementwise kernels, broadcasting, padding and odd grids match the interpreter") {
  if (!haveCUDA()) return;
  for (const auto &c : gpuprograms::elementwiseCases()) gpuprograms::checkAgainstInterpreter("CUDA", c);
}

TEST_CASE("CUDA: reductions match the interpreter (grouped, row-wise, full, matvec, matmul)") {
  if (!haveCUDA()) return;
  for (const auto &c : gpuprograms::reductionCases()) gpuprograms::checkAgainstInterpreter("CUDA", c);
}

TEST_CASE("CUDA: row kernels (OPT=5, a block per row) match the interpreter") {
  if (!haveCUDA()) return;
  testing::AtOpt opt5(5);
  gpuprograms::checkRowCases("CUDA");
}

TEST_CASE("CUDA: math matches the interpreter and keeps the IEEE special values") {
  if (!haveCUDA()) return;
  for (DType dt : {dtypes::float32, dtypes::float64, dtypes::float16}) gpuprograms::checkSpecialValues("CUDA", dt);
  for (const auto &c : gpuprograms::mathCases()) gpuprograms::checkAgainstInterpreter("CUDA", c);
}

TEST_CASE("CUDA: a symbolic shape runs for several values with one compiled kernel") {
  if (!haveCUDA()) return;
  auto run = [&](int64_t v, const std::string &d) {
    Tensor a = input({4, 1024}, d).shrink({SIntPair(0, 4), SIntPair(0, SInt(variable("n", 1, 1024)->bind(v)))});
    return (a * 3.0).sum(std::vector<int64_t>{1});
  };
  std::vector<double> first = run(100, "CUDA").toVector<double>();
  int compiled = cudaCompileStats().compiled;
  for (int64_t v : {1, 37, 100, 1024}) {
    CAPTURE(v);
    std::vector<double> got = run(v, "CUDA").toVector<double>(), want = run(v, "INTERP").toVector<double>();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4));
  }
  CHECK(cudaCompileStats().compiled == compiled);
  CHECK(first.size() == 4);
}

TEST_CASE("CUDA: running out of device memory names the size and what is free") {
  if (!haveCUDA()) return;
  int64_t huge = int64_t(1) << 48; // 1 PiB of float32
  CHECK_THROWS_WITH_AS(Buffer("CUDA", huge, dtypes::float32), doctest::Contains("out of device memory allocating"),
                       DeviceError);
  CHECK_THROWS_WITH_AS(Buffer("CUDA", huge, dtypes::float32), doctest::Contains("are free"), DeviceError);
  // the device is still usable afterwards
  CHECK(Tensor::ones({4}, {dtypes::float32, "CUDA"}).sum().item<float>() == 4);
}

TEST_SUITE_END();
