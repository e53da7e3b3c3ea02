// lazyjit-dump's main: runs the tool on a thread with a large stack (deep lazy graphs and ASTs are
// walked recursively by the library; the stack keeps any input the parsers accept from
// overflowing it).
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
