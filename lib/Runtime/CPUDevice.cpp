// The CPU device. Compiles on the thread pool (one LLVMContext per compile), links objects into a
// process-wide LLJIT under a mutex, and launches kernels through the uniform ABI of
// CodeGen/Compiler.h: entry(bufs, vars, start, end) over the outer range, the signature's one grid
// dimension evaluated with the variables' values.
#include "lazyjit/Runtime/CPUDevice.h"
#include "CompilingDevice.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/HostAllocator.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Logging.h"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <unordered_map>

namespace lazyjit {

namespace {

std::string llvmErrorText(llvm::Error e) {
  std::string s;
  llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) { s += info.message(); });
  return s;
}

// One LLJIT for the process; adding objects and looking up symbols is serialized.
class JIT {
public:
  static JIT &get() {
    static JIT *j = new JIT(); // never destroyed: kernels may run until exit
    return *j;
  }

  using Entry = void (*)(void **, const int64_t *, int64_t, int64_t);

  Entry add(const std::vector<uint8_t> &object, const std::string &symbol) {
    std::lock_guard lock(mu);
    // a symbol names its code (a digest of the kernel and its options): one linked already, by
    // another device instance of this process, is that code
    if (auto it = linked.find(symbol); it != linked.end()) return it->second;
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char *>(object.data()), object.size()), symbol);
    if (auto err = jit->addObjectFile(std::move(buf)))
      throw CompileError("runtime: cannot link kernel " + symbol + ": " + llvmErrorText(std::move(err)));
    auto entry = jit->lookup(symbol);
    if (!entry) throw CompileError("runtime: kernel " + symbol + " not found: " + llvmErrorText(entry.takeError()));
    return linked[symbol] = entry->toPtr<Entry>();
  }

private:
  std::mutex mu;
  std::unordered_map<std::string, Entry> linked;
  std::unique_ptr<llvm::orc::LLJIT> jit;

  JIT() {
    TargetSpec::host(); // initializes the native target
    auto j = llvm::orc::LLJITBuilder().create();
    if (!j) throw DeviceError("runtime: cannot create the LLVM JIT: " + llvmErrorText(j.takeError()));
    jit = std::move(*j);
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        jit->getDataLayout().getGlobalPrefix());
    if (!gen) throw DeviceError("runtime: cannot resolve process symbols: " + llvmErrorText(gen.takeError()));
    jit->getMainJITDylib().addGenerator(std::move(*gen));
    // glibc's vector math, which vectorized kernels call (CodeGen maps exp2f & co. to it)
    auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", jit->getDataLayout().getGlobalPrefix());
    if (mvec)
      jit->getMainJITDylib().addGenerator(std::move(*mvec));
    else
      LAZYJIT_LOG(Runtime, 1, "libmvec not found ({}); vectorized math calls cannot link",
                  llvmErrorText(mvec.takeError()));
  }
};

class CPUProgram : public Program {
public:
  CPUProgram(KernelOpRef ast, KernelSignature sig, JIT::Entry entry, double compileSeconds,
             bool fromCache)
      : ast(std::move(ast)), sig(std::move(sig)), entry(entry) {
    info_.name = this->sig.name;
    auto li = getLazyOpInfo(*this->ast);
    info_.flops = li.flops;
    info_.memBytes = li.memEstimate();
    info_.compileSeconds = compileSeconds;
    info_.fromCache = fromCache;
    // (LowerCPU.cpp leaves these pointers without noalias; the first touch of a fresh buffer is a
    // page fault per page, which an output written over its input does without)
    info_.writableInputs = inPlaceInputs(*this->ast);
  }

  void run(std::span<Buffer *const> bufs, const VarVals &vars) override {
    LAZYJIT_USER_CHECK(static_cast<int>(bufs.size()) >= sig.numBuffers, Error,
                       "runtime: kernel {} needs {} buffers, got {}", sig.name, sig.numBuffers, bufs.size());
    std::vector<void *> ptrs;
    for (Buffer *b : bufs) {
      LAZYJIT_USER_CHECK(b->hostAccessible(), DeviceError, "runtime: CPU kernel {} got a buffer on {}",
                         sig.name, b->device());
      ptrs.push_back(b->ptr());
    }
    std::vector<int64_t> vals = values(vars);
    const Launch l = launch(vars);
    const int64_t extent = l.extent;
    const size_t chunks = l.chunks;
    // bounds mode: the report's address and the buffers' sizes follow the variables
    BoundsReport report;
    if (sig.boundsChecked) {
      vals.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(&report)));
      for (int i = 0; i < sig.numBuffers; ++i) vals.push_back(static_cast<int64_t>(bufs[i]->nbytes()));
    }
    ThreadPool &pool = ThreadPool::global();
    void **p = ptrs.data();
    JIT::Entry fn = entry;
    // whole packed inputs (KernelSignature::scratchBytes): one block, from the host allocator,
    // which keeps freed blocks (a kernel called again reuses one instead of faulting in fresh
    // pages), its address and the phase after the values above; the kernel first packs into it,
    // its threads splitting the copy, then computes
    struct Scratch {
      void *block = nullptr;
      size_t bytes = 0;
      ~Scratch() {
        if (block) hostAllocator().free(block, bytes);
      }
    } scratch;
    if (sig.scratchBytes > 0) {
      scratch.bytes = static_cast<size_t>(sig.scratchBytes);
      scratch.block = hostAllocator().alloc(scratch.bytes);
      vals.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(scratch.block)));
      vals.push_back(1);
      const int64_t *pv = vals.data();
      pool.parallelFor(sig.packRange, chunks, [p, pv, fn](int64_t s, int64_t e) { fn(p, pv, s, e); });
      vals.back() = 0;
    }
    const int64_t *vp = vals.data();
    pool.parallelFor(extent, chunks, [p, vp, fn](int64_t s, int64_t e) { fn(p, vp, s, e); });
    // the verifier proves every access of a kernel it is given inside its buffers, and the
    // scheduler sizes buffers for its kernels: an access outside one is a lazyjit bug
    if (report.hit)
      throw InternalError(fmt::format("runtime: kernel {} {} buffer {} at index {}, outside its {} elements "
                                      "(LAZYJIT_BOUNDS)",
                              sig.name, report.buffer == 0 ? "writes" : "reads", report.buffer, report.index,
                              report.size));
  }

  const ProgramInfo &info() const override { return info_; }

  void launchShape(const VarVals &vars, std::vector<int64_t> &global, std::vector<int64_t> &local) const override {
    const Launch l = launch(vars);
    global = {l.extent};
    local = {static_cast<int64_t>(std::min<size_t>(l.chunks, static_cast<size_t>(std::max<int64_t>(l.extent, 1))))};
  }

