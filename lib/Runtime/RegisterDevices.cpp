// Registers the built-in device factories on first use of the registry.
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/Runtime/CUDADevice.h"
#include "lazyjit/Runtime/Interpreter.h"
#include "lazyjit/Schedule/Schedule.h"

#include <mutex>

namespace lazyjit {
namespace {

// The devices whose compilers take row kernels (OPT=5), known to the scheduler before any device
// is created: the CPU and NVPTX lowerings and the interpreter. On CUDA a reduce over whole rows
// does not compute its row values itself: that kernel would run the whole batch on one block.
[[maybe_unused]] const bool rowKernelDevicesRegistered = [] {
  registerRowKernelDevice("CPU");
  registerRowKernelDevice("CUDA", /*reducesOfRows=*/false);
  registerRowKernelDevice("INTERP");
  return true;
}();

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
