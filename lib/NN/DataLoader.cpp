// Datasets and the background-thread data loader (see DataLoader.h).
//
// The loader's thread and the consumer share a queue of ready items under one mutex: a batch, the
// end of an epoch, or the exception that stopped the thread. The thread walks (epoch, batch)
// positions in order and keeps at most `prefetch` items queued; setEpoch bumps a generation
// number, empties the queue and moves the position, and a batch built for an older generation is
// dropped (and abandoned between samples) instead of queued.
#include "lazyjit/NN/DataLoader.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Graph/ShapeTracker.h"
#include "lazyjit/NN/IDX.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Support/Error.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <thread>

namespace lazyjit::nn {

namespace {

size_t concreteNumel(const Shape &shape, const char *what) {
  size_t n = 1;
  for (const SInt &d : shape) {
    LAZYJIT_USER_CHECK(d.isInt() && d.asInt() >= 0, ShapeError, "{}: the shape {} must be concrete",
                       what, shapeText(shape));
    n *= static_cast<size_t>(d.asInt());
  }
  return n;
}

/// The spec of one row of `a` ([N, ...] -> [...]).
SampleSpec rowSpec(const HostArray &a, const char *what) {
  LAZYJIT_USER_CHECK(!a.shape.empty(), ShapeError,
                     "{}: a 0-d array has no samples; the shape must be [N, ...]", what);
  size_t numel = concreteNumel(a.shape, what);
  LAZYJIT_USER_CHECK(a.bytes.size() == numel * a.dtype.itemsize(), ShapeError,
                     "{}: {} bytes do not fill {}{} ({} elements of {} bytes)", what,
                     a.bytes.size(), a.dtype.name(), shapeText(a.shape), numel, a.dtype.itemsize());
  return {Shape(a.shape.begin() + 1, a.shape.end()), a.dtype};
}

size_t rows(const HostArray &a) { return static_cast<size_t>(a.shape[0].asInt()); }

void checkSameRows(const HostArray &x, const HostArray &y, const std::string &what) {
  LAZYJIT_USER_CHECK(rows(x) == rows(y), ShapeError, "{}: x has {} samples ({}) but y has {} ({})",
                     what, rows(x), shapeText(x.shape), rows(y), shapeText(y.shape));
}

// splitmix64 (Steele, Lea and Flood): a small generator whose every output is well mixed, so
// consecutive seeds and epochs give unrelated streams.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct SplitMix64 {
  uint64_t state;
  uint64_t next() { return mix64(state += 0x9E3779B97F4A7C15ull); }
  /// Uniform in [0, bound) without modulo bias (rejects the top partial range).
  uint64_t below(uint64_t bound) {
    uint64_t threshold = (0 - bound) % bound;
    for (;;) {
      uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }
};

} // namespace

size_t SampleSpec::bytes() const { return concreteNumel(shape, "sample") * dtype.itemsize(); }

HostArray HostArray::fromTensor(const Tensor &t) {
  LAZYJIT_USER_CHECK(t.defined(), Error, "dataset: an undefined (default-constructed) Tensor");
  return {t.toBytes(), t.shape(), t.dtype()};
}

// ---- TensorDataset ------------------------------------------------------------------------------

TensorDataset::TensorDataset(HostArray x, HostArray y) : xs(std::move(x)), ys(std::move(y)) {
  xSpec = rowSpec(xs, "TensorDataset x");
  ySpec = rowSpec(ys, "TensorDataset y");
  checkSameRows(xs, ys, "TensorDataset");
  n = rows(xs);
}

TensorDataset::TensorDataset(const Tensor &x, const Tensor &y)
    : TensorDataset(HostArray::fromTensor(x), HostArray::fromTensor(y)) {}

void TensorDataset::get(size_t index, uint8_t *x, uint8_t *y) const {
  LAZYJIT_USER_CHECK(index < n, Error, "TensorDataset: sample {} of {}", index, n);
  size_t xb = xSpec.bytes(), yb = ySpec.bytes();
  std::memcpy(x, xs.bytes.data() + index * xb, xb);
  std::memcpy(y, ys.bytes.data() + index * yb, yb);
}

// ---- IDXDataset ---------------------------------------------------------------------------------

IDXDataset::IDXDataset(const std::string &imagesPath, const std::string &labelsPath,
                       IDXOptions opts)
    : images(HostArray::fromTensor(loadIDX(imagesPath, "CPU"))),
      labels(HostArray::fromTensor(loadIDX(labelsPath, "CPU"))), opts(std::move(opts)) {
  xSpec = rowSpec(images, imagesPath.c_str());
  ySpec = rowSpec(labels, labelsPath.c_str());
  LAZYJIT_USER_CHECK(rows(images) == rows(labels), ShapeError,
                     "{} holds {} images but {} holds {} labels", imagesPath, rows(images),
                     labelsPath, rows(labels));
  n = rows(images);
  imageElems = concreteNumel(xSpec.shape, imagesPath.c_str());
  labelElems = concreteNumel(ySpec.shape, labelsPath.c_str());
  if (this->opts.imageShape()) {
    size_t want = concreteNumel(*this->opts.imageShape(), "IDXDataset imageShape");
    LAZYJIT_USER_CHECK(want == imageElems, ShapeError,
                       "{}: an image of shape {} cannot be viewed as {}", imagesPath,
                       shapeText(xSpec.shape), shapeText(*this->opts.imageShape()));
    xSpec.shape = *this->opts.imageShape();
  }
  if (this->opts.normalize()) {
    LAZYJIT_USER_CHECK(images.dtype == dtypes::uint8, DTypeError,
                       "{}: normalize scales uint8 images to [0, 1], but the images are {}",
                       imagesPath, images.dtype.name());
    xSpec.dtype = dtypes::float32;
  }
  if (this->opts.int32Labels()) {
    DType d = labels.dtype;
    LAZYJIT_USER_CHECK(
        d == dtypes::uint8 || d == dtypes::int8 || d == dtypes::int16 || d == dtypes::int32,
        DTypeError, "{}: int32Labels widens integer labels to int32, but the labels are {}",
        labelsPath, d.name());
    ySpec.dtype = dtypes::int32;
  }
}

namespace {
template <typename From> void widenToInt32(const uint8_t *src, size_t count, uint8_t *dst) {
  for (size_t i = 0; i < count; ++i) {
    From v;
    std::memcpy(&v, src + i * sizeof(From), sizeof(From));
    int32_t w = static_cast<int32_t>(v);
    std::memcpy(dst + i * 4, &w, 4);
  }
}
} // namespace

void IDXDataset::get(size_t index, uint8_t *x, uint8_t *y) const {
  LAZYJIT_USER_CHECK(index < n, Error, "IDXDataset: sample {} of {}", index, n);
  const uint8_t *img = images.bytes.data() + index * imageElems * images.dtype.itemsize();
  if (opts.normalize()) {
    for (size_t i = 0; i < imageElems; ++i) {
      float v = static_cast<float>(img[i]) / 255.0f;
      std::memcpy(x + i * 4, &v, 4);
    }
  } else {
    std::memcpy(x, img, imageElems * images.dtype.itemsize());
  }
  const uint8_t *lab = labels.bytes.data() + index * labelElems * labels.dtype.itemsize();
  if (!opts.int32Labels() || labels.dtype == dtypes::int32) {
    std::memcpy(y, lab, labelElems * labels.dtype.itemsize());
  } else if (labels.dtype == dtypes::uint8) {
    widenToInt32<uint8_t>(lab, labelElems, y);
  } else if (labels.dtype == dtypes::int8) {
    widenToInt32<int8_t>(lab, labelElems, y);
  } else {
    widenToInt32<int16_t>(lab, labelElems, y);
  }
}

// ---- NpyDataset ---------------------------------------------------------------------------------

namespace {
HostArray npyArray(const std::string &dir, const char *name) {
  std::filesystem::path p = std::filesystem::path(dir) / name;
  LAZYJIT_USER_CHECK(std::filesystem::is_regular_file(p), Error,
                     "NpyDataset: {} is missing: a .npy dataset directory holds x.npy and y.npy",
                     p.string());
  return HostArray::fromTensor(npyLoad(p.string(), "CPU"));
}
} // namespace

NpyDataset::NpyDataset(const std::string &dir)
    : TensorDataset(npyArray(dir, "x.npy"), npyArray(dir, "y.npy")) {}

// ---- epochPermutation ---------------------------------------------------------------------------

std::vector<size_t> epochPermutation(size_t n, uint64_t seed, uint64_t epoch) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  SplitMix64 rng{mix64(seed ^ mix64(epoch + 0x632BE59BD9B4E019ull))};
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

// ---- DataLoader ---------------------------------------------------------------------------------

namespace {
/// What the loader's thread hands the consumer.
struct Item {
  uint64_t epoch = 0;
  bool endOfEpoch = false;
  std::optional<Batch> batch;
  std::exception_ptr error;
};

/// Thrown inside the loader's thread when the batch it is building is no longer wanted.
struct Abandoned {};

/// A tensor over `buf` (a realized CPU buffer the loader filled), moved to `device` when that is
/// another: Tensor::fromBytes without its copy.
Tensor wrapHostBuffer(std::shared_ptr<Buffer> buf, const Shape &shape, DType dtype,
                      const std::string &device) {
  auto l = LazyBuffer::create("CPU", ShapeTracker::fromShape(shape), OpType::Load, nullptr, dtype,
                              std::move(buf));
  return Tensor(std::move(l), device);
}
} // namespace

struct DataLoader::Impl {
  std::shared_ptr<const Dataset> dataset;
  size_t batchSize;
  DataLoaderOptions opts;
  std::string device;
  SampleSpec xSpec, ySpec;
  size_t perEpoch;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> ready; // guarded by mu
  uint64_t workEpoch = 0; // the loader thread's next position, guarded by mu
  size_t workBatch = 0;
  bool workFailed = false;             // the thread stopped on an error (until setEpoch)
  std::atomic<uint64_t> generation{0}; // written under mu; read by the thread between samples
  std::atomic<bool> stopping{false};   // written under mu

