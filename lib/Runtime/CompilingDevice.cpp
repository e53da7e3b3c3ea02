// The batch compile shared by the CPU and CUDA devices (CompilingDevice.h).
#include "CompilingDevice.h"
#include "lazyjit/Runtime/KernelCache.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Support/Logging.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>

namespace lazyjit {

// A kernel's key in the disk cache: the target (with the LLVM version and the code generator's
// fingerprint), the options the code depends on, and the AST.
std::string CompilingDevice::diskCacheKey(const KernelOp &ast, const CompileOptions &opts) const {
  std::string key = fmt::format("lazyjit-{}-v2\n{}\nnoopt={}\n", diskCacheName(), target.key(), opts.noopt ? 1 : 0);
  if (boundsMatter()) key += fmt::format("bounds={}\n", boundsChecking(opts) ? 1 : 0);
  if (!opts.mergeView) key += "mergeView=0\n";
  return key + astKey(ast);
}

KernelCode CompilingDevice::produce(const KernelOpRef &ast, const CompileOptions &opts, bool useDiskCache) const {
  auto t0 = std::chrono::steady_clock::now();
  KernelCode r;
  std::string key = diskCacheKey(*ast, opts);
  if (auto hit = useDiskCache ? diskCache(diskCacheName()).load(key) : std::nullopt) {
    r.bytes = std::move(*hit);
    r.sig = describeKernel(ast, target, opts);
    r.fromCache = true;
    ++counters.diskHits;
  } else {
    if (target.kind == TargetSpec::Kind::NVPTX) {
      std::string ptx = compileToPTX(ast, target, opts, &r.sig);
      r.bytes.assign(ptx.begin(), ptx.end());
    } else {
      r.bytes = compileToObject(ast, target, opts, &r.sig);
    }
    diskCache(diskCacheName()).store(key, r.bytes);
    ++counters.compiled;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<std::shared_ptr<Program>> CompilingDevice::compileAll(const std::vector<KernelOpRef> &asts) {
  const CompileOptions opts = CompileOptions::from(config());
  auto keyOf = [&](const KernelOpRef &ast) {
    return ProgramKey{ast, opts.noopt, opts.bounds && boundsMatter(), opts.mergeView};
  };
  std::vector<std::shared_ptr<Program>> out(asts.size());
  // Each kernel missing from the cache is compiled by the first call that asks for it: its key is
  // in flight until the program is in the cache, and a call (of this thread or another) that asks
  // for it meanwhile waits for that result, or for its error.
  std::vector<size_t> owned;                                  // compiled here
  std::vector<std::promise<std::shared_ptr<Program>>> promises; // one per owned kernel
  std::vector<std::pair<size_t, ProgramFuture>> waits;        // compiled by another call
  {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < asts.size(); ++i) {
      ProgramKey key = keyOf(asts[i]);
      if (auto it = programs.find(key); it != programs.end()) {
        out[i] = it->second;
        ++counters.memoryHits;
      } else if (auto f = inFlight.find(key); f != inFlight.end()) {
        waits.emplace_back(i, f->second); // (an equal AST earlier in this batch, too)
      } else {
        promises.emplace_back();
        inFlight.emplace(std::move(key), promises.back().get_future().share());
        owned.push_back(i);
      }
    }
  }

  size_t settled = 0; // owned kernels whose program (or error) is delivered, in order
  try {
    std::vector<KernelCode> codes(owned.size());
    std::vector<std::function<void()>> tasks;
    for (size_t u = 0; u < owned.size(); ++u)
      tasks.push_back([&, u] { codes[u] = produce(asts[owned[u]], opts, true); });
    ThreadPool::global().runAll(tasks);

    std::lock_guard lock(mu);
    for (size_t u = 0; u < owned.size(); ++u) {
      const KernelOpRef &ast = asts[owned[u]];
      std::shared_ptr<Program> prg = load(ast, codes[u]);
      if (!prg) {
        LAZYJIT_INTERNAL_CHECK(codes[u].fromCache, "{}: freshly compiled code of {} did not load", name(),
                               codes[u].sig.name);
        codes[u] = produce(ast, opts, false);
        prg = load(ast, codes[u]);
        LAZYJIT_INTERNAL_CHECK(prg != nullptr, "{}: recompiled code of {} did not load", name(), codes[u].sig.name);
      }
      ProgramKey key = keyOf(ast);
      programs.emplace(key, prg);
      inFlight.erase(key);
      promises[u].set_value(prg);
      ++settled;
      out[owned[u]] = prg;
      LAZYJIT_LOG(Runtime, 2, "{} {} in {:.2f} ms{}", codes[u].fromCache ? "loaded" : "compiled", codes[u].sig.name,
                  codes[u].seconds * 1e3, logDetail(codes[u].sig));
    }
  } catch (...) {
    // every call waiting for a kernel this one failed to deliver gets the error; a later call
    // compiles it again
    std::exception_ptr error = std::current_exception();
    std::lock_guard lock(mu);
    for (size_t u = settled; u < owned.size(); ++u) {
      inFlight.erase(keyOf(asts[owned[u]]));
      promises[u].set_exception(error);
    }
    throw;
  }
  // (after this call delivered all its own: two calls that wait for each other's never deadlock)
  for (auto &[i, f] : waits) out[i] = f.get();
  return out;
}

} // namespace lazyjit
