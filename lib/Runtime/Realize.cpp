// run_schedule: lowers and runs ScheduleItems in order, allocating outputs and dropping the lazy
// ops of realized buffers (reference realize.py).
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Dot.h"
#include "lazyjit/Graph/GraphLock.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Verifier.h"
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

RunStats runSchedule(std::vector<ScheduleItem> sched, bool profile) {
  using Clock = std::chrono::steady_clock;
  RunStats stats;
  auto t0 = Clock::now();

  // GRAPH=1: a picture of every schedule, as the reference's GRAPH knob drew its graph
  if (config().graph && !sched.empty()) {
    static std::atomic<int> n{0};
    std::string base = fmt::format("{}-{}", config().graphPath, n++);
    std::string text = scheduleToDot(sched);
    std::ofstream(base + ".dot") << text;
    try {
      renderDot(text, base + ".svg");
      LAZYJIT_LOG(Runtime, 1, "GRAPH: wrote {}.dot and {}.svg", base, base);
    } catch (const Error &e) {
      LAZYJIT_LOG(Runtime, 1, "GRAPH: wrote {}.dot ({})", base, e.what());
    }
  }

  // Compile every compute kernel first, grouped by device, so devices can compile in parallel.
  // LAZYJIT_VERIFY_AST=1 (set for the test suite): every kernel AST must verify and survive a
  // round trip through its text form (when it has one a parser reads back: kMaxAstTextDepth)
  if (config().verifyAst)
    for (const auto &si : sched) {
      if (!si.isKernel()) continue;
      verifyAst(*si.ast);
      if (astDepth(*si.ast) >= kMaxAstTextDepth) continue;
      std::string text = printAst(*si.ast);
      KernelOpRef back = parseAst(text, "<round-trip>");
      LAZYJIT_INTERNAL_CHECK(*back == *si.ast, "AST text round trip changed the AST:\n{}", text);
    }

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

  const bool reuseInputs = config().reuseInputs;
  for (size_t i = 0; i < sched.size(); ++i) {
    ScheduleItem si = std::move(sched[i]);
    Op kind = si.kind();
    LazyBuffer &out = *si.out;
    std::shared_ptr<Buffer> dst;
    std::vector<std::shared_ptr<Buffer>> ins; // the inputs' buffers, as the kernel reads them
    {
      GraphLock graph; // the graph changes here: the output realized, its op dropped
      for (const auto &x : si.inputs)
        LAZYJIT_INTERNAL_CHECK(x->isRealized(), "can't run schedule, some inputs aren't realized");
      if (kind != Op::Copy)
        for (const auto &x : si.inputs)
          LAZYJIT_USER_CHECK(x->device == out.device, DeviceError,
                             "all devices of a kernel must be the same: {} reads a buffer on {}",
                             out.device, x->device);

      // (allocated before the graph changes: an allocation that fails loses nothing)
      dst = out.outputBuffer();
      const bool fresh = !dst;
      const int64_t size = allocSize(out.shape);
      if (fresh) dst = std::make_shared<Buffer>(out.device, size, out.dtype());
      out.setRealized(dst);
      out.dropOp();
      for (const auto &v : out.views.live()) v->dropOp();
      // the output over an input that dies with this kernel (the fresh block, never touched, goes
      // back to the allocator's cache); the input's node is released here, under the lock, so that
      // no other thread finds it in the dedup cache and reads the buffer being written over
      int dying = fresh && kind == Op::Store && reuseInputs ? dyingInput(si, *programs[i], size, out.dtype()) : -1;
      if (dying >= 0 && tlsCapture &&
          !tlsCapturedOutputs.count(si.inputs[static_cast<size_t>(dying)]->realized().get()))
        dying = -1;
      if (dying >= 0) {
        dst = si.inputs[static_cast<size_t>(dying)]->realized();
        out.setRealized(dst);
        si.inputs[static_cast<size_t>(dying)] = out.shared_from_this();
        ++globalCounters().inPlaceCount;
        LAZYJIT_LOG(Runtime, 3, "{} writes its output over an input that dies with it", programs[i]->info().name);
      }
      for (const auto &x : si.inputs) ins.push_back(x->realized());
    }

    auto k0 = Clock::now();
    Program *prg = programs[i].get();
    if (kind == Op::Empty) {
      // allocation only
    } else if (kind == Op::Copy) {
      dst->copyFrom(*ins[0]);
      ++stats.copies;
      ++globalCounters().copyCount;
    } else if (kind == Op::Custom) {
      si.host->custom->fn(*dst);
      ++stats.customs;
    } else {
      std::vector<Buffer *> bufs{dst.get()};
      for (const auto &x : ins) bufs.push_back(x.get());
      // LAZYJIT_VERIFY_AST: every access of the kernel is proven inside the buffers it is given,
      // for the variable values it runs with
      if (config().verifyAst) {
        std::map<int, int64_t> sizes;
        for (size_t b = 0; b < bufs.size(); ++b) sizes[static_cast<int>(b)] = bufs[b]->size();
        VarRanges ranges;
        for (const auto &[name, vv] : si.varVals) ranges[name] = {vv.second, vv.second};
        try {
          verifyAstBounds(*si.ast, sizes, ranges);
        } catch (const InternalError &) {
          throw;
        } catch (const Error &e) {
          LAZYJIT_INTERNAL_CHECK(false, "runSchedule: the scheduler produced a kernel that fails its bounds "
                                        "proof: {}\n{}", e.what(), printAst(*si.ast));
        }
      }
      prg->run(bufs, si.varVals);
      ++stats.kernels;
      ++globalCounters().kernelCount;
      if (profile) {
        getDevice(out.device).synchronize();
        const ProgramInfo &pi = prg->info();
        std::map<std::string, int64_t> vals;
        for (const auto &[name, vv] : si.varVals) vals[name] = vv.second;
        KernelRun kr;
        kr.name = pi.name;
        kr.device = out.device;
        prg->launchShape(si.varVals, kr.global, kr.local);
        kr.seconds = std::chrono::duration<double>(Clock::now() - k0).count();
        kr.compileSeconds = pi.compileSeconds;
        kr.fromCache = pi.fromCache;
        kr.flops = static_cast<double>(symInfer(pi.flops, vals));
        kr.bytes = static_cast<double>(pi.memBytes);
        stats.runs.push_back(std::move(kr));
      }
    }
    if (debugAtLeast(2)) {
      getDevice(out.device).synchronize();
      double et = std::chrono::duration<double>(Clock::now() - k0).count();
      std::string name = prg ? prg->info().name : std::string(opName(kind));
      logger(Stage::Runtime)
          .info("** {:7} {:4d} {:37} arg {:3d} tm {:9.2f}us", out.device,
                globalCounters().kernelCount, name, si.inputs.size() + 1, et * 1e6);
    }
    if (const ScheduleObserver &obs = observer()) obs(si, prg);
    if (tlsCapture) {
      CapturedItem c;
      c.kind = kind == Op::Empty || kind == Op::Copy || kind == Op::Custom ? kind : Op::Store;
      c.program = programs[i];
      c.out = dst;
      c.inputs = ins;
      c.varVals = si.varVals;
      if (kind == Op::Custom) c.custom = si.host->custom;
      c.device = out.device;
      tlsCapturedOutputs.insert(dst.get());
      tlsCapture(std::move(c));
    }
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
