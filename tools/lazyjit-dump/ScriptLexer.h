// The tokenizer of the tensor-script language: Python-like tokens, with newlines inside brackets
// and after a backslash joined into one logical line, `#` comments dropped, and changes of
// indentation at the start of a statement turned into Indent/Dedent tokens (for `with` blocks).
#pragma once

#include "Script.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit::script {

/// Brackets and unary operators nested inside one another, at most.
constexpr int kMaxNesting = 100;

/// Indent and Dedent bracket the indented body of a `with` block, as Python's tokenizer does.
enum class Tok { Name, Int, Float, Str, Op, Newline, Indent, Dedent, End };

struct Token {
  Tok kind;
  std::string text;
  Loc loc;
  int64_t ival = 0;
  double fval = 0;
};

/// Tokenizes a whole script; the last tokens are a Newline and End. Throws ParseError.
std::vector<Token> tokenize(std::string_view text, const std::string &filename);

/// Checks that every name is bound before use and that attributes exist (ScriptNames.cpp).
/// Throws ParseError.
void checkNames(const Script &sc);

/// Throws ParseError with `FILE:LINE:COL: error: <msg>`.
[[noreturn]] void failAt(const std::string &file, Loc loc, const std::string &msg);

} // namespace lazyjit::script
