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
  std::vector<size_t> todo;
  {
    std::lock_guard lock(mu);
    for (size_t i = 0; i < asts.size(); ++i) {
      if (auto it = programs.find(keyOf(asts[i])); it != programs.end()) {
        out[i] = it->second;
        ++counters.memoryHits;
      } else {
        todo.push_back(i);
      }
    }
  }
  std::vector<size_t> unique; // equal ASTs within the batch compile once
  for (size_t i : todo)
    if (std::none_of(unique.begin(), unique.end(), [&](size_t u) { return *asts[u] == *asts[i]; }))
      unique.push_back(i);

  std::vector<KernelCode> codes(unique.size());
  std::vector<std::function<void()>> tasks;
  for (size_t u = 0; u < unique.size(); ++u)
    tasks.push_back([&, u] { codes[u] = produce(asts[unique[u]], opts, true); });
  ThreadPool::global().runAll(tasks);

  std::lock_guard lock(mu);
  for (size_t u = 0; u < unique.size(); ++u) {
    const KernelOpRef &ast = asts[unique[u]];
    std::shared_ptr<Program> prg = load(ast, codes[u]);
    if (!prg) {
      LAZYJIT_INTERNAL_CHECK(codes[u].fromCache, "{}: freshly compiled code of {} did not load", name(),
                             codes[u].sig.name);
      codes[u] = produce(ast, opts, false);
      prg = load(ast, codes[u]);
      LAZYJIT_INTERNAL_CHECK(prg != nullptr, "{}: recompiled code of {} did not load", name(), codes[u].sig.name);
    }
    programs.emplace(keyOf(ast), prg);
    LAZYJIT_LOG(Runtime, 2, "{} {} in {:.2f} ms{}", codes[u].fromCache ? "loaded" : "compiled", codes[u].sig.name,
                codes[u].seconds * 1e3, logDetail(codes[u].sig));
  }
  for (size_t i : todo) out[i] = programs.at(keyOf(asts[i]));
  return out;
}

} // namespace lazyjit
