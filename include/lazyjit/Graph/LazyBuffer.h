// LazyBuffer: a node of the lazy graph, with the reference's eager rewrites (lazy.py).
//
// Every op on a LazyBuffer builds a new node immediately, and the rewrites happen right there:
// movement ops are pushed through elementwise ops, childless elementwise sources are inlined, and
// structurally equal ops over the same sources are deduplicated through a weak cache. Which
// rewrites fire depends on which nodes are still alive (the weak `children` sets), so holding or
// dropping a reference changes fusion exactly as Python's `del` does in the reference.
//
// Memory model: LazyBuffers are shared_ptr nodes; a LazyOp owns its sources; `children` and
// `views` are weak sets that only count live nodes; the dedup cache holds weak references.
// The lazy graph is not thread-safe (like the reference under the GIL): build a graph from one
// thread at a time.
#pragma once

#include "lazyjit/Graph/LazyOp.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace lazyjit {

/// A set of pointers as a list that keeps its first two elements inline: most buffers have one or
/// two children and are views of nothing, and the graph builds several buffers per op. Past
/// kIndexed elements a hash index makes find and erase O(1): a constant shared by every op of a
/// long elementwise chain has one child per op, and a scan per add would make the chain cubic.
template <typename T> class PtrList {
public:
  static constexpr size_t kIndexed = 16;
  PtrList() = default;
  PtrList(const PtrList &) = delete;
  PtrList &operator=(const PtrList &) = delete;
  ~PtrList() {
    if (data_ != inline_) delete[] data_;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T *operator[](size_t i) const { return data_[i]; }
  T *back() const { return data_[size_ - 1]; }
  T *const *begin() const { return data_; }
  T *const *end() const { return data_ + size_; }
  /// The position of `x`, or size() when absent.
  size_t find(const void *x) const {
    if (index_) {
      auto it = index_->find(x);
      return it == index_->end() ? size_ : it->second;
    }
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] == x) return i;
    return size_;
  }
  bool contains(const void *x) const { return find(x) != size_; }
  void push_back(T *x) {
    if (size_ == cap_) reserve(cap_ * 2);
    data_[size_++] = x;
    if (index_) {
      index_->emplace(x, size_ - 1);
    } else if (size_ > kIndexed) {
      index_ = std::make_unique<std::unordered_map<const void *, size_t>>();
      for (size_t i = 0; i < size_; ++i) index_->emplace(data_[i], i);
    }
  }
  /// Removes one `x` (the last element takes its place). Returns whether it was there.
  bool erase(const void *x) {
    size_t i = find(x);
    if (i == size_) return false;
    if (index_) index_->erase(x);
    if (i != size_ - 1) {
      data_[i] = data_[size_ - 1];
      if (index_) (*index_)[data_[i]] = i;
    }
    --size_;
    return true;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    T **grown = new T *[n];
    std::copy(data_, data_ + size_, grown);
    if (data_ != inline_) delete[] data_;
    data_ = grown;
    cap_ = n;
  }

private:
  T *inline_[2] = {nullptr, nullptr};
  T **data_ = inline_;
  size_t size_ = 0, cap_ = 2;
  std::unique_ptr<std::unordered_map<const void *, size_t>> index_;
};

/// A set of weak references to LazyBuffers with Python WeakSet semantics: identity membership,
/// and a size that counts live members only. The links are intrusive: a LazyBuffer leaves every
/// set it is in when it dies, and a set unlinks its members when it dies, so size() is O(1) and
/// nothing dead is ever scanned.
class WeakBufferSet {
public:
  WeakBufferSet() = default;
  WeakBufferSet(const WeakBufferSet &) = delete;
  WeakBufferSet &operator=(const WeakBufferSet &) = delete;
  ~WeakBufferSet();

  void add(LazyBuffer *b);
  void add(const LazyBufferRef &b) { add(b.get()); }
  void discard(const LazyBuffer *b);
  /// The number of live members.
  size_t size() const { return items.size(); }
  bool empty() const { return items.empty(); }
  std::vector<LazyBufferRef> live() const;

private:
  friend class LazyBuffer;
  PtrList<LazyBuffer> items;
};

class LazyBuffer : public std::enable_shared_from_this<LazyBuffer> {
public:
  std::string device;
  const ShapeTracker st;
  /// st.shape(); `st` is never reassigned, so this stays valid (and saves a copy per node).
  const Shape &shape;
  OpType optype;
  /// The op that computes this buffer; null once it is realized (the reference's `del op`).
  LazyOpRef op;
  /// The buffer an assign writes into (reference `output_buffer`).
  std::shared_ptr<Buffer> outputBuffer;
  WeakBufferSet children;
  WeakBufferSet views;

