// The CUDA device: kernels compiled by lib/CodeGen to PTX for the GPU's compute capability, loaded
// with the CUDA driver API (libcuda.so.1, dlopen'ed at first use), cached in memory by AST and on
// disk as PTX, and launched on the device's primary context. Device names are "CUDA" (ordinal 0)
// and "CUDA:N". Without a driver or a GPU, opening the device throws DeviceError saying which is
// missing (deviceAvailable("CUDA", &why) gives tests that reason).
#pragma once

#include "lazyjit/Runtime/Device.h"

#include <cstddef>
#include <string>

namespace lazyjit {

std::unique_ptr<Device> makeCUDADevice(const std::string &name);

/// What lazyjit knows about an opened CUDA device.
struct CUDADeviceInfo {
  std::string name;         ///< the GPU's name, e.g. "NVIDIA H200"
  int major = 0, minor = 0; ///< compute capability
  std::string arch;         ///< the sm_XX PTX is generated for (CUDA_ARCH overrides it)
  std::string ptxFeatures;  ///< the PTX ISA version, e.g. "+ptx80"
  int driverVersion = 0;    ///< e.g. 12040 for CUDA 12.4
  size_t totalMemory = 0;   ///< bytes
  int multiprocessors = 0;
};
/// Opens the device (throws DeviceError if it cannot) and describes it.
CUDADeviceInfo cudaDeviceInfo(const std::string &device = "CUDA");

/// Compile statistics of the CUDA devices (tests check the memory and disk caches).
struct CUDACompileStats {
  int compiled = 0;   ///< kernels compiled to PTX by LLVM
  int diskHits = 0;   ///< PTX loaded from the disk cache
  int memoryHits = 0; ///< programs found in memory
};
CUDACompileStats cudaCompileStats();

/// The sm_XX lazyjit generates PTX for on a GPU of compute capability major.minor with LLVM's
/// NVPTX backend: the newest LLVM knows that is not newer than the GPU (the driver JIT-compiles
/// PTX for newer GPUs). `override` (the CUDA_ARCH knob) wins when it is set. Throws Error for a
/// malformed override.
std::string cudaArchFor(int major, int minor, const std::string &override = "");
/// The PTX ISA feature ("+ptx80") a driver of `driverVersion` (cuDriverGetVersion) can load.
std::string cudaPtxFeaturesFor(int driverVersion);

} // namespace lazyjit
