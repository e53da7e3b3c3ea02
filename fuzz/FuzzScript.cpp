// Fuzz target: a tensor script through lazyjit-dump's full pipeline (parse, evaluate, schedule,
// compile and run on the CPU JIT, print the values). Any exit but 0 or 1 is a finding.
#include "FuzzCommon.h"
#include "Tool.h"

#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return -1; // one statement per line: longer scripts add nothing new
  lazyjit::fuzz::setUp();
  std::string text(reinterpret_cast<const char *>(data), size);
  const char *argv[] = {"lazyjit-dump", "--input=script", "--emit=values", "-"};
  std::ostringstream out;
  int rc = lazyjit::tool::dumpMain(4, const_cast<char **>(argv), &text, &out);
  lazyjit::fuzz::requireNoInternalError(rc, "the script");
  return 0;
}
