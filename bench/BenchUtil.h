// Shared pieces of lazyjit-bench: timing (first call, warm-ups, timed calls) and the result rows.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace lazyjit::bench {

using Clock = std::chrono::steady_clock;
inline double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

struct Timing {
  double median = 0, min = 0, max = 0, first = 0;
};

// first call (compile included), >=2 warm-ups, >=7 timed calls; each call ends synchronized
inline Timing timeIt(const std::function<void()> &call, int warmups = 2, int reps = 7) {
  Timing t;
  auto a = Clock::now();
  call();
  t.first = seconds(a, Clock::now());
  for (int i = 0; i < warmups; ++i) call();
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) {
    auto s = Clock::now();
    call();
    v.push_back(seconds(s, Clock::now()));
  }
  std::sort(v.begin(), v.end());
  t.median = v[v.size() / 2];
  t.min = v.front();
  t.max = v.back();
  return t;
}

/// Heap allocations through C++ operator new so far in this process (AllocCount.cpp).
uint64_t allocationCount();

struct Result {
  Result(std::string id_, std::string name_, std::string unit_)
      : id(std::move(id_)), name(std::move(name_)), unit(std::move(unit_)) {}
  std::string id, name, unit;
  Timing t;
  double rate = 0;
  int kernels = 0;
  std::map<std::string, double> vs; // ratio of our rate to a peer's
  bool vsCopy = false;               // add the ratio to the copy ceiling once it is final
  std::string note;
};

} // namespace lazyjit::bench
