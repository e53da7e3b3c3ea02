// Fuzz target setup (see FuzzCommon.h).
#include "FuzzCommon.h"
#include "lazyjit/Support/Config.h"

#include <cstdio>
#include <cstdlib>

namespace lazyjit::fuzz {

void setUp() {
  static bool done = false;
  if (done) return;
  done = true;
  Config c = config();
  c.maxBufferBytes = int64_t(64) << 20;
  c.diskCache = false;
  c.bounds = true;
  c.verifyAst = true;
  c.threads = 1;
  setConfig(c);
}

void requireNoInternalError(int rc, const char *what) {
  if (rc == 2) {
    std::fprintf(stderr, "fuzz: %s ended with an internal error\n", what);
    std::abort();
  }
}

} // namespace lazyjit::fuzz
