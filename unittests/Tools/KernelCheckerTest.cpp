// lazyjit-dump --check (Check.cpp): every kernel of a schedule is interpreted on copies of its
// buffers taken before it runs, and its device output compared after. Softmax at OPT=2 on the CPU
// has four kernels, and the last one (the division) writes its output over the exponentials, an
// input that dies with it: that kernel is compared too, and a wrong value in any kernel's output,
// that one included, is reported.
#include "Dump.h"
#include "ToolError.h"

#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace lazyjit;
using tool::KernelChecker;

namespace {

/// The checker's observers for the scope (as lazyjit-dump installs them), with `tamper` called on
/// each item after it ran and before the checker compares it.
struct CheckHooks {
  CheckHooks(KernelChecker &checker, std::function<void(const ScheduleItem &)> tamper = nullptr) {
    setBeforeKernelObserver(
        [&checker](const ScheduleItem &si, std::span<Buffer *const> bufs) { checker.beforeRun(si, bufs); });
    setScheduleObserver([&checker, tamper](const ScheduleItem &si, const Program *prg) {
      if (tamper) tamper(si);
      checker.observe(si, prg);
    });
  }
  ~CheckHooks() {
    setScheduleObserver(nullptr);
    setBeforeKernelObserver(nullptr);
  }
};

/// Whether `si` wrote its output over one of its inputs (runSchedule puts the output in its place).
bool writesOverInput(const ScheduleItem &si) {
  return std::any_of(si.inputs.begin(), si.inputs.end(), [&](const LazyBufferRef &x) { return x.get() == si.out.get(); });
}

/// Overwrites element 0 of the item's output with a value no kernel here computes.
void corruptFirstElement(const ScheduleItem &si) {
  const float wrong = 1e6f;
  si.out->realized()->copyIn(&wrong, sizeof wrong);
}

/// Realizes softmax over 4 rows of 24 on the CPU at OPT=2 under `checker`, returning how many
/// kernels wrote over an input.
int runSoftmax(KernelChecker &checker, std::function<void(const ScheduleItem &, int)> tamper = nullptr) {
  Config c = config();
  c.opt = 2;
  c.reuseInputs = true;
  ScopedConfig opt2(c);
  std::vector<double> xs(96);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i % 13) * 0.25 - 1.0;
  Tensor x = Tensor::fromValues(xs, {4, 24}, {std::nullopt, "CPU"});
  x.realize();
  int kernel = 0, inPlace = 0;
  CheckHooks hooks(checker, [&](const ScheduleItem &si) {
    if (!si.isKernel()) return;
    if (writesOverInput(si)) ++inPlace;
    if (tamper) tamper(si, kernel);
    ++kernel;
  });
  x.softmax().realize();
  return inPlace;
}

} // namespace

TEST_CASE("KernelChecker: every kernel is compared, one written over a dying input too") {
  KernelChecker checker;
  int inPlace = runSoftmax(checker);
  CHECK(inPlace == 1);
  CHECK(checker.kernelsRun() == 4);
  CHECK(checker.kernelsCompared() == 4);
  CHECK_FALSE(checker.mismatch());
  std::ostringstream out, err;
  checker.finish(out, err);
  CHECK(err.str() == "# check: 4 of 4 kernels compared\n");
}

TEST_CASE("KernelChecker: a wrong output is reported, in the kernel written over its input too") {
  for (bool overInput : {false, true}) {
    CAPTURE(overInput);
    KernelChecker checker;
    int corrupted = -1;
    runSoftmax(checker, [&](const ScheduleItem &si, int kernel) {
      if (corrupted >= 0 || writesOverInput(si) != overInput) return;
      corruptFirstElement(si);
      corrupted = kernel;
    });
    REQUIRE(corrupted >= 0);
    REQUIRE(checker.mismatch());
    CHECK(checker.mismatch()->find(fmt::format("kernel {} ", corrupted)) == 0);
    CHECK(checker.mismatch()->find("buffer 0, element 0: device=1000000 interpreter=") != std::string::npos);
    std::ostringstream out, err;
    try {
      checker.finish(out, err);
      FAIL("finish() did not throw on a mismatch");
    } catch (const tool::ToolError &e) {
      CHECK(e.exitCode == 1);
      CHECK(std::string(e.what()) == "lazyjit-dump: error: --check: " + *checker.mismatch());
    }
    CHECK(err.str().find("# check: ") == 0);
  }
}

TEST_CASE("KernelChecker: a kernel the checker did not see before it ran is counted, not compared") {
  KernelChecker checker;
  {
    Config c = config();
    c.opt = 2;
    ScopedConfig opt2(c);
    setScheduleObserver([&](const ScheduleItem &si, const Program *prg) { checker.observe(si, prg); });
    Tensor x = Tensor::fromValues({1, 2, 3, 4}, {4}, {std::nullopt, "CPU"});
    (x * 2 + 1).realize();
    setScheduleObserver(nullptr);
  }
  CHECK(checker.kernelsRun() >= 1);
  CHECK(checker.kernelsCompared() == 0);
  std::ostringstream out, err;
  checker.finish(out, err);
  CHECK(err.str() == fmt::format("# check: 0 of {} kernels compared\n", checker.kernelsRun()));
}
