// Packed panels (Kernel::packDepth): a register-tiled reduce copies the input it reads along the
// vector axis (B of A @ B, the image of a convolution) into a per-thread array before the loops
// that reuse it; an input read across the vector axis (B of A @ B^T) is gathered into it; an input
// read one value per tile row a cache line or more apart per reduce step (A of A^T @ B) is copied
// whole into the launcher's scratch block first (Kernel::wholePacked). Each case checks that the
// kernel packs (or does not, where the panel would not fit or would not be reused) and that its
// values equal the unoptimized kernel's, with and without bounds checking.
#include "KernelRunner.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>

using namespace lazyjit;

namespace {

Tensor rnd(Shape s, uint64_t seed) {
  Tensor::manualSeed(seed);
  Tensor t = Tensor::rand(s).sub(0.5);
  t.realize();
  return t;
}

std::vector<double> run(const std::function<Tensor()> &build, bool noopt, bool bounds) {
  Config c = config();
  c.noopt = noopt;
  c.bounds = bounds;
  ScopedConfig scope(c);
  // (realized first: a cast fused into the kernel would make its output float64, another kernel
  // than the one lastKernel describes)
  Tensor t = build();
  t.realize();
  return t.cast(dtypes::float64).toVector<double>();
}

// The summary of the last kernel the tensor's schedule runs, as `lazyjit-dump --emit=kernel`
// prints it.
std::string lastKernel(const Tensor &t) {
  auto sched = schedule(t.lazydata());
  REQUIRE(sched.back().isKernel());
  return describeKernel(sched.back().ast, TargetSpec::host(), CompileOptions::from(config())).kernelSummary;
}

struct Case {
  const char *name;
  std::function<Tensor()> build;
  bool packs;
  const char *where = nullptr; // "packs buffers [i] before axis d", when it must be this
  const char *notWhere = nullptr; // what it must not say
  const char *where2 = nullptr;   // a second thing it must say
};

} // namespace

