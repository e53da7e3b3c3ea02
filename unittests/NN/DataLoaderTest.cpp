// The data loader and its datasets: every sample once per epoch in a seeded per-epoch order,
// dropLast, batch values equal to the dataset's samples, prefetching on the loader's thread while
// the consumer works, shutdown mid-epoch, a dataset's error re-raised in the consumer, and the IDX
// (files written here, and Debian's Fashion-MNIST) and .npy directory datasets.
#include "lazyjit/NN/DataLoader.h"
#include "lazyjit/NN/IDX.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>
#include <unistd.h>

using namespace lazyjit;
using nn::Batch;
using nn::DataLoader;

namespace {

std::string tempDir(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("lazyjit-dataloader-" + std::to_string(getpid())) / name;
  std::filesystem::create_directories(dir);
  return dir.string();
}

/// n samples where sample i is x = [i, i + 0.5] (float32) and y = i (int32).
std::shared_ptr<nn::TensorDataset> indexDataset(int n) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    x.push_back(static_cast<float>(i) + 0.5f);
    y.push_back(i);
  }
  return std::make_shared<nn::TensorDataset>(Tensor::fromVector(x, {n, 2}),
                                             Tensor::fromVector(y, {n}));
}

/// Checks that the batch's values are the samples its indices name, and returns its labels.
std::vector<int32_t> checkedLabels(const Batch &b) {
  std::vector<int32_t> y = b.y.toVector<int32_t>();
  std::vector<float> x = b.x.toVector<float>();
  REQUIRE(y.size() == b.indices.size());
  REQUIRE(x.size() == 2 * y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    CHECK(static_cast<size_t>(y[i]) == b.indices[i]);
    CHECK(x[2 * i] == static_cast<float>(b.indices[i]));
    CHECK(x[2 * i + 1] == static_cast<float>(b.indices[i]) + 0.5f);
  }
  return y;
}

/// Runs the rest of the loader's current epoch: the dataset indices in the order served, and each
/// batch's size.
struct Epoch {
  std::vector<size_t> order;
  std::vector<size_t> sizes;
};
Epoch runEpoch(DataLoader &loader) {
  Epoch e;
  while (std::optional<Batch> b = loader.next()) {
    checkedLabels(*b);
    e.order.insert(e.order.end(), b->indices.begin(), b->indices.end());
    e.sizes.push_back(b->indices.size());
  }
  return e;
}

bool isPermutation(std::vector<size_t> v, size_t n) {
  std::sort(v.begin(), v.end());
  std::vector<size_t> want(n);
  std::iota(want.begin(), want.end(), size_t(0));
  return v == want;
}

/// A dataset whose get sleeps, takes note of each sample it was asked for, and throws at `failAt`.
struct SlowDataset : nn::Dataset {
  size_t n;
  std::chrono::milliseconds perSample;
  std::optional<size_t> failAt;
  mutable std::atomic<size_t> calls{0};
  SlowDataset(size_t n, std::chrono::milliseconds perSample,
              std::optional<size_t> failAt = std::nullopt)
      : n(n), perSample(perSample), failAt(failAt) {}
  size_t size() const override { return n; }
  nn::SampleSpec inputSpec() const override { return {Shape{3}, dtypes::float32}; }
  nn::SampleSpec labelSpec() const override { return {Shape{}, dtypes::int32}; }
  void get(size_t index, uint8_t *x, uint8_t *y) const override {
    ++calls;
    if (failAt && index == *failAt) throw ParseError("sample.npy: truncated: 3 of the 12 bytes");
    std::this_thread::sleep_for(perSample);
    float v[3] = {static_cast<float>(index), 1, 2};
    int32_t label = static_cast<int32_t>(index);
    std::memcpy(x, v, sizeof v);
    std::memcpy(y, &label, sizeof label);
  }
};

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- IDX files written here ----
std::vector<uint8_t> idx(uint8_t type, const std::vector<uint32_t> &dims,
                         const std::vector<uint8_t> &data) {
  std::vector<uint8_t> h{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<uint8_t>(d >> s));
  h.insert(h.end(), data.begin(), data.end());
  return h;
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
            static_cast<int>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
}

} // namespace

