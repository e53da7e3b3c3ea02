// PtrSet<T>: a set of node addresses for graph walks ("seen this one?"), open-addressed with
// linear probing in one block that starts inside the set (16 slots) and doubles at half full.
// std::unordered_set allocates a node per member and follows a pointer per lookup: walking a
// 20,000-op graph allocated 40,000 nodes only to ask "seen?" of each op.
#pragma once

#include "lazyjit/Support/SmallVector.h"

#include <cstddef>
#include <cstdint>

namespace lazyjit {

template <typename T> class PtrSet {
public:
  /// Adds `p` (not null); whether it was not there yet.
  bool insert(const T *p) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = slotOf(p);
    while (slots_[i]) {
      if (slots_[i] == p) return false;
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = p;
    ++size_;
    return true;
  }
  bool contains(const T *p) const {
    if (slots_.empty()) return false;
    for (size_t i = slotOf(p); slots_[i]; i = (i + 1) & (slots_.size() - 1))
      if (slots_[i] == p) return true;
    return false;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

private:
  SmallVector<const T *, 16> slots_; // empty until the first insert; a power of two after
  size_t size_ = 0;

  size_t slotOf(const T *p) const {
    // Fibonacci hashing of the address (its low bits are alignment zeros)
    uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(h ^ (h >> 32)) & (slots_.size() - 1);
  }
  void grow() {
    SmallVector<const T *, 16> old;
    old.swap(slots_);
    slots_.assign(old.empty() ? 16 : old.size() * 2, nullptr);
    for (const T *p : old)
      if (p) {
        size_t i = slotOf(p);
        while (slots_[i]) i = (i + 1) & (slots_.size() - 1);
        slots_[i] = p;
      }
  }
};

} // namespace lazyjit
