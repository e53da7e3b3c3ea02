// An open-addressed hash table of values stored with their hashes (linear probing): one allocation
// per rehash and none per entry, where a node-based std::unordered_multimap allocates a node per
// entry and chases pointers through its buckets on every lookup, a cache miss each once the table
// outgrows the caches. An erased slot is a tombstone until the next rehash. Not synchronized: its
// owner locks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace lazyjit {

template <typename V> class ProbeTable {
public:
  /// Erases value `v` stored under hash `h` (the first such, in probe order), and says whether
  /// it was there. A table the erase leaves less than an eighth full shrinks (a value found
  /// before may move).
  bool erase(size_t h, const V &v) {
    for (size_t i = first(h); slots[i].state != kEmpty; i = next(i)) {
      Slot &s = slots[i];
      if (s.state != kLive || s.hash != h || !(s.value == v)) continue;
      s.state = kTomb;
      s.value = V();
      --live;
      // a table that emptied (the graph it held was freed) gives its slots back at once; callers
      // erase from destructors, so a failed allocation keeps the table as it is
      if (live * 8 < slots.size() && slots.size() > kMinSlots) {
        try {
          rehash(live);
        } catch (const std::bad_alloc &) {
        }
      }
      return true;
    }
    return false;
  }
  /// The first value under hash `h` that `match` accepts (null: none).
  template <typename F> V *find(size_t h, F &&match) {
    for (size_t i = first(h); slots[i].state != kEmpty; i = next(i))
      if (slots[i].state == kLive && slots[i].hash == h && match(slots[i].value)) return &slots[i].value;
    return nullptr;
  }
  void insert(size_t h, V v) {
    if ((used + 1) * 2 > slots.size()) rehash(live + 1);
    size_t i = first(h);
    while (slots[i].state == kLive) i = next(i);
    used += slots[i].state == kEmpty;
    slots[i] = Slot{h, std::move(v), kLive};
    ++live;
  }
  size_t size() const { return live; }
  size_t capacity() const { return slots.size(); }

private:
  static constexpr uint8_t kEmpty = 0, kLive = 1, kTomb = 2;
  struct Slot {
    size_t hash = 0;
    V value{};
    uint8_t state = kEmpty;
  };
  std::vector<Slot> slots = std::vector<Slot>(kMinSlots);
  size_t live = 0, used = 0; // used: live values and tombstones
  static constexpr size_t kMinSlots = 1024;

  static size_t mix(size_t x) { // splitmix64's finalizer: hashCombine's hashes mix weakly
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  size_t first(size_t h) const { return mix(h) & (slots.size() - 1); }
  size_t next(size_t i) const { return (i + 1) & (slots.size() - 1); }
  /// Room for `count` values at most a quarter full, the tombstones dropped.
  void rehash(size_t count) {
    size_t n = kMinSlots;
    while (n < count * 4) n *= 2;
    std::vector<Slot> old(n);
    old.swap(slots);
    used = live;
    for (Slot &s : old)
      if (s.state == kLive) {
        size_t i = first(s.hash);
        while (slots[i].state != kEmpty) i = next(i);
        slots[i] = std::move(s);
      }
  }
};

} // namespace lazyjit
