// Helpers the kernel-level tests share: a tensor's kernel count, the AST of the kernel that
// computes a tensor, the verifier's verdict on an AST as text, and an OPT level for the scope of a
// test.
#pragma once

#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <string>

namespace lazyjit::testing {

/// The number of kernels in `t`'s schedule.
inline int kernelCount(const Tensor &t) {
  int n = 0;
  for (const auto &si : schedule(t.lazydata())) n += si.isKernel();
  return n;
}

/// The AST of the last kernel that computes `t` (its schedule must have one).
inline KernelOpRef lastKernel(const Tensor &t) {
  KernelOpRef ast;
  for (const auto &si : schedule(t.lazydata()))
    if (si.isKernel()) ast = si.ast;
  REQUIRE(ast != nullptr);
  return ast;
}

/// The verifier's message for `ast`, or "<accepted>".
inline std::string verifyError(const KernelOpRef &ast) {
  try {
    verifyAst(*ast);
  } catch (const Error &e) {
    return e.what();
  }
  return "<accepted>";
}

/// The fusion level `opt` (and NOOPT when `noopt`) until the end of the scope.
struct AtOpt {
  explicit AtOpt(int opt, bool noopt = false) : scope([opt, noopt] {
    Config c = config();
    c.opt = opt;
    c.noopt = noopt;
    return c;
  }()) {}
  ScopedConfig scope;
};

} // namespace lazyjit::testing
