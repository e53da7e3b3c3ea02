// Per-stage loggers through spdlog, to stderr, gated by the DEBUG level.
#pragma once

#include "lazyjit/Support/Config.h"

#include <spdlog/spdlog.h>

namespace lazyjit {

enum class Stage { Graph, Schedule, CodeGen, Runtime, Tool };

/// The logger of one stage (named graph/schedule/codegen/runtime/tool), writing to stderr.
spdlog::logger &logger(Stage stage);

inline bool debugAtLeast(int level) { return config().debug >= level; }

} // namespace lazyjit

/// Logs at DEBUG>=level; the arguments are formatted only when that level is on.
#define LAZYJIT_LOG(stage, level, ...)                                                             \
  do {                                                                                             \
    if (::lazyjit::debugAtLeast(level)) [[unlikely]]                                               \
      ::lazyjit::logger(::lazyjit::Stage::stage).info(__VA_ARGS__);                                \
  } while (0)
