// What LazyBuffer.cpp needs of the dedup cache (LazyCache.cpp): internal to lib/Graph.
#pragma once

#include "lazyjit/Graph/LazyBuffer.h"

#include <string>

namespace lazyjit::graph_detail {

/// Takes dying buffer `b` out of the dedup cache (it is in it: LazyBuffer::inCache_).
void forgetCacheEntry(LazyBuffer *b);

} // namespace lazyjit::graph_detail
