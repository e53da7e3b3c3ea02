// NVPTX lowering without a GPU: the LLVM IR and PTX of typical kernels are checked as text
// (FileCheck-style: the lines that matter, in order), their launch dimensions against the
// reference's CUDA table. The CTest entry CodeGenTests-ptxas runs these tests again with
// LAZYJIT_TEST_PTXAS=1, which also assembles every PTX for sm_90 with the CUDA toolkit's ptxas;
// where ptxas is missing that entry is skipped (test::skip), not passed.
#include "KernelTestUtil.h"
#include "TestSkip.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

using namespace lazyjit;
using lazyjit::testing::lastKernel;
namespace fs = std::filesystem;

namespace {

Tensor E(Shape s, DType dt = dtypes::float32) { return Tensor::empty(s, {dt, std::nullopt}); }

TargetSpec sm90() { return TargetSpec::nvptx("sm_90"); }

std::string ir(const KernelOpRef &ast) { return emitKernelText(ast, sm90(), CompileOptions::from(config()), IRStage::LLVM); }
std::string ptx(const KernelOpRef &ast) { return emitKernelText(ast, sm90(), CompileOptions::from(config()), IRStage::Asm); }

// FileCheck's CHECK lines: each pattern (a regex) must match after the previous match.
void checkInOrder(const std::string &text, const std::vector<std::string> &patterns) {
  size_t pos = 0;
  for (const auto &p : patterns) {
    std::smatch m;
    std::string rest = text.substr(pos);
    bool found = std::regex_search(rest, m, std::regex(p));
    CHECK_MESSAGE(found, "pattern '", p, "' not found after offset ", pos, " in:\n", text);
    if (!found) return;
    pos += m.position(0) + m.length(0);
  }
}
bool contains(const std::string &text, const std::string &pattern) {
  return std::regex_search(text, std::regex(pattern));
}

// Whether ptxas was found when lazyjit was configured and can run here; if not, why.
bool ptxasAvailable(std::string *why) {
  std::string path = LAZYJIT_PTXAS;
  if (path.empty()) {
    *why = "ptxas was not found when lazyjit was configured (no CUDA toolkit)";
    return false;
  }
  if (access(path.c_str(), X_OK) != 0) {
    *why = "ptxas at " + path + " is not executable here";
    return false;
  }
  return true;
}

// Under LAZYJIT_TEST_PTXAS=1 (the CodeGenTests-ptxas entry), assembles PTX with ptxas for sm_90,
// or skips the test case where ptxas is missing; otherwise does nothing.
void assemble(const std::string &text, const std::string &name) {
  const char *enabled = std::getenv("LAZYJIT_TEST_PTXAS");
  if (!enabled || std::string(enabled) != "1") return;
  std::string why;
  if (!ptxasAvailable(&why)) return test::skip(why);
  fs::path dir = fs::temp_directory_path() / ("lj_ptxas_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path file = dir / (name + ".ptx"), log = dir / (name + ".log");
  std::ofstream(file) << text;
  std::string cmd = "'" + std::string(LAZYJIT_PTXAS) + "' -arch=sm_90 '" + file.string() + "' -o /dev/null 2>'" +
                    log.string() + "'";
  int status = std::system(cmd.c_str());
  std::ifstream lf(log);
  std::string err((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(status == 0, "ptxas rejected ", name, ":\n", err, "\n", text);
  fs::remove_all(dir);
}

// Describe + PTX + ptxas for one tensor's last kernel.
struct Lowered {
  KernelSignature sig;
  std::string ir, ptx;
};
Lowered lowerChecked(const Tensor &t) {
  KernelOpRef ast = lastKernel(t);
  Lowered l{describeKernel(ast, sm90(), CompileOptions::from(config())), ir(ast), ptx(ast)};
  assemble(l.ptx, l.sig.name);
  return l;
}

} // namespace

TEST_CASE("NVPTX: an elementwise kernel is a ptx_kernel with global and local axes on ctaid/tid") {
  Lowered l = lowerChecked(E({256, 256}) + E({256, 256}));
  // the reference's CUDA kernel: E_512_32_4, grid [512], block [32]
  CHECK(l.sig.name == "E_512_32_4");
  CHECK(l.sig.globalSize == std::vector<int64_t>{512});
  CHECK(l.sig.localSize == std::vector<int64_t>{32});
  CHECK(l.sig.sharedBytes == 0);
  checkInOrder(l.ir, {R"(target triple = "nvptx64-nvidia-cuda")",
                      R"(define ptx_kernel void @lj_[0-9a-f]+\(ptr addrspace\(1\) noalias align 16 %data0, )"
                      R"(ptr addrspace\(1\) noalias align 16 %data1, ptr addrspace\(1\) noalias align 16 %data2\))",
                      R"(call i32 @llvm\.nvvm\.read\.ptx\.sreg\.ctaid\.x\(\))",
                      R"(call i32 @llvm\.nvvm\.read\.ptx\.sreg\.tid\.x\(\))",
                      // a unit-stride upcast of 4 is one vector load per input, indexed in i32
                      R"(load <4 x float>, ptr addrspace\(1\) %[0-9]+, align 16)",
                      R"(load <4 x float>, ptr addrspace\(1\) %[0-9]+, align 16)", R"(fadd)",
                      R"(store float)", R"(!nvvm\.annotations)"});
  CHECK(contains(l.ir, R"(getelementptr inbounds float, ptr addrspace\(1\) %data1, i32)"));
  checkInOrder(l.ptx, {R"(\.target sm_90)", R"(\.visible \.entry lj_[0-9a-f]+\()",
                       R"(\.param \.u64 lj_[0-9a-f]+_param_0)", R"(\.maxntid 32, 1, 1)",
                       R"(mov\.u32\s+%r[0-9]+, %ctaid\.x)", R"(mov\.u32\s+%r[0-9]+, %tid\.x)",
                       R"(ld\.global\.nc\.v4\.f32)", R"(add\.rn\.f32)", R"(st\.global\.v4\.f32)"});
  CHECK_FALSE(contains(l.ptx, R"(\.shared)"));
  CHECK_FALSE(contains(l.ptx, R"(bar\.sync)"));
}

TEST_CASE("NVPTX: a grouped reduction reduces through shared memory behind a barrier") {
  Lowered l = lowerChecked(E({16, 1024}).sum(std::vector<int64_t>{1}));
  // the reference: r_16_256_4 with GROUPTOP(0,256), grid [16], block [256]
  CHECK(l.sig.name == "r_16_256_4");
  REQUIRE(l.sig.opts.size() == 1);
  CHECK(l.sig.opts[0].str() == "GROUPTOP(0,256)");
  CHECK(l.sig.globalSize == std::vector<int64_t>{16});
  CHECK(l.sig.localSize == std::vector<int64_t>{256});
  CHECK(l.sig.sharedBytes == 256 * 4);
  checkInOrder(l.ir, {R"(@lj_[0-9a-f]+_temp = internal addrspace\(3\) global \[256 x float\] undef, align 16)",
                      R"(define ptx_kernel void)", R"(loop\.ridx2:)", R"(fadd)",
                      R"(store float %.*, ptr addrspace\(3\))", R"(call void @llvm\.nvvm\.barrier0\(\))",
                      R"(br i1 %.*, label %group\.first, label %group\.done)", R"(group\.first:)",
                      R"(loop\.tidx1:)", R"(load float, ptr addrspace\(3\))", R"(store float)", R"(group\.done:)"});
  checkInOrder(l.ptx, {R"(\.maxntid 256, 1, 1)", R"(\.shared \.align 16 \.b8 lj_[0-9a-f]+_temp\[1024\])",
                       R"(st\.shared\.f32)", R"(bar\.sync\s+0)", R"(ld\.shared\.(v4\.)?f32)", R"(st\.global\.f32)"});
}

TEST_CASE("NVPTX: row reductions with many rows still get a block per row") {
  // softmax-like: 4096 rows of 4096; one thread per row would leave the GPU idle
  Lowered l = lowerChecked(E({4096, 4096}).exp().sum(std::vector<int64_t>{1}));
  CHECK(!l.sig.localSize.empty());
  CHECK(l.sig.sharedBytes > 0);
  int64_t threads = 1;
  for (int64_t s : l.sig.localSize) threads *= s;
  CHECK(threads >= 32);
  CHECK(contains(l.ptx, R"(bar\.sync\s+0)"));
  CHECK(contains(l.ptx, R"(ex2\.approx\.f32)"));
}

TEST_CASE("NVPTX: a row kernel (OPT=5) runs a block per row and combines each reduce in a shared tree") {
  testing::AtOpt opt5(5);
  Lowered l = lowerChecked(E({4096, 4096}).softmax());
  CHECK(l.sig.name == "r_4096_4096");
  CHECK(l.sig.opts.empty());
  CHECK(l.sig.globalSize == std::vector<int64_t>{4096});
  CHECK(l.sig.localSize == std::vector<int64_t>{256});
  CHECK(l.sig.sharedBytes == 256 * 8);
  CHECK(contains(l.sig.kernelSummary, "row threads 256 per block"));
  // the max pass, its tree (8 halvings), the sum pass over exp(x - max), its tree, the output pass;
  // each thread's 16 elements are unrolled, so the row is loaded once and stays in registers
  checkInOrder(l.ir, {R"(@lj_[0-9a-f]+_row = internal addrspace\(3\) global \[256 x i64\] undef, align 16)",
                      R"(define ptx_kernel void)", R"(sreg\.ctaid\.x)", R"(sreg\.tid\.x)",
                      R"(load float, ptr addrspace\(1\))", R"(llvm\.maximum\.f32|fcmp)", R"(store float %.*, ptr addrspace\(3\))",
                      R"(call void @llvm\.nvvm\.barrier0\(\))", R"(tree\.add:)", R"(load float, ptr addrspace\(3\))",
                      R"(fadd)", R"(tree\.add[0-9]*:)", R"(store float %.*, ptr addrspace\(1\))"});
  CHECK_FALSE(contains(l.ir, R"(loop\.ridx1)"));
  auto count = [](const std::string &text, const char *pattern) {
    std::regex re(pattern);
    return std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator());
  };
  CHECK(count(l.ir, R"(load float, ptr addrspace\(1\))") == 16);
  CHECK(count(l.ptx, R"(ld\.global)") == 16);
  CHECK(count(l.ptx, R"(ex2\.approx)") == 16); // exp once per element, shared by two passes
  checkInOrder(l.ptx, {R"(\.maxntid 256, 1, 1)", R"(\.shared \.align 16 \.b8 lj_[0-9a-f]+_row\[2048\])",
                       R"(%tid\.x)", R"(st\.shared\.f32)", R"(bar\.sync\s+0)", R"(ex2\.approx)",
                       R"(bar\.sync\s+0)", R"(st\.global\.f32)"});
  // two reduces: a barrier after the stores, one per halving, one after the read: 2 * (1 + 8 + 1)
  CHECK(count(l.ptx, R"(bar\.sync)") == 20);
}

TEST_CASE("NVPTX: a row kernel with a reduce outside its rows stores from thread 0 after the last row") {
  testing::AtOpt opt5(5);
  // cross-entropy's shape: log_softmax per row, summed with the labels over the batch and classes
  Lowered l = lowerChecked((E({64, 100}).logSoftmax() * E({64, 100})).sum());
  CHECK(l.sig.globalSize.empty()); // one output element: one block
  CHECK(l.sig.localSize == std::vector<int64_t>{128});
  checkInOrder(l.ir, {R"(define ptx_kernel void)", R"(loop\.ridx0:)", R"(tree\.add:)", R"(loop\.ridx0\.exit)",
                      R"(icmp eq i32 %lidx, 0)", R"(row\.store:)", R"(store float %.*, ptr addrspace\(1\))", R"(row\.done:)"});
}

TEST_CASE("NVPTX: a row kernel whose indices need 64 bits is lowered again with i64, shared array and all") {
  testing::AtOpt opt5(5);
  Lowered l = lowerChecked(E({35000, 65000}).softmax()); // 2.3e9 elements: past i32
  CHECK(l.sig.globalSize == std::vector<int64_t>{35000});
  CHECK(contains(l.ir, R"(getelementptr inbounds float, ptr addrspace\(1\) %data1, i64)"));
  // the i32 attempt was erased with its shared array: one array in the module
  CHECK(contains(l.ir, R"(@lj_[0-9a-f]+_row = internal addrspace\(3\))"));
  CHECK_FALSE(contains(l.ir, R"(@lj_[0-9a-f]+_row\.[0-9]+ = )"));
}

TEST_CASE("NVPTX: a row kernel that only broadcasts a row value has no shared array") {
  testing::AtOpt opt5(5);
  Lowered l = lowerChecked(E({9, 64}) + (E({9, 1}) * 2.0));
  REQUIRE(contains(l.sig.kernelSummary, "row threads 64 per block"));
  CHECK(l.sig.sharedBytes == 0);
  CHECK_FALSE(contains(l.ptx, R"(\.shared)"));
  CHECK_FALSE(contains(l.ptx, R"(bar\.sync)"));
}

TEST_CASE("NVPTX: a matvec groups the reduce across threads (the reference's MATVEC)") {
  Lowered l = lowerChecked(E({1, 256}).matmul(E({256, 256})));
  // the reference: r_16_4_8_32_4 with GROUP(0,8), LOCAL(0,4), UPCAST(0,4); grid [16], block [8,4]
  CHECK(l.sig.name == "r_16_4_8_32_4");
  CHECK(l.sig.globalSize == std::vector<int64_t>{16});
  CHECK(l.sig.localSize == std::vector<int64_t>{8, 4});
  checkInOrder(l.ptx, {R"(%tid\.y)", R"(bar\.sync\s+0)", R"(st\.global)"});
}

TEST_CASE("NVPTX: a padded input is read with a gated load") {
  Lowered l = lowerChecked(E({300, 500}).pad({SIntPair(1, 1), SIntPair(2, 0)}) * 2.0f);
  // the address is clamped to element 0 when the index is in the padding, and the value replaced
  checkInOrder(l.ir, {R"(%[0-9]+ = and i1 )", R"(select i1 %[0-9]+, i32 %[0-9]+, i32 0)",
                      R"(load float, ptr addrspace\(1\))", R"(select .*i1 %[0-9]+, float %[0-9]+, float 0\.0)"});
  CHECK(contains(l.ptx, R"(selp\.)"));
}

TEST_CASE("NVPTX: a symbolic shape becomes an i64 kernel parameter after the buffers") {
  NodeRef n = variable("n", 1, 1024);
  Tensor a = E({4, 1024}).shrink({SIntPair(0, 4), SIntPair(0, SInt(n->bind(100)))});
  Lowered l = lowerChecked(a * 3.0f);
  REQUIRE(l.sig.vars.size() == 1);
  CHECK(*l.sig.vars[0]->expr == "n");
  REQUIRE(!l.sig.gridDims.empty());
  checkInOrder(l.ir, {R"(define ptx_kernel void @lj_[0-9a-f]+\(ptr addrspace\(1\) noalias align 16 %data0, )"
                      R"(ptr addrspace\(1\) noalias align 16 %data1, i64 %n\))"});
  checkInOrder(l.ptx, {R"(\.param \.u64 lj_[0-9a-f]+_param_1,)",
                       R"(\.param \.u64 lj_[0-9a-f]+_param_2)"});
  // the grid depends on n: evaluating it at n=100 gives the launch
  int64_t blocks = 1;
  for (const auto &d : l.sig.gridDims) blocks *= symInfer(d, {{"n", 100}});
  int64_t threads = 1;
  for (int64_t s : l.sig.localSize) threads *= s;
  int64_t upcast = 1;
  CHECK(blocks * threads * upcast >= 1);
}

TEST_CASE("NVPTX: index arithmetic is 64-bit only where the sizes need it") {
  Lowered small = lowerChecked(E({1024, 1024}) + 1.0f);
  CHECK(contains(small.ir, R"(getelementptr inbounds float, ptr addrspace\(1\) %data[01], i32)"));
  CHECK_FALSE(contains(small.ir, R"(getelementptr inbounds float, ptr addrspace\(1\) %data[01], i64)"));
  // 2^32 elements: the flat index does not fit 32 bits
  Lowered big = lowerChecked(E({65536, 65536}) + 1.0f);
  CHECK(contains(big.ir, R"(getelementptr inbounds float, ptr addrspace\(1\) %data[01], i64)"));
  CHECK_FALSE(contains(big.ir, R"(getelementptr inbounds float, ptr addrspace\(1\) %data[01], i32)"));
}

TEST_CASE("NVPTX: more than three global axes are merged into .x; oversized y/z fall back to x") {
  Config c = config();
  c.noopt = true;
  ScopedConfig scope(c);
  // 4 global axes that cannot merge (7, 3, 2, 5): the last two share .x and are split back
  Lowered four = lowerChecked(E({2, 3, 5, 7}).permute({3, 1, 0, 2}).contiguous());
  CAPTURE(four.sig.kernelSummary);
  CHECK(four.sig.name == "E_7_3_2_5");
  CHECK(four.sig.globalSize == std::vector<int64_t>{10, 3, 7});
  CHECK(four.sig.localSize.empty());
  checkInOrder(four.ir, {R"(%gidx2 = call i32 @llvm\.nvvm\.read\.ptx\.sreg\.ctaid\.x\(\))",
                         R"(%gidx1 = call i32 @llvm\.nvvm\.read\.ptx\.sreg\.ctaid\.y\(\))",
                         R"(%gidx0 = call i32 @llvm\.nvvm\.read\.ptx\.sreg\.ctaid\.z\(\))",
                         R"((sdiv|srem) i32 %gidx2, 5)"});
  // y would be 70000 blocks: everything goes on x
  Lowered tall = lowerChecked(E({3, 70000}).permute({1, 0}).contiguous());
  CAPTURE(tall.sig.kernelSummary);
  CHECK(tall.sig.name == "E_70000_3");
  CHECK(tall.sig.globalSize == std::vector<int64_t>{210000});
  CHECK_FALSE(contains(tall.ir, R"(ctaid\.y)"));
}

TEST_CASE("NVPTX: a symbolic axis is only ever the outermost axis of a merged grid dim") {
  Config c = config();
  c.noopt = true;
  ScopedConfig scope(c);
  // (7, 3, n, 5): by the reference's rule n would be split out of the third dim with `% n`; it
  // starts the .x group instead, which is split only by the int 5
  SInt n = variable("n", 1, 64)->bind(10);
  Tensor a = E({64, 3, 5, 7}).shrink({SIntPair(0, n), std::nullopt, std::nullopt, std::nullopt});
  Lowered l = lowerChecked(a.permute({3, 1, 0, 2}) * 2.0f);
  CAPTURE(l.sig.kernelSummary);
  CHECK(l.sig.globalSize == std::vector<int64_t>{64 * 5, 3, 7});
  REQUIRE(l.sig.gridDims.size() == 3);
  CHECK(symInfer(l.sig.gridDims[0], {{"n", 10}}) == 50);
  CHECK_FALSE(contains(l.ir, R"(srem i32 %[0-9a-z]+, %n)"));
}

TEST_CASE("NVPTX: math lowers without libdevice") {
  Lowered f32 = lowerChecked(E({64}).exp2() + E({64}).log2() + E({64}).sin() + E({64}).sqrt());
  CHECK(contains(f32.ptx, R"(ex2\.approx\.f32)"));
  CHECK(contains(f32.ptx, R"(sqrt\.rn\.f32)"));
  CHECK_FALSE(contains(f32.ptx, R"(__nv_)"));
  CHECK_FALSE(contains(f32.ptx, R"(\.extern)"));
  Lowered f64 = lowerChecked(E({64}, dtypes::float64).exp2() + E({64}, dtypes::float64).log2() +
                             E({64}, dtypes::float64).sin() + E({64}, dtypes::float64).sqrt() +
                             E({64}, dtypes::float64).reciprocal());
  CHECK(contains(f64.ptx, R"(sqrt\.rn\.f64)"));
  CHECK(contains(f64.ptx, R"(div\.rn\.f64)"));
  CHECK_FALSE(contains(f64.ptx, R"(\.extern)"));
}

TEST_CASE("NVPTX: every dtype loads, computes and stores") {
  for (DType dt : {dtypes::boolean, dtypes::int8, dtypes::uint8, dtypes::int16, dtypes::uint16, dtypes::int32,
                   dtypes::uint32, dtypes::int64, dtypes::uint64, dtypes::float16, dtypes::bfloat16, dtypes::float32,
                   dtypes::float64}) {
    CAPTURE(dt.name());
    Tensor x = E({8, 33}, dt);
    Tensor y = dt.isBool() ? x.cast(dtypes::int32).sum(std::vector<int64_t>{1}) : (x * x).max(std::vector<int64_t>{1}) + x.sum(std::vector<int64_t>{1}).cast(dt);
    Lowered l = lowerChecked(y);
    CHECK(contains(l.ptx, R"(\.visible \.entry)"));
  }
}
