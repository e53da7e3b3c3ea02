// Datasets and a data loader: shuffled batches assembled on a background thread while the
// training step runs (PyTorch's Dataset / DataLoader, for map-style datasets of (x, y) samples).
//
// A Dataset copies one sample's bytes into a place the loader names, so a batch is a row of
// memcpys into one host buffer, with no tensor per sample. Datasets here: TensorDataset (host
// arrays or tensors x [N, ...], y [N, ...]), IDXDataset (MNIST-style IDX image and label files,
// optionally scaled to float32 [0, 1]) and NpyDataset (a directory holding x.npy and y.npy).
//
// The DataLoader's thread assembles each batch straight into the host buffer its tensors own (the
// buffer comes from the host allocator, which reuses blocks by size, so a run circulates a few
// blocks; the runtime has no page-locked memory, so they are ordinary 64-byte aligned pages), and
// for a device other than the CPU also realizes the copy there, so the consumer only waits when the
// loader falls behind. Tensors are built on the loader's thread under the threads contract of
// Tensor.h: distinct tensors may be created and realized from several threads at once.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit::nn {

/// The shape (without the batch dimension) and dtype of one sample's inputs or labels.
struct SampleSpec {
  Shape shape;
  DType dtype = dtypes::float32;
  /// The bytes of one sample: the product of the shape times the dtype's size.
  size_t bytes() const;
};

/// A map-style dataset of (x, y) samples, indexed 0..size()-1.
class Dataset {
public:
  virtual ~Dataset() = default;
  virtual size_t size() const = 0;
  virtual SampleSpec inputSpec() const = 0;
  virtual SampleSpec labelSpec() const = 0;
  /// Writes sample `index` (< size()) row-major in host byte order: inputSpec().bytes() bytes to
  /// `x` and labelSpec().bytes() bytes to `y`. Called on loader threads (several loaders may share
  /// one dataset), so it must not change shared state. A failure throws; the loader re-raises it
  /// in the thread that asked for the batch.
  virtual void get(size_t index, uint8_t *x, uint8_t *y) const = 0;
};

/// An array held on the host: `shape` [N, ...], row-major `bytes` of `dtype`.
struct HostArray {
  std::vector<uint8_t> bytes;
  Shape shape;
  DType dtype = dtypes::float32;
  /// The values of `t` (realized), read back to the host once.
  static HostArray fromTensor(const Tensor &t);
};

/// Samples held in host memory: sample i is row i of x and row i of y.
class TensorDataset : public Dataset {
public:
  /// x [N, ...] and y [N, ...] with the same N; the byte counts must match the shapes.
  TensorDataset(HostArray x, HostArray y);
  /// From tensors x [N, ...] and y [N, ...] (realized and read to the host once).
  TensorDataset(const Tensor &x, const Tensor &y);

  size_t size() const override { return n; }
  SampleSpec inputSpec() const override { return xSpec; }
  SampleSpec labelSpec() const override { return ySpec; }
  void get(size_t index, uint8_t *x, uint8_t *y) const override;

private:
  HostArray xs, ys;
  SampleSpec xSpec, ySpec;
  size_t n = 0;
};

/// How IDXDataset presents its samples. Set as PyTorch's C++ options are, by chained setters:
/// `IDXOptions().normalize(true).imageShape({1, 28, 28})`.
struct IDXOptions {
  /// uint8 images become float32 value / 255 (in [0, 1]), as the examples train on.
  IDXOptions &normalize(bool v) { return set(normalize_, v); }
  bool normalize() const { return normalize_; }
  /// Integer labels are widened to int32.
  IDXOptions &int32Labels(bool v) { return set(int32Labels_, v); }
  bool int32Labels() const { return int32Labels_; }
  /// One image's shape, e.g. {1, 28, 28} for a convolution's channel; default: the file's.
  IDXOptions &imageShape(Shape v) { return set(imageShape_, std::optional<Shape>(std::move(v))); }
  const std::optional<Shape> &imageShape() const { return imageShape_; }

private:
  template <typename T> IDXOptions &set(T &field, T v) {
    field = std::move(v);
    return *this;
  }
  bool normalize_ = false;
  bool int32Labels_ = false;
  std::optional<Shape> imageShape_;
};

/// An IDX image file [N, ...] and an IDX label file [N] or [N, ...] (plain or gzip; see IDX.h),
/// read into host memory once. Scaling and widening happen per sample, on the loader's thread.
class IDXDataset : public Dataset {
public:
  IDXDataset(const std::string &imagesPath, const std::string &labelsPath, IDXOptions opts = {});

  size_t size() const override { return n; }
  SampleSpec inputSpec() const override { return xSpec; }
  SampleSpec labelSpec() const override { return ySpec; }
  void get(size_t index, uint8_t *x, uint8_t *y) const override;

private:
  HostArray images, labels;
  SampleSpec xSpec, ySpec;
  size_t n = 0;
  /// Elements of one image and one label as the files hold them.
  size_t imageElems = 0, labelElems = 0;
  IDXOptions opts;
};

