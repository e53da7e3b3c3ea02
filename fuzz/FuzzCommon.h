// Shared setup of the fuzz targets: a configuration that keeps one input cheap (small buffers, no
// disk cache, bounds checks on) and the rule that an internal error is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lazyjit::fuzz {

/// Applies the fuzzing configuration once: buffers up to 64 MiB, no disk cache, LAZYJIT_BOUNDS and
/// LAZYJIT_VERIFY_AST on.
void setUp();

/// Aborts (a finding for libFuzzer) when a tool run ended with an internal error (exit code 2).
void requireNoInternalError(int rc, const char *what);

} // namespace lazyjit::fuzz
