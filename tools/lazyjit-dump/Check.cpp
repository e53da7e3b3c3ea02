// --check: every kernel the device runs is run again by the reference interpreter on host copies
// of its inputs, and the outputs are compared element by element with a tolerance per dtype.
#include "Dump.h"

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

void KernelChecker::observe(const ScheduleItem &si, const Program *prg) {
  if (!si.isKernel()) return;
  std::vector<Buffer *> bufs{si.out->realized().get()};
  for (const auto &x : si.inputs) bufs.push_back(x->realized().get());
  std::string name = prg ? prg->info().name : kernelName(*si.ast, config().mergeView);
  checkKernel(*si.ast, name, bufs, si.varVals);
}

void KernelChecker::checkKernel(const KernelOp &ast, const std::string &name,
                                std::span<Buffer *const> bufs, const VarVals &vars) {
  int k = kernelNo++;
  if (first) return;
  // A kernel that writes one of its inputs (assign) cannot be replayed after the fact.
  for (size_t i = 1; i < bufs.size(); ++i)
    if (bufs[i] == bufs[0]) return;

  std::vector<std::unique_ptr<Buffer>> host;
  std::vector<Buffer *> hostPtrs;
  for (Buffer *b : bufs) {
    host.push_back(std::make_unique<Buffer>("INTERP", b->size(), b->dtype()));
    // the output starts as the device's result, so elements the kernel does not write agree
    if (b->size()) host.back()->copyFrom(*b);
    hostPtrs.push_back(host.back().get());
  }
  interpretKernel(ast, hostPtrs, vars);

  DType dt = bufs[0]->dtype();
  std::vector<uint8_t> dev = hostBytes(*bufs[0]), ref = hostBytes(*host[0]);
  size_t n = static_cast<size_t>(bufs[0]->size());
  for (size_t i = 0; i < n; ++i) {
    double a = elementAsDouble(dev.data(), dt, i), b = elementAsDouble(ref.data(), dt, i);
    if (!close(a, b, dt)) {
      first = fmt::format("kernel {} {}, buffer 0, element {}: device={:.9g} interpreter={:.9g}", k,
                          name, i, a, b);
      return;
    }
  }
}

} // namespace lazyjit::tool
