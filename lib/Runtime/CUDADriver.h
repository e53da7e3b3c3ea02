// The few CUDA driver API declarations the CUDA device needs, written here so that lazyjit builds
// without the CUDA toolkit, and the driver library (libcuda.so.1) loaded with dlopen at first use,
// so that binaries run on machines without an NVIDIA driver (CUDA is then simply unavailable).
// The types, constants and signatures are those of cuda.h (CUDA 12); only ABI-stable entry points
// are used, with their `_v2` names where the 64-bit versions have them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lazyjit::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
inline constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
inline constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;

// CUdevice_attribute
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
inline constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

// CUfunction_attribute
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
inline constexpr int CU_FUNC_ATTRIBUTE_NUM_REGS = 4;

// CUjit_option
inline constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// The driver entry points, resolved from libcuda.so.1.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice dev);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);       // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr ptr);                       // cuMemFree_v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes); // cuMemcpyHtoD_v2
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);       // cuMemcpyDtoH_v2
  CUresult (*cuMemGetInfo)(size_t *free, size_t *total);        // cuMemGetInfo_v2
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned numOptions, int *options,
                                 void **optionValues);
  CUresult (*cuModuleGetFunction)(CUfunction *fn, CUmodule module, const char *name);
  CUresult (*cuFuncGetAttribute)(int *value, int attribute, CUfunction fn);
  CUresult (*cuLaunchKernel)(CUfunction fn, unsigned gridX, unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ, unsigned sharedMemBytes, CUstream stream,
                             void **kernelParams, void **extra);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" for an error code.
  std::string describe(CUresult r) const;
  /// Throws DeviceError("CUDA: <what>: <describe(r)>") unless r is CUDA_SUCCESS.
  void check(CUresult r, const std::string &what) const;
};

/// The driver, loaded and initialized (cuInit) on first use. Throws DeviceError saying why when
/// there is no driver library, it lacks an entry point, or cuInit fails (e.g. no device).
const Driver &driver();

} // namespace lazyjit::cuda
