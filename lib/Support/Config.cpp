// Parses every lazyjit environment knob in one place; a bad value names the variable.
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <cstdlib>
#include <mutex>

namespace lazyjit {
namespace {

int64_t parseInt(const char *name, const std::string &value, int64_t lo, int64_t hi) {
  size_t pos = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &pos);
  } catch (const std::exception &) {
    pos = 0;
  }
  LAZYJIT_USER_CHECK(pos == value.size() && !value.empty(), Error,
                     "environment variable {}='{}' is not an integer", name, value);
  LAZYJIT_USER_CHECK(v >= lo && v <= hi, Error,
                     "environment variable {}={} is out of range [{}, {}]", name, v, lo, hi);
  return v;
}

Config &current() {
  static Config c = Config::fromEnvironment();
  return c;
}
std::mutex &configMutex() {
  static std::mutex m;
  return m;
}

} // namespace

namespace detail {
Config parseConfig(const std::function<std::optional<std::string>(const char *)> &lookup) {
  Config c;
  auto intKnob = [&](const char *name, auto &field, int64_t lo, int64_t hi) {
    if (auto v = lookup(name)) field = static_cast<std::remove_reference_t<decltype(field)>>(
                                   parseInt(name, *v, lo, hi));
  };
  intKnob("DEBUG", c.debug, 0, kMaxDebugLevel);
  intKnob("OPT", c.opt, 0, kMaxOptLevel);
  intKnob("LAZYCACHE", c.lazyCache, 0, 1);
  intKnob("REDUCEOP_SPLIT_THRESHOLD", c.reduceSplitThreshold, 1, int64_t(1) << 62);
  intKnob("MERGE_VIEW", c.mergeView, 0, 1);
  intKnob("NOOPT", c.noopt, 0, 1);
  intKnob("THREADS", c.threads, 0, 4096);
  intKnob("LLVMOPT", c.llvmOptLevel, 0, 3);
  bool noDiskCache = !c.diskCache;
  intKnob("DISABLE_COMPILER_CACHE", noDiskCache, 0, 1);
  c.diskCache = !noDiskCache;
  if (auto v = lookup("DEVICE")) c.device = *v;
  if (auto v = lookup("LAZYJIT_CACHE")) {
    c.cacheDir = *v;
  } else if (auto x = lookup("XDG_CACHE_HOME"); x && !x->empty()) {
    c.cacheDir = *x + "/lazyjit";
  } else if (auto h = lookup("HOME"); h && !h->empty()) {
    c.cacheDir = *h + "/.cache/lazyjit";
  }
  if (auto v = lookup("CUDA_ARCH")) c.cudaArch = *v;
  if (auto v = lookup("LAZYJIT_CPU")) c.cpu = *v;
  intKnob("LAZYJIT_REUSE_INPUTS", c.reuseInputs, 0, 1);
  intKnob("LAZYJIT_VERIFY_AST", c.verifyAst, 0, 1);
  intKnob("LAZYJIT_BOUNDS", c.bounds, 0, 1);
  intKnob("LAZYJIT_MAX_BUFFER_BYTES", c.maxBufferBytes, 0, int64_t(1) << 62);
  intKnob("GRAPH", c.graph, 0, 1);
  if (auto v = lookup("GRAPHPATH"); v && !v->empty()) c.graphPath = *v;
  return c;
}
} // namespace detail

Config Config::fromEnvironment() {
  return detail::parseConfig([](const char *name) -> std::optional<std::string> {
    const char *v = std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

const Config &config() { return current(); }

void setConfig(const Config &c) {
  std::lock_guard lock(configMutex());
  current() = c;
}

ScopedConfig::ScopedConfig(const Config &c) : saved(config()) { setConfig(c); }
ScopedConfig::~ScopedConfig() { setConfig(saved); }

} // namespace lazyjit