  // the consumer's side (one consumer thread)
  uint64_t epoch = 0;
  std::exception_ptr error;
  double lastWait = 0, totalWait = 0;
  size_t served = 0;

  std::thread worker;

  void run();
  Batch assemble(const std::vector<size_t> &order, uint64_t ep, size_t b, uint64_t gen);
};

void DataLoader::Impl::run() {
  std::vector<size_t> order;
  std::optional<uint64_t> orderEpoch;
  for (;;) {
    uint64_t gen, ep;
    size_t b;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return stopping || (!workFailed && ready.size() < opts.prefetch()); });
      if (stopping) return;
      gen = generation;
      ep = workEpoch;
      b = workBatch++;
      if (b >= perEpoch) {
        ready.push_back(Item{ep, true, std::nullopt, nullptr});
        ++workEpoch;
        workBatch = 0;
        cv.notify_all();
        continue;
      }
    }
    Item item{ep, false, std::nullopt, nullptr};
    try {
      if (orderEpoch != ep) {
        if (opts.shuffle()) {
          order = epochPermutation(dataset->size(), opts.seed(), ep);
        } else {
          order.resize(dataset->size());
          std::iota(order.begin(), order.end(), size_t(0));
        }
        orderEpoch = ep;
      }
      item.batch = assemble(order, ep, b, gen);
    } catch (const Abandoned &) {
      continue;
    } catch (...) {
      item.error = std::current_exception();
    }
    std::lock_guard lock(mu);
    if (gen != generation || stopping) continue; // setEpoch moved on: drop the batch
    if (item.error) workFailed = true;
    ready.push_back(std::move(item));
    cv.notify_all();
  }
}

