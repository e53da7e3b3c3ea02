// lazyjit-dump: shows what lazyjit does with a tensor script or kernel ASTs at every stage, runs
// and checks it (the contract is SCRIPT.md). The driver below reads like the pipeline: parse the
// options, run the script, schedule its outputs, print the stages before running, run, print the
// stages after running. Every error ends in main with exit code 1 (user) or 2 (internal).
#include "Dump.h"
#include "Script.h"
#include "ScriptEval.h"
#include "Tool.h"
#include "ToolError.h"

#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Graph/Ops.h"
#include "lazyjit/ONNX/Model.h"
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Runtime/Dot.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <pthread.h>
#include <sstream>

using namespace lazyjit;
using lazyjit::tool::ToolError;

namespace {

struct Invocation {
  std::string input = "-";
  std::string inputKind; // "script", "ast", "onnx" or "" (from the file name)
  std::vector<std::string> inputArgs; // --input: a kind, or an ONNX model's input
  tool::OnnxOptions onnx;
  std::vector<std::string> emit;
  std::optional<int> opt, debug;
  bool noopt = false;
  bool listOps = false;
  bool listOnnxOps = false;
  std::string outFile;
  tool::DumpOptions dump;
};

// --list-ops: the op table (Ops.def), one op per line, its columns at least two spaces apart
// (test/lit/check-op-doc.py reads them so, to compare docs/ir.md's table with it).
void listOps(std::ostream &out) {
  std::vector<std::vector<std::string>> rows{{"op", "operands", "argument", "props", "CPU lanes", "libm", "NVPTX",
                                              "meaning"}};
  auto orDash = [](std::string_view s) { return s.empty() ? std::string("-") : std::string(s); };
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    int arity = opArity(op);
    rows.push_back({std::string(opName(op)), arity < 0 ? "0 or 1" : std::to_string(arity),
                    std::string(opArgText(opArgKind(op))), opPropsText(op), std::string(opLanesText(opLanes(op))),
                    orDash(opLibm(op)), orDash(opNVPTXFn(op)), std::string(opMeaning(op))});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto &r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto &r : rows) {
    std::string line;
    for (size_t c = 0; c + 1 < r.size(); ++c) line += fmt::format("{:<{}}  ", r[c], width[c]);
    out << line << r.back() << "\n";
  }
}

std::string readInput(const std::string &path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw ToolError("lazyjit-dump: error: cannot open '" + path + "'", 1);
    ss << f.rdbuf();
  }
  return ss.str();
}

// Splits "a,b" arguments and orders the stages as the pipeline runs them.
std::vector<std::string> orderStages(const std::vector<std::string> &requested) {
  std::vector<std::string> names;
  for (const auto &r : requested) {
    std::stringstream ss(r);
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) {
        tool::findStage(item); // rejects unknown and unavailable stages
        names.push_back(item);
      }
  }
  std::vector<std::string> ordered;
  for (const auto &s : tool::stages())
    if (std::find(names.begin(), names.end(), s.name) != names.end()) ordered.push_back(s.name);
  return ordered;
}

int runScript(const std::string &text, const std::string &file, tool::DumpOptions &opts,
              std::ostream &out) {
  script::Script sc = script::parseScript(text, file); // syntax and name errors: nothing runs
  tool::KernelChecker checker;
  tool::DumpContext ctx(out, opts);
  script::Evaluator ev(sc, out);
  std::function<void(const std::vector<script::Stmt> &)> lines = [&](const auto &stmts) {
    for (const auto &st : stmts) {
      if (ctx.statementLines.empty() || ctx.statementLines.back() != st.loc.line)
        ctx.statementLines.push_back(st.loc.line);
      lines(st.body);
    }
  };
  lines(sc.stmts);
  struct ObserverReset {
    ~ObserverReset() { // the observers die with this scope
      setScheduleObserver(nullptr);
      setBeforeKernelObserver(nullptr);
    }
  } observerReset;
  // every kernel that runs is recorded with the running statement's line (and checked: interpreted
  // before it runs, compared after)
  if (opts.check)
    setBeforeKernelObserver([&](const ScheduleItem &si, std::span<Buffer *const> bufs) { checker.beforeRun(si, bufs); });
  setScheduleObserver([&](const ScheduleItem &si, const Program *prg) {
    if (opts.check) checker.observe(si, prg);
    if (si.isKernel())
      ctx.scriptRuns.emplace_back(ev.currentLine(), prg ? prg->info().name : kernelName(*si.ast, config().mergeView));
  });

  ev.run();

  ctx.outputs = ev.outputs();
  return tool::emitAndRun(ctx, opts, checker);
}

