// The evaluator of tensor scripts. Names live in one environment; every other value lives only on
// the evaluator's C++ stack and is moved into the call that consumes it, so a script keeps exactly
// the tensors alive that the same Python program would (fusion depends on it).
#pragma once

#include "Script.h"
#include "Value.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lazyjit::script {

class Evaluator {
public:
  explicit Evaluator(const Script &script) : script(script) {}

  /// Runs every statement. Errors are tool::ToolError with `FILE:LINE:COL: error: <message>`.
  void run();

  /// The outputs: the names of the last `out` statement, else the last assigned name.
  std::vector<std::pair<std::string, Tensor>> outputs() const;

private:
  const Script &script;
  std::map<std::string, Value> env;
  std::vector<std::string> deletedBuiltins;
  std::vector<std::string> outNames;
  std::vector<Loc> outLocs;
  std::string lastAssigned;
  Loc lastAssignedLoc;

  void exec(const Stmt &st);
  Value eval(const Expr &e);
  Value lookup(const std::string &name, Loc loc) const;
  Value evalCall(const Expr &e);
  Value evalSubscript(const Expr &e);
  [[noreturn]] void fail(Loc loc, const std::string &msg, int code = 1) const;
  template <typename F> auto located(Loc loc, F &&f) -> decltype(f());
};

} // namespace lazyjit::script
