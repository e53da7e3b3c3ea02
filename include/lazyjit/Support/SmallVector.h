// SmallVector<T, N>: a vector that keeps up to N elements inside itself and moves them to the heap
// only when it grows past that. Shapes and strides are the graph's most frequently built values
// (every node of the lazy graph has a view of a shape and its strides, and most shapes have four
// dimensions or fewer): as std::vector each was an allocation, a third of all allocations made
// while building a graph. The interface is std::vector's, so code written for one reads the same
// for the other; iterators are pointers, and a move copies the elements while they are inline.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace lazyjit {

template <typename T, size_t N> class SmallVector {
  static_assert(N > 0, "SmallVector keeps at least one element inline");

public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T &;
  using const_reference = const T &;
  using pointer = T *;
  using const_pointer = const T *;
  using iterator = T *;
  using const_iterator = const T *;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() noexcept : data_(inlineData()) {}
  explicit SmallVector(size_t n) : SmallVector() { resize(n); }
  SmallVector(size_t n, const T &value) : SmallVector() { assign(n, value); }
  SmallVector(std::initializer_list<T> init) : SmallVector() { append(init.begin(), init.end()); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  SmallVector(It first, It last) : SmallVector() {
    append(first, last);
  }
  /// From and to std::vector, for code that holds one.
  SmallVector(const std::vector<T> &v) : SmallVector() { append(v.begin(), v.end()); }
  explicit operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

  SmallVector(const SmallVector &o) : SmallVector() { append(o.begin(), o.end()); }
  SmallVector(SmallVector &&o) noexcept(std::is_nothrow_move_constructible_v<T>) : SmallVector() {
    takeFrom(std::move(o));
  }
  ~SmallVector() {
    destroyAll();
    if (!isInline()) ::operator delete(data_);
  }
  SmallVector &operator=(const SmallVector &o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector &operator=(SmallVector &&o) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this == &o) return *this;
    destroyAll();
    if (!isInline()) {
      ::operator delete(data_);
      data_ = inlineData();
      cap_ = N;
    }
    takeFrom(std::move(o));
    return *this;
  }
  SmallVector &operator=(std::initializer_list<T> init) {
    assign(init.begin(), init.end());
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T *data() { return data_; }
  const T *data() const { return data_; }
  iterator begin() { return data_; }
  iterator end() { return data_ + size_; }
  const_iterator begin() const { return data_; }
  const_iterator end() const { return data_ + size_; }
  const_iterator cbegin() const { return data_; }
  const_iterator cend() const { return data_ + size_; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }
  T &operator[](size_t i) { return data_[i]; }
  const T &operator[](size_t i) const { return data_[i]; }
  T &at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  const T &at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  T &front() { return data_[0]; }
  const T &front() const { return data_[0]; }
  T &back() { return data_[size_ - 1]; }
  const T &back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n > cap_) grow(n);
  }
  void clear() { destroyAll(); }
  void push_back(const T &x) { emplace_back(x); }
  void push_back(T &&x) { emplace_back(std::move(x)); }
  template <typename... A> T &emplace_back(A &&...args) {
    if (size_ == cap_) {
      // (the argument may be an element of this vector: build the new one before moving)
      T tmp(std::forward<A>(args)...);
      grow(cap_ * 2);
      ::new (static_cast<void *>(data_ + size_)) T(std::move(tmp));
    } else {
      ::new (static_cast<void *>(data_ + size_)) T(std::forward<A>(args)...);
    }
    return data_[size_++];
  }
  void pop_back() { data_[--size_].~T(); }
  void resize(size_t n) {
    if (n < size_) {
      truncate(n);
      return;
    }
    reserve(n);
    for (; size_ < n; ++size_) ::new (static_cast<void *>(data_ + size_)) T();
  }
  void resize(size_t n, const T &value) {
    if (n < size_) {
      truncate(n);
      return;
    }
    T copy = value;
    reserve(n);
    for (; size_ < n; ++size_) ::new (static_cast<void *>(data_ + size_)) T(copy);
  }
  void assign(size_t n, const T &value) {
    T copy = value;
    clear();
    resize(n, copy);
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    SmallVector tmp; // (the range may lie in this vector)
    tmp.append(first, last);
    *this = std::move(tmp);
  }

  iterator insert(const_iterator pos, const T &x) { return insert(pos, size_t{1}, x); }
  iterator insert(const_iterator pos, T &&x) {
    size_t at = static_cast<size_t>(pos - data_);
    T tmp(std::move(x));
    emplace_back(std::move(tmp));
    std::rotate(data_ + at, data_ + size_ - 1, data_ + size_);
    return data_ + at;
  }
  iterator insert(const_iterator pos, size_t n, const T &x) {
    size_t at = static_cast<size_t>(pos - data_);
    T copy = x;
    reserve(size_ + n);
    for (size_t i = 0; i < n; ++i) ::new (static_cast<void *>(data_ + size_ + i)) T(copy);
    size_ += n;
    std::rotate(data_ + at, data_ + size_ - n, data_ + size_);
    return data_ + at;
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  iterator insert(const_iterator pos, It first, It last) {
    size_t at = static_cast<size_t>(pos - data_);
    SmallVector tmp; // (the range may lie in this vector)
    tmp.append(first, last);
    size_t n = tmp.size();
    reserve(size_ + n);
    for (size_t i = 0; i < n; ++i) ::new (static_cast<void *>(data_ + size_ + i)) T(std::move(tmp.data_[i]));
    size_ += n;
    std::rotate(data_ + at, data_ + size_ - n, data_ + size_);
    return data_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<T> init) { return insert(pos, init.begin(), init.end()); }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    T *f = data_ + (first - data_), *l = data_ + (last - data_);
    T *newEnd = std::move(l, data_ + size_, f);
    truncate(static_cast<size_t>(newEnd - data_));
    return f;
  }
  void swap(SmallVector &o) {
    SmallVector tmp(std::move(o));
    o = std::move(*this);
    *this = std::move(tmp);
  }

  friend bool operator==(const SmallVector &a, const SmallVector &b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const SmallVector &a, const SmallVector &b) { return !(a == b); }
  friend bool operator<(const SmallVector &a, const SmallVector &b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

private:
  T *data_;
  uint32_t size_ = 0, cap_ = N;
  alignas(T) unsigned char inline_[N * sizeof(T)];

  T *inlineData() { return reinterpret_cast<T *>(inline_); }
  bool isInline() const { return data_ == reinterpret_cast<const T *>(inline_); }
  void destroyAll() { truncate(0); }
  void truncate(size_t n) {
    for (size_t i = n; i < size_; ++i) data_[i].~T();
    size_ = static_cast<uint32_t>(n);
  }
  template <typename It> void append(It first, It last) {
    if constexpr (std::is_base_of_v<std::forward_iterator_tag, typename std::iterator_traits<It>::iterator_category>)
      reserve(size_ + static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) emplace_back(*first);
  }
  void grow(size_t n) {
    n = std::max<size_t>(n, N * 2);
    T *fresh = static_cast<T *>(::operator new(n * sizeof(T)));
    for (size_t i = 0; i < size_; ++i) {
      ::new (static_cast<void *>(fresh + i)) T(std::move(data_[i]));
      data_[i].~T();
    }
    if (!isInline()) ::operator delete(data_);
    data_ = fresh;
    cap_ = static_cast<uint32_t>(n);
  }
  /// Takes `o`'s elements into this empty, inline vector: its heap block, or moved one by one.
  void takeFrom(SmallVector &&o) {
    if (!o.isInline()) {
      data_ = o.data_;
      size_ = o.size_;
      cap_ = o.cap_;
      o.data_ = o.inlineData();
      o.size_ = 0;
      o.cap_ = N;
      return;
    }
    for (size_t i = 0; i < o.size_; ++i) ::new (static_cast<void *>(data_ + i)) T(std::move(o.data_[i]));
    size_ = o.size_;
    o.destroyAll();
  }
};

} // namespace lazyjit
