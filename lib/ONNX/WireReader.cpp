// The bounds-checked protobuf wire reader (see WireReader.h).
#include "WireReader.h"

#include <limits>

namespace lazyjit::onnx::wire {

namespace {

const char *wireTypeName(uint64_t wt) {
  switch (wt) {
  case 0: return "varint";
  case 1: return "fixed64";
  case 2: return "length-delimited";
  case 3: return "start group";
  case 4: return "end group";
  case 5: return "fixed32";
  }
  return "invalid";
}

} // namespace

MessageReader::MessageReader(std::span<const uint8_t> input, const std::string &fileName,
                             const char *message)
    : base_(input.data()), file_(fileName), message_(message), pos_(0), end_(input.size()),
      depth_(1) {}

MessageReader::MessageReader(const MessageReader &parent, size_t begin, size_t end,
                             const char *message)
    : base_(parent.base_), file_(parent.file_), message_(message), pos_(begin), end_(end),
      depth_(parent.depth_ + 1) {}

void MessageReader::fail(size_t at, const std::string &what) const {
  std::string where = message_;
  if (fieldName_)
    where += fmt::format(".{}", fieldName_);
  else if (field_ != 0)
    where += fmt::format(" field {}", field_);
  throw ParseError(fmt::format("{}: byte {}: {} in {}", file_, at, what, where));
}

uint64_t MessageReader::varintAt(size_t &pos, size_t end) const {
  size_t start = pos;
  uint64_t v = 0;
  // Ten bytes hold 64 bits; bits of the tenth byte beyond them are dropped, as protobuf does.
  for (int i = 0; i < 10; ++i) {
    if (pos >= end) fail(start, "truncated varint");
    uint8_t b = base_[pos++];
    v |= uint64_t(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) return v;
  }
  fail(start, "varint longer than 10 bytes");
}

bool MessageReader::next() {
  fieldName_ = nullptr;
  field_ = 0;
  if (pos_ >= end_) return false;
  tagAt_ = pos_;
  uint64_t tag = varintAt(pos_, end_);
  uint64_t number = tag >> 3, wt = tag & 7;
  if (number == 0) fail(tagAt_, "field number 0");
  if (number > (uint64_t(1) << 29) - 1)
    fail(tagAt_, fmt::format("field number {} out of range", number));
  field_ = static_cast<uint32_t>(number);
  if (wt == 3 || wt == 4)
    fail(tagAt_, fmt::format("group wire type {} ({}) is not supported", wt, wireTypeName(wt)));
  if (wt > 5) fail(tagAt_, fmt::format("invalid wire type {}", wt));
  wire_ = static_cast<WireType>(wt);
  return true;
}

void MessageReader::expect(WireType wt, const char *name) {
  fieldName_ = name;
  if (wire_ != wt)
    fail(tagAt_, fmt::format("wire type {} ({}) where {} ({}) is expected", int(wire_),
                             wireTypeName(uint64_t(wire_)), int(wt), wireTypeName(uint64_t(wt))));
}

std::span<const uint8_t> MessageReader::lengthDelimited() {
  size_t at = pos_;
  uint64_t n = varintAt(pos_, end_);
  if (n > uint64_t(std::numeric_limits<int64_t>::max()))
    fail(at, fmt::format("negative length {}", static_cast<int64_t>(n)));
  if (n > end_ - pos_)
    fail(at, fmt::format("length {} runs past the end of its message (byte {})", n, end_));
  std::span<const uint8_t> body(base_ + pos_, static_cast<size_t>(n));
  pos_ += static_cast<size_t>(n);
  return body;
}

const uint8_t *MessageReader::fixed(size_t n) {
  if (end_ - pos_ < n) fail(pos_, fmt::format("truncated {}-byte value", n));
  const uint8_t *p = base_ + pos_;
  pos_ += n;
  return p;
}

uint64_t MessageReader::readVarint(const char *name) {
  expect(WireType::Varint, name);
  return varintAt(pos_, end_);
}

float MessageReader::readFloat(const char *name) {
  expect(WireType::Fixed32, name);
  return FixedList<float>::decode(fixed(4));
}

std::span<const uint8_t> MessageReader::readBytes(const char *name) {
  expect(WireType::Len, name);
  return lengthDelimited();
}

std::string MessageReader::readString(const char *name) {
  std::span<const uint8_t> b = readBytes(name);
  return std::string(reinterpret_cast<const char *>(b.data()), b.size());
}

void MessageReader::skip() {
  fieldName_ = nullptr;
  switch (wire_) {
  case WireType::Varint: (void)varintAt(pos_, end_); return;
  case WireType::Fixed64: (void)fixed(8); return;
  case WireType::Len: (void)lengthDelimited(); return;
  case WireType::Fixed32: (void)fixed(4); return;
  }
  fail(tagAt_, "invalid wire type"); // next() lets no other value through
}

} // namespace lazyjit::onnx::wire
