// run_schedule (reference realize.py) as a list of stages: verify the kernels, compile them, then
// for each item in order plan its buffers (the output allocated or written over a dying input, the
// lazy op of the realized buffer dropped), run it and capture it; and realize, which runs a
// buffer's schedule once however many threads ask for it.
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Dot.h"
#include "lazyjit/Graph/GraphLock.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Logging.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace lazyjit {

namespace {
ScheduleObserver &observer() {
  static ScheduleObserver obs;
  return obs;
}
KernelRunObserver &beforeKernelObserver() {
  static KernelRunObserver obs;
  return obs;
}

int64_t allocSize(const Shape &shape) {
  // symbolic dims are allocated at their max
  int64_t n = 1;
  for (const auto &s : shape) {
    SInt m = s;
    while (m.isNode()) m = m.node()->max;
    n *= m.asInt();
  }
  return n;
}

// An input of `si` that its program may write the output over (ProgramInfo::writableInputs) and
// that nothing but `si` still holds: no tensor, graph node, view or later item reads its buffer
// again, which then becomes the output's (an intermediate of softmax at OPT=2 is written over by
// the division that reads it: one fresh 64 MiB buffer instead of two, on a host where fresh memory
// is what a first call waits on). Its position in `si.inputs`, or -1. Called under the graph lock,
// which is what keeps another thread from taking a new reference to it (the dedup cache).
int dyingInput(const ScheduleItem &si, const Program &prg, int64_t size, DType dtype) {
  for (int idx : prg.info().writableInputs) {
    const LazyBufferRef &x = si.inputs[static_cast<size_t>(idx - 1)];
    const std::shared_ptr<Buffer> &buf = x->realized();
    // (its device is the output's: runSchedule checked every input's)
    if (x.use_count() == 1 && buf.use_count() == 1 && buf->size() == size && buf->dtype() == dtype) return idx - 1;
  }
  return -1;
}

// Realize-once (realize()): the base buffers a realize is computing, from their scheduling until
// its schedule has run, each with the token of its thread (the address of a thread_local), and the
// threads waiting for such a schedule to run. The claims are read and changed under the graph
// lock. They hold no reference: an intermediate that dies while its schedule runs must die (an
// output written over it counts on that); its entry goes when the claims are released.
using Claims = std::unordered_map<const LazyBuffer *, const void *>;
Claims &claims() {
  static auto *c = new Claims(); // never destroyed (threads may run at exit)
  return *c;
}
std::condition_variable_any &realizeDone() {
  static auto *cv = new std::condition_variable_any();
  return *cv;
}
thread_local const char tRealizerToken = 0;

// Whether `sched` computes or reads a buffer that another thread's realize is computing, or one
// of `outs` is such a buffer (realized already, its kernel not yet run: its schedule is empty).
bool othersRealizing(const std::vector<ScheduleItem> &sched, const std::vector<LazyBufferRef> &outs) {
  const Claims &c = claims();
  if (c.empty()) return false;
  const void *me = &tRealizerToken;
  auto other = [&](const LazyBufferRef &b) {
    if (!b) return false;
    auto it = c.find(b->base());
    return it != c.end() && it->second != me;
  };
  for (const auto &b : outs)
    if (other(b)) return true;
  for (const auto &si : sched) {
    if (other(si.out)) return true;
    for (const auto &x : si.inputs)
      if (other(x)) return true;
  }
  return false;
}
} // namespace

void setScheduleObserver(ScheduleObserver obs) { observer() = std::move(obs); }
void setBeforeKernelObserver(KernelRunObserver obs) { beforeKernelObserver() = std::move(obs); }

namespace {
thread_local CaptureSink tlsCapture;
/// The buffers the items captured so far (by the current sink) wrote. While capturing, a kernel
/// may write over a dying input only if a captured item computes that input: a buffer filled
/// outside the capture (a tensor made from host data inside the captured function, as an ONNX
/// model's folded shapes and constants are) is a constant of every replay, which an in-place
/// write would corrupt for the next one.
thread_local std::unordered_set<const Buffer *> tlsCapturedOutputs;
} // namespace

CaptureSink setCaptureSink(CaptureSink sink) {
  CaptureSink prev = std::move(tlsCapture);
  tlsCapture = std::move(sink);
  tlsCapturedOutputs.clear();
  return prev;
}

