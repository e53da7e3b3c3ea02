// The stage registry and the emitters of the stages that exist before the CPU backend: graph,
// schedule, ast, index and values. Every listing is deterministic: nodes are numbered in a
// depth-first walk from the outputs, never by address.
#include "lazyjit/Graph/LazyOpWalk.h"
#include "Dump.h"
#include "ToolError.h"

#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Runtime/CUDADevice.h"
#include "lazyjit/Runtime/Dot.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Config.h"

#include <cstring>
#include <map>
#include <unordered_map>

namespace lazyjit::tool {

namespace {


// ---- graph --------------------------------------------------------------------------------------

class GraphPrinter {
public:
  explicit GraphPrinter(std::ostream &out) : out(out) {}

  int visit(const LazyBufferRef &root) {
    // sources first (the op's buffers, then the base of a view), with an explicit stack: a chain
    // of kernels is as deep as it is long
    struct Frame {
      LazyBuffer *b;
      std::vector<LazyBuffer *> deps;
      size_t next = 0;
    };
    auto frame = [](LazyBuffer *b) {
      Frame f{b, {}};
      if (b->op) {
        auto leaves = b->op->buffers();
        f.deps.assign(leaves.begin(), leaves.end());
      }
      if (b->isView()) f.deps.push_back(b->baseRef().get());
      return f;
    };
    if (!ids.count(root.get())) {
      std::vector<Frame> stack{frame(root.get())};
      while (!stack.empty()) {
        Frame &f = stack.back();
        if (f.next < f.deps.size()) {
          LazyBuffer *d = f.deps[f.next++];
          if (!ids.count(d)) stack.push_back(frame(d));
          continue;
        }
        LazyBuffer *b = f.b;
        stack.pop_back();
        if (!ids.count(b)) print(*b);
      }
    }
    return ids.at(root.get());
  }

private:
  std::ostream &out;
  std::unordered_map<const LazyBuffer *, int> ids;
  int next = 0;

  void print(const LazyBuffer &b) {
    int id = next++;
    ids.emplace(&b, id);
    std::string line = "%" + std::to_string(id) + " " + typedShapeText(b.dtype(), b.shape) + " ";
    if (b.op)
      line += render(*b.op);
    else
      line += b.isRealized() ? "realized" : "unrealized";
    if (b.isView()) line += " base=%" + std::to_string(ids.at(b.baseRef().get()));
    out << line << "\n";
  }

  // `OP{arg}(src, src, ...)`, sources inline (buffers as %id), written front to back from a stack
  // of pending ops and punctuation. An op node the tree reads more than once (`x * x` of a merged
  // x) is written once as `$k=OP(...)` and then as `$k`, as the AST text labels it: the tree of a
  // chain of such squares is exponential in its length.
  std::string render(const LazyOp &root) {
    std::unordered_map<const LazyOp *, int> uses;
    walkOps(root, [&](const LazyOp &op) {
      for (const auto &x : op.src)
        if (!x.isBuffer()) ++uses[x.op.get()];
      return true;
    }, [](const LazyOp &) {});
    std::unordered_map<const LazyOp *, int> labels;
    struct Item {
      const LazyOp *op; // or null: append `text`
      std::string text;
    };
    std::string s;
    std::vector<Item> stack{{&root, {}}};
    while (!stack.empty()) {
      Item it = std::move(stack.back());
      stack.pop_back();
      if (!it.op) {
        s += it.text;
        continue;
      }
      const LazyOp &op = *it.op;
      if (auto u = uses.find(&op); u != uses.end() && u->second > 1) {
        auto [l, fresh] = labels.emplace(&op, static_cast<int>(labels.size()));
        s += "$" + std::to_string(l->second);
        if (!fresh) continue;
        s += "=";
      }
      s += opName(op.op);
      s += renderArg(op.arg);
      if (op.src.empty()) continue;
      s += "(";
      stack.push_back({nullptr, ")"});
      for (size_t i = op.src.size(); i-- > 0;) {
        const LazySrc &src = op.src[i];
        if (src.isBuffer())
          stack.push_back({nullptr, "%" + std::to_string(ids.at(src.buf.get()))});
        else
          stack.push_back({src.op.get(), {}});
        if (i) stack.push_back({nullptr, ", "});
      }
    }
    return s;
  }