int runTool(int argc, char **argv, const std::string *inputText, std::ostream *outOverride) {
  Invocation inv;
  CLI::App app{"lazyjit-dump: print, run and check what lazyjit makes of a tensor program",
               "lazyjit-dump"};
  app.add_option("input", inv.input,
                 "tensor script (.lj), kernel ASTs (.ast) or ONNX model (.onnx); '-' is stdin");
  app.add_option("--emit", inv.emit,
                 "stages to print, comma-separated: graph, schedule, dot, ast, index, kernel, loops, llvm, "
                 "llvm-opt, asm, ptx, values, stats, runs (repeatable)")
      ->delimiter(',')
      ->expected(1) // `--emit=values FILE`: the input is not a second stage name
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--input", inv.inputArgs,
                 "input kind: script, ast or onnx (default: from the file name); for an ONNX "
                 "model, also an input as NAME=FILE (.npy or .pb) or a test-data directory "
                 "(input_0.pb, ...) (repeatable)")
      ->expected(1) // `--input=ast -`: the '-' is the input file, not a second value
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--dim", inv.onnx.dims, "ONNX model: the size of a symbolic input dim, NAME=N (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--run", inv.dump.run, "run the program");
  app.add_flag("--check", inv.dump.check,
               "also run every kernel in the reference interpreter and compare");
  app.add_option("--device", inv.dump.device, "CPU, INTERP, CUDA[:N] (default: DEVICE or CPU)");
  app.add_option("--target", inv.dump.target, "target triple for code generation");
  app.add_option("--mcpu", inv.dump.mcpu, "target CPU for code generation");
  app.add_option("--opt", inv.opt,
                 fmt::format("fusion level (OPT; default {}): 0-4 the reference's (2 gives its kernels exactly), 5 is 2 plus row fusion and conv layouts (0-{})", kDefaultOptLevel, kMaxOptLevel))
      ->check(CLI::Range(0, kMaxOptLevel));
  app.add_flag("--noopt", inv.noopt, "no kernel optimizations");
  app.add_option("--debug", inv.debug, fmt::format("debug level (DEBUG, 0-{})", kMaxDebugLevel))
      ->check(CLI::Range(0, kMaxDebugLevel));
  app.add_option("-o", inv.outFile,
                 "write the output to this file (ONNX model: a directory for the outputs, "
                 "output_0.pb and output_0.npy, ...)");
  app.add_flag("--list-ops", inv.listOps, "print the op table (operands, argument, what the passes ask, meaning) and exit");
  app.add_flag("--list-onnx-ops", inv.listOnnxOps,
               "print the ONNX op types (default domain) the importer runs, one per line, and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    throw ToolError("lazyjit-dump: error: " + std::string(e.what()), 1);
  }

  for (const std::string &a : inv.inputArgs) {
    if (a == "script" || a == "ast" || a == "onnx") {
      if (!inv.inputKind.empty() && inv.inputKind != a)
        throw ToolError("lazyjit-dump: error: --input " + inv.inputKind + " and --input " + a + " name two input kinds", 1);
      inv.inputKind = a;
    } else {
      inv.onnx.inputs.push_back(a);
    }
  }

  if (inv.listOnnxOps) {
    std::ostream &o = outOverride ? *outOverride : std::cout;
    for (const std::string &op : onnx::supportedOpTypes()) o << op << "\n";
    return 0;
  }
  if (inv.listOps) {
    listOps(outOverride ? *outOverride : std::cout);
    return 0;
  }

  Config cfg = config();
  if (inv.opt) cfg.opt = *inv.opt;
  if (inv.debug) cfg.debug = *inv.debug;
  if (inv.noopt) cfg.noopt = true;
  if (!inv.dump.device.empty()) cfg.device = canonicalizeDevice(inv.dump.device);
  setConfig(cfg);
  inv.dump.device = defaultDevice();
  getDevice(inv.dump.device); // an unknown device is an error before anything runs

  inv.dump.emit = orderStages(inv.emit);
  if (inv.emit.empty() && !inv.dump.run && !inv.dump.check) inv.dump.emit = {"schedule"};

  std::string name = inv.input == "-" ? "<stdin>" : inv.input;
  bool isOnnx = inv.inputKind.empty() ? name.size() > 5 && name.substr(name.size() - 5) == ".onnx"
                                      : inv.inputKind == "onnx";
  if (!isOnnx && (!inv.onnx.inputs.empty() || !inv.onnx.dims.empty()))
    throw ToolError("lazyjit-dump: error: --input NAME=FILE, --input DIR and --dim are for ONNX models (.onnx or --input onnx)", 1);
  if (isOnnx) {
    if (inv.input == "-" && !inputText)
      throw ToolError("lazyjit-dump: error: an ONNX model is read from a file, not stdin", 1);
    inv.onnx.outDir = inv.outFile;
    std::ostream &out = outOverride ? *outOverride : std::cout;
    int rc = tool::runOnnxInput(inv.input, inputText, inv.dump, inv.onnx, out);
    out.flush();
    return rc;
  }

  std::ofstream file;
  std::ostream *out = outOverride ? outOverride : &std::cout;
  // -o FILE.svg / .png / .pdf: the dot text goes through Graphviz
  std::string ext = inv.outFile.size() > 4 ? inv.outFile.substr(inv.outFile.size() - 4) : "";
  bool picture = ext == ".svg" || ext == ".png" || ext == ".pdf";
  std::ostringstream dotText;
  if (picture) {
    if (inv.dump.emit != std::vector<std::string>{"dot"})
      throw ToolError("lazyjit-dump: error: -o " + inv.outFile + " writes a picture: use it with --emit=dot alone", 1);
    out = &dotText;
  } else if (!inv.outFile.empty()) {
    file.open(inv.outFile, std::ios::binary);
    if (!file) throw ToolError("lazyjit-dump: error: cannot write '" + inv.outFile + "'", 1);
    out = &file;
  }
  std::string text = inputText ? *inputText : readInput(inv.input);
  bool isAst = inv.inputKind.empty() ? name.size() > 4 && name.substr(name.size() - 4) == ".ast"
                                     : inv.inputKind == "ast";
  int rc =
      isAst ? tool::runAstInput(text, name, inv.dump, *out) : runScript(text, name, inv.dump, *out);
  if (picture) {
    if (rc == 0) renderDot(dotText.str(), inv.outFile);
    return rc;
  }
  out->flush();
  if (!*out) {
    int err = errno;
    throw ToolError(fmt::format("lazyjit-dump: error: cannot write the output to {}: {}",
                                inv.outFile.empty() ? "standard output" : "'" + inv.outFile + "'",
                                err ? std::strerror(err) : "write failed"),
                    1);
  }
  return rc;
}

} // namespace