GlobalCounters &globalCounters() {
  static GlobalCounters c;
  return c;
}

namespace {
using Clock = std::chrono::steady_clock;

// What runSchedule reads of the configuration: read once, when it is called, and handed to its
// stages, so that a schedule runs under one set of options however long it takes.
struct RunOptions {
  bool graph = false;       // GRAPH: draw the schedule (to graphPath-N.dot and .svg)
  std::string graphPath;    // GRAPHPATH
  bool verifyAst = false;   // LAZYJIT_VERIFY_AST: verify every kernel, prove its accesses in bounds
  bool reuseInputs = false; // LAZYJIT_REUSE_INPUTS: an output may take over an input that dies
  bool logItems = false;    // DEBUG>=2: time and log every item
  bool profile = false;     // record every kernel's run (RunStats::runs)
};

RunOptions readRunOptions(const Config &c, bool profile) {
  RunOptions o;
  o.graph = c.graph;
  o.graphPath = c.graphPath;
  o.verifyAst = c.verifyAst;
  o.reuseInputs = c.reuseInputs;
  o.logItems = c.debug >= 2;
  o.profile = profile;
  return o;
}

// GRAPH=1: a picture of every schedule, as the reference's GRAPH knob drew its graph.
void drawSchedule(const std::vector<ScheduleItem> &sched, const std::string &graphPath) {
  if (sched.empty()) return;
  static std::atomic<int> n{0};
  std::string base = fmt::format("{}-{}", graphPath, n++);
  std::string text = scheduleToDot(sched);
  std::ofstream(base + ".dot") << text;
  try {
    renderDot(text, base + ".svg");
    LAZYJIT_LOG(Runtime, 1, "GRAPH: wrote {}.dot and {}.svg", base, base);
  } catch (const Error &e) {
    LAZYJIT_LOG(Runtime, 1, "GRAPH: wrote {}.dot ({})", base, e.what());
  }
}

// Runs `check` on a kernel the scheduler produced. The verifier and the parser reject the user's
// AST files with user errors; a kernel of the scheduler's that they reject is the scheduler's bug:
// an InternalError.
template <typename F> void checkScheduled(const KernelOp &ast, const char *what, F &&check) {
  try {
    check();
  } catch (const InternalError &) {
    throw;
  } catch (const Error &e) {
    LAZYJIT_INTERNAL_CHECK(false, "runSchedule: the scheduler produced a kernel that fails {}: {}\n{}", what,
                           e.what(), printAst(ast));
  }
}

// Stage 1, verify (LAZYJIT_VERIFY_AST=1, set for the test suite): every kernel AST must verify and
// survive a round trip through its text form (when it has one a parser reads back:
// kMaxAstTextDepth).
void verifyKernels(const std::vector<ScheduleItem> &sched) {
  for (const auto &si : sched) {
    if (!si.isKernel()) continue;
    checkScheduled(*si.ast, "verifyAst", [&] { verifyAst(*si.ast); });
    if (astDepth(*si.ast) >= kMaxAstTextDepth) continue;
    std::string text = printAst(*si.ast);
    KernelOpRef back;
    checkScheduled(*si.ast, "its text round trip", [&] { back = parseAst(text, "<round-trip>"); });
    LAZYJIT_INTERNAL_CHECK(*back == *si.ast, "AST text round trip changed the AST:\n{}", text);
  }
}

// Stage 2, compile: every compute kernel before any runs, grouped by device, so that devices can
// compile in parallel. The program of item i, or null for an item that is no kernel.
std::vector<std::shared_ptr<Program>> compileKernels(const std::vector<ScheduleItem> &sched) {
  std::vector<std::shared_ptr<Program>> programs(sched.size());
  std::map<std::string, std::vector<size_t>> byDevice;
  for (size_t i = 0; i < sched.size(); ++i)
    if (sched[i].isKernel()) byDevice[sched[i].out->device].push_back(i);
  for (auto &[dev, idxs] : byDevice) {
    std::vector<KernelOpRef> asts;
    for (size_t i : idxs) asts.push_back(sched[i].ast);
    auto progs = getDevice(dev).compileAll(asts);
    for (size_t k = 0; k < idxs.size(); ++k) programs[idxs[k]] = progs[k];
  }
  return programs;
}

// The buffers one item runs on: its output and its inputs' buffers, as the kernel reads them.
struct ItemBuffers {
  std::shared_ptr<Buffer> out;
  std::vector<std::shared_ptr<Buffer>> inputs;
};

// Stage 3, plan buffers: the item's output buffer (its own, a fresh one, or a dying input's) and
// its inputs', with the graph changed to match: the output realized, its op dropped. An input
// whose buffer the output takes over is replaced in `si.inputs` by the output.
ItemBuffers planBuffers(ScheduleItem &si, const Program *prg, const RunOptions &o) {
  const Op kind = si.kind();
  LazyBuffer &out = *si.out;
  ItemBuffers b;
  GraphLock graph; // the graph changes here: the output realized, its op dropped
  for (const auto &x : si.inputs)
    LAZYJIT_INTERNAL_CHECK(x->isRealized(), "can't run schedule, some inputs aren't realized");
  if (kind != Op::Copy)
    for (const auto &x : si.inputs)
      LAZYJIT_USER_CHECK(x->device == out.device, DeviceError,
                         "all devices of a kernel must be the same: {} reads a buffer on {}", out.device,
                         x->device);

  // (allocated before the graph changes: an allocation that fails loses nothing)
  b.out = out.outputBuffer();
  const bool fresh = !b.out;
  const int64_t size = allocSize(out.shape);
  if (fresh) b.out = std::make_shared<Buffer>(out.device, size, out.dtype());
  out.setRealized(b.out);
  out.dropOp();
  for (const auto &v : out.views.live()) v->dropOp();
  // the output over an input that dies with this kernel (the fresh block, never touched, goes
  // back to the allocator's cache); the input's node is released here, under the lock, so that
  // no other thread finds it in the dedup cache and reads the buffer being written over
  int dying = fresh && kind == Op::Store && o.reuseInputs ? dyingInput(si, *prg, size, out.dtype()) : -1;
  if (dying >= 0 && tlsCapture &&
      !tlsCapturedOutputs.count(si.inputs[static_cast<size_t>(dying)]->realized().get()))
    dying = -1;
  if (dying >= 0) {
    b.out = si.inputs[static_cast<size_t>(dying)]->realized();
    out.setRealized(b.out);
    si.inputs[static_cast<size_t>(dying)] = out.shared_from_this();
    ++globalCounters().inPlaceCount;
    LAZYJIT_LOG(Runtime, 3, "{} writes its output over an input that dies with it", prg->info().name);
  }
  for (const auto &x : si.inputs) b.inputs.push_back(x->realized());
  return b;
}

// LAZYJIT_VERIFY_AST: every access of the kernel is proven inside the buffers it is given, for
// the variable values it runs with.
void proveInBounds(const ScheduleItem &si, const std::vector<Buffer *> &bufs) {
  std::map<int, int64_t> sizes;
  for (size_t b = 0; b < bufs.size(); ++b) sizes[static_cast<int>(b)] = bufs[b]->size();
  VarRanges ranges;
  for (const auto &[name, vv] : si.varVals) ranges[name] = {vv.second, vv.second};
  checkScheduled(*si.ast, "its bounds proof", [&] { verifyAstBounds(*si.ast, sizes, ranges); });
}

// One kernel's run as profiling records it (its time from `k0`, the device synchronized).
KernelRun recordRun(const ScheduleItem &si, Program &prg, Clock::time_point k0) {
  getDevice(si.out->device).synchronize();
  const ProgramInfo &pi = prg.info();
  std::map<std::string, int64_t> vals;
  for (const auto &[name, vv] : si.varVals) vals[name] = vv.second;
  KernelRun kr;
  kr.name = pi.name;
  kr.device = si.out->device;
  prg.launchShape(si.varVals, kr.global, kr.local);
  kr.seconds = std::chrono::duration<double>(Clock::now() - k0).count();
  kr.compileSeconds = pi.compileSeconds;
  kr.fromCache = pi.fromCache;
  kr.flops = static_cast<double>(symInfer(pi.flops, vals));
  kr.bytes = static_cast<double>(pi.memBytes);
  return kr;
}

// Stage 4, run: the item on its buffers (a kernel, a copy, a host function, or nothing for an
// allocation), counted in `stats`.
void runItem(const ScheduleItem &si, Program *prg, const ItemBuffers &b, const RunOptions &o, RunStats &stats) {
  const Op kind = si.kind();
  auto k0 = Clock::now();
  if (kind == Op::Empty) {
    // allocation only
  } else if (kind == Op::Copy) {
    b.out->copyFrom(*b.inputs[0]);
    ++stats.copies;
    ++globalCounters().copyCount;
  } else if (kind == Op::Custom) {
    si.host->custom->fn(*b.out);
    ++stats.customs;
  } else {
    std::vector<Buffer *> bufs{b.out.get()};
    for (const auto &x : b.inputs) bufs.push_back(x.get());
    if (o.verifyAst) proveInBounds(si, bufs);
    if (const KernelRunObserver &before = beforeKernelObserver()) {
      before(si, bufs);
      k0 = Clock::now(); // (what the observer took is not the kernel's time)
    }
    prg->run(bufs, si.varVals);
    ++stats.kernels;
    ++globalCounters().kernelCount;
    if (o.profile) stats.runs.push_back(recordRun(si, *prg, k0));
  }
  if (o.logItems) {
    getDevice(si.out->device).synchronize();
    double et = std::chrono::duration<double>(Clock::now() - k0).count();
    std::string name = prg ? prg->info().name : std::string(opName(kind));
    logger(Stage::Runtime)
        .info("** {:7} {:4d} {:37} arg {:3d} tm {:9.2f}us", si.out->device, globalCounters().kernelCount,
              name, si.inputs.size() + 1, et * 1e6);
  }
}

// Stage 5, capture: the item as it ran, to the observer and to this thread's capture sink.
void captureItem(const ScheduleItem &si, const std::shared_ptr<Program> &prg, const ItemBuffers &b) {
  if (const ScheduleObserver &obs = observer()) obs(si, prg.get());
  if (!tlsCapture) return;
  const Op kind = si.kind();
  CapturedItem c;
  c.kind = kind == Op::Empty || kind == Op::Copy || kind == Op::Custom ? kind : Op::Store;
  c.program = prg;
  c.out = b.out;
  c.inputs = b.inputs;
  c.varVals = si.varVals;
  if (kind == Op::Custom) c.custom = si.host->custom;
  c.device = si.out->device;
  tlsCapturedOutputs.insert(b.out.get());
  tlsCapture(std::move(c));
}
} // namespace