Batch DataLoader::Impl::assemble(const std::vector<size_t> &order, uint64_t ep, size_t b,
                                 uint64_t gen) {
  size_t begin = b * batchSize, count = std::min(batchSize, order.size() - begin);
  Batch out;
  out.epoch = ep;
  out.index = b;
  out.indices.assign(order.begin() + static_cast<std::ptrdiff_t>(begin),
                     order.begin() + static_cast<std::ptrdiff_t>(begin + count));
  auto batchShape = [&](const SampleSpec &s) {
    Shape shape{static_cast<int64_t>(count)};
    for (const SInt &d : s.shape) shape.push_back(d);
    return shape;
  };
  Shape xShape = batchShape(xSpec), yShape = batchShape(ySpec);
  auto xBuf = std::make_shared<Buffer>("CPU", prodInt(xShape), xSpec.dtype);
  auto yBuf = std::make_shared<Buffer>("CPU", prodInt(yShape), ySpec.dtype);
  size_t xBytes = xSpec.bytes(), yBytes = ySpec.bytes();
  auto *xp = static_cast<uint8_t *>(xBuf->ptr()), *yp = static_cast<uint8_t *>(yBuf->ptr());
  for (size_t i = 0; i < count; ++i) {
    if (stopping || generation != gen) throw Abandoned{};
    dataset->get(out.indices[i], xp + i * xBytes, yp + i * yBytes);
  }
  out.x = wrapHostBuffer(std::move(xBuf), xShape, xSpec.dtype, device);
  out.y = wrapHostBuffer(std::move(yBuf), yShape, ySpec.dtype, device);
  // the copy to another device runs here, not in the consumer's step
  if (device != "CPU") Tensor::corealize({out.x, out.y});
  return out;
}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, size_t batchSize,
                       DataLoaderOptions opts)
    : impl(std::make_unique<Impl>()) {
  LAZYJIT_USER_CHECK(dataset != nullptr, Error, "DataLoader: no dataset");
  LAZYJIT_USER_CHECK(batchSize > 0, Error, "DataLoader: the batch size must be at least 1");
  LAZYJIT_USER_CHECK(opts.prefetch() > 0, Error, "DataLoader: prefetch must be at least 1 batch");
  std::string device = opts.device() ? canonicalizeDevice(*opts.device()) : defaultDevice();
  std::string why;
  LAZYJIT_USER_CHECK(deviceAvailable(device, &why), DeviceError, "DataLoader: {}", why);
  Impl &s = *impl;
  s.xSpec = dataset->inputSpec();
  s.ySpec = dataset->labelSpec();
  concreteNumel(s.xSpec.shape, "DataLoader: the dataset's inputs");
  concreteNumel(s.ySpec.shape, "DataLoader: the dataset's labels");
  size_t n = dataset->size();
  s.perEpoch = opts.dropLast() ? n / batchSize : (n + batchSize - 1) / batchSize;
  s.dataset = std::move(dataset);
  s.batchSize = batchSize;
  s.opts = std::move(opts);
  s.device = std::move(device);
  s.worker = std::thread([&s] { s.run(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard lock(impl->mu);
    impl->stopping = true;
  }
  impl->cv.notify_all();
  impl->worker.join();
}

std::optional<Batch> DataLoader::next() {
  Impl &s = *impl;
  if (s.error) std::rethrow_exception(s.error);
  auto t0 = std::chrono::steady_clock::now();
  Item item;
  {
    std::unique_lock lock(s.mu);
    s.cv.wait(lock, [&] { return !s.ready.empty(); });
    item = std::move(s.ready.front());
    s.ready.pop_front();
  }
  s.cv.notify_all();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  LAZYJIT_INTERNAL_CHECK(item.epoch == s.epoch,
                         "DataLoader: got an item of epoch {} while serving epoch {}", item.epoch,
                         s.epoch);
  if (item.error) {
    s.error = item.error;
    std::rethrow_exception(item.error);
  }
  if (item.endOfEpoch) {
    ++s.epoch;
    return std::nullopt;
  }
  s.lastWait = waited;
  s.totalWait += waited;
  ++s.served;
  return std::move(item.batch);
}

uint64_t DataLoader::epoch() const { return impl->epoch; }

void DataLoader::setEpoch(uint64_t epoch, size_t startBatch) {
  Impl &s = *impl;
  LAZYJIT_USER_CHECK(startBatch <= s.perEpoch, Error, "DataLoader.setEpoch: batch {} is past the {} batches of an epoch",
                     startBatch, s.perEpoch);
  std::deque<Item> dropped; // freed outside the lock
  {
    std::lock_guard lock(s.mu);
    ++s.generation;
    dropped.swap(s.ready);
    s.workEpoch = epoch;
    s.workBatch = startBatch;
    s.workFailed = false;
  }
  s.cv.notify_all();
  s.epoch = epoch;
  s.error = nullptr;
}

size_t DataLoader::batchesPerEpoch() const { return impl->perEpoch; }
const Dataset &DataLoader::dataset() const { return *impl->dataset; }
double DataLoader::lastWaitSeconds() const { return impl->lastWait; }
double DataLoader::totalWaitSeconds() const { return impl->totalWait; }
size_t DataLoader::batchesServed() const { return impl->served; }

} // namespace lazyjit::nn
