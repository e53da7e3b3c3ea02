// The evaluator of tensor scripts. Names live in one environment; every other value lives only on
// the evaluator's C++ stack and is moved into the call that consumes it, so a script keeps exactly
// the tensors alive that the same Python program would (fusion depends on it).
#pragma once

#include "Script.h"
#include "Value.h"

#include <iosfwd>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lazyjit::script {

class Evaluator {
public:
  /// `out` receives what print() writes.
  Evaluator(const Script &script, std::ostream &out) : script(script), printOut(out) {}

  /// Runs every statement. Errors are tool::ToolError with `FILE:LINE:COL: error: <message>`.
  void run();

  /// The line of the statement being run (0 before the first and after the last).
  int currentLine() const { return line; }

  /// The outputs: the names of the last `out` statement, else the last assigned name.
  std::vector<std::pair<std::string, Tensor>> outputs() const;

private:
  const Script &script;
  std::ostream &printOut;
  int line = 0;
  std::map<std::string, Value> env;
  std::vector<std::string> assignOrder; ///< names by their last assignment, oldest first
  std::vector<std::string> deletedBuiltins;
  std::vector<std::string> outNames;
  std::vector<Loc> outLocs;
  std::string lastAssigned;
  Loc lastAssignedLoc;

  void exec(const Stmt &st);
  /// Binds `name` as an assignment does.
  void bind(const std::string &name, Value v);
  Value eval(const Expr &e);
  Value lookup(const std::string &name, Loc loc) const;
  Value evalCall(const Expr &e);
  /// After `v.bind(n)`: every name holding the unbound Variable now holds the bound one.
  void rebindVariable(const NodeRef &unbound, const SInt &bound);
  Value evalSubscript(const Expr &e);
  /// The items of a Subscript expression, evaluated in order (slices as SliceV).
  std::vector<Value> evalIndexItems(const Expr &e);
  /// exec_count(): realizes every tensor the script can still reach, then starts a count.
  Value execCount(CallArgs &args);
  /// print(*values, sep=' ', end='\n') to the tool's output.
  Value print(CallArgs &args);
  [[noreturn]] void fail(Loc loc, const std::string &msg, int code = 1) const;
  template <typename F> auto located(Loc loc, F &&f) -> decltype(f());
};

} // namespace lazyjit::script
