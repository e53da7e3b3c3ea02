// FNV-1a over bytes: the hash of the disk cache's keys and checksums, and of a device's name in the
// dedup cache (a few bytes, hashed inline where std::hash<std::string> was a call per cached op).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyjit {

inline uint64_t fnv1a(const void *data, size_t n, uint64_t h = 0xcbf29ce484222325ULL) {
  const auto *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

} // namespace lazyjit
