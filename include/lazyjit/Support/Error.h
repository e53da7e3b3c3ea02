// The lazyjit error hierarchy and the checking macros that build a message only when a check fails.
#pragma once

#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace lazyjit {

/// Base of every error lazyjit throws on purpose. Messages start lowercase and carry context
/// ("reshape: cannot reshape float32[4, 6] (24 elements) to [5, 5] (25 elements)").
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/// Shapes that do not fit the op: bad reshape, broadcast, permute, pad, shrink, stride, ...
class ShapeError : public Error {
public:
  using Error::Error;
};
/// Operand dtypes that the op does not accept.
class DTypeError : public Error {
public:
  using Error::Error;
};
/// A valid request that lazyjit does not implement (yet).
class UnsupportedError : public Error {
public:
  using Error::Error;
};
/// A device that is missing, failed, or out of memory.
class DeviceError : public Error {
public:
  using Error::Error;
};
/// Code generation or compilation failed.
class CompileError : public Error {
public:
  using Error::Error;
};
/// Malformed textual input (scripts, AST files); the message starts with FILE:LINE:COL.
class ParseError : public Error {
public:
  using Error::Error;
};
/// A broken invariant inside lazyjit: a bug, never the user's fault.
class InternalError : public Error {
public:
  using Error::Error;
};

namespace detail {
template <typename E, typename... Args>
[[noreturn]] void throwFormatted(fmt::format_string<Args...> f, Args &&...args) {
  throw E(fmt::format(f, std::forward<Args>(args)...));
}
[[noreturn]] void throwInternal(const char *file, int line, const std::string &msg);
} // namespace detail

} // namespace lazyjit

/// Checks user input at the op call. Throws `ErrType` with the formatted message; the message is
/// formatted only when `cond` is false.
#define LAZYJIT_USER_CHECK(cond, ErrType, ...)                                                     \
  do {                                                                                             \
    if (!(cond)) [[unlikely]]                                                                      \
      ::lazyjit::detail::throwFormatted<ErrType>(__VA_ARGS__);                                     \
  } while (0)

/// Always-on invariant check; failing it is a lazyjit bug.
#define LAZYJIT_INTERNAL_CHECK(cond, ...)                                                          \
  do {                                                                                             \
    if (!(cond)) [[unlikely]]                                                                      \
      ::lazyjit::detail::throwInternal(__FILE__, __LINE__, fmt::format(__VA_ARGS__));              \
  } while (0)