/// A directory holding two NumPy arrays, `x.npy` [N, ...] and `y.npy` [N, ...] (as written by
/// `np.save(dir / "x.npy", x)`), read into host memory once. Every dtype and header version
/// npyLoad reads (State.h) is accepted, Fortran order included.
class NpyDataset : public TensorDataset {
public:
  explicit NpyDataset(const std::string &dir);
};

/// The order of epoch `epoch` of a shuffled dataset of `n` samples: a permutation of 0..n-1 that
/// depends only on (n, seed, epoch). lazyjit's own (a Fisher-Yates shuffle driven by splitmix64),
/// the same on every platform; it is not PyTorch's order.
std::vector<size_t> epochPermutation(size_t n, uint64_t seed, uint64_t epoch);

/// The DataLoader's settings, by chained setters: `DataLoaderOptions().seed(42).dropLast(true)`.
struct DataLoaderOptions {
  /// Each epoch visits the samples in epochPermutation(n, seed, epoch) order (default); else in
  /// index order.
  DataLoaderOptions &shuffle(bool v) { return set(shuffle_, v); }
  bool shuffle() const { return shuffle_; }
  DataLoaderOptions &seed(uint64_t v) { return set(seed_, v); }
  uint64_t seed() const { return seed_; }
  /// Drop an epoch's last batch when it has fewer than batchSize samples (default: keep it).
  DataLoaderOptions &dropLast(bool v) { return set(dropLast_, v); }
  bool dropLast() const { return dropLast_; }
  /// How many batches the loader's thread keeps ready ahead of the consumer (at least 1; 2).
  DataLoaderOptions &prefetch(size_t v) { return set(prefetch_, v); }
  size_t prefetch() const { return prefetch_; }
  /// The device of the batches' tensors (default: the default device).
  DataLoaderOptions &device(std::string v) {
    return set(device_, std::optional<std::string>(std::move(v)));
  }
  const std::optional<std::string> &device() const { return device_; }

private:
  template <typename T> DataLoaderOptions &set(T &field, T v) {
    field = std::move(v);
    return *this;
  }
  bool shuffle_ = true;
  uint64_t seed_ = 0;
  bool dropLast_ = false;
  size_t prefetch_ = 2;
  std::optional<std::string> device_;
};

/// One batch: x [B, ...inputSpec] and y [B, ...labelSpec].
struct Batch {
  Tensor x, y;
  /// The dataset indices of the B samples, in batch order.
  std::vector<size_t> indices;
  uint64_t epoch = 0;
  /// The batch's position in its epoch.
  size_t index = 0;
};

/// Batches of a dataset, epoch after epoch, assembled `prefetch` batches ahead on a thread of its
/// own. next() serves the current epoch's batches, then returns nullopt once and moves to the next
/// epoch; `for (Batch &b : loader)` runs the rest of the current epoch. Not for use by two consumer
/// threads at once. Destroying the loader mid-epoch stops and joins its thread.
class DataLoader {
public:
  DataLoader(std::shared_ptr<const Dataset> dataset, size_t batchSize, DataLoaderOptions opts = {});
  ~DataLoader();
  DataLoader(const DataLoader &) = delete;
  DataLoader &operator=(const DataLoader &) = delete;

  /// The next batch of the current epoch, or nullopt at its end (the epoch then advances). An
  /// exception the dataset threw while assembling a batch is re-raised here (and by every later
  /// call, until setEpoch).
  std::optional<Batch> next();
  /// The epoch next() serves.
  uint64_t epoch() const;
  /// Restarts at batch `startBatch` (default: the first) of `epoch`, dropping batches prepared
  /// for any other position: a resumed run goes on where it stopped without assembling the
  /// batches it already took.
  void setEpoch(uint64_t epoch, size_t startBatch = 0);
  size_t batchesPerEpoch() const;
  const Dataset &dataset() const;

  /// Seconds the last next() that returned a batch waited for it (0 when it was ready).
  double lastWaitSeconds() const;
  /// Seconds next() has waited for batches in all, and how many batches it has returned.
  double totalWaitSeconds() const;
  size_t batchesServed() const;

  /// Iterates the rest of the current epoch (see next()).
  class Iterator {
  public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    explicit Iterator(DataLoader *loader) : loader(loader), current(loader->next()) {}
    Batch &operator*() { return *current; }
    Batch *operator->() { return &*current; }
    Iterator &operator++() {
      current = loader->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current; }

  private:
    DataLoader *loader = nullptr;
    std::optional<Batch> current;
  };
  Iterator begin() { return Iterator(this); }
  std::default_sentinel_t end() { return {}; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace lazyjit::nn
