// The disk cache: one file per entry, written atomically (temp file + rename), verified on load.
#include "lazyjit/Runtime/KernelCache.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Hash.h"
#include "lazyjit/Support/Logging.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace lazyjit {

namespace {
constexpr char kMagic[8] = {'L', 'J', 'K', 'C', 'A', 'C', 'H', '1'};

void putU64(std::string &out, uint64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); }
} // namespace

DiskCache::DiskCache(std::string d) : dir(std::move(d)) {
  if (dir.empty() || !config().diskCache) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || access(dir.c_str(), W_OK) != 0) {
    disable("cannot create or write the cache directory " + dir);
    return;
  }
  enabled_ = true;
}

void DiskCache::disable(const std::string &why) {
  enabled_ = false;
  if (!warned.exchange(true)) {
    logger(Stage::Runtime).warn("kernel cache: {}; caching in memory only", why);
  }
}

std::string DiskCache::pathFor(const std::string &key) const {
  uint64_t a = fnv1a(key.data(), key.size());
  uint64_t b = fnv1a(key.data(), key.size(), 0x84222325cbf29ce4ULL);
  return fmt::format("{}/{:016x}{:016x}.bin", dir, a, b);
}

namespace {
// Entries are regular files of bounded size; anything else under an entry's name (a directory, a
// FIFO that would block, a symlink to /dev/zero that reads without end) is a miss.
constexpr off_t kMaxEntryBytes = off_t(1) << 30;

std::optional<std::string> readEntry(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat sb;
  if (::fstat(fd, &sb) != 0) return std::nullopt;
  if (!S_ISREG(sb.st_mode)) {
    LAZYJIT_LOG(Runtime, 2, "kernel cache: {} is not a regular file; treated as a miss", path);
    return std::nullopt;
  }
  if (sb.st_size > kMaxEntryBytes) return std::nullopt;
  std::string data(static_cast<size_t>(sb.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t got = ::read(fd, data.data() + done, data.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  data.resize(done); // a file that shrank while read is caught by the length and checksum checks
  return data;
}
} // namespace

std::optional<std::vector<uint8_t>> DiskCache::load(const std::string &key) {
  if (!enabled_) return std::nullopt;
  std::string path = pathFor(key);
  std::optional<std::string> entry = readEntry(path);
  if (!entry) return std::nullopt;
  std::string &data = *entry;
  auto corrupt = [&](const char *what) -> std::optional<std::vector<uint8_t>> {
    logger(Stage::Runtime).warn("kernel cache: {} is corrupt ({}); recompiling", path, what);
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return std::nullopt;
  };
  size_t pos = 0;
  auto getU64 = [&](uint64_t &v) {
    if (pos + 8 > data.size()) return false;
    std::memcpy(&v, data.data() + pos, 8);
    pos += 8;
    return true;
  };
  if (data.size() < sizeof(kMagic) || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0)
    return corrupt("bad header");
  pos = sizeof(kMagic);
  uint64_t keyLen, payloadLen, sum;
  if (!getU64(keyLen) || keyLen > data.size() - pos) return corrupt("truncated key");
  std::string storedKey = data.substr(pos, keyLen);
  pos += keyLen;
  if (storedKey != key) return std::nullopt; // a hash collision: not our entry
  if (!getU64(payloadLen) || !getU64(sum)) return corrupt("truncated header");
  if (payloadLen != data.size() - pos) return corrupt("truncated payload");
  if (fnv1a(data.data() + pos, payloadLen) != sum) return corrupt("checksum mismatch");
  LAZYJIT_LOG(Runtime, 2, "kernel cache: hit {}", path);
  return std::vector<uint8_t>(data.begin() + pos, data.end());
}

void DiskCache::store(const std::string &key, const std::vector<uint8_t> &payload) {
  if (!enabled_) return;
  std::string blob(kMagic, sizeof(kMagic));
  putU64(blob, key.size());
  blob += key;
  putU64(blob, payload.size());
  putU64(blob, fnv1a(payload.data(), payload.size()));
  blob.append(reinterpret_cast<const char *>(payload.data()), payload.size());
  std::string path = pathFor(key);
  std::string tmp = fmt::format("{}.tmp{}.{}", path, getpid(), std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(blob.data(), static_cast<std::streamsize>(blob.size()))) {
      disable("cannot write " + tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    disable("cannot rename " + tmp);
  }
}

DiskCache &diskCache(const std::string &kind) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<DiskCache>> caches;
  std::lock_guard lock(mu);
  auto &c = caches[kind];
  if (!c) c = std::make_unique<DiskCache>(config().cacheDir.empty() ? "" : config().cacheDir + "/" + kind);
  return *c;
}

} // namespace lazyjit
