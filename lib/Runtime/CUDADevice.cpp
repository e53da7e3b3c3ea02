// The CUDA device (see CUDADevice.h). Compiles PTX on the thread pool (one LLVMContext per
// compile), loads modules and launches kernels on the device's primary context, and keeps freed
// device memory for reuse.
//
// Launch ABI (CodeGen/Compiler.h): kernelParams = [&data0, &data1, ..., &var0, ...] with device
// pointers (CUdeviceptr) and int64 variable values; grid and block from the KernelSignature, the
// grid's symbolic dims evaluated with the variable values; shared memory is static in the PTX.
#include "lazyjit/Runtime/CUDADevice.h"
#include "CUDADriver.h"
#include "CompilingDevice.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Logging.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <unordered_map>

namespace lazyjit {

using namespace cuda;

namespace {


std::string bytesText(size_t n) {
  if (n >= (size_t(1) << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1 << 30));
  if (n >= (size_t(1) << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
  return fmt::format("{} bytes", n);
}

CUdeviceptr devicePtr(const void *p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }

// A device's primary context; every driver call is preceded by makeCurrent() because the calling
// thread (the scheduler, a pool worker, a test) may not have it current.
struct Context {
  const Driver *d = nullptr;
  CUcontext ctx = nullptr;
  void makeCurrent() const { d->check(d->cuCtxSetCurrent(ctx), "cannot make the device's context current"); }
};

// Device memory cached by size (256-byte granules), so repeated realizes reuse allocations. On
// out-of-memory the cache is released and the allocation retried once.
class CUDAAllocator : public Allocator {
public:
  CUDAAllocator(Context c, std::string device) : c(c), device(std::move(device)) {}

  void *alloc(size_t bytes) override {
    size_t sz = roundUp(bytes);
    std::lock_guard lock(mu);
    if (auto it = freeBlocks.find(sz); it != freeBlocks.end()) {
      CUdeviceptr p = it->second;
      freeBlocks.erase(it);
      cachedBytes -= sz;
      return reinterpret_cast<void *>(static_cast<uintptr_t>(p));
    }
    c.makeCurrent();
    CUdeviceptr p = 0;
    CUresult r = c.d->cuMemAlloc(&p, sz);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && cachedBytes > 0) {
      trimLocked();
      r = c.d->cuMemAlloc(&p, sz);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      size_t freeMem = 0, total = 0;
      c.d->cuMemGetInfo(&freeMem, &total);
      throw DeviceError(fmt::format("{}: out of device memory allocating {} ({} bytes): {} of {} are free", device,
                                    bytesText(sz), sz, bytesText(freeMem), bytesText(total)));
    }
    c.d->check(r, fmt::format("allocating {} bytes on {}", sz, device));
    return reinterpret_cast<void *>(static_cast<uintptr_t>(p));
  }

  void free(void *ptr, size_t bytes) override {
    if (!ptr) return;
    std::lock_guard lock(mu);
    freeBlocks.emplace(roundUp(bytes), devicePtr(ptr));
    cachedBytes += roundUp(bytes);
  }

  void copyIn(void *dst, const void *src, size_t bytes) override {
    if (!bytes) return;
    c.makeCurrent();
    c.d->check(c.d->cuMemcpyHtoD(devicePtr(dst), src, bytes), fmt::format("copying {} bytes to {}", bytes, device));
  }

  void copyOut(void *dst, const void *src, size_t bytes) override {
    if (!bytes) return;
    c.makeCurrent();
    c.d->check(c.d->cuMemcpyDtoH(dst, devicePtr(src), bytes), fmt::format("copying {} bytes from {}", bytes, device));
  }

private:
  Context c;
  std::string device;
  std::mutex mu;
  std::multimap<size_t, CUdeviceptr> freeBlocks;
  size_t cachedBytes = 0;

  static size_t roundUp(size_t n) { return (std::max<size_t>(n, 1) + 255) / 256 * 256; }
  void trimLocked() {
    c.makeCurrent();
    for (auto &[sz, p] : freeBlocks) c.d->cuMemFree(p);
    freeBlocks.clear();
    cachedBytes = 0;
  }
};

class CUDAProgram : public Program {
public:
  CUDAProgram(Context c, std::string device, KernelOpRef ast, KernelSignature sig, CUfunction fn, double compileSeconds,
              bool fromCache)
      : c(c), device(std::move(device)), ast(std::move(ast)), sig(std::move(sig)), fn(fn) {
    info_.name = this->sig.name;
    info_.global = this->sig.globalSize;
    info_.local = this->sig.localSize;
    auto li = getLazyOpInfo(*this->ast);
    info_.flops = li.flops;
    info_.memBytes = li.memEstimate();
    info_.compileSeconds = compileSeconds;
    info_.fromCache = fromCache;
    c.d->cuFuncGetAttribute(&maxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    c.d->cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, fn);
  }

  void run(std::span<Buffer *const> bufs, const VarVals &vars) override {
    LAZYJIT_USER_CHECK(static_cast<int>(bufs.size()) >= sig.numBuffers, Error,
                       "runtime: kernel {} needs {} buffers, got {}", sig.name, sig.numBuffers, bufs.size());
    std::vector<CUdeviceptr> ptrs;
    for (Buffer *b : bufs) {
      LAZYJIT_USER_CHECK(canonicalizeDevice(b->device()) == device, DeviceError,
                         "runtime: kernel {} on {} got a buffer on {}", sig.name, device, b->device());
      ptrs.push_back(devicePtr(b->ptr()));
    }
    std::vector<int64_t> vals;
    std::map<std::string, int64_t> byName;
    for (const auto &v : sig.vars) {
      auto it = vars.find(*v->expr);
      LAZYJIT_USER_CHECK(it != vars.end(), Error, "runtime: kernel {} needs a value for {}", sig.name, *v->expr);
      vals.push_back(it->second.second);
      byName[*v->expr] = it->second.second;
    }
    int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    for (size_t i = 0; i < sig.gridDims.size(); ++i) grid[i] = symInfer(sig.gridDims[i], byName);
    for (size_t i = 0; i < sig.localSize.size(); ++i) block[i] = sig.localSize[i];
    if (grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0) return; // an empty tensor: nothing to compute
    LAZYJIT_USER_CHECK(grid[0] <= 2147483647 && grid[1] <= 65535 && grid[2] <= 65535, DeviceError,
                       "runtime: kernel {} needs a grid of [{}, {}, {}] blocks, more than CUDA allows", sig.name,
                       grid[0], grid[1], grid[2]);
    int64_t threads = block[0] * block[1] * block[2];
    LAZYJIT_USER_CHECK(maxThreads <= 0 || threads <= maxThreads, DeviceError,
                       "runtime: kernel {} needs {} threads per block, but with {} registers per thread {} allows "
                       "only {}",
                       sig.name, threads, registers, device, maxThreads);
    std::vector<void *> params;
    for (auto &p : ptrs) params.push_back(&p);
    for (auto &v : vals) params.push_back(&v);
    c.makeCurrent();
    CUresult r = c.d->cuLaunchKernel(fn, static_cast<unsigned>(grid[0]), static_cast<unsigned>(grid[1]),
                                     static_cast<unsigned>(grid[2]), static_cast<unsigned>(block[0]),
                                     static_cast<unsigned>(block[1]), static_cast<unsigned>(block[2]), 0, nullptr,
                                     params.data(), nullptr);
    c.d->check(r, fmt::format("launching kernel {} with grid [{}, {}, {}] and block [{}, {}, {}] ({} registers per "
                              "thread)",
                              sig.name, grid[0], grid[1], grid[2], block[0], block[1], block[2], registers));
  }

  const ProgramInfo &info() const override { return info_; }

private:
  Context c;
  std::string device;
  KernelOpRef ast;
  KernelSignature sig;
  CUfunction fn;
  int maxThreads = 0, registers = 0;
  ProgramInfo info_;
};

class CUDADevice : public CompilingDevice {
public:
  explicit CUDADevice(const std::string &name) : CompilingDevice(name, counters()) {
    const Driver &d = driver();
    int ordinal = 0;
    if (auto pos = name.find(':'); pos != std::string::npos) {
      try {
        ordinal = std::stoi(name.substr(pos + 1));
      } catch (const std::exception &) {
        throw DeviceError("CUDA: bad device name '" + name + "' (expected CUDA or CUDA:N)");
      }
    }
    int count = 0;
    d.check(d.cuDeviceGetCount(&count), "cannot count the devices");
    if (count == 0) throw DeviceError("CUDA: the NVIDIA driver reports no CUDA device");
    if (ordinal < 0 || ordinal >= count)
      throw DeviceError(fmt::format("CUDA: there is no device {} ({} device{}: CUDA{})", name, count,
                                    count == 1 ? "" : "s", count == 1 ? "" : fmt::format("..CUDA:{}", count - 1)));
    CUdevice dev = 0;
    d.check(d.cuDeviceGet(&dev, ordinal), "cannot open device " + std::to_string(ordinal));
    char gpuName[256] = {};
    d.cuDeviceGetName(gpuName, sizeof(gpuName) - 1, dev);
    info.name = gpuName;
    d.check(d.cuDeviceGetAttribute(&info.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
            "cannot read the compute capability");
    d.check(d.cuDeviceGetAttribute(&info.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
            "cannot read the compute capability");
    d.cuDeviceGetAttribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    d.cuDriverGetVersion(&info.driverVersion);
    c.d = &d;
    d.check(d.cuDevicePrimaryCtxRetain(&c.ctx, dev), "cannot retain the primary context of " + name);
    c.makeCurrent();
    size_t freeMem = 0;
    d.cuMemGetInfo(&freeMem, &info.totalMemory);
    info.arch = cudaArchFor(info.major, info.minor, config().cudaArch);
    info.ptxFeatures = cudaPtxFeaturesFor(info.driverVersion);
    target = TargetSpec::nvptx(info.arch, config().llvmOptLevel);
    target.features = info.ptxFeatures;
    allocator_ = std::make_unique<CUDAAllocator>(c, this->name());
    LAZYJIT_LOG(Runtime, 1, "{}: {} (compute capability {}.{}, {} SMs, {}), PTX for {} {}", this->name(), info.name,
                info.major, info.minor, info.multiprocessors, bytesText(info.totalMemory), info.arch,
                info.ptxFeatures);
  }

  Allocator &allocator() override { return *allocator_; }

  static CompileCounters &counters() {
    static CompileCounters c;
    return c;
  }

  void synchronize() override {
    c.makeCurrent();
    c.d->check(c.d->cuCtxSynchronize(), "synchronizing " + name() + " (a kernel launched earlier failed)");
  }

  CUDADeviceInfo info;

protected:
  const char *diskCacheName() const override { return "ptx"; }
  std::shared_ptr<Program> load(const KernelOpRef &ast, const KernelCode &code) override;
  bool boundsMatter() const override { return false; }
  std::string logDetail(const KernelSignature &sig) const override {
    return fmt::format(" for {} (grid {}, block {})", target.cpu, fmt::join(sig.globalSize, "x"),
                       fmt::join(sig.localSize, "x"));
  }

private:
  Context c;
  std::unique_ptr<CUDAAllocator> allocator_;
};

// Loads a kernel's PTX into a module of its own. Returns nullptr (after logging why) only for PTX
// from the disk cache, which the caller then recompiles; fresh PTX that does not load throws with
// the driver's JIT log.
std::shared_ptr<Program> CUDADevice::load(const KernelOpRef &ast, const KernelCode &k) {
  const Driver &d = *c.d;
  c.makeCurrent();
  std::string errLog(32768, '\0'), infoLog(32768, '\0');
  int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {errLog.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(errLog.size())), infoLog.data(),
                  reinterpret_cast<void *>(static_cast<uintptr_t>(infoLog.size()))};
  CUmodule module = nullptr;
  std::string ptx(k.bytes.begin(), k.bytes.end()); // NUL-terminated for the driver
  CUresult r = d.cuModuleLoadDataEx(&module, ptx.c_str(), 4, opts, vals);
  for (std::string *log : {&errLog, &infoLog})
    if (size_t end = log->find('\0'); end != std::string::npos) log->resize(end);
  if (!infoLog.empty()) LAZYJIT_LOG(Runtime, 3, "{}: JIT log of {}: {}", name(), k.sig.name, infoLog);
  if (r != CUDA_SUCCESS) {
    std::string msg = fmt::format("CUDA: cannot load the PTX of kernel {} on {} ({}, {}): {}{}{}", k.sig.name, name(),
                                  info.name, target.cpu, d.describe(r), errLog.empty() ? "" : "\n",
                                  errLog.empty() ? std::string("(the driver gave no log)") : errLog);
    if (k.fromCache) {
      logger(Stage::Runtime).warn("{}; recompiling it", msg);
      return nullptr;
    }
    throw CompileError(msg);
  }
  CUfunction fn = nullptr;
  d.check(d.cuModuleGetFunction(&fn, module, k.sig.symbol.c_str()),
          "kernel " + k.sig.name + " (" + k.sig.symbol + ") is not in its module");
  return std::make_shared<CUDAProgram>(c, name(), ast, k.sig, fn, k.seconds, k.fromCache);
}

// The processors LLVM 19's NVPTX backend knows, by compute capability.
constexpr int kLLVMArchs[] = {20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};

} // namespace

std::string cudaArchFor(int major, int minor, const std::string &override) {
  if (!override.empty()) {
    bool ok = override.size() > 3 && override.rfind("sm_", 0) == 0 &&
              std::all_of(override.begin() + 3, override.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)); });
    LAZYJIT_USER_CHECK(ok, Error, "environment variable CUDA_ARCH='{}' is not an sm_XX architecture", override);
    return override;
  }
  int cc = major * 10 + minor, best = kLLVMArchs[0];
  for (int a : kLLVMArchs)
    if (a <= cc) best = a;
  return "sm_" + std::to_string(best);
}

std::string cudaPtxFeaturesFor(int driverVersion) {
  int major = driverVersion / 1000, minor = driverVersion % 1000 / 10;
  if (major >= 12) return "+ptx80";
  if (major == 11) return "+ptx7" + std::to_string(std::min(minor, 8));
  return "+ptx60";
}

std::unique_ptr<Device> makeCUDADevice(const std::string &name) { return std::make_unique<CUDADevice>(name); }

CUDADeviceInfo cudaDeviceInfo(const std::string &device) {
  Device &d = getDevice(device);
  auto *cd = dynamic_cast<CUDADevice *>(&d);
  LAZYJIT_USER_CHECK(cd != nullptr, DeviceError, "{} is not a CUDA device", device);
  return cd->info;
}

CUDACompileStats cudaCompileStats() {
  const CompileCounters &c = CUDADevice::counters();
  return {c.compiled.load(), c.diskHits.load(), c.memoryHits.load()};
}

} // namespace lazyjit
