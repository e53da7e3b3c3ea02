// Which devices the scheduler forms row kernels (OPT=5) for is its own knowledge, not something a
// library registers when it is loaded: this file is built into ScheduleTests, which links the
// Runtime and creates its devices first, and into ScheduleOnlyTests, which links the scheduler
// alone. The same softmax and loss schedule into the same kernels in both.
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Schedule/Schedule.h"

#ifdef LAZYJIT_TEST_WITH_RUNTIME
#include "lazyjit/Runtime/Device.h"
#endif

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {

const GraphOptions kOpt5 = GraphOptions::forLevel(5);

// A [rows, n] float32 input (an unrealized EMPTY: scheduling it allocates only).
LazyBufferRef input(const std::string &device, int64_t rows = 16, int64_t n = 64) {
  return LazyBuffer::loadop(kOpt5, Op::Empty, {SInt(rows), SInt(n)}, dtypes::float32, device);
}

// softmax over the last axis: max, exp2(x - max), sum, divide.
LazyBufferRef softmax(const LazyBufferRef &x) {
  const Shape full = x->shape, rows{full[0], SInt(1)};
  LazyBufferRef m = x->r(kOpt5, Op::ReduceMax, rows)->expand(kOpt5, full);
  LazyBufferRef e = x->e(kOpt5, Op::Sub, {m})->e(kOpt5, Op::Exp2);
  LazyBufferRef s = e->r(kOpt5, Op::Sum, rows)->expand(kOpt5, full);
  return e->e(kOpt5, Op::Div, {s});
}

// A loss: the sum over every row of softmax(x) * y, a reduce of row values.
LazyBufferRef loss(const LazyBufferRef &x, const LazyBufferRef &y) {
  return softmax(x)->e(kOpt5, Op::Mul, {y})->r(kOpt5, Op::Sum, {SInt(1), SInt(1)});
}

int kernels(const LazyBufferRef &out) {
  int n = 0;
  for (const ScheduleItem &si : scheduleMany({out}, kOpt5)) n += si.isKernel();
  return n;
}

} // namespace

TEST_CASE("RowKernelDevices: the built-in devices form row kernels without any registration") {
#ifdef LAZYJIT_TEST_WITH_RUNTIME
  // the devices this binary can create, created: whatever the Runtime does then has happened
  getDevice("CPU");
  getDevice("INTERP");
#endif
  CHECK(rowKernelDevice("CPU"));
  CHECK(rowKernelDevice("CPU:1"));
  CHECK(rowKernelDevice("INTERP"));
  CHECK(rowKernelDevice("CUDA"));
  CHECK(rowKernelDevice("CUDA:0"));
  CHECK(rowReduceDevice("CPU"));
  CHECK(rowReduceDevice("INTERP"));
  CHECK_FALSE(rowReduceDevice("CUDA")); // a loss over the batch would run on one block
  CHECK_FALSE(rowKernelDevice("DISK"));
  CHECK_FALSE(rowReduceDevice("DISK"));

  // softmax: one row kernel wherever rows fuse; the reference's kernels elsewhere
  CHECK(kernels(softmax(input("CPU"))) == 1);
  CHECK(kernels(softmax(input("INTERP"))) == 1);
  CHECK(kernels(softmax(input("CUDA"))) == 1);
  const int unfused = kernels(softmax(input("DISK")));
  CHECK(unfused > 1);
  // a loss summed over the rows: one kernel where a reduce may compute its row values (CPU, the
  // interpreter), not on CUDA
  CHECK(kernels(loss(input("CPU"), input("CPU"))) == 1);
  CHECK(kernels(loss(input("INTERP"), input("INTERP"))) == 1);
  CHECK(kernels(loss(input("CUDA"), input("CUDA"))) > 1);
  CHECK(kernels(loss(input("DISK"), input("DISK"))) > kernels(loss(input("CUDA"), input("CUDA"))));
}

TEST_CASE("RowKernelDevices: a device registered later forms row kernels from then on") {
  CHECK(kernels(softmax(input("ROWTEST"))) > 1);
  registerRowKernelDevice("ROWTEST", /*reducesOfRows=*/false);
  CHECK(rowKernelDevice("ROWTEST:2"));
  CHECK_FALSE(rowReduceDevice("ROWTEST"));
  CHECK(kernels(softmax(input("ROWTEST"))) == 1);
}
