// Intrusive lists that file a node of a hash-consing table under a "key" node that every equal node
// shares (the dedup cache: a LazyBuffer under its op's newest leaf; the kernel IR: a KernelOp under
// its first source). A lookup walks the key's short list, memory the caller has just touched,
// where a probe into one table of every node misses the caches once the graph outgrows them (a
// 20,000-op chain: a third of building it, and a tenth of scheduling it). A key's list holds at
// most kListMax nodes; the rest go to the owner's table, and the key says to look there too.
// Not synchronized: the owner's lock guards every list.
#pragma once

#include <cstdint>

namespace lazyjit {

/// The links a node of type T carries: to the list it is filed in, and the head of its own.
template <typename T> struct KeyedLinks {
  T *key = nullptr; ///< the node this one is filed under (null: not in a list)
  T *next = nullptr, *prev = nullptr;
  T *head = nullptr; ///< the first node filed under this one
  uint32_t count = 0;
  bool overflow = false; ///< a node equal to one filed here may be in the table (the list was full)
};

/// `Links` maps a node to its KeyedLinks (a lambda, so that private members stay private).
template <typename T, typename Links> class KeyedLists {
public:
  static constexpr uint32_t kListMax = 16;

  explicit KeyedLists(Links links) : links(links) {}

  /// Files `n` under `key`; false (and the key's overflow set) when its list is full.
  bool file(T &n, T &key) const {
    KeyedLinks<T> &k = links(key), &l = links(n);
    if (k.count >= kListMax) {
      k.overflow = true;
      return false;
    }
    l.key = &key;
    l.next = k.head;
    if (l.next) links(*l.next).prev = &n;
    k.head = &n;
    ++k.count;
    return true;
  }
  /// Takes `n` out of the list it is in (it must be in one).
  void unfile(T &n) const {
    KeyedLinks<T> &l = links(n);
    KeyedLinks<T> &k = links(*l.key);
    (l.prev ? links(*l.prev).next : k.head) = l.next;
    if (l.next) links(*l.next).prev = l.prev;
    l.key = l.next = l.prev = nullptr;
    --k.count;
  }
  /// The first node filed under `key` that `match` accepts, or null.
  template <typename F> T *find(T &key, F &&match) const {
    for (T *n = links(key).head; n; n = links(*n).next)
      if (match(n)) return n;
    return nullptr;
  }

private:
  Links links;
};

} // namespace lazyjit
