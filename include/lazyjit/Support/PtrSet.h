// PtrSet<T> and PtrMap<T, V>: sets of node addresses for graph walks ("seen this one?") and maps
// from a node to a small value (its slot in a pass's results), open-addressed with linear probing
// in one block that starts inside the table (16 slots) and doubles at half full.
// std::unordered_set/map allocate a node per member and follow a pointer per lookup: walking a
// 20,000-op graph allocated 40,000 nodes only to ask "seen?" of each op. A sorted vector searched
// by bisection allocates nothing but costs log(n) per lookup: a pass over a chain's n nodes would
// cost more per node the longer the chain.
#pragma once

#include "lazyjit/Support/SmallVector.h"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace lazyjit {

namespace ptr_detail {
/// The slot where `p` is in `keys` (a power of two of them, at most half full), or the empty one
/// where it goes. Fibonacci hashing of the address: its low bits are alignment zeros.
template <typename K> size_t probe(const K *keys, size_t n, const void *p) {
  uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) * 0x9E3779B97F4A7C15ULL;
  size_t i = static_cast<size_t>(h ^ (h >> 32)) & (n - 1);
  while (keys[i] && keys[i] != p) i = (i + 1) & (n - 1);
  return i;
}
/// The table size (a power of two, at least 16) that holds `count` keys at most half full.
inline size_t slotsFor(size_t count) {
  size_t n = 16;
  while (n < count * 2) n *= 2;
  return n;
}
} // namespace ptr_detail

template <typename T> class PtrSet {
public:
  /// Adds `p` (not null); whether it was not there yet.
  bool insert(const T *p) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(ptr_detail::slotsFor(size_ + 1));
    size_t i = ptr_detail::probe(slots_.data(), slots_.size(), p);
    if (slots_[i]) return false;
    slots_[i] = p;
    ++size_;
    return true;
  }
  bool contains(const T *p) const {
    return !slots_.empty() && slots_[ptr_detail::probe(slots_.data(), slots_.size(), p)];
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

private:
  SmallVector<const T *, 16> slots_; // empty until the first insert; a power of two after
  size_t size_ = 0;

  void rehash(size_t n) {
    SmallVector<const T *, 16> old;
    old.swap(slots_);
    slots_.assign(n, nullptr);
    for (const T *p : old)
      if (p) slots_[ptr_detail::probe(slots_.data(), n, p)] = p;
  }
};

/// A map from node addresses to small values (an index, a pointer), for passes that compute one
/// result per node: a lookup is a hash and a probe, the same cost at any size.
template <typename T, typename V> class PtrMap {
public:
  /// Makes room for `count` keys without growing again.
  void reserve(size_t count) {
    if (count * 2 > keys_.size()) rehash(ptr_detail::slotsFor(count));
  }
  /// The value of `p` (not null), and whether it was absent (then `v` was stored).
  std::pair<V *, bool> emplace(const T *p, V v) {
    if ((size_ + 1) * 2 > keys_.size()) rehash(ptr_detail::slotsFor(size_ + 1));
    size_t i = ptr_detail::probe(keys_.data(), keys_.size(), p);
    if (keys_[i]) return {&vals_[i], false};
    keys_[i] = p;
    vals_[i] = std::move(v);
    ++size_;
    return {&vals_[i], true};
  }
  /// The value of `p`, or null when absent.
  const V *find(const T *p) const {
    if (keys_.empty()) return nullptr;
    size_t i = ptr_detail::probe(keys_.data(), keys_.size(), p);
    return keys_[i] ? &vals_[i] : nullptr;
  }
  size_t size() const { return size_; }

private:
  SmallVector<const T *, 16> keys_; // empty until the first insert; a power of two after
  SmallVector<V, 16> vals_;         // the value of each occupied slot of keys_
  size_t size_ = 0;

  void rehash(size_t n) {
    SmallVector<const T *, 16> oldKeys;
    SmallVector<V, 16> oldVals;
    oldKeys.swap(keys_);
    oldVals.swap(vals_);
    keys_.assign(n, nullptr);
    vals_.resize(n);
    for (size_t j = 0; j < oldKeys.size(); ++j)
      if (oldKeys[j]) {
        size_t i = ptr_detail::probe(keys_.data(), n, oldKeys[j]);
        keys_[i] = oldKeys[j];
        vals_[i] = std::move(oldVals[j]);
      }
  }
};

} // namespace lazyjit
