// KernelRunner: the object code of compileToObject loaded by a private ORC LLJIT (one JITDylib per
// run, so one AST may be compiled many times) and called through the CPU kernel ABI.
#include "KernelRunner.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstring>
#include <random>
#include <sstream>

namespace lazyjit::testing {

namespace {
constexpr size_t kGuard = 256;                // floats before and after every buffer (1 KiB, whole lines)
constexpr uint32_t kSentinel = 0x7fc0dea1u;   // a quiet NaN with a payload no kernel computes
// Buffers start on a cache line, as the CPU device's do: streaming stores (whole aligned lines)
// fault on anything less.
template <typename T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U> Aligned64(const Aligned64<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t(64))); }
  void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <typename U> bool operator==(const Aligned64<U> &) const { return true; }
};

float sentinel() {
  float f;
  std::memcpy(&f, &kSentinel, sizeof f);
  return f;
}
bool isSentinel(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u == kSentinel;
}
} // namespace

struct KernelRunner::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  int dylibs = 0;
};

KernelRunner::KernelRunner() : impl(std::make_unique<Impl>()) {
  (void)TargetSpec::host(); // initializes LLVM's native target
  impl->jit = llvm::cantFail(llvm::orc::LLJITBuilder().create());
}

KernelRunner::~KernelRunner() = default;

TargetSpec KernelRunner::hostWithoutAVX512() {
  TargetSpec t = TargetSpec::host();
  std::string features, item;
  std::istringstream in(t.features);
  while (std::getline(in, item, ','))
    features += (features.empty() ? "" : ",") + (item.rfind("+avx512", 0) == 0 ? "-" + item.substr(1) : item);
  t.features = features;
  t.cpu = "x86-64-v3";
  return t;
}

KernelRun KernelRunner::run(const KernelOpRef &ast, const CompileOptions &opts, uint64_t seed,
                           const std::vector<int64_t> *sizesOverride, const TargetSpec *targetIn) {
  TargetSpec target = targetIn ? *targetIn : TargetSpec::host();
  KernelSignature sig;
  // the sanitizer stage sets LAZYJIT_BOUNDS: every kernel the tests run is then checked too
  CompileOptions o = opts;
  o.bounds = o.bounds || config().bounds;
  std::vector<uint8_t> obj = compileToObject(ast, target, o, &sig);
  LAZYJIT_INTERNAL_CHECK(sig.vars.empty(), "KernelRunner: kernels with variables are not supported");

  auto &es = impl->jit->getExecutionSession();
  auto &dylib = llvm::cantFail(es.createJITDylib("kernel" + std::to_string(impl->dylibs++)));
  dylib.addGenerator(llvm::cantFail(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl->jit->getDataLayout().getGlobalPrefix())));
  llvm::StringRef bytes(reinterpret_cast<const char *>(obj.data()), obj.size());
  llvm::cantFail(impl->jit->addObjectFile(dylib, llvm::MemoryBuffer::getMemBufferCopy(bytes, sig.symbol)));
  using Entry = void (*)(void **, const int64_t *, int64_t, int64_t);
  auto entry = llvm::cantFail(impl->jit->lookup(dylib, sig.symbol)).toPtr<Entry>();

  // buffer sizes: the largest element any access of the unoptimized kernel can touch
  Kernel plain(ast);
  std::vector<int64_t> sizes(sig.numBuffers, 0);
  for (size_t i = 0; i < plain.bufs.size(); ++i) {
    if (plain.bufs[i]->op == Op::Const) continue;
    const MemBuffer &mb = plain.bufs[i]->memBuffer();
    LAZYJIT_INTERNAL_CHECK(mb.dtype == dtypes::float32, "KernelRunner: float32 buffers only");
    sizes[mb.idx] = std::max(sizes[mb.idx], plain.bufs[i]->bufferSt().size());
  }
  if (sizesOverride) {
    LAZYJIT_INTERNAL_CHECK(sizesOverride->size() == sizes.size(), "KernelRunner: {} sizes for {} buffers",
                           sizesOverride->size(), sizes.size());
    sizes = *sizesOverride;
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float, Aligned64<float>>> mem(sizes.size());
  std::vector<void *> ptrs(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    mem[i].assign(sizes[i] + 2 * kGuard, sentinel());
    if (i > 0)
      for (int64_t j = 0; j < sizes[i]; ++j) mem[i][kGuard + j] = dist(rng);
    ptrs[i] = mem[i].data() + kGuard;
  }
  // no variables; in bounds mode (LAZYJIT_BOUNDS) the report and the buffers' sizes in bytes;
  // with whole packed inputs the scratch block and the phase (the pack, then the compute), as the
  // CPU device launches them
  BoundsReport report;
  std::vector<int64_t> vars;
  if (sig.boundsChecked) {
    vars = {static_cast<int64_t>(reinterpret_cast<intptr_t>(&report))};
    for (int64_t s : sizes) vars.push_back(s * static_cast<int64_t>(sizeof(float)));
  }
  std::vector<double> scratch(static_cast<size_t>(sig.scratchBytes + 64) / sizeof(double));
  if (sig.scratchBytes > 0) {
    auto at = reinterpret_cast<intptr_t>(scratch.data());
    vars.push_back((at + 63) / 64 * 64);
    vars.push_back(1);
    entry(ptrs.data(), vars.data(), 0, sig.packRange);
    vars.back() = 0;
  }
  if (vars.empty()) vars.push_back(0);
  LAZYJIT_INTERNAL_CHECK(sig.gridDims.size() == 1, "KernelRunner: a CPU kernel has one outer range");
  int64_t whole = symInfer(sig.gridDims[0], {}), from = 0;
  for (int64_t cut : cuts) {
    LAZYJIT_INTERNAL_CHECK(cut > from && cut < whole, "KernelRunner: cut {} outside ({}, {})", cut, from, whole);
    entry(ptrs.data(), vars.data(), from, cut);
    from = cut;
  }
  entry(ptrs.data(), vars.data(), from, whole);
  if (report.hit)
    throw Error(fmt::format("KernelRunner: buffer {} accessed at index {}, outside its {} elements", report.buffer,
                            report.index, report.size));

  KernelRun out;
  out.applied = sig.opts;
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t j = 0; j < kGuard; ++j)
      out.guardsIntact = out.guardsIntact && isSentinel(mem[i][j]) && isSentinel(mem[i][kGuard + sizes[i] + j]);
    out.bufs.emplace_back(mem[i].begin() + kGuard, mem[i].begin() + kGuard + sizes[i]);
  }
  llvm::cantFail(es.removeJITDylib(dylib));
  return out;
}

} // namespace lazyjit::testing
