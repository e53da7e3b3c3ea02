// Running schedules: lowering each ScheduleItem to a program, a copy, an allocation or a host
// function, allocating outputs and realizing the lazy graph (reference realize.py).
#pragma once

#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Schedule/Schedule.h"

#include <atomic>
#include <functional>
#include <span>
#include <vector>

namespace lazyjit {

/// One compute kernel as it ran (recorded when profiling).
struct KernelRun {
  std::string name;
  std::string device;
  std::vector<int64_t> global, local; ///< launch dims (CPU: the outer range and the chunks)
  double seconds = 0;                 ///< run time, the device synchronized
  double compileSeconds = 0;
  bool fromCache = false;
  double flops = 0;
  double bytes = 0;
};

struct RunStats {
  int kernels = 0; ///< compute kernels run
  int copies = 0;
  int customs = 0;
  double seconds = 0;
  std::vector<KernelRun> runs; ///< per kernel, when profiling
};

/// Runs every item in order. Compute kernels of one schedule are compiled before running (on
/// devices that compile in parallel, concurrently). With `profile`, each kernel is timed with
/// the device synchronized and recorded in RunStats::runs.
RunStats runSchedule(std::vector<ScheduleItem> schedule, bool profile = false);

/// Schedules `outs` under `o` and runs the schedule (Tensor::realize): the way to realize from
/// several threads at once. A buffer that another thread is computing (scheduled, its kernel not
/// yet run) is not computed again: this call waits until that thread's schedule has run, then
/// schedules what is left. A schedule runSchedule is handed directly has no such guard. Must be
/// called without the graph lock held (GraphLock.h).
RunStats realize(const std::vector<LazyBufferRef> &outs, const GraphOptions &o, bool profile = false);

/// Observer hook: called after each item runs (tests and lazyjit-dump use it), on the thread that
/// ran it. Set it while no other thread realizes.
using ScheduleObserver = std::function<void(const ScheduleItem &, const Program *)>;
void setScheduleObserver(ScheduleObserver obs);

/// Called just before each compute kernel runs, with the buffers it is given (the output first,
/// as Program::run takes them), while they still hold what the kernel reads: the output may be
/// written over one of its inputs (an input that dies with it, or an assign's target). lazyjit-dump
/// --check interprets the kernel here. On the running thread; set it while no other thread realizes.
using KernelRunObserver = std::function<void(const ScheduleItem &, std::span<Buffer *const>)>;
void setBeforeKernelObserver(KernelRunObserver obs);

/// One item as runSchedule ran it, with everything needed to run it again on the same buffers
/// (lazyjit::Jit replays these).
struct CapturedItem {
  Op kind = Op::Store;                          ///< Store: a kernel; else Empty, Copy or Custom
  std::shared_ptr<Program> program;             ///< kernels
  std::shared_ptr<Buffer> out;
  std::vector<std::shared_ptr<Buffer>> inputs;  ///< kernel inputs, or the source of a copy
  VarVals varVals;
  CustomOpRef custom;                           ///< Custom
  std::string device;
};
/// While set, runSchedule hands every item it runs (on this thread) to `sink`. Returns the previous sink.
using CaptureSink = std::function<void(CapturedItem)>;
CaptureSink setCaptureSink(CaptureSink sink);

/// Counters since process start (the reference's GlobalCounters).
/// Every thread adds to them (atomics: a thread's own deltas are exact only while it runs alone).
struct GlobalCounters {
  std::atomic<int64_t> kernelCount{0};
  std::atomic<int64_t> copyCount{0};
  /// Kernels that wrote their output over a dying input (Realize.cpp, inPlaceInputs).
  std::atomic<int64_t> inPlaceCount{0};
  /// Time spent in runSchedule (compiling and running; what is not graph building or scheduling).
  /// Kernels run asynchronously on a device are counted when a later item waits for them.
  std::atomic<double> runSeconds{0};
};
GlobalCounters &globalCounters();

} // namespace lazyjit