TEST_CASE("Packed panels: kernels that pack their panel compute what the unoptimized kernel does") {
  Tensor a = rnd({64, 160}, 1), b = rnd({160, 96}, 2), bias = rnd({96}, 3), cols25 = rnd({160, 25}, 4);
  Tensor big = rnd({3, 64, 160}, 5), big2 = rnd({3, 160, 64}, 20), img = rnd({2, 16, 10, 28}, 6), w = rnd({32, 16, 3, 3}, 7);
  Tensor g = rnd({160, 96}, 8), xt = rnd({160, 64}, 9), odd = rnd({40, 136}, 10), odd2 = rnd({136, 50}, 11);
  Tensor img20 = rnd({2, 8, 20, 36}, 16), w5 = rnd({64, 8, 5, 5}, 17);
  Tensor img256 = rnd({1, 256, 6, 12}, 33), w256 = rnd({32, 256, 3, 3}, 34);
  Tensor mlpX = rnd({256, 1024}, 35), mlpW = rnd({1024, 10}, 36);
  Tensor longK2 = rnd({32, 8192}, 23), cols25k = rnd({8192, 25}, 24), bias64 = rnd({64}, 25);
  Tensor shortA = rnd({64, 48}, 21), shortB = rnd({48, 96}, 22);
  Tensor lin = rnd({96, 160}, 18), lin25 = rnd({25, 160}, 19);
  Tensor a64 = a.cast(dtypes::float64), b64 = b.cast(dtypes::float64);
  a64.realize();
  b64.realize();
  Tensor longK = rnd({64, 4096}, 12), longKb = rnd({4096, 64}, 13), few = rnd({16, 160}, 14), sq = rnd({160, 64}, 15);
  // A^T @ B with A of 512 KiB or more: A is packed whole (Kernel::wholePacked)
  Tensor xtBig = rnd({512, 256}, 26), gBig = rnd({512, 256}, 27), linBig = rnd({256, 512}, 28);
  Tensor xtLong = rnd({4096, 64}, 29), gLong = rnd({4096, 256}, 30), xtOdd = rnd({520, 300}, 31), gOdd = rnd({520, 136}, 32);
  // small integers: the sums are exact in any order, and so are their float16 roundings
  Tensor xtInt = xtBig.mul(4).floor(), gInt = gBig.mul(4).floor();
  xtInt.realize();
  gInt.realize();
  Tensor g5 = rnd({512, 160}, 35), xtBatch = rnd({2, 512, 256}, 33), gBatch = rnd({2, 512, 256}, 34);
  // float16 buffers hold small integers too: float32 lanes sum them exactly in any order, so the
  // tiled kernels' half results equal NOOPT's bit for bit
  auto halfInts = [](const Tensor &t, DType dt = dtypes::float16) {
    Tensor h = t.mul(4).floor().cast(dt);
    h.realize();
    return h;
  };
  Tensor aH = halfInts(a), bH = halfInts(b), xtH = halfInts(xtBig), gH = halfInts(gBig), imgH = halfInts(img),
         wH = halfInts(w);
  Tensor aB = halfInts(a, dtypes::bfloat16), bB = halfInts(b, dtypes::bfloat16), xtB = halfInts(xtBig, dtypes::bfloat16),
         gB = halfInts(gBig, dtypes::bfloat16);
  // x @ I is x exactly in any order; times 1.37 it must round to float16 / bfloat16 in the vector
  // store as the scalar path rounds it (bfloat16: to nearest even by hand, LowerValues.cpp)
  Tensor aHalf = a.cast(dtypes::float16), aBf = a.cast(dtypes::bfloat16);
  Tensor eyeH = Tensor::eye(160).cast(dtypes::float16), eyeB = Tensor::eye(160).cast(dtypes::bfloat16);
  for (Tensor *t : {&aHalf, &aBf, &eyeH, &eyeB}) t->realize();
  // (0..3: sums of 4096 products pass 8192, where float16 holds multiples of 8 only)
  Tensor longKH = halfInts(longK.add(0.5)), longKbH = halfInts(longKb.add(0.5));
  std::vector<Case> cases = {
      // B (buffer 2) is packed once per column block (axis 0) and read by every row block
      {"matmul 64x160 @ 160x96", [&] { return a.matmul(b); }, true, "packs buffers [2] before axis 1"},
      {"matmul + bias + relu", [&] { return a.matmul(b).add(bias).relu(); }, true},
      {"matmul with 25 columns (a masked panel)", [&] { return a.matmul(cols25); }, true},
      {"odd matmul 40x136 @ 136x50", [&] { return odd.matmul(odd2); }, true},
      {"batched matmul: a panel per batch", [&] { return big.matmul(big2); }, true},
      {"A^T @ B (a weight gradient's layout)", [&] { return xt.transpose(0, 1).matmul(g); }, true},
      // A^T read by an 8-row tile is 32 bytes a row of A apart at every reduce step: A is copied
      // whole, in the order the reduce reads it, before the loops (split across the threads)
      // a cast the vector lanes cannot compute (to float16) leaves the tile without its vector
      // loop: nothing is copied, and the kernel still compiles and computes
      {"A^T @ B through a float16 cast: no vector loop, no copies",
       [&] { return xtInt.transpose(0, 1).matmul(gInt).cast(dtypes::float16).cast(dtypes::float32); }, false},
      {"A^T @ B read by 5 column blocks: not worth a whole copy", [&] { return xtBig.transpose(0, 1).matmul(g5); }, true,
       "packs buffers [2] before axis 1", "whole"},
      {"A^T @ B with A of 512 KiB: A packed whole", [&] { return xtBig.transpose(0, 1).matmul(gBig); }, true,
       "packs buffers [1] whole before the loops (512 KiB"},
      {"A^T @ B^T with A packed whole", [&] { return xtBig.transpose(0, 1).matmul(linBig.transpose(0, 1)); }, true,
       "whole before the loops"},
      {"A^T @ B with K = 4096: A whole, B in blocks of the reduce", [&] { return xtLong.transpose(0, 1).matmul(gLong); },
       true, "whole before the loops", nullptr, "in blocks of"},
      {"A^T @ B, 300 x 520 @ 520 x 136: 6-row tiles, masked columns", [&] { return xtOdd.transpose(0, 1).matmul(gOdd).relu(); },
       true, "whole before the loops"},
      {"batched A^T @ B: A's panel per batch element and row tile", [&] { return xtBatch.transpose(1, 2).matmul(gBatch); },
       true, "whole before the loops"},
      // B read across the vector axis: its lanes are gathered into the panel, once per column block
      {"A @ B^T (nn.Linear's x @ W.T): a gathered panel", [&] { return a.matmul(lin.transpose(0, 1)).add(bias).relu(); },
       true, "packs buffers [2] before axis 1"},
      {"A^T @ B^T", [&] { return xt.transpose(0, 1).matmul(lin.transpose(0, 1)); }, true},
      {"A @ B^T with 25 columns (gathered and masked)", [&] { return a.matmul(lin25.transpose(0, 1)); }, true},
      {"float64 matmul", [&] { return a64.matmul(b64); }, true},
      // float16 inputs: read as half vectors, computed and packed as float32 lanes (a panel of
      // float16 values takes float32's bytes: LowerValues.h)
      {"float16 matmul: B's panel holds float32 lanes", [&] { return aH.matmul(bH); }, true, "packs buffers [2] before axis 1"},
      {"float16 A^T @ B: A packed whole as float32 (512 KiB of scratch for 256 KiB of half)",
       [&] { return xtH.transpose(0, 1).matmul(gH); }, true, "packs buffers [1] whole before the loops (512 KiB"},
      {"float16 conv2d 3x3 pad 1", [&] { return imgH.conv2d(wH, std::nullopt, 1, {1}, {1}, {1}); }, true},
      {"bfloat16 matmul", [&] { return aB.matmul(bB); }, true, "packs buffers [2] before axis 1"},
      {"float16 x @ I * 1.37: rounded as stored", [&] { return aHalf.matmul(eyeH).mul(1.37); }, true},
      {"bfloat16 x @ I * 1.37: rounded as stored", [&] { return aBf.matmul(eyeB).mul(1.37); }, true},
      {"bfloat16 A^T @ B: A packed whole", [&] { return xtB.transpose(0, 1).matmul(gB); }, true,
       "packs buffers [1] whole before the loops (512 KiB"},
      // the partial sums of a reduce in blocks would wait in a float16 output, rounded after every
      // block (sums past 2048 lose their odd integers): K = 4096 runs whole, unpacked
      {"float16 matmul with K = 4096: no blocks of the reduce", [&] { return longKH.matmul(longKbH); }, false, nullptr,
       "in blocks of"},
      {"max over a broadcast product", [&] { return a.reshape({64, 160, 1}).mul(b.reshape({1, 160, 96})).max(std::vector<int64_t>{1}); }, true},
      // output rows of 28 would be padded to 32 lanes: the vector runs along the 32 output channels
      // instead (the weights gathered into the panel), 8 pixels of a row per tile, each pixel's
      // channels scattered to the output after the reduce
      {"conv2d 3x3 pad 1, rows of 28: the vector along the channels, stores scattered",
       [&] { return img.conv2d(w, std::nullopt, 1, {1}, {1}, {1}); }, true, "packs buffers [2]", nullptr, "stores scattered"},
      // 10 output columns padded to 16 lanes, but tiles of 2 rows would be too few to scatter
      {"x @ W for 10 outputs: padded lanes, not scattered", [&] { return mlpX.matmul(mlpW); }, true, "packs buffers [2]",
       "stores scattered"},
      // rows of 32 fill whole vectors: the vector along them, the image packed per output row
      {"conv2d 5x5, rows of 32, 64 output channels", [&] { return img20.conv2d(w5); }, true, nullptr, "stores scattered"},
      // 256 x 9 reduce steps x 32 channels (288 KiB) exceed the stack budget: the reduce runs in
      // blocks, each block's partial sums gathered back from the output and scattered again
      {"conv2d 3x3 with 256 input channels: scattered partial sums over blocks of the reduce",
       [&] { return img256.conv2d(w256, std::nullopt, 1, {1}, {1}, {1}); }, true, "stores scattered", nullptr, "in blocks of"},
      // a panel of 4096 reduce steps x 32 lanes (512 KiB) does not fit the stack budget: the reduce
      // runs in blocks, each block's partial sums kept in the output
      {"matmul with K = 4096: blocks of the reduce", [&] { return longK.matmul(longKb); }, true, "in blocks of"},
      {"relu(x @ w) with K = 4096: the relu on the last block", [&] { return longK.matmul(longKb).relu().mul(2); }, true,
       "in blocks of"},
      {"max over a broadcast product with K = 4096", [&] {
         return longK.reshape({64, 4096, 1}).mul(longKb.reshape({1, 4096, 64})).max(std::vector<int64_t>{1});
       }, true, "in blocks of"},
      {"matmul with K = 8192 and 25 columns: masked partial sums", [&] { return longK2.matmul(cols25k); }, true,
       "in blocks of"},
      // a buffer read after the reduce (the bias) cannot run on partial sums: not blocked, not packed
      {"x @ w + bias with K = 4096", [&] { return longK.matmul(longKb).add(bias64); }, false},
      // two row blocks would read the panel twice: not worth a copy
      {"matmul with 16 rows", [&] { return few.matmul(sq); }, false},
      // 48 reduce steps x 32 lanes (6 KiB) stay in L1 as they are read: not worth a copy
      {"matmul with K = 48", [&] { return shortA.matmul(shortB); }, false},
  };
  // the sizes assume AVX-512's 32-lane tiles and padding; elsewhere only the values are checked
  bool avx512 = TargetSpec::host().features.find("+avx512f") != std::string::npos;
  if (!avx512) MESSAGE("no AVX-512 on this host: the packing decisions are not checked, the values are");
  for (const auto &cs : cases) {
    std::string name = cs.name;
    CAPTURE(name);
    std::string summary = lastKernel(cs.build());
    CAPTURE(summary);
    if (avx512) {
      CHECK((summary.find("packs buffers") != std::string::npos) == cs.packs);
      if (cs.where) CHECK(summary.find(cs.where) != std::string::npos);
      if (cs.notWhere) CHECK(summary.find(cs.notWhere) == std::string::npos);
      if (cs.where2) CHECK(summary.find(cs.where2) != std::string::npos);
    }
    std::vector<double> ref = run(cs.build, true, false);
    for (bool bounds : {false, true}) {
      CAPTURE(bounds);
      std::vector<double> got = run(cs.build, false, bounds);
      REQUIRE(got.size() == ref.size());
      size_t bad = 0, first = 0;
      for (size_t i = 0; i < ref.size(); ++i)
        if (std::fabs(ref[i] - got[i]) > 1e-4 * std::max(1.0, std::fabs(ref[i])) && bad++ == 0) first = i;
      CHECK_MESSAGE(bad == 0, bad, " elements differ, the first at ", first, ": ", ref[first], " vs ", got[first]);
    }
  }
}

