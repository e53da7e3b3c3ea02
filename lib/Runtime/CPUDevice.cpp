// The CPU device. Compiles on the thread pool (one LLVMContext per compile), links objects into a
// process-wide LLJIT under a mutex, and launches kernels through the uniform ABI of
// CodeGen/Compiler.h: entry(bufs, vars, start, end) over the range given by entry_range(vars).
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/HostAllocator.h"
#include "lazyjit/Runtime/KernelCache.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Schedule/ASTText.h"
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

std::atomic<int> statCompiled{0}, statDiskHits{0}, statMemoryHits{0};

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
  using Range = int64_t (*)(const int64_t *);

  std::pair<Entry, Range> add(const std::vector<uint8_t> &object, const std::string &symbol) {
    std::lock_guard lock(mu);
    auto buf = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char *>(object.data()), object.size()), symbol);
    if (auto err = jit->addObjectFile(std::move(buf)))
      throw CompileError("runtime: cannot link kernel " + symbol + ": " + llvmErrorText(std::move(err)));
    auto entry = jit->lookup(symbol);
    if (!entry) throw CompileError("runtime: kernel " + symbol + " not found: " + llvmErrorText(entry.takeError()));
    auto range = jit->lookup(symbol + "_range");
    if (!range) throw CompileError("runtime: kernel " + symbol + "_range not found: " + llvmErrorText(range.takeError()));
    return {entry->toPtr<Entry>(), range->toPtr<Range>()};
  }

private:
  std::mutex mu;
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
  CPUProgram(LazyOpRef ast, KernelSignature sig, JIT::Entry entry, JIT::Range range, double compileSeconds,
             bool fromCache)
      : ast(std::move(ast)), sig(std::move(sig)), entry(entry), range(range) {
    info_.name = this->sig.name;
    auto li = getLazyOpInfo(*this->ast);
    info_.flops = li.flops;
    info_.memBytes = li.memEstimate();
    info_.compileSeconds = compileSeconds;
    info_.fromCache = fromCache;
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
    std::vector<int64_t> vals;
    std::map<std::string, int64_t> byName;
    for (const auto &v : sig.vars) {
      auto it = vars.find(*v->expr);
      LAZYJIT_USER_CHECK(it != vars.end(), Error, "runtime: kernel {} needs a value for {}", sig.name, *v->expr);
      vals.push_back(it->second.second);
      byName[*v->expr] = it->second.second;
    }
    int64_t extent = range(vals.data());
    // bounds mode: the report's address and the buffers' sizes follow the variables
    BoundsReport report;
    if (sig.boundsChecked) {
      vals.push_back(static_cast<int64_t>(reinterpret_cast<intptr_t>(&report)));
      for (int i = 0; i < sig.numBuffers; ++i) vals.push_back(static_cast<int64_t>(bufs[i]->nbytes()));
    }
    // Split the outer range across the pool only when the kernel does enough work to pay for it.
    double work = 0;
    try {
      work = static_cast<double>(symInfer(info_.flops, byName)) + static_cast<double>(info_.memBytes);
    } catch (const Error &) {
      work = 1e9;
    }
    ThreadPool &pool = ThreadPool::global();
    size_t chunks = work < 262144.0 ? 1 : pool.size();
    info_.global = {extent};
    info_.local = {static_cast<int64_t>(std::min<size_t>(chunks, static_cast<size_t>(std::max<int64_t>(extent, 1))))};
    void **p = ptrs.data();
    const int64_t *vp = vals.data();
    JIT::Entry fn = entry;
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

private:
  LazyOpRef ast;
  KernelSignature sig;
  JIT::Entry entry;
  JIT::Range range;
  ProgramInfo info_;
};

class CPUDevice : public Device {
public:
  explicit CPUDevice(const std::string &name) : Device(name), target(TargetSpec::host()) { JIT::get(); }

  Allocator &allocator() override { return hostAllocator(); }

  std::shared_ptr<Program> compile(const LazyOpRef &ast) override { return compileAll({ast})[0]; }

  std::vector<std::shared_ptr<Program>> compileAll(const std::vector<LazyOpRef> &asts) override {
    std::vector<std::shared_ptr<Program>> out(asts.size());
    std::vector<size_t> todo;
    const CompileOptions opts = CompileOptions::fromConfig();
    {
      std::lock_guard lock(mu);
      for (size_t i = 0; i < asts.size(); ++i) {
        auto it = programs.find({asts[i], opts.noopt, opts.bounds});
        if (it != programs.end()) {
          out[i] = it->second;
          ++statMemoryHits;
        } else {
          todo.push_back(i);
        }
      }
    }
    // dedup identical ASTs within this batch
    std::vector<size_t> unique;
    for (size_t i : todo) {
      bool dup = false;
      for (size_t u : unique) dup = dup || *asts[u] == *asts[i];
      if (!dup) unique.push_back(i);
    }
    struct Result {
      std::vector<uint8_t> object;
      KernelSignature sig;
      double seconds = 0;
      bool fromCache = false;
    };
    std::vector<Result> results(unique.size());
    std::vector<std::function<void()>> tasks;
    for (size_t u = 0; u < unique.size(); ++u)
      tasks.push_back([&, u] {
        const LazyOpRef &ast = asts[unique[u]];
        auto t0 = std::chrono::steady_clock::now();
        Result &r = results[u];
        std::string key = cacheKey(*ast, opts);
        if (auto hit = diskCache("cpu").load(key)) {
          r.object = std::move(*hit);
          r.sig = describeKernel(ast, target, opts);
          r.fromCache = true;
          ++statDiskHits;
        } else {
          r.object = compileToObject(ast, target, opts, &r.sig);
          diskCache("cpu").store(key, r.object);
          ++statCompiled;
        }
        r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      });
    ThreadPool::global().runAll(tasks);
    std::lock_guard lock(mu);
    for (size_t u = 0; u < unique.size(); ++u) {
      const LazyOpRef &ast = asts[unique[u]];
      auto [entry, range] = JIT::get().add(results[u].object, results[u].sig.symbol);
      auto prg = std::make_shared<CPUProgram>(ast, results[u].sig, entry, range, results[u].seconds,
                                              results[u].fromCache);
      programs.emplace(ProgramKey{ast, opts.noopt, opts.bounds}, prg);
      LAZYJIT_LOG(Runtime, 2, "{} {} in {:.2f} ms", results[u].fromCache ? "loaded" : "compiled",
                  results[u].sig.name, results[u].seconds * 1e3);
    }
    for (size_t i : todo) out[i] = programs.at({asts[i], opts.noopt, opts.bounds});
    return out;
  }

private:
  TargetSpec target;
  std::mutex mu;
  ProgramCache programs;

  std::string cacheKey(const LazyOp &ast, const CompileOptions &opts) const {
    return "lazyjit-cpu-v2\n" + target.key() + "\nnoopt=" + std::to_string(opts.noopt) +
           "\nbounds=" + std::to_string(boundsChecking(opts)) +
           "\n" + astKey(ast);
  }
};

} // namespace

std::unique_ptr<Device> makeCPUDevice(const std::string &name) { return std::make_unique<CPUDevice>(name); }

CPUCompileStats cpuCompileStats() { return {statCompiled.load(), statDiskHits.load(), statMemoryHits.load()}; }

} // namespace lazyjit
