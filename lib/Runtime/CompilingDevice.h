// The compile-and-cache routine both code-generating devices (CPU, CUDA) share.
//
// A batch of kernel ASTs becomes programs in four steps, in one place: answer what the device's
// in-memory cache has; drop duplicates within the batch; produce each remaining kernel's code on
// the thread pool (from the disk cache, or by compiling it and storing it there); then, serially
// under the device's lock, turn each code into a program and remember it. Calls from several
// threads compile each kernel once: a kernel another call is compiling is waited for. A device
// supplies only what differs: its target, the disk cache's name, and how code becomes a program
// (which may refuse code from the disk cache: then that kernel is compiled afresh).
#pragma once

#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/Device.h"

#include <atomic>
#include <cstdint>
#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace lazyjit {

/// A device type's counters (cpuCompileStats, cudaCompileStats read them).
struct CompileCounters {
  std::atomic<int> compiled{0}, diskHits{0}, memoryHits{0};
};

/// One kernel's code before it becomes a program.
struct KernelCode {
  std::vector<uint8_t> bytes; ///< an object file (CPU) or PTX text (CUDA)
  KernelSignature sig;
  double seconds = 0;     ///< producing it: compiling, or loading from the disk cache
  bool fromCache = false; ///< read from the disk cache
};

class CompilingDevice : public Device {
public:
  CompilingDevice(std::string name, CompileCounters &counters) : Device(std::move(name)), counters(counters) {}

  std::shared_ptr<Program> compile(const KernelOpRef &ast) final { return compileAll({ast})[0]; }
  std::vector<std::shared_ptr<Program>> compileAll(const std::vector<KernelOpRef> &asts) final;

protected:
  /// What the device compiles for: object code for a CPU target, PTX for NVPTX.
  TargetSpec target;
  /// The disk cache's directory name ("cpu", "ptx"), also in its keys.
  virtual const char *diskCacheName() const = 0;
  /// Makes a program of the code (called under the device's lock, one kernel at a time). May
  /// return null for code from the disk cache that does not load: it is then compiled again.
  virtual std::shared_ptr<Program> load(const KernelOpRef &ast, const KernelCode &code) = 0;
  /// Whether the code depends on CompileOptions::bounds (CPU bounds checks; PTX has none): the
  /// in-memory cache keys on it only then.
  virtual bool boundsMatter() const { return true; }
  /// What the DEBUG=2 log line adds after the kernel's name and time.
  virtual std::string logDetail(const KernelSignature &) const { return ""; }

private:
  KernelCode produce(const KernelOpRef &ast, const CompileOptions &opts, bool useDiskCache) const;
  std::string diskCacheKey(const KernelOp &ast, const CompileOptions &opts) const;

  using ProgramFuture = std::shared_future<std::shared_ptr<Program>>;

  CompileCounters &counters;
  std::mutex mu;
  ProgramCache programs;
  /// The kernels a call is compiling (compileAll): other calls wait for these instead of
  /// compiling them again.
  std::unordered_map<ProgramKey, ProgramFuture, ProgramKeyHash> inFlight;
};

} // namespace lazyjit
