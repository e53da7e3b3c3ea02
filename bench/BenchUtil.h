// Shared pieces of lazyjit-bench: timing (first call, warm-ups, timed calls) and the result rows.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
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

/// One synchronized call of a workload: lazyjit's, or a peer's (which owns its data).
using Call = std::function<void()>;
/// A peer measured against lazyjit: its name in the ratios ("openblas", "libtorch", ...) and its call.
struct Peer {
  std::string name;
  Call call;
};

/// Times `calls` against each other in turns (Interleave.cpp): each makes its first call and
/// `warmups` more, then `rounds` rounds run every call `perRound` times, in an order that rotates
/// by one each round, each run of calls after the process's other threads went quiet
/// (waitForQuietThreads). This host's speed moves by up to 1.5x in phases of seconds, so calls
/// timed one workload after the other compared different phases; timed in turns, every call samples
/// the same phases and the ratio of two medians compares like with like. One Timing per call, in
/// order; `first` is each call's first.
inline constexpr int kRounds = 7;
std::vector<Timing> timeInterleaved(const std::vector<Call> &calls, int rounds = kRounds, int perRound = 2,
                                    int warmups = 2);

/// Waits until the other threads of this process together used under 5% of a CPU over 2 ms, or
/// `maxSeconds` passed; returns whether they went quiet. A peer's idle threads keep a CPU after
/// its call returns (OpenBLAS's workers yield in a loop for ~0.1 s, libgomp's spin), which the
/// next workload timed would lose; lazyjit's pool threads sleep at once.
bool waitForQuietThreads(double maxSeconds = 1.0);

/// What waitForQuietThreads did in this run: waits, how many timed out, the seconds waited and
/// the longest wait.
struct QuietStats {
  int waits = 0, timedOut = 0;
  double seconds = 0, longest = 0;
};
QuietStats quietStats();

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
  /// The same workload at the reference's fusion level (OPT=2), timed in turns with this one
  /// (timeAgainstPeers), and its kernel count; none where this row already runs at OPT=2.
  std::optional<Timing> refT;
  int refKernels = 0;
};

/// Times `ours` in turns with `peers` (timeInterleaved, `perRound` timed calls a turn) and, where
/// the configured fusion level is not the reference's, with `ours` again at OPT=2: our Timing
/// goes to `r.t`, the reference level's to `r.refT` (its median over ours to `r.vs["ref"]`, so
/// above 1 means the default level is faster), and each peer's median over ours to `r.vs` under
/// the peer's name.
void timeAgainstPeers(Result &r, const Call &ours, const std::vector<Peer> &peers, int perRound = 2);

/// `call` run at the reference's fusion level (OPT=2): the graph it builds and the kernels it
/// runs are the reference's.
void atReferenceLevel(const Call &call);

/// The row `W<n>-ref` of a row timed with its reference level (`r.refT`): the same rate unit and
/// peers, each ratio over the reference level's median.
Result referenceRow(const Result &r);

} // namespace lazyjit::bench
