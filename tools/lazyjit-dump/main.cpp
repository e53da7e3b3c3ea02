// lazyjit-dump's main. Every walk of a graph, a schedule, an AST and a kernel's expression is
// iterative (building and scheduling, printing, the verifier, lowering to LLVM IR, the
// interpreter behind --check), and the script parser bounds the nesting it accepts: the tool runs
// on the process's own stack. A chain of a million element-wise ops goes through --emit=kernel on
// the default 8 MiB (test/lit/Schedule/deep-chain-stack.lj checks 200,000 at 1 MiB).
#include "Tool.h"

#include <iostream>

int main(int argc, char **argv) {
  int rc = lazyjit::tool::dumpMain(argc, argv);
  std::cout.flush();
  if (!std::cout && rc == 0) {
    std::cerr << "lazyjit-dump: error: cannot write the output to standard output\n";
    return 1;
  }
  return rc;
}
