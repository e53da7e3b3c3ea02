// An open-addressed hash table of pointers stored with their hashes (linear probing): one allocation
// per rehash and none per entry, where a node-based std::unordered_multimap allocates a node per
// entry and chases pointers through its buckets on every lookup, a cache miss each once the table
// outgrows the caches. An erased slot is a tombstone until the next rehash, or until the slots
// after it in its run empty. Not synchronized: its owner locks it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace lazyjit {

/// V is a pointer type: a null slot is empty and one sentinel address marks a tombstone, so a slot
/// is 16 bytes (its hash and the pointer), four to a cache line.
template <typename V> class ProbeTable {
  static_assert(std::is_pointer_v<V>, "ProbeTable holds pointers (null and a sentinel mark free slots)");

public:
  // A table up to this size (1 MiB of slots) keeps its slots when it empties: a graph of a few
  // thousand ops built and freed over and over (a training step) would otherwise grow and shrink
  // it at every step, a twentieth of building a 200-op chain
  static constexpr size_t kKeptSlots = size_t{1} << 16;

  /// Erases value `v` stored under hash `h` (the first such, in probe order), and says whether
  /// it was there. A table of more than kKeptSlots that the erase leaves less than 1/32 full
  /// shrinks (a value found before may move).
  bool erase(size_t h, V v) {
    for (size_t i = first(h); slots[i].value; i = next(i)) {
      Slot &s = slots[i];
      if (s.value != v || s.hash != h) continue;
      s.value = tomb();
      --live;
      // a tombstone that ends its run (the next slot empty) is no slot that a probe must pass:
      // it and the tombstones before it become empty again, so a table that fills and empties
      // over and over seldom needs a sweep
      if (!slots[next(i)].value)
        for (size_t j = i; slots[j].value == tomb(); j = prev(j)) {
          slots[j].value = nullptr;
          --used;
        }
      // a table that emptied (the graph it held was freed) gives its slots back; only well below
      // the load it grows at, so a graph built and freed over and over does not rehash at every
      // step down and up again. Callers erase from destructors: a failed allocation keeps the
      // table as it is
      if (live * 32 < slots.size() && slots.size() > kKeptSlots) {
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
    for (size_t i = first(h); slots[i].value; i = next(i))
      if (slots[i].hash == h && slots[i].value != tomb() && match(slots[i].value)) return &slots[i].value;
    return nullptr;
  }
  void insert(size_t h, V v) {
    if ((used + 1) * 2 > slots.size()) rehash(live + 1);
    size_t i = first(h);
    while (slots[i].value && slots[i].value != tomb()) i = next(i);
    used += slots[i].value == nullptr;
    slots[i] = Slot{h, v};
    ++live;
  }
  size_t size() const { return live; }
  size_t capacity() const { return slots.size(); }

private:
  struct Slot {
    size_t hash = 0;
    V value = nullptr; ///< null: empty; tomb(): erased
  };
  std::vector<Slot> slots = std::vector<Slot>(kMinSlots);
  size_t live = 0, used = 0; // used: live values and tombstones
  static constexpr size_t kMinSlots = 1024;

  static V tomb() { return reinterpret_cast<V>(alignof(std::max_align_t)); } // never a live object's address
  static size_t mix(size_t x) { // splitmix64's finalizer: hashCombine's hashes mix weakly
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  size_t first(size_t h) const { return mix(h) & (slots.size() - 1); }
  size_t next(size_t i) const { return (i + 1) & (slots.size() - 1); }
  size_t prev(size_t i) const { return (i - 1) & (slots.size() - 1); }
  /// Room for `count` values at most a quarter full, the tombstones dropped; never below
  /// kKeptSlots, or the current size where that is smaller.
  void rehash(size_t count) {
    size_t n = kMinSlots;
    while (n < count * 4) n *= 2;
    n = std::max(n, std::min(slots.size(), kKeptSlots));
    std::vector<Slot> old;
    if (n == slots.size()) {
      // a sweep of the tombstones, at the same size: only the live values are copied out (a new
      // table of slots would be a large allocation, and glibc consolidates its free lists on each)
      old.reserve(live);
      for (const Slot &s : slots)
        if (s.value && s.value != tomb()) old.push_back(s);
      std::fill(slots.begin(), slots.end(), Slot{});
    } else {
      old.resize(n);
      old.swap(slots);
    }
    used = live;
    for (const Slot &s : old)
      if (s.value && s.value != tomb()) {
        size_t i = first(s.hash);
        while (slots[i].value) i = next(i);
        slots[i] = s;
      }
  }
};

} // namespace lazyjit
