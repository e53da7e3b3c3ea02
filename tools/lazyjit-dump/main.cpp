// lazyjit-dump's main: runs the tool on a thread with a large stack. Building, scheduling and
// printing graphs and ASTs walk them iteratively (a 100,000-op chain goes through --emit=graph,
// kernel and index on an 8 MiB stack), but lowering a kernel to LLVM IR, LLVM's own passes and the
// reference interpreter (--check) still recurse along a fused expression: a kernel of 100,000
// chained ops needs ~40,000 frames. The reserved stack is virtual memory; only what is used is
// committed.
#include "Tool.h"

#include <iostream>
#include <pthread.h>

namespace {
struct ThreadArgs {
  int argc;
  char **argv;
  int rc = 2;
};

} // namespace

int main(int argc, char **argv) {
  ThreadArgs args{argc, argv};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(1) << 30);
  pthread_t thread;
  auto body = [](void *p) -> void * {
    auto *a = static_cast<ThreadArgs *>(p);
    a->rc = lazyjit::tool::dumpMain(a->argc, a->argv);
    return nullptr;
  };
  if (pthread_create(&thread, &attr, body, &args) != 0) return lazyjit::tool::dumpMain(argc, argv);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  std::cout.flush();
  if (!std::cout && args.rc == 0) {
    std::cerr << "lazyjit-dump: error: cannot write the output to standard output\n";
    return 1;
  }
  return args.rc;
}
