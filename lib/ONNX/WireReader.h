// Protobuf's wire format, read one message at a time with every read bounds-checked: internal to
// lib/ONNX (Proto.cpp reads onnx.proto's messages with it).
//
// A message is a sequence of fields, each a tag varint (field number << 3 | wire type) and a
// value: 0 a varint, 1 eight bytes, 2 a varint length and that many bytes (a string, bytes, a
// nested message or a packed run of numbers), 5 four bytes. Wire types 3 and 4 (groups, which
// onnx.proto does not use) and 6, 7 are errors. Every failure is a ParseError
// "FILE: byte N: WHAT in MESSAGE.FIELD", N being the offset in the whole input.
#pragma once

#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace lazyjit::onnx::wire {

enum class WireType : uint8_t { Varint = 0, Fixed64 = 1, Len = 2, Fixed32 = 5 };

/// Messages nest at most this deep (the top-level message is level 1), so that a hostile file
/// cannot exhaust the stack through graphs inside attributes inside graphs.
constexpr int kMaxDepth = 64;

/// Reads the fields of one message, the bytes [begin, end) of the input. The usual loop:
///   while (r.next())
///     switch (r.field()) {
///     case 1: node.input.push_back(r.readString("input")); break;
///     default: r.skip(); break;
///     }
/// Each read takes the field's name in onnx.proto, for messages, and checks the wire type.
class MessageReader {
public:
  /// The top-level message `message` ("ModelProto"): all of `input`.
  MessageReader(std::span<const uint8_t> input, const std::string &fileName, const char *message);

  /// Reads the next tag; false at the end of the message.
  bool next();
  /// The current field's number.
  uint32_t field() const { return field_; }

  /// A varint field (int32, int64, uint64, enum).
  uint64_t readVarint(const char *name);
  int64_t readInt64(const char *name) { return static_cast<int64_t>(readVarint(name)); }
  /// An int32 or enum field: protobuf writes a negative one sign-extended to 64 bits, and a
  /// reader keeps the low 32 bits.
  int32_t readInt32(const char *name) { return static_cast<int32_t>(readVarint(name)); }
  /// A float field (fixed32).
  float readFloat(const char *name);
  /// A bytes field: a view of the input.
  std::span<const uint8_t> readBytes(const char *name);
  /// A string field, copied.
  std::string readString(const char *name);

  /// One occurrence of a repeated varint field: one element, or a packed run of them.
  template <typename T> void readVarints(const char *name, std::vector<T> &out);
  /// One occurrence of a repeated float/double field: one element, or a packed run.
  template <typename T> void readFixed(const char *name, FixedList<T> &out);

  /// A nested message field: `parse(MessageReader &)` reads its fields with a reader of its own.
  template <typename Parse> void readMessage(const char *name, const char *message, Parse &&parse);

  /// Skips the current field's value, whatever its wire type.
  void skip();

  /// Throws the ParseError for `what` at byte `at` in the current message and field.
  [[noreturn]] void fail(size_t at, const std::string &what) const;
  const std::string &fileName() const { return file_; }

private:
  /// A nested message: the bytes [begin, end) of the parent's input, one level deeper.
  MessageReader(const MessageReader &parent, size_t begin, size_t end, const char *message);

  void expect(WireType wt, const char *name);
  uint64_t varintAt(size_t &pos, size_t end) const;
  /// A length varint and the bounds of the bytes it announces; moves past them.
  std::span<const uint8_t> lengthDelimited();
  /// Moves past `n` bytes of a fixed-size value.
  const uint8_t *fixed(size_t n);

  const uint8_t *base_; // the whole input: offsets in messages count from here
  const std::string &file_;
  const char *message_;
  size_t pos_, end_;
  int depth_;
  uint32_t field_ = 0;
  WireType wire_ = WireType::Varint;
  size_t tagAt_ = 0;
  const char *fieldName_ = nullptr; // null while reading a tag or skipping
};

template <typename T> void MessageReader::readVarints(const char *name, std::vector<T> &out) {
  fieldName_ = name;
  if (wire_ == WireType::Varint) {
    out.push_back(static_cast<T>(varintAt(pos_, end_)));
    return;
  }
  expect(WireType::Len, name);
  std::span<const uint8_t> run = lengthDelimited();
  size_t p = static_cast<size_t>(run.data() - base_), runEnd = p + run.size();
  while (p < runEnd) out.push_back(static_cast<T>(varintAt(p, runEnd)));
}

template <typename T> void MessageReader::readFixed(const char *name, FixedList<T> &out) {
  constexpr WireType one = sizeof(T) == 4 ? WireType::Fixed32 : WireType::Fixed64;
  fieldName_ = name;
  if (wire_ == one) {
    out.append(FixedList<T>::decode(fixed(sizeof(T))));
    return;
  }
  expect(WireType::Len, name);
  size_t at = pos_;
  std::span<const uint8_t> run = lengthDelimited();
  if (run.size() % sizeof(T) != 0)
    fail(at, fmt::format("packed run of {} bytes is not a whole number of {}-byte elements",
                         run.size(), sizeof(T)));
  out.appendPacked(run);
}

template <typename Parse>
void MessageReader::readMessage(const char *name, const char *message, Parse &&parse) {
  expect(WireType::Len, name);
  size_t at = pos_;
  std::span<const uint8_t> body = lengthDelimited();
  if (depth_ >= kMaxDepth)
    fail(at, fmt::format("messages nested deeper than {} levels", kMaxDepth));
  size_t begin = static_cast<size_t>(body.data() - base_);
  MessageReader sub(*this, begin, begin + body.size(), message);
  parse(sub);
}

} // namespace lazyjit::onnx::wire
