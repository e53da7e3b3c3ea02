// The lazy graph's process-wide lock (GraphLock.h).
#include "lazyjit/Graph/GraphLock.h"

namespace lazyjit {

std::recursive_mutex &graphMutex() {
  // never destroyed: a graph node may be freed during static teardown, after this file's statics
  static auto *m = new std::recursive_mutex();
  return *m;
}

} // namespace lazyjit
