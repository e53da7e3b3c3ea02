// The on-disk cache of compiled kernels. Entries are keyed by a string (AST text, target, LLVM
// version, options); a file stores the key itself and a checksum, so a collision, a truncated or a
// corrupt file is detected and recompiled, never trusted. An unwritable directory degrades the
// cache to memory-only with one warning.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit {

class DiskCache {
public:
  /// A cache in `dir` (created if missing); an empty dir disables the cache.
  explicit DiskCache(std::string dir);
  bool enabled() const { return enabled_; }
  std::optional<std::vector<uint8_t>> load(const std::string &key);
  void store(const std::string &key, const std::vector<uint8_t> &payload);
  /// The file an entry lives in (tests corrupt it on purpose).
  std::string pathFor(const std::string &key) const;

private:
  std::string dir;
  // (the compile tasks of several threads read and disable one cache at once)
  std::atomic<bool> enabled_{false};
  std::atomic<bool> warned{false};
  void disable(const std::string &why);
};

/// The process-wide cache for a kind of artifact ("cpu", "ptx"), under config().cacheDir.
DiskCache &diskCache(const std::string &kind);

} // namespace lazyjit