  static std::string renderArg(const LazyOpArg &arg) {
    return std::visit(
        [](const auto &a) -> std::string {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            return "";
          else if constexpr (std::is_same_v<T, Shape>)
            return "{" + renderShape(a) + "}";
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            Shape s(a.begin(), a.end());
            return "{" + renderShape(s) + "}";
          } else if constexpr (std::is_same_v<T, PadArg>) {
            std::string s = "{(";
            for (size_t i = 0; i < a.size(); ++i)
              s += (i ? ", " : "") + std::string("(") + a[i].first.render() + ", " +
                   a[i].second.render() + ")";
            return s + (a.size() == 1 ? ",)}" : ")}");
          } else if constexpr (std::is_same_v<T, CastArg>)
            return "{" + std::string(a.dtype.name()) + (a.bitcast ? ", bitcast}" : "}");
          else if constexpr (std::is_same_v<T, double>)
            return "{" + printDouble(a) + "}";
          else if constexpr (std::is_same_v<T, CustomOpRef>)
            return "{" + a->name + "}";
          else
            return "{...}";
        },
        arg);
  }
};

void emitGraph(DumpContext &ctx) {
  if (!ctx.fromScript)
    throw ToolError("lazyjit-dump: error: --emit=graph needs a tensor script", 1);
  GraphPrinter g(ctx.out);
  std::string outs;
  for (const auto &[name, t] : ctx.outputs) {
    int id = g.visit(t.lazydata());
    outs += (outs.empty() ? "" : ", ") + name + "=%" + std::to_string(id);
  }
  ctx.out << "# outputs: " << outs << "\n";
}

// ---- schedule, ast, index -----------------------------------------------------------------------

std::vector<KernelOpRef> kernelAsts(const DumpContext &ctx) {
  if (!ctx.fromScript) return ctx.asts;
  std::vector<KernelOpRef> out;
  for (const auto &si : ctx.schedule)
    if (si.isKernel()) out.push_back(si.ast);
  return out;
}

void emitSchedule(DumpContext &ctx) {
  int kernels = 0, loadops = 0;
  if (ctx.fromScript) {
    for (const auto &si : ctx.schedule) {
      if (si.isKernel()) {
        ctx.out << "kernel " << kernels++ << " " << kernelName(*si.ast, config().mergeView) << "\n"
                << printAst(*si.ast);
      } else {
        ctx.out << "loadop " << loadops++ << " " << opShortName(si.kind()) << " "
                << typedShapeText(si.out->dtype(), si.out->shape) << "\n";
      }
    }
  } else {
    for (const auto &ast : ctx.asts)
      ctx.out << "kernel " << kernels++ << " " << kernelName(*ast, config().mergeView) << "\n" << printAst(*ast);
  }
  ctx.out << "# " << kernels << " kernels, " << loadops << " loadops\n";
}

void emitAst(DumpContext &ctx) {
  bool first = true;
  for (const auto &ast : kernelAsts(ctx)) {
    if (!first) ctx.out << "\n";
    first = false;
    ctx.out << printAst(*ast);
  }
}

void emitIndex(DumpContext &ctx) {
  int k = 0;
  for (const auto &ast : kernelAsts(ctx)) printIndex(ctx.out, *ast, k++);
}

// ---- values -------------------------------------------------------------------------------------

void emitValues(DumpContext &ctx) {
  if (!ctx.fromScript) return; // runAstInput prints the kernels' outputs itself
  for (const auto &[name, t] : ctx.outputs) {
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
    if (allInt(t.shape())) {
      shape = t.intShape();
      bytes = t.toBytes();
    } else {
      // a symbolic shape: the bound values give the concrete shape; read the realized,
      // contiguous copy's first elements
      std::map<std::string, int64_t> values;
      for (const auto &[n, vv] : t.lazydata()->st.varVals()) values.emplace(n, vv.second);
      int64_t count = 1;
      for (const auto &d : t.shape()) {
        shape.push_back(symInfer(d, values));
        count *= shape.back();
      }
      Tensor c = t.contiguous();
      c.realize();
      const LazyBufferRef &lb = c.lazydata();
      // (a contiguous view of a realized buffer reads it from the start)
      if (!lb->st.contiguous() || !lb->isRealized())
        throw ToolError("lazyjit-dump: error: cannot read back output '" + name + "'", 2);
      bytes.resize(static_cast<size_t>(count) * t.dtype().itemsize());
      if (count) lb->realized()->copyOut(bytes.data(), bytes.size());
    }
    ctx.out << name << " " << typedShapeText(t.dtype(), shape) << "\n";
    printValues(ctx.out, bytes, t.dtype(), bytes.size() / t.dtype().itemsize());
  }
}

// ---- ptx ----------------------------------------------------------------------------------------

// The NVPTX target of --emit=ptx: --target=nvptx64[-nvidia-cuda] with --mcpu (default sm_90), or
// the GPU of --device=CUDA[:N].
TargetSpec ptxTarget(const DumpContext &ctx) {
  const DumpOptions &o = ctx.opts;
  if (o.target.empty() && o.device.rfind("CUDA", 0) == 0) {
    CUDADeviceInfo info = cudaDeviceInfo(o.device);
    TargetSpec t = TargetSpec::nvptx(info.arch, config().llvmOptLevel);
    t.features = info.ptxFeatures;
    return t;
  }
  if (o.target.empty() || o.target.rfind("nvptx64", 0) != 0)
    throw ToolError("lazyjit-dump: error: --emit=ptx needs an NVPTX target: --target=nvptx64 (with "
                    "--mcpu=sm_XX) "
                    "or --device=CUDA" +
                        (o.target.empty() ? std::string() : ", not --target=" + o.target),
                    1);
  return TargetSpec::nvptx(o.mcpu.empty() ? "sm_90" : o.mcpu, config().llvmOptLevel);
}

// Each kernel's PTX after a `// kernel <i> <name> grid=[x, y, z] block=[x, y, z] shared=<bytes>`
// line (a PTX comment, so a one-kernel output is a valid .ptx file).
void emitPtx(DumpContext &ctx) {
  TargetSpec target = ptxTarget(ctx);
  int k = 0;
  for (const auto &ast : kernelAsts(ctx)) {
    KernelSignature sig = describeKernel(ast, target, CompileOptions::from(config()));
    ctx.out << "// kernel " << k++ << " " << sig.name << " grid=" << shapeText(sig.globalSize)
            << " block=" << shapeText(sig.localSize) << " shared=" << sig.sharedBytes << "\n"
            << emitKernelText(ast, target, CompileOptions::from(config()), IRStage::Asm);
  }
}

// ---- kernel, llvm, llvm-opt, asm, stats ---------------------------------------------------------

// The code-generation target: the CPU device's (the host's, or LAZYJIT_CPU's), the CPU --mcpu
// names, or NVPTX with --target=nvptx64 (--mcpu=sm_XX).
TargetSpec codegenTarget(const DumpContext &ctx) {
  const DumpOptions &o = ctx.opts;
  if (!o.target.empty() && o.target.rfind("nvptx64", 0) == 0) return ptxTarget(ctx);
  if (o.device.rfind("CUDA", 0) == 0) return ptxTarget(ctx);
  TargetSpec t = TargetSpec::host(config().llvmOptLevel);
  if (!o.target.empty() && o.target != t.triple)
    throw ToolError("lazyjit-dump: error: unsupported --target=" + o.target +
                        " (supported: the host triple " + t.triple + ", nvptx64)",
                    1);
  // the named CPU's features, not the host's: the dump shows its kernels on any machine (an
  // unknown name is an UnsupportedError, reported by dumpMain)
  std::string cpu = o.mcpu.empty() ? config().cpu : o.mcpu;
  return cpu.empty() ? t : TargetSpec::namedCPU(cpu, config().llvmOptLevel);
}

// --emit=kernel: each kernel after optimization: full shape, axis kinds, options, launch dims.
void emitKernel(DumpContext &ctx) {
  TargetSpec target = codegenTarget(ctx);
  int k = 0;
  for (const auto &ast : kernelAsts(ctx)) {
    KernelSignature sig = describeKernel(ast, target, CompileOptions::from(config()));
    ctx.out << "# kernel " << k++ << "\n" << sig.kernelSummary << "\n";
    if (target.kind == TargetSpec::Kind::NVPTX)
      ctx.out << "  launch grid=" << shapeText(sig.globalSize)
              << " block=" << shapeText(sig.localSize) << " shared=" << sig.sharedBytes << "\n";
    else {
      // CPU: the outer range (Kernel::outerRange) is split across the thread pool
      const SInt &outer = sig.gridDims.at(0);
      ctx.out << "  launch ";
      if (sig.scratchBytes > 0) // whole packed inputs: a pack phase first, into one scratch block
        ctx.out << "pack_range=" << sig.packRange << " scratch=" << sig.scratchBytes << " then ";
      ctx.out << "outer_range=" << outer.render() << " threads=" << ThreadPool::global().size() << "\n";
    }
  }
}

void emitIR(DumpContext &ctx, IRStage stage) {
  TargetSpec target = codegenTarget(ctx);
  int k = 0;
  for (const auto &ast : kernelAsts(ctx)) {
    KernelSignature sig = describeKernel(ast, target, CompileOptions::from(config()));
    const char *comment = stage == IRStage::Loops ? ""
                          : stage == IRStage::Asm ? (target.kind == TargetSpec::Kind::NVPTX ? "// " : "# ")
                                                  : "; ";
    ctx.out << comment << "kernel " << k++ << " " << sig.name << "\n"
            << emitKernelText(ast, target, CompileOptions::from(config()), stage);
  }
}

// --emit=stats: per kernel as it ran: name, launch dims, time, GFLOP/s, GB/s.
void emitStats(DumpContext &ctx) {
  int k = 0;
  for (const auto &r : ctx.runStats.runs) {
    double t = std::max(r.seconds, 1e-9);
    ctx.out << fmt::format(
        "kernel {} {} device={} global={} local={} time={:.3f}us gflops={:.3f} gbps={:.3f} "
        "compile={:.3f}ms{}\n",
        k++, r.name, r.device, shapeText(r.global), shapeText(r.local), r.seconds * 1e6,
        r.flops / t / 1e9, r.bytes / t / 1e9, r.compileSeconds * 1e3,
        r.fromCache ? " (cached)" : "");
  }
  ctx.out << "# " << ctx.runStats.runs.size() << " kernels ran\n";
}

// --emit=runs: every kernel the script ran, with the line of the statement that ran it, then the
// number per statement line (what exec_count counts when a block is one line).
void emitRuns(DumpContext &ctx) {
  if (!ctx.fromScript) throw ToolError("lazyjit-dump: error: --emit=runs needs a tensor script", 1);
  auto where = [](int line) { return line ? "line " + std::to_string(line) : std::string("end"); };
  std::map<int, int> perLine;
  for (int l : ctx.statementLines) perLine[l] = 0;
  perLine[0] = 0;
  int k = 0;
  for (const auto &[line, name] : ctx.scriptRuns) {
    ctx.out << "run " << k++ << " " << where(line) << " " << name << "\n";
    ++perLine[line];
  }
  for (const auto &[line, n] : perLine)
    if (line) ctx.out << "# " << where(line) << ": " << n << " kernels\n";
  ctx.out << "# end: " << perLine[0] << " kernels\n";
  ctx.out << "# " << ctx.scriptRuns.size() << " kernels ran\n";
}

void emitDot(DumpContext &ctx) {
  if (!ctx.fromScript) throw ToolError("lazyjit-dump: error: --emit=dot needs a tensor script", 1);
  std::vector<std::pair<std::string, LazyBufferRef>> outs;
  for (const auto &[name, t] : ctx.outputs) outs.emplace_back(name, t.lazydata());
  ctx.out << scheduleToDot(ctx.schedule, outs);
}

} // namespace

