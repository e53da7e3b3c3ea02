// The stages lazyjit-dump can print (--emit) and what they print from. Each stage is registered
// once in stages() with its pipeline position; a stage that a later backend provides is listed
// as unavailable until then, so its name is reserved and rejected with a clear message.
#pragma once

#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Tensor/Tensor.h"

#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace lazyjit::tool {

struct DumpOptions {
  std::vector<std::string> emit; ///< requested stages, in pipeline order
  bool run = false;
  bool check = false;
  std::string device;
  std::string target, mcpu;
};

/// What the stages print from: a script's outputs and their schedule, or parsed ASTs.
struct DumpContext {
  DumpContext(std::ostream &out, const DumpOptions &opts) : out(out), opts(opts) {}
  std::ostream &out;
  const DumpOptions &opts;
  bool fromScript = true;
  // script input
  std::vector<std::pair<std::string, Tensor>> outputs;
  std::vector<ScheduleItem> schedule; ///< the outputs' schedule, computed before running
  RunStats runStats; ///< what ran (per-kernel timings when --emit=stats asked for them)
  /// Every compute kernel the script ran, with the line of the statement that ran it (0: the
  /// realization of the outputs after the script), for --emit=runs.
  std::vector<std::pair<int, std::string>> scriptRuns;
  std::vector<int> statementLines; ///< the lines that hold statements, in order
  // AST input
  std::string astFile;
  std::vector<KernelOpRef> asts;
};

struct Stage {
  std::string name;
  bool available; ///< false: reserved for a later backend
  bool afterRun;  ///< printed after the program ran (values, stats)
  std::function<void(DumpContext &)> emit;
};

/// Every stage in pipeline order.
const std::vector<Stage> &stages();
/// Looks up a stage; throws ToolError (exit 1) for unknown and unavailable stages.
const Stage &findStage(const std::string &name);

// ---- shared helpers -----------------------------------------------------------------------------

/// Prints `count` elements of raw `bytes` of dtype `dt`, space-separated (%.9g, ints, 0/1).
void printValues(std::ostream &out, const std::vector<uint8_t> &bytes, DType dt, size_t count);
/// Element `i` of raw bytes as a double (for comparisons).
double elementAsDouble(const uint8_t *bytes, DType dt, size_t i);
/// The index/validity listing of one kernel (--emit=index).
void printIndex(std::ostream &out, const KernelOp &ast, int kernelNo);

/// --check: every kernel the device runs is also run by the reference interpreter, on host copies
/// of its buffers taken just before it runs (its output may be written over one of its inputs),
/// and the two outputs are compared element by element.
class KernelChecker {
public:
  /// Before a kernel of a schedule runs (runSchedule's before-kernel observer): interprets it.
  void beforeRun(const ScheduleItem &si, std::span<Buffer *const> bufs);
  /// After an item of a schedule ran (the schedule observer calls it for every item): compares a
  /// kernel's output with what beforeRun computed.
  void observe(const ScheduleItem &si, const Program *prg);
  /// Interprets `ast` on host copies of `bufs` (the output first) as they are now, before the
  /// device runs it.
  void expect(const KernelOp &ast, std::span<Buffer *const> bufs, const VarVals &vars);
  /// Counts a kernel that ran and compares its device output `out` with what expect() computed
  /// for the same `ast` (a kernel expect() did not see is counted, not compared).
  void compare(const KernelOp &ast, const std::string &name, const Buffer &out);
  /// The first mismatch, if any (the kernels after it are counted, not compared).
  const std::optional<std::string> &mismatch() const { return first; }
  int kernelsRun() const { return kernels; }
  int kernelsCompared() const { return compared; }
  /// Ends the check: flushes `out`, writes `# check: C of K kernels compared` to `err`, and throws
  /// ToolError (exit 1) on a mismatch.
  void finish(std::ostream &out, std::ostream &err) const;

private:
  struct Expected {
    const KernelOp *ast;
    std::vector<uint8_t> bytes; ///< the interpreter's output
  };
  std::optional<Expected> pending; ///< of the kernel about to run
  int kernels = 0, compared = 0;
  std::optional<std::string> first;
};

/// Schedules ctx.outputs together, prints the stages that come before running, runs (with --run,
/// --check or a stage printed after running), prints the rest; a --check mismatch is an error.
int emitAndRun(DumpContext &ctx, DumpOptions &opts, KernelChecker &checker);

/// What an ONNX model runs on: `--input NAME=FILE` (.npy or .pb) or `--input DIR` (ONNX's
/// test-data layout), `--dim NAME=N` for symbolic dims, and -o DIR for the outputs.
struct OnnxOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  std::string outDir;
};

/// Runs an ONNX model (FILE.onnx or --input=onnx): imports it, builds its outputs from the given
/// inputs (random ones, from a fixed seed, when none are given), prints the requested stages, and
/// with -o DIR writes the outputs as output_<i>.pb and output_<i>.npy. `bytes`, when given,
/// replaces reading the file.
int runOnnxInput(const std::string &file, const std::string *bytes, DumpOptions &opts,
                 const OnnxOptions &onnx, std::ostream &out);

/// Runs --input=ast: parses the file, verifies each AST, prints the requested stages and, with
/// --run or --check, runs every kernel on buffers filled with a fixed pattern.
int runAstInput(const std::string &text, const std::string &file, DumpOptions &opts,
                std::ostream &out);

} // namespace lazyjit::tool
