// Running schedules: lowering each ScheduleItem to a program, a copy, an allocation or a host
// function, allocating outputs and realizing the lazy graph (reference realize.py).
#pragma once

#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Schedule/Schedule.h"

#include <functional>
#include <vector>

namespace lazyjit {

struct RunStats {
  int kernels = 0; ///< compute kernels run
  int copies = 0;
  int customs = 0;
  double seconds = 0;
};

/// Runs every item in order. Compute kernels of one schedule are compiled before running (on
/// devices that compile in parallel, concurrently).
RunStats runSchedule(std::vector<ScheduleItem> schedule);

/// Observer hook: called after each item runs (tests and lazyjit-dump use it).
using ScheduleObserver = std::function<void(const ScheduleItem &, const Program *)>;
void setScheduleObserver(ScheduleObserver obs);

/// Counters since process start (the reference's GlobalCounters).
struct GlobalCounters {
  int64_t kernelCount = 0;
  int64_t copyCount = 0;
};
GlobalCounters &globalCounters();

} // namespace lazyjit
