// The lazy graph's lock. The graph is shared by every thread of a process (the dedup cache hands
// one thread the node another built; a model's weights are leaves of every thread's graph), and
// its nodes keep mutable links (children, views, walk marks, the cache): every change and every
// walk of the graph holds this one recursive lock. LazyBuffer's ops, destructors and the
// scheduler take it themselves; code above the graph takes it only around what it changes in the
// graph directly (Realize.cpp: a buffer realized, its op dropped). Compiling and running kernels
// never hold it.
#pragma once

#include <mutex>

namespace lazyjit {

/// The process-wide graph mutex (recursive: an op that builds other ops takes it again).
std::recursive_mutex &graphMutex();

namespace graph_detail {
inline thread_local int lockDepth = 0;
}

/// How many GraphLocks the calling thread holds (a wait that would block other threads' graph
/// work checks that it holds none).
inline int graphLockDepth() { return graph_detail::lockDepth; }

/// Holds the graph mutex for a scope.
class GraphLock {
public:
  GraphLock() : guard(graphMutex()) { ++graph_detail::lockDepth; }
  ~GraphLock() { --graph_detail::lockDepth; }
  GraphLock(const GraphLock &) = delete;
  GraphLock &operator=(const GraphLock &) = delete;

private:
  std::lock_guard<std::recursive_mutex> guard;
};

} // namespace lazyjit
