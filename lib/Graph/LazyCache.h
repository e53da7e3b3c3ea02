// What LazyBuffer.cpp needs of the dedup cache (LazyCache.cpp): internal to lib/Graph.
#pragma once

#include "lazyjit/Graph/LazyBuffer.h"

#include <string>

namespace lazyjit::graph_detail {

/// Takes dying buffer `b` out of the dedup cache, and the entries filed under it with it.
void leaveCache(LazyBuffer *b);

} // namespace lazyjit::graph_detail
