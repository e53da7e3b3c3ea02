// What LazyBuffer.cpp needs of the dedup cache (LazyCache.cpp): internal to lib/Graph.
#pragma once

#include "lazyjit/Graph/LazyBuffer.h"

#include <string>

namespace lazyjit::graph_detail {

/// Takes the entry of dying buffer `b` (created with these fields) out of the dedup cache at once.
void forgetCacheEntry(const LazyBuffer *b, const std::string &device, DType dtype, OpType optype, const LazyOp &op,
                      const LazyBuffer *base);

} // namespace lazyjit::graph_detail