const std::vector<Stage> &stages() {
  static const std::vector<Stage> all = {
      {"graph", true, false, emitGraph},
      {"schedule", true, false, emitSchedule},
      {"dot", true, false, emitDot},
      {"ast", true, false, emitAst},
      {"index", true, false, emitIndex},
      {"kernel", true, false, emitKernel},
      {"loops", true, false, [](DumpContext &c) { emitIR(c, IRStage::Loops); }},
      {"llvm", true, false, [](DumpContext &c) { emitIR(c, IRStage::LLVM); }},
      {"llvm-opt", true, false, [](DumpContext &c) { emitIR(c, IRStage::LLVMOpt); }},
      {"asm", true, false, [](DumpContext &c) { emitIR(c, IRStage::Asm); }},
      {"ptx", true, false, emitPtx},
      {"values", true, true, emitValues},
      {"stats", true, true, emitStats},
      {"runs", true, true, emitRuns},
  };
  return all;
}

const Stage &findStage(const std::string &name) {
  std::string known;
  for (const auto &s : stages()) {
    if (s.name == name) {
      if (!s.available)
        throw ToolError("lazyjit-dump: error: --emit=" + name +
                            " is not available yet (it comes with the code-generating backends)",
                        1);
      return s;
    }
    if (s.available) known += (known.empty() ? "" : ", ") + s.name;
  }
  throw ToolError(
      "lazyjit-dump: error: unknown stage '" + name + "' in --emit (known: " + known + ")", 1);
}

