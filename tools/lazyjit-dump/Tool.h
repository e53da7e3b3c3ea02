// The lazyjit-dump driver as a function, so that main and the fuzz targets share it.
#pragma once

#include <iosfwd>
#include <string>

namespace lazyjit::tool {

/// Runs lazyjit-dump with the command line `argv` and turns every error into a message on stderr
/// and an exit code: 0 success, 1 user error, 2 internal error (a bug). `inputText`, when given,
/// replaces reading the input file; `out`, when given, replaces standard output (unless -o).
int dumpMain(int argc, char **argv, const std::string *inputText = nullptr, std::ostream *out = nullptr);

} // namespace lazyjit::tool