TEST_CASE("Packed panels: the loop nest packs before the loops that reuse the panel") {
  // --emit=loops' view of a packed matmul: the pack loop inside the column blocks, then the row
  // blocks whose reduce reads the panel
  if (TargetSpec::host().features.find("+avx512f") == std::string::npos) {
    MESSAGE("skipped: no AVX-512 on this host (the 256x256 matmul's panel is sized for 32 lanes)");
    return;
  }
  Tensor a = Tensor::empty({256, 256}), b = Tensor::empty({256, 256});
  auto sched = schedule(a.matmul(b).lazydata());
  REQUIRE(sched.back().isKernel());
  std::string loops = emitKernelText(sched.back().ast, TargetSpec::host(), CompileOptions{}, IRStage::Loops);
  CAPTURE(loops);
  size_t col = loops.find("for gidx0"), pack = loops.find("pack buffer 2"), row = loops.find("for gidx1"),
         reads = loops.find("packed buffers from their panels");
  REQUIRE(col != std::string::npos);
  REQUIRE(pack != std::string::npos);
  REQUIRE(row != std::string::npos);
  REQUIRE(reads != std::string::npos);
  CHECK(col < pack);
  CHECK(pack < row);
  CHECK(row < reads);
  // NOOPT packs nothing
  CompileOptions noopt;
  noopt.noopt = true;
  std::string plain = emitKernelText(sched.back().ast, TargetSpec::host(), noopt, IRStage::Loops);
  CHECK(plain.find("pack") == std::string::npos);
}