TEST_SUITE_BEGIN("DataLoader");

TEST_CASE(
    "DataLoader: epochPermutation is a permutation that depends on seed and epoch, reproducibly") {
  for (size_t n : {0, 1, 2, 7, 100}) {
    CAPTURE(n);
    CHECK(isPermutation(nn::epochPermutation(n, 5, 3), n));
    CHECK(nn::epochPermutation(n, 5, 3) == nn::epochPermutation(n, 5, 3));
  }
  std::vector<size_t> base = nn::epochPermutation(100, 1, 0);
  CHECK(base != nn::epochPermutation(100, 1, 1));
  CHECK(base != nn::epochPermutation(100, 2, 0));
  std::vector<size_t> identity(100);
  std::iota(identity.begin(), identity.end(), size_t(0));
  CHECK(base != identity);
  // every position is reachable: over many epochs, sample 0 lands in many different places
  std::set<size_t> places;
  for (uint64_t e = 0; e < 200; ++e) {
    std::vector<size_t> p = nn::epochPermutation(10, 9, e);
    places.insert(static_cast<size_t>(std::find(p.begin(), p.end(), size_t(0)) - p.begin()));
  }
  CHECK(places.size() == 10);
}

TEST_CASE("DataLoader: every sample exactly once per epoch, in the seeded order of that epoch") {
  auto data = indexDataset(103);
  DataLoader loader(data, 10, nn::DataLoaderOptions().shuffle(true).seed(7));
  CHECK(loader.batchesPerEpoch() == 11);
  CHECK(loader.epoch() == 0);
  Epoch e0 = runEpoch(loader);
  CHECK(loader.epoch() == 1);
  Epoch e1 = runEpoch(loader);
  CHECK(loader.epoch() == 2);
  CHECK(isPermutation(e0.order, 103));
  CHECK(isPermutation(e1.order, 103));
  CHECK(e0.order == nn::epochPermutation(103, 7, 0));
  CHECK(e1.order == nn::epochPermutation(103, 7, 1));
  CHECK(e0.order != e1.order);
  CHECK(e0.sizes == std::vector<size_t>{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 3});
  CHECK(loader.batchesServed() == 22);

  // a second loader with the same seed serves the same orders; another seed does not
  DataLoader same(data, 10, nn::DataLoaderOptions().seed(7));
  CHECK(runEpoch(same).order == e0.order);
  DataLoader other(data, 10, nn::DataLoaderOptions().seed(8));
  CHECK(runEpoch(other).order != e0.order);
}

TEST_CASE("DataLoader: setEpoch restarts at the first batch of any epoch") {
  auto data = indexDataset(50);
  DataLoader loader(data, 8, nn::DataLoaderOptions().seed(3).prefetch(3));
  REQUIRE(loader.next()); // batches of epoch 0 are now queued ahead
  loader.setEpoch(5);
  CHECK(loader.epoch() == 5);
  CHECK(runEpoch(loader).order == nn::epochPermutation(50, 3, 5));
  loader.setEpoch(0);
  CHECK(runEpoch(loader).order == nn::epochPermutation(50, 3, 0));
  CHECK(loader.epoch() == 1);
  // a resumed run starts mid-epoch: batch 4 of epoch 2 onwards, the rest of that epoch's order
  loader.setEpoch(2, 4);
  std::vector<size_t> full = nn::epochPermutation(50, 3, 2);
  Epoch rest = runEpoch(loader);
  CHECK(rest.order == std::vector<size_t>(full.begin() + 32, full.end()));
  CHECK(rest.sizes == std::vector<size_t>{8, 8, 2});
  loader.setEpoch(1, loader.batchesPerEpoch()); // at the end: the epoch is over at once
  CHECK_FALSE(loader.next());
  CHECK(loader.epoch() == 2);
  CHECK_THROWS_WITH_AS(loader.setEpoch(0, 8), doctest::Contains("batch 8 is past the 7 batches"), Error);
}