  /// The reference's constructor: registers itself as a child of every buffer in `op` and as a
  /// view of `base`. Use create() or createLazyBuffer().
  static LazyBufferRef create(std::string device, ShapeTracker st, OpType optype, LazyOpRef op,
                              DType dtype, std::shared_ptr<Buffer> realized = nullptr,
                              LazyBufferRef base = nullptr);
  LazyBuffer(std::string device, ShapeTracker st, OpType optype, LazyOpRef op, DType dtype,
             std::shared_ptr<Buffer> realized, LazyBufferRef base);
  ~LazyBuffer();
  LazyBuffer(const LazyBuffer &) = delete;
  LazyBuffer &operator=(const LazyBuffer &) = delete;

  LazyBufferRef self() { return shared_from_this(); }
  const LazyBufferRef &baseRef() const { return base_; }
  /// The non-view buffer this one reads (itself when it is not a view).
  LazyBuffer *base() { return base_ ? base_.get() : this; }
  const LazyBuffer *base() const { return base_ ? base_.get() : this; }
  LazyBufferRef baseShared() { return base_ ? base_ : shared_from_this(); }
  bool isView() const { return static_cast<bool>(base_); }

  const std::shared_ptr<Buffer> &realized() const { return base()->realized_; }
  bool isRealized() const { return static_cast<bool>(base()->realized_); }
  /// Sets the realized storage (only on non-view buffers).
  void setRealized(std::shared_ptr<Buffer> b);
  DType dtype() const { return base()->dtype_; }

  bool isUnrealizedConst() const;
  bool isUnrealizedContiguousConst() const;

  // ---- creation and special ops ----
  static LazyBufferRef loadop(Op op, const Shape &shape, DType dtype, const std::string &device,
                              LazyOpArg arg = {}, LazyBufferRef src = nullptr);
  /// A constant with this buffer's shape and dtype: a 0-d CONST viewed through a stride-0 expand.
  LazyBufferRef constLike(double val);
  LazyBufferRef copyToDevice(const std::string &device);
  LazyBufferRef contiguous();
  LazyBufferRef cast(DType dtype, bool bitcast = false);

  // ---- elementwise and reduce ----
  /// An elementwise op over self and `srcs` (self first).
  LazyBufferRef e(Op op, const std::vector<LazyBufferRef> &srcs = {}, LazyOpArg arg = {});
  /// A reduce to `newShape` (1s in the reduced dims), split in two when it is large.
  LazyBufferRef r(Op op, const Shape &newShape);

  // ---- movement ops ----
  LazyBufferRef reshape(const Shape &arg);
  LazyBufferRef pad(const PadArg &arg);
  LazyBufferRef expand(const Shape &arg);
  LazyBufferRef permute(const std::vector<int64_t> &arg);
  LazyBufferRef shrink(const PadArg &arg);
  LazyBufferRef stride(const std::vector<int64_t> &arg);
  LazyBufferRef movementOp(Op op, const LazyOpArg &arg);

  std::string repr() const;

private:
  friend class WeakBufferSet;
  /// The sets (other buffers' `children` and `views`) this buffer is a member of.
  PtrList<WeakBufferSet> memberOf_;
  std::shared_ptr<Buffer> realized_;
  LazyBufferRef base_;
  DType dtype_;

  LazyBufferRef reduceOp(Op op, const Shape &newShape);
  LazyBufferRef applyMovementOp(ShapeTracker st, Op op, LazyOpArg arg);
};

/// create_lazybuffer: 0-size shapes become a CONST; otherwise deduplicated through the lazy cache.
LazyBufferRef createLazyBuffer(const std::string &device, ShapeTracker st, OpType optype,
                               LazyOpRef op, DType dtype, LazyBufferRef base = nullptr);

/// get_movementroot / get_movementroot_contiguous of the reference.
LazyBuffer *getMovementRoot(LazyBuffer *root, bool allowContiguous = false);
LazyBuffer *getMovementRootContiguous(LazyBuffer *x);

/// The fusion flags of the current OPT level (lazy.py), read from Config at each use.
struct FusionFlags {
  bool removeMovementNops, mergeElementwiseIntoReduce, shuffleMovementOps, mergeElementwiseOps;
  bool mergeOneReduceIntoElementwise, shufflePadOps, pushPermutes, pushContiguous, pushReshapes;
  static FusionFlags current();
};

/// The number of live entries in the dedup cache (for tests).
size_t lazyCacheSize();
/// The number of LazyBuffers alive (for tests that check a graph is freed).
size_t liveLazyBufferCount();

} // namespace lazyjit
