// Out-of-line throw helpers so that the checking macros stay small at every call site.
#include "lazyjit/Support/Error.h"

namespace lazyjit::detail {

void throwInternal(const char *file, int line, const std::string &msg) {
  throw InternalError(fmt::format("internal error at {}:{}: {} (this is a lazyjit bug; rerun with "
                                  "DEBUG=3 to see the kernel ASTs)",
                                  file, line, msg));
}

} // namespace lazyjit::detail