TEST_CASE("DataLoader: dropLast, unshuffled order, and the range-for over an epoch") {
  auto data = indexDataset(25);
  SUBCASE("dropLast drops the short last batch") {
    DataLoader loader(data, 10, nn::DataLoaderOptions().shuffle(false).dropLast(true));
    CHECK(loader.batchesPerEpoch() == 2);
    Epoch e = runEpoch(loader);
    CHECK(e.sizes == std::vector<size_t>{10, 10});
    std::vector<size_t> want(20);
    std::iota(want.begin(), want.end(), size_t(0));
    CHECK(e.order == want);
  }
  SUBCASE("otherwise the last batch is short") {
    DataLoader loader(data, 10, nn::DataLoaderOptions().shuffle(false));
    CHECK(loader.batchesPerEpoch() == 3);
    std::vector<size_t> sizes, order;
    for (Batch &b : loader) {
      checkedLabels(b);
      CHECK(b.index == sizes.size());
      CHECK(b.epoch == 0);
      CHECK(b.x.shape() == Shape{static_cast<int64_t>(b.indices.size()), 2});
      CHECK(b.y.shape() == Shape{static_cast<int64_t>(b.indices.size())});
      sizes.push_back(b.indices.size());
      order.insert(order.end(), b.indices.begin(), b.indices.end());
    }
    CHECK(sizes == std::vector<size_t>{10, 10, 5});
    std::vector<size_t> want(25);
    std::iota(want.begin(), want.end(), size_t(0));
    CHECK(order == want);
    CHECK(loader.epoch() == 1);
  }
  SUBCASE("a dataset smaller than a batch with dropLast has no batches") {
    DataLoader loader(data, 30, nn::DataLoaderOptions().dropLast(true));
    CHECK(loader.batchesPerEpoch() == 0);
    CHECK_FALSE(loader.next());
    CHECK_FALSE(loader.next());
    CHECK(loader.epoch() == 2);
  }
  SUBCASE("batch size 1 and a batch as large as the dataset") {
    DataLoader one(data, 1, nn::DataLoaderOptions().seed(1));
    Epoch e = runEpoch(one);
    CHECK(e.sizes == std::vector<size_t>(25, 1));
    CHECK(isPermutation(e.order, 25));
    DataLoader all(data, 25, nn::DataLoaderOptions().seed(1));
    CHECK(runEpoch(all).sizes == std::vector<size_t>{25});
  }
}

TEST_CASE("DataLoader: batch values equal the dataset's samples, for every dtype and shape") {
  // x [6, 2, 3] int16 with x[i] = 100 i + k, y [6, 2] uint8 with y[i] = (i, 2 i), from host bytes
  nn::HostArray x{{}, Shape{6, 2, 3}, dtypes::int16}, y{{}, Shape{6, 2}, dtypes::uint8};
  for (int i = 0; i < 6; ++i) {
    for (int k = 0; k < 6; ++k) {
      int16_t v = static_cast<int16_t>(100 * i + k);
      x.bytes.push_back(static_cast<uint8_t>(v & 0xFF));
      x.bytes.push_back(static_cast<uint8_t>(v >> 8));
    }
    y.bytes.push_back(static_cast<uint8_t>(i));
    y.bytes.push_back(static_cast<uint8_t>(2 * i));
  }
  auto data = std::make_shared<nn::TensorDataset>(x, y);
  CHECK(data->size() == 6);
  CHECK(data->inputSpec().shape == Shape{2, 3});
  CHECK(data->inputSpec().dtype == dtypes::int16);
  CHECK(data->labelSpec().bytes() == 2);
  for (const char *device : {"CPU", "INTERP"}) {
    CAPTURE(device);
    DataLoader loader(data, 4, nn::DataLoaderOptions().seed(11).device(device));
    while (std::optional<Batch> b = loader.next()) {
      CHECK(b->x.device() == device);
      CHECK(b->x.dtype() == dtypes::int16);
      CHECK(b->y.dtype() == dtypes::uint8);
      int64_t rows = static_cast<int64_t>(b->indices.size());
      CHECK(b->x.shape() == Shape{rows, 2, 3});
      std::vector<int> xv = b->x.toVector<int>(), yv = b->y.toVector<int>();
      for (size_t r = 0; r < b->indices.size(); ++r) {
        int i = static_cast<int>(b->indices[r]);
        for (int k = 0; k < 6; ++k) CHECK(xv[r * 6 + k] == 100 * i + k);
        CHECK(yv[r * 2] == i);
        CHECK(yv[r * 2 + 1] == 2 * i);
      }
    }
  }
}

