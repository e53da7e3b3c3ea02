// The overhead workloads of lazyjit-bench, W9a-W9c: what a program pays around its kernels: the
// first call in a fresh process (with and without the disk cache), building and scheduling a
// graph, and compiling a kernel.
#include "Workloads.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Support/NodePool.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

namespace lazyjit::bench {

void runW9aChild(const Sizes &sz, const std::string &device) {
  // W9a: schedule + compile + run of the softmax workload in this fresh process
  Tensor x = Tensor::rand({sz.rows, sz.cols}, {std::nullopt, device});
  x.realize();
  sync(device);
  auto a = Clock::now();
  Tensor y = x.softmax();
  y.realize();
  sync(device);
  std::printf("%.6f\n", seconds(a, Clock::now()));
}

Result benchW9a(const std::string &device) {
  // (a) first call of W3 in a fresh process, with an empty cache and then with the disk cache
  std::string dir = "/tmp/lazyjit-bench-w9a-" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "'; LAZYJIT_CACHE='" + dir + "' '/proc/" + std::to_string(getpid()) +
                    "/exe' --w9a-child --device " + device;
  auto runChild = [&]() -> double {
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return -1;
    double v = -1;
    if (std::fscanf(p, "%lf", &v) != 1) v = -1;
    pclose(p);
    return v;
  };
  // three fresh processes each: single first calls vary with how fast the host backs fresh
  // memory; report the median, with min and max
  auto three = [&](const std::string &c) {
    std::vector<double> v;
    for (int i = 0; i < 3; ++i) {
      cmd = c;
      v.push_back(runChild());
    }
    std::sort(v.begin(), v.end());
    Timing t;
    t.min = v.front();
    t.median = v[1];
    t.max = v.back();
    t.first = v[1];
    return t;
  };
  Timing cold = three(cmd);
  Timing warm = three(cmd.substr(cmd.find(';') + 2)); // same cache dir, now filled
  std::string rmCmd = "rm -rf '" + dir + "'";
  if (std::system(rmCmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  Result a{"W9a", "first softmax call in a fresh process (empty cache)", "ms"};
  a.t = cold;
  a.rate = cold.median * 1e3;
  a.note = fmt::format("3 processes: min {:.1f} max {:.1f} ms; with the disk cache: median {:.1f} ms",
                       cold.min * 1e3, cold.max * 1e3, warm.median * 1e3);
  return a;
}

Result benchW9b(const std::string &device, int ops) {
  // (b) build + schedule a chain of `ops` element-wise ops on 1024 elements, per op; the rows at
  // 200, 20,000 and 200,000 ops show whether the per-op cost stays flat as the graph grows
  Tensor base = input({1024}, device);
  int warmups = ops <= 200 ? 10 : 1, reps = ops <= 200 ? 51 : ops <= 20000 ? 7 : 3;
  // heap allocations (operator new) and blocks from the node pool, counted apart
  uint64_t buildAllocs = 0, scheduleAllocs = 0, buildPooled = 0, schedulePooled = 0;
  // each call's three phases apart (the rate is their sum, the call): building the graph,
  // scheduling it, and freeing both (the graph and the kernel IR)
  std::vector<double> building, scheduling, freeing;
  Timing tb = timeIt([&] {
    auto t0 = Clock::now(), t1 = t0, t2 = t0;
    {
      uint64_t a0 = allocationCount(), p0 = nodePoolAllocations();
      Tensor t = base;
      for (int i = 0; i < ops; ++i) t = (i % 2) ? t.add(1.0 + i) : t.mul(1.0001);
      uint64_t a1 = allocationCount(), p1 = nodePoolAllocations();
      t1 = Clock::now();
      auto s = schedule(t.lazydata());
      t2 = Clock::now();
      buildAllocs = a1 - a0;
      scheduleAllocs = allocationCount() - a1;
      buildPooled = p1 - p0;
      schedulePooled = nodePoolAllocations() - p1;
    }
    building.push_back(seconds(t0, t1));
    scheduling.push_back(seconds(t1, t2));
    freeing.push_back(seconds(t2, Clock::now()));
  }, warmups, reps); // at 200 a call takes ~1 ms: more repetitions, so the median is not the allocator's warm-up
  std::string id = ops == 200 ? "W9b" : ops % 1000 == 0 ? fmt::format("W9b-{}k", ops / 1000) : fmt::format("W9b-{}", ops);
  Result b{id, fmt::format("build, schedule and free, per element-wise op (chain of {})", ops), "us/op"};
  b.t = tb;
  b.rate = tb.median / ops * 1e6;
  auto perOp = [&](uint64_t n) { return static_cast<double>(n) / ops; };
  // the medians of the timed calls' phases (the first call and the warm-ups left out)
  auto phase = [&](std::vector<double> v) {
    v.erase(v.begin(), v.end() - reps);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2] / ops * 1e6;
  };
  b.note = fmt::format("per op: build {:.2f} + schedule {:.2f} + free {:.2f} us (phase medians); {:.1f} heap "
                       "allocations + {:.1f} node-pool blocks building, {:.1f} + {:.1f} scheduling",
                       phase(building), phase(scheduling), phase(freeing), perOp(buildAllocs), perOp(buildPooled),
                       perOp(scheduleAllocs), perOp(schedulePooled));
  return b;
}

Result benchW9c(const Sizes &sz) {
  // (c) compile time per kernel, median over the kernels of W1-W7 (compiled fresh)
  Config c = config();
  c.diskCache = false;
  ScopedConfig noDisk(c);
  std::vector<KernelOpRef> asts;
  Tensor a1 = Tensor::empty({sz.n1}), a2 = Tensor::empty({sz.n1}), a3 = Tensor::empty({sz.n1});
  Tensor m1 = Tensor::empty({sz.rows, sz.cols});
  Tensor mm1 = Tensor::empty({sz.n5b, sz.n5b}), xw = Tensor::empty({8, 64, 56, 56}), ww = Tensor::empty({64, 64, 3, 3});
  std::vector<Tensor> programs = {(a1 * a2 + a3).relu() * 0.5, a1.sum(), m1.softmax(), m1.layernorm(),
                                  mm1.matmul(mm1), xw.conv2d(ww, std::nullopt, 1, {1}, {1}, {1})};
  for (const auto &p : programs)
    for (const auto &si : schedule(p.lazydata()))
      if (si.isKernel()) asts.push_back(si.ast);
  std::vector<double> times;
  for (const auto &ast : asts) {
    auto t0 = Clock::now();
    compileToObject(ast, TargetSpec::host(config().llvmOptLevel), CompileOptions::from(config()));
    times.push_back(seconds(t0, Clock::now()));
  }
  std::sort(times.begin(), times.end());
  Result cr{"W9c", "compile time per kernel (median over " + std::to_string(times.size()) + " kernels of W1-W7)",
            "ms/kernel"};
  cr.t.median = times[times.size() / 2];
  cr.t.min = times.front();
  cr.t.max = times.back();
  cr.rate = cr.t.median * 1e3;
  return cr;
}

} // namespace lazyjit::bench
