// Timing workloads in turns, and waiting for a peer's idle threads to stop taking a CPU
// (BenchUtil.h).
#include "BenchUtil.h"
#include "lazyjit/Support/Config.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace lazyjit::bench {

namespace {

QuietStats stats;

// The CPU time of thread `tid` of this process: the kernel's per-thread CPU clock, whose id is
// made as glibc's pthread_getcpuclockid makes it (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)),
// which also works for threads this program did not create (a library's pool).
double threadCpuSeconds(pid_t tid) {
  auto id = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0; // the thread has exited
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The CPU time of every thread of this process but the caller.
double otherThreadsCpuSeconds() {
  auto self = static_cast<pid_t>(syscall(SYS_gettid));
  double total = 0;
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      auto tid = static_cast<pid_t>(std::atoi(e->d_name));
      if (tid > 0 && tid != self) total += threadCpuSeconds(tid);
    }
    closedir(d);
  }
  return total;
}

} // namespace

bool waitForQuietThreads(double maxSeconds) {
  constexpr double kWindow = 0.001, kQuiet = 0.05;
  auto start = Clock::now();
  double before = otherThreadsCpuSeconds();
  bool quiet = false;
  while (true) {
    // spin, not sleep: a sleeping caller lets its CPU idle, and this VM's CPUs come back from idle
    // slowly (the call after a sleep ran up to 2x slower than one made back to back)
    auto w0 = Clock::now();
    while (seconds(w0, Clock::now()) < kWindow) {
    }
    double now = otherThreadsCpuSeconds();
    // a thread that exited in the window takes its time with it: a drop counts as quiet
    if (now - before < kQuiet * seconds(w0, Clock::now())) {
      quiet = true;
      break;
    }
    before = now;
    if (seconds(start, Clock::now()) > maxSeconds) break;
  }
  double waited = seconds(start, Clock::now());
  ++stats.waits;
  stats.timedOut += !quiet;
  stats.seconds += waited;
  stats.longest = std::max(stats.longest, waited);
  return quiet;
}

QuietStats quietStats() { return stats; }

std::vector<Timing> timeInterleaved(const std::vector<Call> &calls, int rounds, int perRound, int warmups) {
  size_t n = calls.size();
  std::vector<Timing> out(n);
  std::vector<std::vector<double>> samples(n);
  for (size_t i = 0; i < n; ++i) {
    waitForQuietThreads();
    auto a = Clock::now();
    calls[i]();
    out[i].first = seconds(a, Clock::now());
    for (int w = 0; w < warmups; ++w) calls[i]();
  }
  for (int r = 0; r < rounds; ++r)
    for (size_t j = 0; j < n; ++j) {
      size_t i = (static_cast<size_t>(r) + j) % n;
      waitForQuietThreads();
      calls[i](); // not timed: the caches and the pool's threads come back from the previous turn's workload
      for (int k = 0; k < perRound; ++k) {
        auto s = Clock::now();
        calls[i]();
        samples[i].push_back(seconds(s, Clock::now()));
      }
    }
  for (size_t i = 0; i < n; ++i) {
    auto &v = samples[i];
    std::sort(v.begin(), v.end());
    out[i].median = (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
    out[i].min = v.front();
    out[i].max = v.back();
  }
  return out;
}

void atReferenceLevel(const Call &call) {
  Config c = config();
  c.opt = kReferenceOptLevel;
  ScopedConfig scope(c);
  call();
}

void timeAgainstPeers(Result &r, const Call &ours, const std::vector<Peer> &peers, int perRound) {
  std::vector<Call> calls{ours};
  for (const auto &p : peers) calls.push_back(p.call);
  bool withRef = config().opt != kReferenceOptLevel;
  if (withRef) calls.push_back([&ours] { atReferenceLevel(ours); });
  std::vector<Timing> t = timeInterleaved(calls, kRounds, perRound);
  r.t = t[0];
  for (size_t i = 0; i < peers.size(); ++i) r.vs[peers[i].name] = t[i + 1].median / r.t.median;
  if (withRef) {
    r.refT = t.back();
    r.vs["ref"] = r.refT->median / r.t.median;
  }
}

Result referenceRow(const Result &r) {
  Result ref{r.id + "-ref", r.name + " (OPT=2)", r.unit};
  ref.t = *r.refT;
  double scale = r.t.median / ref.t.median; // ours over the reference level's time
  // every rate of the bench is work per second, so it scales with the inverse of the median
  ref.rate = r.rate * scale;
  ref.kernels = r.refKernels;
  ref.vsCopy = r.vsCopy;
  for (const auto &[name, v] : r.vs)
    if (name != "ref" && name != "jit") ref.vs[name] = v * scale;
  return ref;
}

} // namespace lazyjit::bench
