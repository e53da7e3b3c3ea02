// Registers the built-in device factories on first use of the registry.
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/Runtime/CUDADevice.h"
#include "lazyjit/Runtime/Interpreter.h"

#include <mutex>

namespace lazyjit {
namespace {

// (which of these take row kernels the scheduler knows itself: Schedule.h, rowKernelDevice)
void registerBuiltinsOnce() {
  registerDeviceFactory("INTERP", makeInterpreterDevice);
  registerDeviceFactory("CPU", makeCPUDevice);
  registerDeviceFactory("CUDA", makeCUDADevice);
}

} // namespace

// Called by getDevice (Device.cpp) before every lookup.
void registerBuiltinDevices() {
  static std::once_flag once;
  std::call_once(once, registerBuiltinsOnce);
}

} // namespace lazyjit
