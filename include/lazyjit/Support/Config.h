// Every environment knob of lazyjit, parsed once. No other file calls getenv.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace lazyjit {

/// The highest DEBUG level accepted (the DEBUG variable and lazyjit-dump --debug). Levels 1 to 4
/// each add output: 1 devices found and files written, 2 per-kernel compile/load/run times (each
/// kernel synchronized), cache hits and reduce splits, 3 each scheduled item, 4 LLVM IR, PTX and
/// the GPU heuristics' choices. Levels 5 to 7 log what 4 does.
inline constexpr int kMaxDebugLevel = 7;
/// The highest OPT level: 0-4 are the reference's, 5 is 2 plus row fusion and a convolution's
/// layouts: its gradients computed directly, a padded input written out once (docs/architecture.md).
inline constexpr int kMaxOptLevel = 5;
/// The reference's fusion level (tinygrad's default): OPT=2 gives its kernel decisions exactly.
inline constexpr int kReferenceOptLevel = 2;
/// The level used when OPT is not set: lazyjit's best, which is never slower than the reference's
/// on the bench's workloads (docs/architecture.md, "Fusion levels"). OPT=2 asks for the reference.
inline constexpr int kDefaultOptLevel = kMaxOptLevel;

struct Config {
  int debug = 0;                         ///< DEBUG: 0..kMaxDebugLevel, what is logged to stderr
  int opt = kDefaultOptLevel;            ///< OPT: the reference's fusion levels 0..4, and 5 (2 + row fusion, the default)
  bool lazyCache = true;                 ///< LAZYCACHE: dedup identical lazy ops
  int64_t reduceSplitThreshold = 32768;  ///< REDUCEOP_SPLIT_THRESHOLD
  bool mergeView = true;                 ///< MERGE_VIEW: fold reshapes into the last view
  bool noopt = false;                    ///< NOOPT: no kernel optimizations
  int threads = 0;                       ///< THREADS: CPU worker threads (0: all cores)
  std::string device;                    ///< DEVICE: default device ("" = CPU)
  int llvmOptLevel = 2;                  ///< LLVMOPT: LLVM pipeline level 0..3
  std::string cacheDir;                  ///< LAZYJIT_CACHE (else XDG_CACHE_HOME/lazyjit, ~/.cache/lazyjit)
  bool diskCache = true;                 ///< DISABLE_COMPILER_CACHE=1 turns it off
  std::string cudaArch;                  ///< CUDA_ARCH: override the sm_XX used for PTX
  std::string cpu;                       ///< LAZYJIT_CPU: the CPU the CPU device compiles for ("" = the host's)
  bool reuseInputs = true;               ///< LAZYJIT_REUSE_INPUTS: an element-wise kernel may write its output over an input that dies with it
  bool verifyAst = false;                ///< LAZYJIT_VERIFY_AST: verify and text-round-trip every kernel AST
  bool bounds = false;                   ///< LAZYJIT_BOUNDS: CPU kernels check every load/store index at run time
  int64_t maxBufferBytes = 0;            ///< LAZYJIT_MAX_BUFFER_BYTES: refuse larger buffers (0: no limit)
  bool graph = false;                    ///< GRAPH=1: write a picture of every schedule that runs
  std::string graphPath = "/tmp/lazyjit-graph"; ///< GRAPHPATH: pictures go to GRAPHPATH-N.dot (+ .svg)

  /// Parses the process environment. A bad value throws lazyjit::Error naming the variable.
  static Config fromEnvironment();
  /// Parses from a lookup function (used by tests).
  template <typename Lookup> static Config parse(Lookup &&lookup);
};

/// The process-wide configuration, parsed from the environment on first use.
const Config &config();
/// Replaces the process-wide configuration (tools apply their flags, tests their levels). Not
/// while other threads use lazyjit: they read the configuration without a lock (set it first).
void setConfig(const Config &c);

/// Restores the previous configuration when it goes out of scope.
class ScopedConfig {
public:
  explicit ScopedConfig(const Config &c);
  ~ScopedConfig();
  ScopedConfig(const ScopedConfig &) = delete;
  ScopedConfig &operator=(const ScopedConfig &) = delete;

private:
  Config saved;
};

namespace detail {
Config parseConfig(const std::function<std::optional<std::string>(const char *)> &lookup);
}

template <typename Lookup> Config Config::parse(Lookup &&lookup) {
  return detail::parseConfig(lookup);
}

} // namespace lazyjit
