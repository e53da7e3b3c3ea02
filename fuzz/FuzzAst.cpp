// Fuzz target: kernel ASTs in the textual format through the parser, the verifier and its bounds
// proof, then compiled and run on the CPU JIT with LAZYJIT_BOUNDS on, and checked against the
// reference interpreter. Out-of-bounds accesses are caught by ASan and the bounds mode.
#include "FuzzCommon.h"
#include "Tool.h"

#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 8192) return -1;
  lazyjit::fuzz::setUp();
  std::string text(reinterpret_cast<const char *>(data), size);
  const char *argv[] = {"lazyjit-dump", "--input=ast", "--emit=values", "-"};
  std::ostringstream out;
  int rc = lazyjit::tool::dumpMain(4, const_cast<char **>(argv), &text, &out);
  lazyjit::fuzz::requireNoInternalError(rc, "the AST");
  return 0;
}
