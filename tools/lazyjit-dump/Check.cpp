// --check: every kernel the device runs is run again by the reference interpreter on host copies
// of its buffers, taken just before the device runs it (runSchedule's before-kernel observer): a
// kernel may write its output over an input that dies with it, or over an assign's target, and
// after it ran that input is gone. The outputs are compared element by element with a tolerance
// per dtype.
#include "Dump.h"
#include "ToolError.h"

#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Runtime/Interpreter.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Config.h"

#include <cmath>

namespace lazyjit::tool {

namespace {

// Relative and absolute tolerance of a comparison in `dt` (exact for integers and bools).
std::pair<double, double> toleranceOf(DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Float16:
  case ScalarType::BFloat16:
    return {1e-2, 1e-2};
  case ScalarType::Float32:
    return {1e-4, 1e-5};
  case ScalarType::Float64:
    return {1e-9, 1e-12};
  default:
    return {0, 0};
  }
}

bool close(double a, double b, DType dt) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  auto [rtol, atol] = toleranceOf(dt);
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

std::vector<uint8_t> hostBytes(const Buffer &b) {
  std::vector<uint8_t> out(b.nbytes());
  if (!out.empty()) b.copyOut(out.data(), out.size());
  return out;
}

} // namespace

void KernelChecker::beforeRun(const ScheduleItem &si, std::span<Buffer *const> bufs) {
  expect(*si.ast, bufs, si.varVals);
}

void KernelChecker::observe(const ScheduleItem &si, const Program *prg) {
  if (!si.isKernel()) return;
  std::string name = prg ? prg->info().name : kernelName(*si.ast, config().mergeView);
  compare(*si.ast, name, *si.out->realized());
}

void KernelChecker::expect(const KernelOp &ast, std::span<Buffer *const> bufs, const VarVals &vars) {
  pending.reset();
  if (first) return;
  // Every buffer gets its own host copy, so the interpreter reads the inputs as they are now
  // even where the device writes the output over one of them. The output's copy holds what the
  // device's output holds now, which is also what is left where the kernel does not write.
  std::vector<std::unique_ptr<Buffer>> host;
  std::vector<Buffer *> hostPtrs;
  for (Buffer *b : bufs) {
    host.push_back(std::make_unique<Buffer>("INTERP", b->size(), b->dtype()));
    if (b->size()) host.back()->copyFrom(*b);
    hostPtrs.push_back(host.back().get());
  }
  interpretKernel(ast, hostPtrs, vars);
  pending = Expected{&ast, hostBytes(*host[0])};
}

void KernelChecker::compare(const KernelOp &ast, const std::string &name, const Buffer &out) {
  int k = kernels++;
  std::optional<Expected> exp = std::move(pending);
  pending.reset();
  if (first || !exp || exp->ast != &ast) return;
  ++compared;

  DType dt = out.dtype();
  std::vector<uint8_t> dev = hostBytes(out);
  size_t n = static_cast<size_t>(out.size());
  for (size_t i = 0; i < n; ++i) {
    double a = elementAsDouble(dev.data(), dt, i), b = elementAsDouble(exp->bytes.data(), dt, i);
    if (!close(a, b, dt)) {
      first = fmt::format("kernel {} {}, buffer 0, element {}: device={:.9g} interpreter={:.9g}", k,
                          name, i, a, b);
      return;
    }
  }
}

void KernelChecker::finish(std::ostream &out, std::ostream &err) const {
  out.flush();
  err << fmt::format("# check: {} of {} kernels compared\n", compared, kernels);
  if (first) throw ToolError("lazyjit-dump: error: --check: " + *first, 1);
}

} // namespace lazyjit::tool
