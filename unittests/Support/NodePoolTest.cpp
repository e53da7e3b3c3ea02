// NodePool: the graph nodes' allocator. Blocks never overlap and keep what is written to them; a
// freed graph's slabs are reused by the next one instead of growing the pool, also past the limit
// of slabs kept warm (their pages offered back to the system); blocks may be freed on another
// thread, and a thread that exits gives its slab and its kept blocks back; sizes above the pooled
// range go to operator new.
#include "lazyjit/Support/NodePool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

using namespace lazyjit;

namespace {

struct Block {
  unsigned char *p;
  size_t bytes;
};

// Allocates `n` blocks of sizes cycling through 16..1024 and fills each with its own pattern.
std::vector<Block> fill(size_t n, unsigned seed) {
  std::vector<Block> out;
  for (size_t i = 0; i < n; ++i) {
    size_t bytes = 8 + (i * 37 + seed) % pool_detail::kMaxPooled;
    auto *p = static_cast<unsigned char *>(pool_detail::allocate(bytes));
    std::memset(p, static_cast<int>((i + seed) & 0xff), bytes);
    out.push_back({p, bytes});
  }
  return out;
}

void checkAndFree(const std::vector<Block> &blocks, unsigned seed) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block &b = blocks[i];
    unsigned char want = static_cast<unsigned char>((i + seed) & 0xff);
    CHECK(std::all_of(b.p, b.p + b.bytes, [&](unsigned char c) { return c == want; }));
    pool_detail::deallocate(b.p, b.bytes);
  }
}

// A sanitizer build sends every block to operator new (so AddressSanitizer sees each lifetime): the
// pool then holds nothing, and the tests of its slabs have nothing to check.
bool bypassed() {
  if (nodePoolActive()) return false;
  MESSAGE("this build bypasses the node pool (sanitizers): checking only that it holds nothing");
  CHECK(nodePoolReservedBytes() == 0);
  return true;
}

} // namespace

TEST_CASE("pooled blocks are 16-byte aligned, disjoint and keep their contents") {
  std::vector<Block> blocks = fill(5000, 3);
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  for (const Block &b : blocks) {
    CHECK(reinterpret_cast<uintptr_t>(b.p) % 16 == 0);
    ranges.emplace_back(reinterpret_cast<uintptr_t>(b.p), reinterpret_cast<uintptr_t>(b.p) + b.bytes);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) CHECK(ranges[i - 1].second <= ranges[i].first);
  checkAndFree(blocks, 3);
}

TEST_CASE("a freed graph's slabs are carved again instead of growing the pool") {
  if (bypassed()) return;
  // warm up: the pool reaches the size of one such graph
  checkAndFree(fill(20000, 1), 1);
  size_t reserved = nodePoolReservedBytes();
  CHECK(nodePoolIdleSlabs() > 0); // the freed blocks emptied their slabs
  for (unsigned round = 0; round < 5; ++round) checkAndFree(fill(20000, round), round);
  CHECK(nodePoolReservedBytes() == reserved);
}

TEST_CASE("free slabs past the warm limit stay the pool's, their pages offered back, and are carved again") {
  if (bypassed()) return;
  checkAndFree(fill(20000, 5), 5);
  size_t reserved = nodePoolReservedBytes();
  size_t limit = setNodePoolWarmSlabs(2);
  // the graph takes every free slab; freeing it keeps two warm and offers the rest back
  checkAndFree(fill(20000, 6), 6);
  CHECK(nodePoolIdleSlabs() - nodePoolColdSlabs() <= 2);
  CHECK(nodePoolColdSlabs() > 0);
  CHECK(nodePoolReservedBytes() == reserved);
  // the cold slabs are carved again (the pool does not grow) and their blocks keep what is written
  for (unsigned round = 0; round < 3; ++round) checkAndFree(fill(20000, 7 + round), 7 + round);
  CHECK(nodePoolReservedBytes() == reserved);
  setNodePoolWarmSlabs(limit);
}