RunStats runSchedule(std::vector<ScheduleItem> sched, bool profile) {
  const RunOptions o = readRunOptions(config(), profile);
  RunStats stats;
  auto t0 = Clock::now();
  if (o.graph) drawSchedule(sched, o.graphPath);
  if (o.verifyAst) verifyKernels(sched);
  std::vector<std::shared_ptr<Program>> programs = compileKernels(sched);
  for (size_t i = 0; i < sched.size(); ++i) {
    ScheduleItem si = std::move(sched[i]);
    ItemBuffers buffers = planBuffers(si, programs[i].get(), o);
    runItem(si, programs[i].get(), buffers, o, stats);
    captureItem(si, programs[i], buffers);
  }
  stats.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  globalCounters().runSeconds += stats.seconds;
  return stats;
}

RunStats realize(const std::vector<LazyBufferRef> &outs, const GraphOptions &o, bool profile) {
  const void *me = &tRealizerToken;
  std::vector<ScheduleItem> sched;
  std::vector<const LazyBuffer *> claimed;
  {
    std::unique_lock lock(graphMutex());
    LAZYJIT_INTERNAL_CHECK(graphLockDepth() == 0, "realize: called with the graph lock held; waiting for "
                                                  "another thread's schedule could never end");
    for (;;) {
      sched = scheduleMany(outs, o);
      if (!othersRealizing(sched, outs)) break;
      // another thread computes part of this: wait until its schedule ran, then schedule what is left
      sched.clear(); // (the items' references go under the lock)
      realizeDone().wait(lock);
    }
    for (const auto &si : sched)
      if (claims().emplace(si.out->base(), me).second) claimed.push_back(si.out->base());
  }
  // the claims go, and the waiting threads wake, however the schedule ends
  struct Release {
    std::vector<const LazyBuffer *> &claimed;
    ~Release() {
      if (claimed.empty()) return;
      {
        GraphLock graph;
        for (const LazyBuffer *b : claimed) claims().erase(b);
      }
      realizeDone().notify_all();
    }
  } release{claimed};
  return runSchedule(std::move(sched), profile);
}

} // namespace lazyjit
