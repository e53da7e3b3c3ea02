// Fuzz target: the symbolic expression parser (printSInt's format), then the algebra on what it
// parsed: print/parse round trip, arithmetic with small constants, substitution of every variable.
// User errors (lazyjit::Error that is not an InternalError) are fine; anything else is a finding.
#include "FuzzCommon.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace {
void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz-symbolic: %s\n", what);
    std::abort();
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1024) return -1;
  lazyjit::fuzz::setUp();
  using namespace lazyjit;
  std::string text(reinterpret_cast<const char *>(data), size);
  try {
    SInt x = parseSInt(text);
    check(parseSInt(printSInt(x)) == x, "print/parse round trip changed the value");
    for (int64_t k : {int64_t(-3), int64_t(1), int64_t(2), int64_t(7)}) {
      try {
        SInt a = x * k + SInt(k);
        (void)printSInt(a);
        if (k > 0) {
          (void)printSInt(floordiv(a, k));
          (void)printSInt(mod(a, k));
        }
        (void)truthy(lt(a, k));
      } catch (const InternalError &) {
        throw;
      } catch (const Error &) {
      }
    }
    if (x.isNode()) {
      std::map<std::string, NodeRef> subs;
      for (const auto &v : x.node()->vars()) subs[v->key()] = numNode(1);
      try {
        (void)x.node()->substitute(subs);
      } catch (const InternalError &) {
        throw;
      } catch (const Error &) {
      }
    }
  } catch (const InternalError &e) {
    std::fprintf(stderr, "fuzz-symbolic: internal error: %s\n", e.what());
    std::abort();
  } catch (const Error &) {
  }
  return 0;
}
