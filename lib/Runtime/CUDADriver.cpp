// Loads libcuda.so.1 with dlopen and resolves the driver entry points (see CUDADriver.h). A
// failure is remembered, so every later use reports the same reason without retrying.
#include "CUDADriver.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Logging.h"

#include <dlfcn.h>
#include <mutex>

namespace lazyjit::cuda {

namespace {

struct Loaded {
  Driver driver{};
  std::string error; ///< why the driver is unusable; empty when it loaded
};

template <typename F> bool resolve(void *lib, const char *name, F &slot, std::string &error) {
  void *sym = dlsym(lib, name);
  if (!sym) {
    error = fmt::format("CUDA: the driver library libcuda.so.1 has no {} (driver too old?)", name);
    return false;
  }
  slot = reinterpret_cast<F>(sym);
  return true;
}

Loaded load() {
  Loaded l;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    l.error = fmt::format("CUDA: cannot load the NVIDIA driver library libcuda.so.1 ({}); no NVIDIA driver is "
                          "installed on this machine",
                          why ? why : "not found");
    return l;
  }
  Driver &d = l.driver;
  std::string &e = l.error;
  bool ok = resolve(lib, "cuInit", d.cuInit, e) && resolve(lib, "cuDriverGetVersion", d.cuDriverGetVersion, e) &&
            resolve(lib, "cuDeviceGetCount", d.cuDeviceGetCount, e) && resolve(lib, "cuDeviceGet", d.cuDeviceGet, e) &&
            resolve(lib, "cuDeviceGetName", d.cuDeviceGetName, e) &&
            resolve(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, e) &&
            resolve(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, e) &&
            resolve(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent, e) &&
            resolve(lib, "cuCtxSynchronize", d.cuCtxSynchronize, e) && resolve(lib, "cuMemAlloc_v2", d.cuMemAlloc, e) &&
            resolve(lib, "cuMemFree_v2", d.cuMemFree, e) && resolve(lib, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, e) &&
            resolve(lib, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, e) && resolve(lib, "cuMemGetInfo_v2", d.cuMemGetInfo, e) &&
            resolve(lib, "cuModuleLoadDataEx", d.cuModuleLoadDataEx, e) &&
            resolve(lib, "cuModuleGetFunction", d.cuModuleGetFunction, e) &&
            resolve(lib, "cuFuncGetAttribute", d.cuFuncGetAttribute, e) &&
            resolve(lib, "cuLaunchKernel", d.cuLaunchKernel, e) &&
            resolve(lib, "cuStreamSynchronize", d.cuStreamSynchronize, e) &&
            resolve(lib, "cuGetErrorName", d.cuGetErrorName, e) && resolve(lib, "cuGetErrorString", d.cuGetErrorString, e);
  if (!ok) return l;
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    l.error = r == CUDA_ERROR_NO_DEVICE ? "CUDA: the NVIDIA driver is installed but reports no CUDA device ("
                                              + d.describe(r) + ")"
                                        : "CUDA: cuInit failed: " + d.describe(r);
    return l;
  }
  int version = 0;
  d.cuDriverGetVersion(&version);
  LAZYJIT_LOG(Runtime, 1, "CUDA driver {}.{} loaded", version / 1000, version % 1000 / 10);
  return l;
}

} // namespace

std::string Driver::describe(CUresult r) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName) cuGetErrorName(r, &name);
  if (cuGetErrorString) cuGetErrorString(r, &text);
  return fmt::format("{} ({})", name ? name : "CUDA error " + std::to_string(r), text ? text : "no description");
}

void Driver::check(CUresult r, const std::string &what) const {
  if (r != CUDA_SUCCESS) throw DeviceError("CUDA: " + what + ": " + describe(r));
}

const Driver &driver() {
  static Loaded *loaded = nullptr; // never unloaded: kernels and buffers may live until exit
  static std::once_flag once;
  std::call_once(once, [] { loaded = new Loaded(load()); });
  if (!loaded->error.empty()) throw DeviceError(loaded->error);
  return loaded->driver;
}

} // namespace lazyjit::cuda
