// Devices, their allocators and programs, and the device registry.
//
// A device is named ("CPU", "INTERP", "CUDA", "CUDA:1"). It owns an allocator for its buffers and
// turns kernel ASTs into Programs. Programs are cached per device by the AST (see compile()).
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Schedule/Schedule.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace lazyjit {

class Buffer;

/// Device memory: allocation plus copies to and from host memory.
class Allocator {
public:
  virtual ~Allocator() = default;
  virtual void *alloc(size_t bytes) = 0;
  virtual void free(void *ptr, size_t bytes) = 0;
  virtual void copyIn(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyOut(void *dst, const void *src, size_t bytes) = 0;
  /// True when device pointers are plain host pointers (CPU, INTERP).
  virtual bool hostAccessible() const { return false; }
};

/// Statistics of one program, for DEBUG output and `--emit=stats`.
struct ProgramInfo {
  std::string name;            ///< kernel name, e.g. "r_16_256_4"
  std::vector<int64_t> global; ///< launch dims (CPU: the parallel outer range)
  std::vector<int64_t> local;
  SInt flops = 0;
  int64_t memBytes = 0;
  double compileSeconds = 0;
  bool fromCache = false;      ///< loaded from the disk cache instead of compiled
  /// The inputs (LOAD indices) the output may be written over when they die with the kernel
  /// (inPlaceInputs, Realize.cpp): the CPU's, whose kernels do not promise LLVM that those
  /// pointers never alias. Empty on the CUDA device, which keeps the promise (NVPTX reads inputs
  /// through the read-only cache with it) and has no first-touch page faults to save, and in the
  /// interpreter, which the differential tests compare against.
  std::vector<int> writableInputs;
};

/// A compiled (or interpreted) kernel, runnable on buffers of its device.
class Program {
public:
  virtual ~Program() = default;
  /// Runs on `bufs` = [output, inputs...] with the kernel's variable values.
  /// Programs are shared by every thread (the device's cache hands out one per kernel): run may
  /// be called from several threads at once, and changes nothing in the program.
  virtual void run(std::span<Buffer *const> bufs, const VarVals &vars) = 0;
  virtual const ProgramInfo &info() const = 0;
  /// The launch dims a run with `vars` uses (profiles): info()'s, unless they depend on `vars`.
  virtual void launchShape(const VarVals &vars, std::vector<int64_t> &global, std::vector<int64_t> &local) const {
    (void)vars;
    global = info().global;
    local = info().local;
  }
};

/// A device's in-memory program cache: compiled programs by AST (one KernelOp per structure, so by identity) and by whether
/// kernel optimizations were on (NOOPT), bounds checks (LAZYJIT_BOUNDS) and MERGE_VIEW.
struct ProgramKey {
  KernelOpRef ast;
  bool noopt;
  bool bounds = false;   ///< CPU: compiled with bounds checks (LAZYJIT_BOUNDS)
  bool mergeView = true; ///< the kernel's reshapes merge views (MERGE_VIEW)
  bool operator==(const ProgramKey &o) const {
    return noopt == o.noopt && bounds == o.bounds && mergeView == o.mergeView && *ast == *o.ast;
  }
};
struct ProgramKeyHash {
  size_t operator()(const ProgramKey &k) const {
    return k.ast->hash() * 8 + k.noopt * 4 + k.bounds * 2 + k.mergeView;
  }
};
using ProgramCache = std::unordered_map<ProgramKey, std::shared_ptr<Program>, ProgramKeyHash>;

class Device {
public:
  explicit Device(std::string name) : name_(std::move(name)) {}
  virtual ~Device() = default;
  const std::string &name() const { return name_; }
  virtual Allocator &allocator() = 0;
  /// Returns the program for a STORE-rooted kernel AST (cached by the AST).
  virtual std::shared_ptr<Program> compile(const KernelOpRef &ast) = 0;
  /// Compiles several kernels (devices may do it in parallel); the default compiles one by one.
  virtual std::vector<std::shared_ptr<Program>> compileAll(const std::vector<KernelOpRef> &asts);
  /// Waits for all work on the device.
  virtual void synchronize() {}
  /// Whether a convolution whose window is `width` wide (its last dimension) reads its padded
  /// input through the padding's masks about as fast as from a copy with the padding written out:
  /// OPT=5 then writes no copy (TensorConv.cpp).
  virtual bool readsPaddedConvInput(int64_t width) const {
    (void)width;
    return false;
  }

private:
  std::string name_;
};

/// Canonical device name: "cpu" -> "CPU", "cuda:0" -> "CUDA".
std::string canonicalizeDevice(const std::string &name);
/// The device registry. Throws DeviceError for unknown or unavailable devices.
Device &getDevice(const std::string &name);
/// The default device: the DEVICE knob, else CPU.
std::string defaultDevice();
/// Registers a device factory under a base name ("CPU", "INTERP", "CUDA").
void registerDeviceFactory(const std::string &baseName,
                           std::function<std::unique_ptr<Device>(const std::string &)> factory);
/// True if a device of this name can be opened (tests use this to skip with a reason).
bool deviceAvailable(const std::string &name, std::string *why = nullptr);

} // namespace lazyjit
