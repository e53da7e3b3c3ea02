// A restricted unpickler for PyTorch checkpoints (private to lazyjitNN; torchLoad's parser).
//
// It understands the pickle opcodes of protocols 2-5 that a checkpoint of tensors uses (dicts,
// lists, tuples, strings, numbers, memo, persistent ids, REDUCE and BUILD) and builds plain
// values from them. Nothing is ever executed: a GLOBAL resolves only to the names a state dict
// uses (torch._utils._rebuild_tensor(_v2), _rebuild_parameter(_with_state), torch.*Storage,
// torch.*Tensor types, collections.OrderedDict); any other global, any other opcode, a call of
// anything but those rebuild functions and OrderedDict, a truncated pickle or a stack misuse is a
// ParseError naming the file and the byte offset.
#pragma once

#include "lazyjit/Graph/DType.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit::nn::pickle {

/// A storage named by a persistent id: the key of its bytes, its dtype and its element count.
struct StorageRef {
  std::string key;
  DType dtype;
  int64_t numel = 0;
};

/// A tensor as torch._utils._rebuild_tensor_v2 describes it: a view of a storage.
struct TensorRef {
  StorageRef storage;
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

enum class Kind {
  None,
  Bool,
  Int,
  BigInt,
  Float,
  Str,
  Bytes,
  Tuple,
  List,
  Dict,
  Global,
  Storage,
  Tensor
};

/// A value of the pickle. Objects live in their Unpickler's arena and point at each other with
/// plain pointers, so shared and even cyclic references (the memo allows both) cost nothing to
/// free; walkers of the graph must bound their depth.
struct Object {
  Kind kind = Kind::None;
  int64_t i = 0; // Bool (0/1), Int
  double f = 0;  // Float
  std::string s; // Str, Bytes, BigInt (little-endian two's complement), Global "module.name"
  std::vector<Object *>
      items;          // Tuple, List; Dict as key, value, key, value, ... in insertion order
  StorageRef storage; // Storage
  TensorRef tensor;   // Tensor
};

/// A short name of `k` for messages ("a dict", "an int").
std::string_view kindName(Kind k);

/// The dtype of a storage class "torch.FloatStorage", ..., or nullopt.
std::optional<DType> storageDType(std::string_view global);

class Unpickler {
public:
  /// Resolves a persistent id (BINPERSID's argument) to an object; made by the format reader.
  using PersistentLoad = std::function<Object *(Unpickler &, const Object &pid, size_t offset)>;

  Unpickler(std::string path, PersistentLoad persistentLoad)
      : path_(std::move(path)), persistentLoad(std::move(persistentLoad)) {}

  /// Reads the pickle that starts at data[pos]; `pos` ends after its STOP. `what` names the pickle
  /// in messages ("data.pkl"). The objects live as long as the Unpickler.
  Object *load(std::span<const uint8_t> data, size_t &pos, const std::string &what);

  /// A new object of kind `k` in the arena.
  Object *make(Kind k);
  /// Throws a ParseError "PATH: WHAT: MESSAGE at offset N".
  [[noreturn]] void fail(size_t offset, const std::string &message) const;
  const std::string &path() const { return path_; }

private:
  std::string path_, what;
  PersistentLoad persistentLoad;
  std::vector<std::unique_ptr<Object>> arena;
};

} // namespace lazyjit::nn::pickle
