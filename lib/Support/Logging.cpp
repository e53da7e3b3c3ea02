// One spdlog logger per pipeline stage, all writing to stderr so stdout stays clean for FileCheck.
#include "lazyjit/Support/Logging.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <array>
#include <memory>
#include <mutex>

namespace lazyjit {

spdlog::logger &logger(Stage stage) {
  static std::once_flag once;
  static std::array<std::shared_ptr<spdlog::logger>, 5> loggers;
  std::call_once(once, [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    const char *names[] = {"graph", "schedule", "codegen", "runtime", "tool"};
    for (size_t i = 0; i < loggers.size(); ++i) {
      loggers[i] = std::make_shared<spdlog::logger>(names[i], sink);
      loggers[i]->set_pattern("[%n] %v");
      loggers[i]->set_level(spdlog::level::trace);
    }
  });
  return *loggers[static_cast<size_t>(stage)];
}

} // namespace lazyjit