TEST_CASE("Packed panels: a whole packed kernel launched in its two phases, scratch and phase after the bounds values") {
  // the test launcher (KernelRunner) passes the scratch block and the phase as the CPU device does:
  // A^T @ B through both phases, with and without bounds checks (whose values come before them),
  // for the host and for an AVX2 target (16-lane tiles), against NOOPT on the same inputs
  Tensor a = Tensor::empty({512, 256}), b = Tensor::empty({512, 256});
  auto sched = schedule(a.transpose(0, 1).matmul(b).lazydata());
  REQUIRE(sched.back().isKernel());
  KernelOpRef ast = sched.back().ast;
  testing::KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  testing::KernelRun ref = runner.run(ast, noopt, 7);
  bool avx512 = TargetSpec::host().features.find("+avx512f") != std::string::npos;
  for (bool avx2 : {false, true})
    for (bool bounds : {false, true}) {
      CAPTURE(avx2);
      CAPTURE(bounds);
      CompileOptions o;
      o.bounds = bounds;
      TargetSpec t = avx2 ? testing::KernelRunner::hostWithoutAVX512() : TargetSpec::host();
      KernelSignature sig = describeKernel(ast, t, o);
      if (avx512 || avx2) { // (the two targets' 32- and 16-lane tiles both copy A)
        CHECK(sig.scratchBytes >= 512 * 1024);
        CHECK(sig.packRange == 128);
      }
      testing::KernelRun got = runner.run(ast, o, 7, nullptr, &t);
      CHECK(got.guardsIntact);
      REQUIRE(got.bufs[0].size() == ref.bufs[0].size());
      size_t bad = 0;
      for (size_t i = 0; i < ref.bufs[0].size(); ++i)
        bad += std::fabs(ref.bufs[0][i] - got.bufs[0][i]) > 1e-4f * std::max(1.0f, std::fabs(ref.bufs[0][i]));
      CHECK(bad == 0);
    }
}