TEST_CASE("the pool grows by whole 2 MiB chunks of slabs, which a fresh graph fills in turn") {
  if (bypassed()) return;
  // (chunks ask for transparent huge pages; whether the system grants them is its choice)
  constexpr size_t kChunk = size_t{2} << 20;
  size_t before = nodePoolReservedBytes();
  std::vector<unsigned char *> blocks;
  // blocks until the free slabs earlier tests left are used up and the pool grows, then 1,000 more
  auto more = [&] { blocks.push_back(static_cast<unsigned char *>(pool_detail::allocate(512))); };
  while (nodePoolReservedBytes() == before && blocks.size() < (size_t{1} << 20)) more();
  CHECK(nodePoolReservedBytes() > before);
  CHECK(nodePoolReservedBytes() % kChunk == 0);
  for (int i = 0; i < 1000; ++i) more();
  // those were carved from the new chunk's slabs, 64 KiB next to each other
  size_t sameChunk = 0;
  for (size_t i = blocks.size() - 1000; i < blocks.size(); ++i)
    sameChunk += reinterpret_cast<uintptr_t>(blocks[i]) / kChunk == reinterpret_cast<uintptr_t>(blocks[i - 1]) / kChunk;
  CHECK(sameChunk >= 998);
  for (unsigned char *p : blocks) pool_detail::deallocate(p, 512);
}

TEST_CASE("consecutive blocks are carved next to each other") {
  if (bypassed()) return;
  // past the blocks of this size the thread keeps (16), every block is carved right after the
  // one before, but where a slab ends
  std::vector<unsigned char *> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(static_cast<unsigned char *>(pool_detail::allocate(320)));
  int adjacent = 0;
  for (size_t i = 32; i < blocks.size(); ++i) adjacent += blocks[i] - blocks[i - 1] == 320;
  CHECK(adjacent >= 31);
  // a block freed and asked for again comes back (the thread's kept blocks)
  unsigned char *last = blocks.back();
  pool_detail::deallocate(last, 320);
  CHECK(pool_detail::allocate(320) == last);
  for (unsigned char *p : blocks) pool_detail::deallocate(p, 320);
}

TEST_CASE("the pool counts the blocks this thread takes") {
  if (bypassed()) return;
  uint64_t before = nodePoolAllocations();
  void *p = pool_detail::allocate(100);
  void *big = pool_detail::allocate(pool_detail::kMaxPooled + 1); // operator new: not counted
  CHECK(nodePoolAllocations() == before + 1);
  pool_detail::deallocate(big, pool_detail::kMaxPooled + 1);
  pool_detail::deallocate(p, 100);
}

TEST_CASE("blocks freed on another thread, and by a thread that exits, go back to their slabs") {
  checkAndFree(fill(20000, 11), 11);
  size_t reserved = nodePoolReservedBytes();
  for (int round = 0; round < 4; ++round) {
    // made here, freed there
    std::vector<Block> mine = fill(20000, 20 + round);
    std::thread([&] { checkAndFree(mine, 20 + round); }).join();
    // made there (the thread exits with its slab and kept blocks), freed here
    std::vector<Block> theirs;
    std::thread([&] {
      theirs = fill(20000, 40 + round);
      std::vector<Block> temp = fill(100, 60); // some kept by the thread when it exits
      checkAndFree(temp, 60);
    }).join();
    checkAndFree(theirs, 40 + round);
  }
  // every round's blocks came back: the pool reused its slabs (a thread's first slab may be new)
  if (!bypassed()) CHECK(nodePoolReservedBytes() <= reserved + 8 * (size_t{64} << 10));
}

TEST_CASE("allocate_shared through the pool constructs and destroys") {
  struct Node {
    int *dtors;
    std::vector<int> payload;
    ~Node() { ++*dtors; }
  };
  int dtors = 0;
  {
    std::vector<std::shared_ptr<Node>> nodes;
    for (int i = 0; i < 1000; ++i) nodes.push_back(std::allocate_shared<Node>(NodePoolAllocator<Node>(), &dtors, std::vector<int>(static_cast<size_t>(i % 7), i)));
    for (int i = 0; i < 1000; ++i) CHECK(nodes[static_cast<size_t>(i)]->payload.size() == static_cast<size_t>(i % 7));
  }
  CHECK(dtors == 1000);
}
