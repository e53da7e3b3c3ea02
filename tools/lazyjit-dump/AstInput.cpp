// --input=ast: kernel ASTs read from a file are verified, printed and, with --run, compiled for the
// device and run on buffers filled with a fixed deterministic pattern. Symbolic variables take
// their maximum value, which is also what the buffers are sized for.
#include "Dump.h"
#include "ToolError.h"

#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Support/Math.h"

#include <cstring>
#include <iostream>
#include <map>

namespace lazyjit::tool {

namespace {

/// Element j of input buffer i: small values that are exact in every dtype (-2..2 in steps of
/// 0.25 for floats, -8..8 for signed integers, 0..16 for unsigned ones).
double patternValue(int buffer, int64_t j, DType dt) {
  int64_t v = (j * 7 + buffer * 3) % 17;
  if (dt.isBool()) return v % 3 == 0;
  if (dt.isFloating()) return static_cast<double>(v) / 4 - 2;
  if (dt.isUnsigned()) return static_cast<double>(v);
  return static_cast<double>(v - 8);
}

void fillPattern(Buffer &b, int buffer) {
  std::vector<uint8_t> bytes(b.nbytes());
  dispatchDType(b.dtype(), [&]<typename T>() {
    for (int64_t j = 0; j < b.size(); ++j) {
      double v = patternValue(buffer, j, b.dtype());
      T x;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        x = T(static_cast<float>(v));
      else
        x = static_cast<T>(v);
      std::memcpy(bytes.data() + static_cast<size_t>(j) * sizeof(T), &x, sizeof(T));
    }
  });
  if (!bytes.empty()) b.copyIn(bytes.data(), bytes.size());
}

int64_t maxOf(SInt x) {
  while (x.isNode()) x = x.node()->max;
  return x.asInt();
}

struct KernelRun {
  std::vector<std::shared_ptr<Buffer>> bufs;
  VarVals vars;
  std::vector<int64_t> outShape;
};

KernelRun prepare(const KernelOp &ast, const std::string &device) {
  KernelRun r;
  std::map<std::string, int64_t> values;
  for (const auto &v : varsFromAst(ast)) {
    int64_t val = maxOf(v->max);
    std::string name = v->expr ? *v->expr : "None";
    r.vars.emplace(name, std::make_pair(v, val));
    values.emplace(name, val);
  }
  // buffer sizes come from the bounds proof over every value of the variables (verified before)
  std::map<int, int64_t> sizes = requiredSizes(ast, declaredRanges(ast));
  std::map<int, DType> dtypes;
  for (const KernelOp *x : ast.uniqueOps())
    if (x->op == Op::Load) dtypes.emplace(x->memBuffer().idx, x->memBuffer().dtype);
  const MemBuffer &out = ast.memBuffer();
  for (const auto &d : out.st.shape()) r.outShape.push_back(symInfer(d, values));
  auto alloc = [&](int64_t n, DType dt) {
    LAZYJIT_USER_CHECK(static_cast<double>(n) * dt.itemsize() < 0x1p40, Error,
                       "--input=ast: a buffer of {} {} elements is too large to run", n, dt.name());
    return std::make_shared<Buffer>(device, std::max<int64_t>(n, 1), dt);
  };
  r.bufs.push_back(alloc(sizes[0], out.dtype));
  fillPattern(*r.bufs[0], 0);
  for (const auto &[idx, dt] : dtypes) {
    r.bufs.push_back(alloc(sizes[idx], dt));
    fillPattern(*r.bufs.back(), idx);
  }
  return r;
}

} // namespace

int runAstInput(const std::string &text, const std::string &file, DumpOptions &opts,
                std::ostream &out) {
  DumpContext ctx(out, opts);
  ctx.fromScript = false;
  ctx.astFile = file;
  ctx.asts = parseAsts(text, file);
  for (size_t i = 0; i < ctx.asts.size(); ++i) {
    try {
      verifyAst(*ctx.asts[i]);
      requiredSizes(*ctx.asts[i], declaredRanges(*ctx.asts[i])); // the bounds proof
    } catch (const InternalError &) {
      throw;
    } catch (const Error &e) {
      throw ToolError(fmt::format("lazyjit-dump: error: {}: kernel {}: {}", file, i, e.what()), 1);
    }
  }

  bool wantValues = false;
  for (const auto &name : opts.emit) {
    const Stage &s = findStage(name);
    if (s.afterRun) {
      wantValues = wantValues || name == "values";
      continue;
    }
    s.emit(ctx);
  }
  if (!(opts.run || opts.check || wantValues)) return 0;

  Device &dev = getDevice(opts.device);
  KernelChecker checker;
  for (size_t i = 0; i < ctx.asts.size(); ++i) {
    const KernelOpRef &ast = ctx.asts[i];
    KernelRun r = prepare(*ast, dev.name());
    std::shared_ptr<Program> prg = dev.compile(ast);
    std::vector<Buffer *> bufs;
    for (const auto &b : r.bufs) bufs.push_back(b.get());
    if (opts.check) checker.expect(*ast, bufs, r.vars);
    prg->run(bufs, r.vars);
    dev.synchronize();
    if (opts.check) checker.compare(*ast, prg->info().name, *bufs[0]);
    if (wantValues) {
      DType dt = r.bufs[0]->dtype();
      std::vector<uint8_t> bytes(r.bufs[0]->nbytes());
      r.bufs[0]->copyOut(bytes.data(), bytes.size());
      int64_t count = 1;
      for (int64_t d : r.outShape) count = checkedMul(count, d);
      // print what the output holds: its shape when contiguous, never more than the buffer
      if (!ast->memBuffer().st.contiguous() || count > r.bufs[0]->size()) count = r.bufs[0]->size();
      out << "kernel" << i << " " << typedShapeText(dt, r.outShape) << "\n";
      printValues(out, bytes, dt, static_cast<size_t>(count));
    }
  }
  if (opts.check) checker.finish(out, std::cerr);
  return 0;
}

} // namespace lazyjit::tool