namespace lazyjit::tool {

// What every input kind that builds tensors does once it has them: schedules the outputs together
// (one seen set, as Tensor.corealize), prints the stages that come before running, runs, prints the
// rest, and ends --check (the count of kernels compared, a mismatch as an error).
int emitAndRun(DumpContext &ctx, DumpOptions &opts, KernelChecker &checker) {
  std::vector<LazyBufferRef> outs;
  for (const auto &o : ctx.outputs) outs.push_back(o.second.lazydata());
  ctx.schedule = scheduleMany(outs);

  bool afterRun = false;
  for (const auto &name : opts.emit) {
    const Stage &s = findStage(name);
    if (s.afterRun)
      afterRun = true;
    else
      s.emit(ctx);
  }
  if (opts.run || opts.check || afterRun) {
    bool profile = std::find(opts.emit.begin(), opts.emit.end(), "stats") != opts.emit.end();
    ctx.runStats = runSchedule(std::move(ctx.schedule), profile);
    ctx.schedule.clear();
    for (const auto &name : opts.emit) {
      const Stage &s = findStage(name);
      if (s.afterRun) s.emit(ctx);
    }
  }
  if (opts.check) checker.finish(ctx.out, std::cerr);
  return 0;
}

int dumpMain(int argc, char **argv, const std::string *inputText, std::ostream *out) {
  try {
    return runTool(argc, argv, inputText, out);
  } catch (const ToolError &e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    return e.exitCode;
  } catch (const ParseError &e) {
    std::cerr << e.what() << "\n"; // already FILE:LINE:COL: error: ...
    return 1;
  } catch (const InternalError &e) {
    std::cerr << "lazyjit-dump: error: internal error: " << e.what() << "\n";
    return 2;
  } catch (const Error &e) {
    std::cerr << "lazyjit-dump: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc &) {
    // a resource limit hit by what the input asks for, not a bug in the tool
    std::cerr << "lazyjit-dump: error: out of memory\n";
    return 1;
  } catch (const std::exception &e) {
    std::cerr << "lazyjit-dump: error: internal error: " << e.what() << "\n";
    return 2;
  } catch (...) {
    std::cerr << "lazyjit-dump: error: internal error: unknown exception\n";
    return 2;
  }
}

} // namespace lazyjit::tool
