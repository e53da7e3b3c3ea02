// MappedFile and loadModel on real files: the mapping's bytes, an empty file, files that cannot be
// mapped (an error naming them), moves, and a model whose weights stay views of a mapping that the
// model keeps alive.
#include "lazyjit/Support/MappedFile.h"
#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace lazyjit;
using namespace lazyjit::onnx;

namespace {

std::string tempPath(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("lazyjit-onnx-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

TEST_CASE("ONNX MappedFile: maps a file's bytes; an empty file is an empty span") {
  std::string path = tempPath("bytes.bin");
  writeBytes(path, std::string("abc\0def", 7));
  MappedFile f(path);
  CHECK(f.path() == path);
  REQUIRE(f.size() == 7);
  CHECK(std::memcmp(f.data(), "abc\0def", 7) == 0);
  CHECK(f.bytes().size() == 7);

  // a move leaves the mapping with the new object and nothing with the old
  MappedFile moved(std::move(f));
  CHECK(moved.size() == 7);
  CHECK(moved.bytes()[4] == 'd');
  CHECK(f.size() == 0); // NOLINT(bugprone-use-after-move): a moved-from mapping is empty
  CHECK(f.bytes().empty());
  std::string other = tempPath("other.bin");
  writeBytes(other, "xy");
  MappedFile assigned(other);
  assigned = std::move(moved);
  CHECK(assigned.size() == 7);
  CHECK(assigned.path() == path);

  std::string empty = tempPath("empty.bin");
  writeBytes(empty, "");
  auto e = MappedFile::open(empty);
  CHECK(e->size() == 0);
  CHECK(e->bytes().empty());
  // an empty file is an empty model as far as the wire format goes
  CHECK(!loadModel(empty).model.graph);
}

TEST_CASE("ONNX MappedFile: a file that cannot be mapped is an error naming it") {
  std::string missing = tempPath("missing.onnx");
  CHECK_THROWS_WITH_AS(MappedFile{missing},
                       (missing + ": cannot open: No such file or directory").c_str(), Error);
  std::string dir = tempPath("a-directory");
  std::filesystem::create_directories(dir);
  CHECK_THROWS_WITH_AS(MappedFile{dir}, (dir + ": not a regular file").c_str(), Error);
  CHECK_THROWS_WITH_AS(loadModel(missing), doctest::Contains(missing.c_str()), Error);
}

TEST_CASE("ONNX MappedFile: loadModel's weights are views of the mapping it keeps alive") {
  // ModelProto { graph { initializer { dims: 2, data_type: FLOAT, name: "w", raw_data } } }
  std::string tensor = std::string("\x08\x02\x10\x01\x42\x01w\x4a\x08", 9) + std::string(8, '\x11');
  std::string graph = "\x2a" + std::string(1, char(tensor.size())) + tensor;
  std::string model = "\x3a" + std::string(1, char(graph.size())) + graph;
  std::string path = tempPath("model.onnx");
  writeBytes(path, model);

  ModelFile mf = loadModel(path);
  std::weak_ptr<const MappedFile> watch = mf.file;
  REQUIRE(mf.model.graph);
  const TensorProto &w = mf.model.graph->initializer.at(0);
  CHECK(w.name == "w");
  CHECK(w.dims == std::vector<int64_t>{2});
  REQUIRE(w.rawData.size() == 8);
  CHECK(w.rawData.data() == mf.file->data() + (model.size() - 8));
  CHECK(w.rawData[7] == 0x11);

  // a copy of the ModelFile shares the mapping, which lives until the last holder goes
  ModelFile copy = mf;
  mf = ModelFile{};
  CHECK(!watch.expired());
  CHECK(copy.model.graph->initializer.at(0).rawData[0] == 0x11);
  copy = ModelFile{};
  CHECK(watch.expired());
}