private:
  /// The outer range a run with `vars` covers, and the chunks it is split into across the pool:
  /// one unless the kernel does enough work to pay for the split.
  struct Launch {
    int64_t extent;
    size_t chunks;
  };
  Launch launch(const VarVals &vars) const {
    std::map<std::string, int64_t> byName;
    for (const auto &v : sig.vars) byName[*v->expr] = vars.at(*v->expr).second;
    double work = 0;
    try {
      work = static_cast<double>(symInfer(info_.flops, byName)) + static_cast<double>(info_.memBytes);
    } catch (const Error &) {
      work = 1e9;
    }
    return {symInfer(sig.gridDims.at(0), byName), work < 262144.0 ? 1 : ThreadPool::global().size()};
  }
  /// The kernel's variable values in its signature's order (a missing one is an Error).
  std::vector<int64_t> values(const VarVals &vars) const {
    std::vector<int64_t> vals;
    for (const auto &v : sig.vars) {
      auto it = vars.find(*v->expr);
      LAZYJIT_USER_CHECK(it != vars.end(), Error, "runtime: kernel {} needs a value for {}", sig.name, *v->expr);
      vals.push_back(it->second.second);
    }
    return vals;
  }

  KernelOpRef ast;
  KernelSignature sig;
  JIT::Entry entry;
  ProgramInfo info_;
};

class CPUDevice : public CompilingDevice {
public:
  // Compiles for the host's CPU, or for the one LAZYJIT_CPU names (the lit tests pin an AVX2 or
  // an AVX-512 graph with it): a CPU older than the host's runs here; one with instruction sets the
  // host lacks only compiles, and running its kernels is an error instead of an illegal instruction.
  explicit CPUDevice(const std::string &name) : CompilingDevice(name, counters()) {
    const Config &c = config();
    target = c.cpu.empty() ? TargetSpec::host(c.llvmOptLevel) : TargetSpec::namedCPU(c.cpu, c.llvmOptLevel);
    missing = target.missingOnHost();
    JIT::get();
  }

  Allocator &allocator() override { return hostAllocator(); }
  // AVX-512's channel-vector convolution reads a padded input's row of values with one select of
  // the row's address per step where the window's columns are unrolled (up to 5 on AVX-512: the
  // columns' masks are then fixed across the reduce loops, LowerCPUVector.cpp laneLeaf; 5 x 5
  // with padding 2 over [512, 32, 24, 24]: 46.5 ms through the masks, 50.5 with the copy). A wider
  // window keeps a select per value. AVX2's layout runs 10-15% slower through the masks than over
  // a copy (W7).
  bool readsPaddedConvInput(int64_t width) const override {
    return width <= 5 && target.features.find("+avx512f") != std::string::npos;
  }

  static CompileCounters &counters() {
    static CompileCounters c;
    return c;
  }

protected:
  std::vector<std::string> missing; ///< what the target's code needs that the host lacks
  const char *diskCacheName() const override { return "cpu"; }
  // Links the object into the process's JIT; an object the JIT rejects throws (cached or not).
  std::shared_ptr<Program> load(const KernelOpRef &ast, const KernelCode &code) override {
    LAZYJIT_USER_CHECK(missing.empty(), DeviceError,
                       "CPU: kernels compiled for {} (LAZYJIT_CPU) cannot run on this machine, which lacks {}",
                       target.cpu, fmt::join(missing, ", "));
    JIT::Entry entry = JIT::get().add(code.bytes, code.sig.symbol);
    return std::make_shared<CPUProgram>(ast, code.sig, entry, code.seconds, code.fromCache);
  }
};

} // namespace

std::unique_ptr<Device> makeCPUDevice(const std::string &name) { return std::make_unique<CPUDevice>(name); }

CPUCompileStats cpuCompileStats() {
  const CompileCounters &c = CPUDevice::counters();
  return {c.compiled.load(), c.diskHits.load(), c.memoryHits.load()};
}

} // namespace lazyjit