TEST_CASE("DataLoader: the loader's thread prepares batches while the consumer works") {
  // each batch takes the dataset 4 x 15 ms = 60 ms; the consumer's "step" takes 150 ms, so after
  // the first batch the next one is always ready and next() waits (almost) nothing
  auto data = std::make_shared<SlowDataset>(24, std::chrono::milliseconds(15));
  DataLoader loader(data, 4, nn::DataLoaderOptions().shuffle(false).prefetch(2));
  const double produce = 4 * 0.015;
  double firstWait = 0, laterWaits = 0;
  int batches = 0;
  while (std::optional<Batch> b = loader.next()) {
    (batches++ > 0 ? laterWaits : firstWait) += loader.lastWaitSeconds();
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  REQUIRE(batches == 6);
  // the first batch was asked for as the loader started: next() waited for (most of) its 60 ms
  CHECK(firstWait > 0.25 * produce);
  // without prefetching every later batch would wait its full 60 ms (300 ms in all)
  CHECK(laterWaits < 0.5 * produce * (batches - 1));
  CHECK(loader.totalWaitSeconds() >= laterWaits);
  CHECK(loader.batchesServed() == 6);
}

TEST_CASE(
    "DataLoader: destroying the loader mid-epoch stops its thread promptly and frees everything") {
  int64_t before = bufferBytesInUse();
  SUBCASE("while the thread is inside a slow batch") {
    // one batch would take 200 x 20 ms = 4 s; the thread gives up between samples
    auto data = std::make_shared<SlowDataset>(1000, std::chrono::milliseconds(20));
    auto t0 = std::chrono::steady_clock::now();
    {
      DataLoader loader(data, 200);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(seconds(t0) < 3.0);
    CHECK(data.use_count() == 1);
    CHECK(data->calls < 200);
  }
  SUBCASE("while the thread waits with its queue full") {
    auto data = indexDataset(100);
    {
      DataLoader loader(data, 10, nn::DataLoaderOptions().prefetch(3));
      std::optional<Batch> b = loader.next();
      REQUIRE(b);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(data.use_count() == 1);
  }
  CHECK(bufferBytesInUse() <= before);
}

TEST_CASE("DataLoader: an error in the dataset is re-raised in the consumer with its message") {
  auto data = std::make_shared<SlowDataset>(20, std::chrono::milliseconds(0), 6);
  DataLoader loader(data, 4, nn::DataLoaderOptions().shuffle(false));
  std::optional<Batch> first = loader.next();
  REQUIRE(first);
  CHECK(first->indices == std::vector<size_t>{0, 1, 2, 3});
  CHECK_THROWS_WITH_AS(loader.next(), doctest::Contains("sample.npy: truncated: 3 of the 12 bytes"),
                       ParseError);
  // it stays raised; setEpoch starts over (and meets the same sample again)
  CHECK_THROWS_AS(loader.next(), ParseError);
  loader.setEpoch(0);
  CHECK(loader.next());
  CHECK_THROWS_AS(loader.next(), ParseError);
}

TEST_CASE("DataLoader: bad arguments are errors naming the problem") {
  auto data = indexDataset(4);
  CHECK_THROWS_WITH_AS(DataLoader(data, 0), doctest::Contains("batch size must be at least 1"),
                       Error);
  CHECK_THROWS_WITH_AS(DataLoader(data, 2, nn::DataLoaderOptions().prefetch(0)),
                       doctest::Contains("prefetch"), Error);
  CHECK_THROWS_WITH_AS(DataLoader(nullptr, 2), doctest::Contains("no dataset"), Error);
  CHECK_THROWS_AS(DataLoader(data, 2, nn::DataLoaderOptions().device("NOSUCHDEVICE")), DeviceError);
  CHECK_THROWS_WITH_AS(nn::TensorDataset(Tensor::zeros({3, 2}), Tensor::zeros({4})),
                       doctest::Contains("x has 3 samples"), ShapeError);
  CHECK_THROWS_WITH_AS(nn::TensorDataset(nn::HostArray{{1, 2, 3}, Shape{2, 2}, dtypes::uint8},
                                         nn::HostArray{{1, 2}, Shape{2}, dtypes::uint8}),
                       doctest::Contains("3 bytes do not fill"), ShapeError);
}

TEST_CASE("DataLoader: IDXDataset reads IDX images and labels, raw or scaled to float32") {
  std::string dir = tempDir("idx");
  // 5 images of 2 x 3 pixels, pixel k of image i = 50 i + k; labels 9 - i
  std::vector<uint8_t> pixels, labels;
  for (int i = 0; i < 5; ++i) {
    for (int k = 0; k < 6; ++k) pixels.push_back(static_cast<uint8_t>(50 * i + k));
    labels.push_back(static_cast<uint8_t>(9 - i));
  }
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    std::string images = dir + (gz ? "/images.gz" : "/images"),
                labelsPath = dir + (gz ? "/labels.gz" : "/labels");
    writeFile(images, idx(0x08, {5, 2, 3}, pixels), gz);
    writeFile(labelsPath, idx(0x08, {5}, labels), gz);

    auto raw = std::make_shared<nn::IDXDataset>(images, labelsPath);
    CHECK(raw->size() == 5);
    CHECK(raw->inputSpec().shape == Shape{2, 3});
    CHECK(raw->inputSpec().dtype == dtypes::uint8);
    CHECK(raw->labelSpec().dtype == dtypes::uint8);
    DataLoader rawLoader(raw, 5, nn::DataLoaderOptions().shuffle(false));
    std::optional<Batch> b = rawLoader.next();
    REQUIRE(b);
    CHECK(b->x.toVector<int>() == std::vector<int>(pixels.begin(), pixels.end()));
    CHECK(b->y.toVector<int>() == std::vector<int>{9, 8, 7, 6, 5});

    auto scaled = std::make_shared<nn::IDXDataset>(
        images, labelsPath,
        nn::IDXOptions().normalize(true).int32Labels(true).imageShape({1, 2, 3}));
    CHECK(scaled->inputSpec().shape == Shape{1, 2, 3});
    CHECK(scaled->inputSpec().dtype == dtypes::float32);
    CHECK(scaled->labelSpec().dtype == dtypes::int32);
    DataLoader loader(scaled, 2, nn::DataLoaderOptions().seed(4));
    while (std::optional<Batch> sb = loader.next()) {
      CHECK(sb->x.shape() == Shape{static_cast<int64_t>(sb->indices.size()), 1, 2, 3});
      std::vector<float> xv = sb->x.toVector<float>();
      std::vector<int32_t> yv = sb->y.toVector<int32_t>();
      for (size_t r = 0; r < sb->indices.size(); ++r) {
        size_t i = sb->indices[r];
        for (size_t k = 0; k < 6; ++k)
          CHECK(xv[r * 6 + k] == static_cast<float>(pixels[i * 6 + k]) / 255.0f);
        CHECK(yv[r] == 9 - static_cast<int32_t>(i));
      }
    }
  }
  // errors name the files
  writeFile(dir + "/four-labels", idx(0x08, {4}, {1, 2, 3, 4}), false);
  CHECK_THROWS_WITH_AS(nn::IDXDataset(dir + "/images", dir + "/four-labels"),
                       doctest::Contains("holds 5 images but"), ShapeError);
  CHECK_THROWS_WITH_AS(nn::IDXDataset(dir + "/images", dir + "/four-labels"),
                       doctest::Contains("four-labels holds 4 labels"), ShapeError);
  writeFile(dir + "/float-images", idx(0x0D, {5, 1}, std::vector<uint8_t>(20, 0)), false);
  CHECK_THROWS_WITH_AS(
      nn::IDXDataset(dir + "/float-images", dir + "/labels", nn::IDXOptions().normalize(true)),
      doctest::Contains("float-images: normalize scales uint8 images"), DTypeError);
  CHECK_THROWS_WITH_AS(
      nn::IDXDataset(dir + "/images", dir + "/labels", nn::IDXOptions().imageShape({1, 7})),
      doctest::Contains("cannot be viewed as"), ShapeError);
  CHECK_THROWS_WITH_AS(nn::IDXDataset(dir + "/missing", dir + "/labels"),
                       doctest::Contains("missing: cannot open"), Error);
}

TEST_CASE("DataLoader: IDXDataset over Debian's Fashion-MNIST test files") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  if (!std::filesystem::exists(dir + "t10k-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: dataset-fashion-mnist is not installed");
    return;
  }
  std::string images = dir + "t10k-images-idx3-ubyte.gz",
              labels = dir + "t10k-labels-idx1-ubyte.gz";
  auto data = std::make_shared<nn::IDXDataset>(
      images, labels, nn::IDXOptions().normalize(true).int32Labels(true).imageShape({1, 28, 28}));
  CHECK(data->size() == 10000);
  Tensor rawImages = nn::loadIDX(images, "CPU"), rawLabels = nn::loadIDX(labels, "CPU");
  std::vector<int> pix = rawImages.toVector<int>(), lab = rawLabels.toVector<int>();
  DataLoader loader(data, 512, nn::DataLoaderOptions().seed(42).dropLast(true));
  CHECK(loader.batchesPerEpoch() == 19);
  std::optional<Batch> b = loader.next();
  REQUIRE(b);
  CHECK(b->x.shape() == Shape{512, 1, 28, 28});
  std::vector<float> xv = b->x.toVector<float>();
  std::vector<int32_t> yv = b->y.toVector<int32_t>();
  for (size_t r = 0; r < 512; ++r) {
    size_t i = b->indices[r];
    CHECK(yv[r] == lab[i]);
    // one row of the image, checked against the raw file
    for (size_t k = 14 * 28; k < 15 * 28; ++k)
      REQUIRE(xv[r * 784 + k] == static_cast<float>(pix[i * 784 + k]) / 255.0f);
  }
}

TEST_CASE("DataLoader: NpyDataset reads x.npy and y.npy of a directory") {
  std::string dir = tempDir("npy");
  std::vector<double> xv(7 * 3);
  std::iota(xv.begin(), xv.end(), 0.0);
  npySave(Tensor::fromValues(xv, {7, 3}, {dtypes::float64}), dir + "/x.npy");
  npySave(Tensor::fromVector(std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16}, {7}),
          dir + "/y.npy");
  auto data = std::make_shared<nn::NpyDataset>(dir);
  CHECK(data->size() == 7);
  CHECK(data->inputSpec().shape == Shape{3});
  CHECK(data->inputSpec().dtype == dtypes::float64);
  CHECK(data->labelSpec().dtype == dtypes::int64);
  DataLoader loader(data, 3, nn::DataLoaderOptions().seed(2));
  std::vector<size_t> seen;
  while (std::optional<Batch> b = loader.next()) {
    std::vector<double> x = b->x.toVector<double>();
    std::vector<int64_t> y = b->y.toVector<int64_t>();
    for (size_t r = 0; r < b->indices.size(); ++r) {
      size_t i = b->indices[r];
      for (size_t k = 0; k < 3; ++k) CHECK(x[r * 3 + k] == static_cast<double>(3 * i + k));
      CHECK(y[r] == 10 + static_cast<int64_t>(i));
      seen.push_back(i);
    }
  }
  CHECK(seen == nn::epochPermutation(7, 2, 0));

  std::filesystem::remove(dir + "/y.npy");
  CHECK_THROWS_WITH_AS(nn::NpyDataset{dir}, doctest::Contains("y.npy is missing"), Error);
}

TEST_SUITE_END();
