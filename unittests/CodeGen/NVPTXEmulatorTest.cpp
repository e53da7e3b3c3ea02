// The GPU code path run on the host through the NVPTX emulator (NVPTXEmulator.h): the random
// differential programs and the GPU-scale programs of the CUDA device tests, built on "NVEMU"
// (GPU heuristics, NVPTX lowering, CUDA launch mapping) and compared with the interpreter. This is
// how the GPU backend's numerics are checked on machines without a GPU.
#include "HardRows.h"
#include "KernelTestUtil.h"
#include "NVPTXEmulator.h"
#include "Runtime/GPUPrograms.h"
#include "Runtime/RandomPrograms.h"
#include "lazyjit/Support/Config.h"

#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace lazyjit;

TEST_CASE("NVPTX emulator: 300 random programs give the same values as the interpreter") {
  testing::registerNVPTXEmulator();
  constexpr uint64_t kSeed = 0x1a2b3c4d2023ULL;
  auto res = randomprograms::compareWithInterpreter("NVEMU", kSeed, 300);
  MESSAGE("seed ", kSeed, ": ", res.checked, " programs, ", res.elements, " elements compared");
  CHECK(res.checked == 300);
}

TEST_CASE("NVPTX emulator: a second seed, 300 more programs") {
  testing::registerNVPTXEmulator();
  constexpr uint64_t kSeed = 0x600d5eedULL;
  auto res = randomprograms::compareWithInterpreter("NVEMU", kSeed, 300);
  CHECK(res.checked == 300);
}

TEST_CASE("NVPTX emulator: GPU-scale elementwise kernels match the interpreter") {
  testing::registerNVPTXEmulator();
  for (const auto &c : gpuprograms::elementwiseCases()) gpuprograms::checkAgainstInterpreter("NVEMU", c);
  CHECK(testing::nvptxEmulatorStats().vectorLoads > 0);
}

TEST_CASE("NVPTX emulator: GPU-scale reductions match the interpreter") {
  testing::registerNVPTXEmulator();
  int before = testing::nvptxEmulatorStats().barrierLaunches;
  for (const auto &c : gpuprograms::reductionCases()) gpuprograms::checkAgainstInterpreter("NVEMU", c);
  // the grouped reductions really ran through shared memory and the barrier
  CHECK(testing::nvptxEmulatorStats().barrierLaunches > before);
}

TEST_CASE("NVPTX emulator: without kernel optimizations (no locals, merged grids) the programs match too") {
  testing::registerNVPTXEmulator();
  Config cfg = config();
  cfg.noopt = true;
  ScopedConfig scope(cfg);
  for (const auto &c : gpuprograms::elementwiseCases()) gpuprograms::checkAgainstInterpreter("NVEMU", c);
  for (const auto &c : gpuprograms::reductionCases()) gpuprograms::checkAgainstInterpreter("NVEMU", c);
}

TEST_CASE("NVPTX emulator: math matches the interpreter and keeps the IEEE special values") {
  testing::registerNVPTXEmulator();
  for (DType dt : {dtypes::float32, dtypes::float64, dtypes::float16}) gpuprograms::checkSpecialValues("NVEMU", dt);
  for (const auto &c : gpuprograms::mathCases()) gpuprograms::checkAgainstInterpreter("NVEMU", c);
}

TEST_CASE("NVPTX emulator: a symbolic shape runs for several values with one kernel") {
  testing::registerNVPTXEmulator();
  auto run = [&](int64_t v, const std::string &d) {
    Tensor a = gpuprograms::input({4, 1024}, d).shrink({SIntPair(0, 4), SIntPair(0, SInt(variable("n", 1, 1024)->bind(v)))});
    return (a * 3.0).sum(std::vector<int64_t>{1}) + a.max(std::vector<int64_t>{1});
  };
  run(100, "NVEMU").toVector<double>();
  int kernels = testing::nvptxEmulatorStats().kernels;
  for (int64_t v : {1, 37, 100, 1024}) {
    CAPTURE(v);
    std::vector<double> got = run(v, "NVEMU").toVector<double>(), want = run(v, "INTERP").toVector<double>();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4));
  }
  CHECK(testing::nvptxEmulatorStats().kernels == kernels);
}

TEST_CASE("NVPTX emulator: row kernels (OPT=5, a block per row) match the interpreter") {
  testing::registerNVPTXEmulator();
  testing::AtOpt opt5(5);
  int before = testing::nvptxEmulatorStats().barrierLaunches;
  gpuprograms::checkRowCases("NVEMU");
  // the rows' threads combined their partials through shared memory behind barriers
  CHECK(testing::nvptxEmulatorStats().barrierLaunches > before);
}

TEST_CASE("NVPTX emulator: 120 random programs with row operations at OPT=5 give OPT=2's values") {
  testing::registerNVPTXEmulator();
  randomprograms::compareRowPrograms("NVEMU", 0x90e70005ULL, 120);
}

TEST_CASE("NVPTX emulator: 40 + 40 random programs with rows of up to 600 elements at OPT=5") {
  // rows longer than a warp: blocks of 64-256 threads, several steps per thread, unrolled passes
  // (rows a multiple of the block) and uneven rows; scheduled as CUDA is (NVEMU) and as the CPU is
  // (NVEMUR: a row op followed by a sum over the rows is one kernel, a block per output element)
  testing::registerNVPTXEmulator();
  randomprograms::compareRowPrograms("NVEMU", 0x10e6707ULL, 40, 600);
  randomprograms::compareRowPrograms("NVEMUR", 0x10e6706ULL, 40, 600);
}

