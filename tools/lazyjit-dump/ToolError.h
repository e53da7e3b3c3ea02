// The one exception lazyjit-dump's own code throws: a fully formatted message plus the exit code
// (1: user error, 2: internal error).
#pragma once

#include <stdexcept>
#include <string>

namespace lazyjit::tool {

struct ToolError : std::runtime_error {
  ToolError(const std::string &msg, int exitCode) : std::runtime_error(msg), exitCode(exitCode) {}
  int exitCode;
};

} // namespace lazyjit::tool