double elementAsDouble(const uint8_t *bytes, DType dt, size_t i) {
  return dispatchDType(dt, [&]<typename T>() -> double {
    T x;
    std::memcpy(&x, bytes + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return static_cast<double>(static_cast<float>(x));
    else
      return static_cast<double>(x);
  });
}

void printValues(std::ostream &out, const std::vector<uint8_t> &bytes, DType dt, size_t count) {
  count = std::min(count, bytes.size() / static_cast<size_t>(dt.itemsize())); // only what the buffer holds
  std::string line;
  dispatchDType(dt, [&]<typename T>() {
    for (size_t i = 0; i < count; ++i) {
      T x;
      std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
      if (i) line += ' ';
      if constexpr (std::is_same_v<T, bool>)
        line += x ? '1' : '0';
      else if constexpr (std::is_integral_v<T>)
        line += std::to_string(x);
      else
        line += fmt::format("{:.9g}", static_cast<double>(x));
    }
  });
  out << line << "\n";
}

void printIndex(std::ostream &out, const KernelOp &ast, int kernelNo) {
  KernelOpRef ref = ast.self();
  KernelOptions opts;
  opts.mergeView = config().mergeView;
  Kernel k(ref, opts);
  const Shape &fs = k.fullShape();
  int fr = k.firstReduce();
  std::vector<NodeRef> idxs;
  std::string loops;
  for (size_t i = 0; i < fs.size(); ++i) {
    std::string name = (static_cast<int>(i) < fr ? "idx" : "ridx") + std::to_string(i);
    bool single = fs[i].isInt() && fs[i].asInt() <= 1;
    NodeRef v = single ? numNode(0) : variable(name, 0, fs[i] - 1);
    idxs.push_back(v);
    loops += " " + (v->isVar() ? v->key() : name + "=0");
  }
  out << "kernel " << kernelNo << " " << k.name() << "\n";
  out << "  loops" << (loops.empty() ? " (none)" : loops) << "\n";
  for (size_t i = 0; i < k.bufs.size(); ++i) {
    const KernelOp &b = *k.bufs[i];
    auto [idx, valid] = k.sts[i].exprIdxs(idxs);
    if (b.op == Op::Const) {
      out << "  const " << printDouble(b.constBuffer().val) << " valid=" << valid->render() << "\n";
    } else {
      out << "  " << (b.op == Op::Store ? "store " : "load ") << b.memBuffer().idx
          << " idx=" << idx->render() << " valid=" << valid->render() << "\n";
    }
  }
}

} // namespace lazyjit::tool
