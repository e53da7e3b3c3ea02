// torchLoad against checkpoints that python3-torch 1.13 writes at build time
// (golden/gen_torch_checkpoints.py): zip, legacy and tar layouts, non-contiguous and shared-storage
// tensors, every dtype, nested checkpoints, lazy reads, loading into a model, and damaged files as
// ParseErrors that name the file and the problem.
#include "lazyjit/NN/TorchLoad.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace lazyjit;

namespace {

std::string golden(const std::string &name) {
  return std::string(LAZYJIT_TORCH_GOLDEN_DIR) + "/" + name;
}

struct Expected {
  std::string key, dtype;
  std::vector<int64_t> shape;
};

/// CASE.expected/keys.txt: "key<TAB>dtype<TAB>d0,d1,..." per tensor, in checkpoint order.
std::vector<Expected> expectedKeys(const std::string &name) {
  std::ifstream f(golden(name + ".expected/keys.txt"));
  REQUIRE(f);
  std::vector<Expected> out;
  for (std::string line; std::getline(f, line);) {
    std::istringstream s(line);
    Expected e;
    std::string dims;
    std::getline(s, e.key, '\t');
    std::getline(s, e.dtype, '\t');
    std::getline(s, dims);
    std::istringstream d(dims);
    for (std::string x; std::getline(d, x, ',');) e.shape.push_back(std::stoll(x));
    out.push_back(e);
  }
  return out;
}

std::vector<int64_t> dims(const Tensor &t) {
  std::vector<int64_t> out;
  for (const auto &s : t.shape()) out.push_back(s.asInt());
  return out;
}

/// The checkpoint CASE.pt has exactly the expected keys, in order, with their dtypes, shapes and
/// (bit for bit) values.
void checkCheckpoint(const std::string &name) {
  INFO("checkpoint ", name);
  nn::StateDict dict = nn::torchLoad(golden(name + ".pt"), "CPU");
  std::vector<Expected> want = expectedKeys(name);
  std::vector<std::string> wantKeys;
  for (const auto &e : want) wantKeys.push_back(e.key);
  REQUIRE(dict.keys() == wantKeys);
  for (const auto &e : want) {
    INFO("tensor ", e.key);
    const Tensor &t = dict.at(e.key);
    CHECK(t.dtype().name() == e.dtype);
    CHECK(dims(t) == e.shape);
    Tensor ref = npyLoad(golden(name + ".expected/" + e.key + ".npy"), "CPU");
    Tensor got =
        t.dtype() == dtypes::bfloat16 ? t.cast(dtypes::float32) : t; // NumPy lacks bfloat16
    CHECK(got.toBytes() == ref.toBytes());
  }
}

std::string tempPath(const std::string &name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("lazyjit-torchload-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

TEST_SUITE("TorchLoad") {

  TEST_CASE("TorchLoad: a Sequential's state dict in the zip and the legacy format") {
    checkCheckpoint("seq_zip");
    checkCheckpoint("seq_legacy");
    nn::StateDict d = nn::torchLoad(golden("seq_zip.pt"), "CPU");
    CHECK(d.at("1.num_batches_tracked").dtype() == dtypes::int64);
    CHECK(d.at("1.num_batches_tracked").toVector<int64_t>() == std::vector<int64_t>{3});
  }

  TEST_CASE("TorchLoad: strided views, shared storages, every dtype, 0-d and empty tensors") {
    checkCheckpoint("views_zip");
    checkCheckpoint("views_legacy");
  }

  TEST_CASE("TorchLoad: deflated zip entries and big-endian checkpoints") {
    checkCheckpoint("views_deflate");
    checkCheckpoint("views_bigendian");
  }

  TEST_CASE("TorchLoad: the tar format of torch before 0.4") { checkCheckpoint("views_tar"); }

  TEST_CASE(
      "TorchLoad: a nested checkpoint is flattened with '.' and its non-tensors are skipped") {
    checkCheckpoint("nested_zip");
    nn::StateDict d = nn::torchLoad(golden("nested_zip.pt"), "CPU");
    CHECK_FALSE(d.contains("epoch"));
    CHECK_FALSE(d.contains("optimizer.param_groups.0.lr"));
  // tied weights: one tensor object in the pickle is one tensor here
  CHECK(d.at("tied_a").lazydata() == d.at("tied_b").lazydata());
  CHECK(d.at("model.0.weight").lazydata() != d.at("model.3.weight").lazydata());
  }

  TEST_CASE("TorchLoad: nothing is read before a tensor is realized") {
    nn::StateDict d = nn::torchLoad(golden("views_zip.pt"), "CPU");
    CHECK_FALSE(d.at("transposed").lazydata()->isRealized());
    CHECK_FALSE(d.at("f16").lazydata()->isRealized());
    Tensor t = d.at("transposed");
    t.realize();
    CHECK(t.lazydata()->isRealized());
  }

  TEST_CASE("TorchLoad: a PyTorch state dict loads into a lazyjit model") {
    struct Net : nn::Module {
      nn::Linear l1{4, 3}, l2{3, 2};
      nn::BatchNorm2d bn{3};
      void members(nn::Members &m) override { m("0", l1)("1", bn)("3", l2); }
    } net;
    // PyTorch's num_batches_tracked is an int64 scalar; lazyjit's BatchNorm keeps a float32 [1]
    net.bn.numBatchesTracked = Tensor::zeros({}, {dtypes::int64, "CPU"});
    nn::StateDict d = nn::torchLoad(golden("seq_zip.pt"), "CPU");
    nn::loadStateDict(net, d);
    CHECK(net.l1.weight.toBytes() ==
          npyLoad(golden("seq_zip.expected/0.weight.npy"), "CPU").toBytes());
    CHECK(net.bn.runningVar.toBytes() ==
          npyLoad(golden("seq_zip.expected/1.running_var.npy"), "CPU").toBytes());
    CHECK(net.l2.bias->toBytes() ==
          npyLoad(golden("seq_zip.expected/3.bias.npy"), "CPU").toBytes());
  }

  TEST_CASE("TorchLoad: damaged files are ParseErrors naming the file and the problem") {
    struct Bad {
      const char *file, *problem;
    };
    const Bad bad[] = {
        {"bad_truncated.pt", "truncated zip archive"},
        {"bad_opcode.pt", "data.pkl: unsupported pickle opcode 0xff at offset 5"},
        {"bad_global.pt", "disallowed global 'os.system'"},
        {"bad_short_tensor.pt",
         "tensor 'w' (float32[10] with strides (1) at offset 0): it reaches element 9 of "
         "storage '0', which has 4 elements"},
        {"bad_short_record.pt",
         "storage '2' holds 2 bytes, fewer than its 3 float32 elements need"},
    };
    for (const auto &b : bad) {
      std::string path = golden(b.file);
      INFO(path);
      std::string named = path + ": ";
      CHECK_THROWS_WITH_AS(nn::torchLoad(path, "CPU"), doctest::Contains(named.c_str()),
                           ParseError);
      CHECK_THROWS_WITH_AS(nn::torchLoad(path, "CPU"), doctest::Contains(b.problem), ParseError);
    }
  }

  TEST_CASE("TorchLoad: files that are not checkpoints, and every truncation of one") {
    std::string path = tempPath("junk.pt");
    writeFile(path, "hello, not a checkpoint");
    CHECK_THROWS_WITH_AS(nn::torchLoad(path), doctest::Contains("not a PyTorch checkpoint"),
                         ParseError);
    writeFile(path, "");
    CHECK_THROWS_WITH_AS(nn::torchLoad(path), doctest::Contains("not a PyTorch checkpoint"),
                         ParseError);
    CHECK_THROWS_WITH_AS(nn::torchLoad(tempPath("missing.pt")),
                         doctest::Contains("missing.pt: cannot open"), ParseError);
    // a pickle of a dict, not a torch.save stream
    writeFile(path, std::string("\x80\x02}q\x00.", 6));
    CHECK_THROWS_WITH_AS(nn::torchLoad(path), doctest::Contains("torch's magic number"),
                         ParseError);
    for (const char *name : {"seq_legacy.pt", "seq_zip.pt", "views_tar.pt"}) {
      std::string whole = readFile(golden(name));
      REQUIRE(whole.size() > 100);
      // a tar archive ends in zero blocks that a reader needs not see
      size_t end = std::string(name).find("tar") != std::string::npos
                       ? whole.find_last_not_of('\0') + 1
                       : whole.size();
      for (size_t n = 0; n < end; n += 1 + n / 64) {
        INFO(name, " cut to ", n, " bytes");
        writeFile(path, whole.substr(0, n));
        CHECK_THROWS_AS(nn::torchLoad(path, "CPU"), ParseError);
      }
    }
  }

} // TEST_SUITE
