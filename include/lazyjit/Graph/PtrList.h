// PtrList: the small pointer list behind the graph's weak sets and link lists.
#pragma once

#include "lazyjit/Support/NodePool.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

namespace lazyjit {

/// A set of pointers as a list that keeps its first element inline: most buffers have one child
/// and are views of nothing, and the graph builds several buffers per op, each with three of these
/// lists (16 bytes each: the graph's memory per op is what a long chain's build time follows).
/// Past kIndexed elements a hash index makes find and erase O(1): a constant shared by every op of
/// a long elementwise chain has one child per op, and a scan per add would make the chain cubic.
/// The index's pointer lives in one more slot past the end of the heap array (an indexed list
/// has one), not in the list itself.
template <typename T> class PtrList {
  using Index = std::unordered_map<const void *, size_t>;

public:
  static constexpr size_t kIndexed = 16;
  PtrList() = default;
  PtrList(const PtrList &) = delete;
  PtrList &operator=(const PtrList &) = delete;
  ~PtrList() {
    if (cap_ > 1) {
      delete index();
      freeArray(heap_, cap_);
    }
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T *operator[](size_t i) const { return data()[i]; }
  T *back() const { return data()[size_ - 1]; }
  T *const *begin() const { return data(); }
  T *const *end() const { return data() + size_; }
  /// The position of `x`, or size() when absent.
  size_t find(const void *x) const {
    if (Index *ix = index()) {
      auto it = ix->find(x);
      return it == ix->end() ? size_ : it->second;
    }
    T *const *d = data();
    for (size_t i = 0; i < size_; ++i)
      if (d[i] == x) return i;
    return size_;
  }
  bool contains(const void *x) const { return find(x) != size_; }
  void push_back(T *x) {
    if (size_ == cap_) reserve(size_t{cap_} * 2);
    data()[size_++] = x;
    if (Index *ix = index()) {
      ix->emplace(x, size_ - 1);
    } else if (size_ > kIndexed) {
      auto made = std::make_unique<Index>();
      for (size_t i = 0; i < size_; ++i) made->emplace(heap_[i], i);
      indexSlot() = made.release();
    }
  }
  /// Removes one `x` (the last element takes its place). Returns whether it was there.
  bool erase(const void *x) {
    size_t i = find(x);
    if (i == size_) return false;
    Index *ix = index();
    if (ix) ix->erase(x);
    T **d = data();
    if (i != size_ - 1) {
      d[i] = d[size_ - 1];
      if (ix) (*ix)[d[i]] = i;
    }
    --size_;
    return true;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    // from the node pool (the arrays are small and made and freed with their node)
    T **grown = static_cast<T **>(pool_detail::allocate(arrayBytes(n)));
    std::copy(data(), data() + size_, grown);
    Index *ix = index();
    if (cap_ > 1) freeArray(heap_, cap_);
    heap_ = grown;
    cap_ = static_cast<uint32_t>(n);
    if (cap_ > kIndexed) indexSlot() = ix;
  }

private:
  /// An array of more than kIndexed slots has one more for the index.
  static size_t arrayBytes(size_t n) { return (n + (n > kIndexed ? 1 : 0)) * sizeof(T *); }
  static void freeArray(T **a, size_t n) { pool_detail::deallocate(a, arrayBytes(n)); }
  Index *&indexSlot() { return *static_cast<Index **>(static_cast<void *>(heap_ + cap_)); }
  Index *index() const {
    return cap_ > kIndexed ? *static_cast<Index *const *>(static_cast<const void *>(heap_ + cap_)) : nullptr;
  }
  T **data() { return cap_ > 1 ? heap_ : &one_; }
  T *const *data() const { return cap_ > 1 ? heap_ : &one_; }
  union {
    T *one_ = nullptr; ///< the element while cap_ is 1
    T **heap_;
  };
  uint32_t size_ = 0, cap_ = 1;
};

} // namespace lazyjit
