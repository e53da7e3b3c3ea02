// Config parses every knob once and names the variable in its errors.
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <map>

using namespace lazyjit;

namespace {
Config parseFrom(std::map<std::string, std::string> env) {
  return Config::parse([&](const char *name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}
} // namespace

TEST_CASE("Config: defaults match the reference, but for lazyjit's own fusion level") {
  Config c = parseFrom({});
  CHECK(c.debug == 0);
  // the default is lazyjit's best level; OPT=2 asks for the reference's
  CHECK(c.opt == kDefaultOptLevel);
  CHECK(kDefaultOptLevel == kMaxOptLevel);
  CHECK(parseFrom({{"OPT", "2"}}).opt == kReferenceOptLevel);
  CHECK(c.lazyCache);
  CHECK(c.reduceSplitThreshold == 32768);
}

TEST_CASE("Config: knobs are parsed") {
  Config c = parseFrom({{"DEBUG", "3"}, {"OPT", "4"}, {"LAZYCACHE", "0"},
                        {"REDUCEOP_SPLIT_THRESHOLD", "100"}, {"THREADS", "2"},
                        {"LAZYJIT_CACHE", "/tmp/x"}, {"LAZYJIT_CPU", "haswell"}, {"LAZYJIT_REUSE_INPUTS", "0"}});
  CHECK(c.debug == 3);
  CHECK(c.opt == 4);
  CHECK_FALSE(c.lazyCache);
  CHECK(c.reduceSplitThreshold == 100);
  CHECK(c.threads == 2);
  CHECK(c.cacheDir == "/tmp/x");
  CHECK(c.cpu == "haswell");
  CHECK(parseFrom({}).cpu.empty()); // (the host's CPU)
  CHECK_FALSE(c.reuseInputs);
  CHECK(parseFrom({}).reuseInputs); // (outputs written over dying inputs by default)
}

TEST_CASE("Config: the cache directory falls back to XDG_CACHE_HOME then HOME") {
  CHECK(parseFrom({{"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/h"}}).cacheDir == "/xdg/lazyjit");
  CHECK(parseFrom({{"HOME", "/h"}}).cacheDir == "/h/.cache/lazyjit");
}

TEST_CASE("Config: a bad value is an error naming the variable") {
  CHECK_THROWS_WITH_AS(parseFrom({{"OPT", "fast"}}), doctest::Contains("OPT='fast' is not an integer"),
                       Error);
  CHECK_THROWS_WITH_AS(parseFrom({{"OPT", "9"}}), doctest::Contains("OPT=9 is out of range"), Error);
  CHECK_THROWS_WITH_AS(parseFrom({{"DEBUG", ""}}), doctest::Contains("DEBUG"), Error);
  CHECK_THROWS_WITH_AS(parseFrom({{"LAZYCACHE", "2"}}), doctest::Contains("LAZYCACHE"), Error);
  CHECK_THROWS_WITH_AS(parseFrom({{"LAZYJIT_REUSE_INPUTS", "yes"}}),
                       doctest::Contains("LAZYJIT_REUSE_INPUTS='yes' is not an integer"), Error);
  CHECK_THROWS_WITH_AS(parseFrom({{"LAZYJIT_REUSE_INPUTS", "2"}}),
                       doctest::Contains("LAZYJIT_REUSE_INPUTS=2 is out of range"), Error);
}

TEST_CASE("Config: ScopedConfig restores the previous configuration") {
  int before = config().opt;
  {
    Config c = config();
    c.opt = before == 3 ? 1 : 3;
    ScopedConfig scope(c);
    CHECK(config().opt == c.opt);
  }
  CHECK(config().opt == before);
}

TEST_CASE("Error: USER_CHECK formats only on failure and keeps the type") {
  int formatted = 0;
  auto expensive = [&] {
    ++formatted;
    return std::string("x");
  };
  LAZYJIT_USER_CHECK(true, ShapeError, "never {}", expensive());
  CHECK(formatted == 0);
  CHECK_THROWS_WITH_AS(LAZYJIT_USER_CHECK(false, ShapeError, "reshape: bad {}", expensive()),
                       "reshape: bad x", ShapeError);
  CHECK(formatted == 1);
}