TEST_CASE("NVPTX emulator: without kernel optimizations a row kernel runs one thread per row") {
  testing::registerNVPTXEmulator();
  testing::AtOpt opt5(5, /*noopt=*/true);
  int before = testing::nvptxEmulatorStats().barrierLaunches;
  gpuprograms::checkRowCases("NVEMU");
  CHECK(testing::nvptxEmulatorStats().barrierLaunches == before);
}

TEST_CASE("NVPTX emulator: a reduce of rows runs a block per output element where the schedule forms it") {
  // CUDA's schedule (NVEMU's) keeps the sum over the batch a kernel of its own; NVEMUR is scheduled
  // as the CPU is, so its loss is one kernel whose block loops over the rows
  testing::registerNVPTXEmulator();
  testing::AtOpt opt5(5);
  for (const auto &rc : gpuprograms::rowReduceCases()) {
    CAPTURE(rc.name);
    CHECK(testing::kernelCount(rc.build("NVEMUR")) < testing::kernelCount(rc.build("NVEMU")));
    gpuprograms::checkAgainstInterpreter("NVEMUR", rc);
  }
}

TEST_CASE("NVPTX emulator: layernorm and var at OPT=5 keep Welford moments per thread, as exact as the interpreter") {
  // a block per row: each thread's Welford moments of its elements (uneven counts when the row does
  // not divide among the threads), merged by Chan's formula through shared memory; on rows built to
  // break one-pass formulas (HardRows.h), against the closed form in double precision
  testing::registerNVPTXEmulator();
  testing::AtOpt opt5(5);
  // (1000 and 37: uneven rows, threads past the end with no element; 9216: 36 steps per thread,
  // every thread the same, looped)
  for (int64_t cols : {int64_t(1000), int64_t(37), int64_t(9216)}) {
    CAPTURE(cols);
    std::vector<float> x = testing::hardRows(cols);
    int64_t rows = static_cast<int64_t>(x.size()) / cols;
    std::vector<double> ln = testing::layernormExact(x, rows, cols, 1e-5), var = testing::varianceExact(x, rows, cols);
    auto on = [&](const std::string &dev) { return Tensor::fromVector(x, {rows, cols}, dev); };
    {
      TargetSpec gpu = TargetSpec::nvptx("sm_90", 2);
      Kernel k = buildKernel(testing::lastKernel(on("NVEMU").layernorm()), gpu, CompileOptions{});
      REQUIRE(k.rowMoments.size() == 1);
      // (var is the kernel's own reduce over the row: a kernel where the device is scheduled as
      // the CPU is, NVEMUR; CUDA's schedule keeps the mean's kernel apart)
      Kernel kv = buildKernel(testing::lastKernel(on("NVEMUR").var(std::vector<int64_t>{-1})), gpu, CompileOptions{});
      REQUIRE(kv.rowMoments.size() == 1);
      CHECK(kv.rowMoments[0].reduce == kv.reduceop);
    }
    std::vector<float> gpu = on("NVEMU").layernorm().template toVector<float>(), ref = on("INTERP").layernorm().toVector<float>();
    std::vector<float> gpuVar = on("NVEMUR").var(std::vector<int64_t>{-1}).toVector<float>();
    std::vector<float> refVar = on("INTERP").var(std::vector<int64_t>{-1}).toVector<float>();
    for (int64_t r = 0; r < rows; ++r) {
      CAPTURE(r);
      // differences within the row, (x_j - x_0) * rstd: the variance's error, without the mean's
      // rounding (the same offset in every element, which the tree's and the interpreter's sums
      // round differently: 1.5e-3 and 1.7e-4 on the row of 1e4 + U(-1, 1))
      double errGpu = 0, errRef = 0;
      size_t r0 = static_cast<size_t>(r * cols);
      for (int64_t c = 0; c < cols; ++c) {
        size_t i = r0 + static_cast<size_t>(c);
        errGpu = std::max(errGpu, std::fabs((gpu[i] - gpu[r0]) - (ln[i] - ln[r0])));
        errRef = std::max(errRef, std::fabs((ref[i] - ref[r0]) - (ln[i] - ln[r0])));
      }
      CHECK(errGpu <= std::max(2 * errRef, 1e-5));
      double v = var[static_cast<size_t>(r)];
      CHECK(std::fabs(gpuVar[static_cast<size_t>(r)] - v) <=
            std::max(2 * std::fabs(refVar[static_cast<size_t>(r)] - v), 1e-6 * std::max(1.0, v)));
    }
  }
}

TEST_CASE("NVPTX emulator: a row held in registers keeps its variance pass") {
  // 256 elements on 256 threads, one each: the passes are unrolled and read the row from
  // registers, where a pass costs less than a division per element and a wider tree
  testing::registerNVPTXEmulator();
  testing::AtOpt opt5(5);
  Tensor x = Tensor::fromVector(testing::hardRows(256), {6, 256}, std::string("NVEMU"));
  Kernel k = buildKernel(testing::lastKernel(x.layernorm()), TargetSpec::nvptx("sm_90", 2), CompileOptions{});
  CHECK(k.rowThreads == 256);
  CHECK(k.rowMoments.empty());
  Kernel cpu = buildKernel(testing::lastKernel(x.layernorm()), TargetSpec::host(), CompileOptions{});
  CHECK(cpu.rowMoments.size() == 1); // (the CPU folds it)
}
