// The lexical level of the textual kernel-AST format (docs/ir.md), shared by its printer and its
// parser: identifier characters, and LineParser, the cursor that reads the pieces of one line
// (integers, numbers, dtypes, symbolic values rebuilt with the reference's raw constructors, and
// tuples). Private to lib/Schedule.
#pragma once

#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Support/Error.h"

#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace lazyjit::asttext {

inline bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }

/// The printer's form of a shape, `(4, n[1-8])` (ASTPrinter.cpp); the parser names shapes with it.
std::string printShape(const Shape &shape);

constexpr int kMaxNodeDepth = 200; // nesting of parentheses in one symbolic value

[[noreturn]] inline void fail(const std::string &file, int line, int col, const std::string &msg) {
  throw ParseError(fmt::format("{}:{}:{}: error: {}", file, line, col, msg));
}

/// A cursor over one line of the input.
class LineParser {
public:
  LineParser(std::string_view text, const std::string &file, int line)
      : s(text), file(file), line(line) {}

  std::string_view s;
  size_t pos = 0;
  const std::string &file;
  int line;
  /// The ranges of the variables seen so far in this AST (or value), by name.
  std::map<std::string, std::pair<SInt, SInt>> *varRanges = nullptr;

  int col() const { return static_cast<int>(pos) + 1; }
  [[noreturn]] void error(const std::string &msg) const { fail(file, line, col(), msg); }
  [[noreturn]] void errorAt(size_t at, const std::string &msg) const {
    fail(file, line, static_cast<int>(at) + 1, msg);
  }

  bool atEnd() const { return pos >= s.size(); }
  char peek(size_t ahead = 0) const { return pos + ahead < s.size() ? s[pos + ahead] : '\0'; }
  void skipSpaces() {
    while (!atEnd() && s[pos] == ' ') ++pos;
  }
  bool accept(std::string_view tok) {
    if (s.substr(pos, tok.size()) != tok) return false;
    pos += tok.size();
    return true;
  }
  void expect(std::string_view tok, std::string_view what = {}) {
    if (accept(tok)) return;
    error(fmt::format("expected '{}'{}{}, got {}", tok, what.empty() ? "" : " ", what, describe()));
  }
  /// What is at the cursor, for messages.
  std::string describe() const {
    if (atEnd()) return "end of line";
    size_t n = 0;
    while (pos + n < s.size() && s[pos + n] != ' ' && n < 20) ++n;
    return "'" + std::string(s.substr(pos, n == 0 ? 1 : n)) + "'";
  }

  std::string_view word() {
    size_t start = pos;
    while (!atEnd() && (isIdentChar(s[pos]) || s[pos] == '.')) ++pos;
    return s.substr(start, pos - start);
  }

  int64_t integer(std::string_view what) {
    size_t start = pos;
    if (peek() == '-') ++pos;
    if (!(peek() >= '0' && peek() <= '9')) {
      pos = start;
      error(fmt::format("expected an integer {}, got {}", what, describe()));
    }
    while (peek() >= '0' && peek() <= '9') ++pos;
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + start, s.data() + pos, v);
    if (ec != std::errc()) errorAt(start, fmt::format("integer {} is out of range", what));
    (void)p;
    return v;
  }

  double number() {
    size_t start = pos;
    while (!atEnd() && s[pos] != ' ' && s[pos] != ')' && s[pos] != ',') ++pos;
    std::string_view tok = s.substr(start, pos - start);
    std::string_view body = tok;
    if (!body.empty() && body[0] == '+') body.remove_prefix(1);
    double v = 0;
    auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
    if (tok.empty() || ec != std::errc() || p != body.data() + body.size())
      errorAt(start, fmt::format("expected a number, got '{}'", tok));
    return v;
  }

  bool boolean() {
    if (accept("True")) return true;
    if (accept("False")) return false;
    error("expected True or False, got " + describe());
  }

  DType dtype() {
    size_t start = pos;
    std::string_view w = word();
    if (w.empty()) error("expected a dtype, got " + describe());
    auto dt = DType::fromName(w);
    if (!dt) errorAt(start, fmt::format("unknown dtype '{}'", w));
    return *dt;
  }

  // ---- symbolic values -----------------------------------------------------------------------

  SInt sint(int depth = 0) {
    if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return SInt(integer("value"));
    return SInt(node(depth));
  }

  NodeRef node(int depth) {
    if (depth > kMaxNodeDepth) error("symbolic expression is nested too deeply");
    skipSpaces();
    size_t start = pos;
    if (peek() == '-' || (peek() >= '0' && peek() <= '9')) return numNode(integer("value"));
    if (isIdentStart(peek())) return variableNode(depth);
    if (!accept("(")) error("expected an integer or a symbolic expression, got " + describe());
    NodeRef first = node(depth + 1);
    skipSpaces();
    NodeRef result;
    if (accept("*")) {
      SInt b = operand(depth);
      result = rawMulNode(first, b);
    } else if (accept("//")) {
      result = divNode(first, operandInt(), start);
    } else if (accept("%")) {
      result = modNode(first, operandInt(), start);
    } else if (accept("<")) {
      result = rawLtNode(first, operand(depth));
    } else if (peek() == '+') {
      std::vector<NodeRef> parts{first};
      while (accept("+")) parts.push_back(node(depth + 1)), skipSpaces();
      result = rawSumNode(parts);
    } else if (peek() == 'a' && s.substr(pos, 3) == "and") {
      std::vector<NodeRef> parts{first};
      while (accept("and")) parts.push_back(node(depth + 1)), skipSpaces();
      result = guarded(start, [&] { return createAndNode(parts); });
    } else {
      error("expected '*', '//', '%', '<', '+' or 'and' in a symbolic expression, got " +
            describe());
    }
    skipSpaces();
    expect(")", "to close the symbolic expression");
    // the simplifier folds every node whose bounds meet into its value (create_node), and the
    // rest of lazyjit relies on it: a printed node never has them, so a parsed one must not
    if (!truthy(le(result->min, result->max)))
      errorAt(start, "symbolic expression with an empty range (min > max)");
    if (pyEq(result->min, result->max))
      errorAt(start, fmt::format("symbolic expression always equals {}; write the integer",
                                 result->min.render()));
    return result;
  }

  SInt operand(int depth) {
    skipSpaces();
    return sint(depth + 1);
  }
  int64_t operandInt() {
    skipSpaces();
    return integer("divisor");
  }

  template <typename F> NodeRef guarded(size_t at, F &&f) {
    try {
      return f();
    } catch (const ParseError &) {
      throw;
    } catch (const Error &e) {
      errorAt(at, e.what());
    }
  }

  // `name[min-max]` or `name[min-max=value]`; min and max are integers or `<node>`.
  NodeRef variableNode(int depth) {
    size_t start = pos;
    while (isIdentChar(peek())) ++pos;
    std::string name(s.substr(start, pos - start));
    expect("[", "after the variable name");
    SInt lo = bound(depth);
    expect("-", "between the variable bounds");
    SInt hi = bound(depth);
    std::optional<int64_t> value;
    if (accept("=")) value = integer("variable value");
    expect("]", "to close the variable bounds");
    std::optional<std::string> expr;
    if (name != "None") expr = name;
    // a kernel's variables are passed by name: one name with two ranges would run with one value
    // for both and break the bounds proof of the other
    auto [it, fresh] = varRanges->emplace(name, std::make_pair(lo, hi));
    if (!fresh && !(pyEq(it->second.first, lo) && pyEq(it->second.second, hi)))
      errorAt(start, fmt::format("variable '{}' has the ranges [{}-{}] and [{}-{}]", name, it->second.first.render(),
                                 it->second.second.render(), lo.render(), hi.render()));
    return guarded(start, [&] {
      NodeRef v = variable(expr, lo, hi);
      if (value) v = v->bind(*value);
      return v;
    });
  }

  SInt bound(int depth) {
    if (accept("<")) {
      NodeRef n = node(depth + 1);
      expect(">", "to close the bound");
      return SInt(n);
    }
    return SInt(integer("bound"));
  }

  NodeRef divNode(NodeRef a, int64_t b, size_t at) {
    if (b <= 0) errorAt(at, "a symbolic division needs a positive divisor");
    if (!truthy(ge(a->min, 0))) errorAt(at, "a symbolic division needs a nonnegative numerator");
    return rawDivNode(std::move(a), b);
  }

  NodeRef modNode(NodeRef a, int64_t b, size_t at) {
    if (b <= 0) errorAt(at, "a symbolic modulo needs a positive divisor");
    if (!truthy(ge(a->min, 0))) errorAt(at, "a symbolic modulo needs a nonnegative numerator");
    return rawModNode(std::move(a), b);
  }

  // ---- tuples --------------------------------------------------------------------------------

  template <typename F> void tuple(std::string_view what, F &&item) {
    expect("(", what);
    skipSpaces();
    if (accept(")")) return;
    while (true) {
      skipSpaces();
      item();
      skipSpaces();
      if (accept(")")) return;
      expect(",", "or ')' in " + std::string(what));
      skipSpaces();
      if (accept(")")) return;
    }
  }

  Shape shapeTuple(std::string_view what) {
    Shape out;
    tuple(what, [&] { out.push_back(sint()); });
    return out;
  }

  std::vector<SIntPair> pairTuple(std::string_view what) {
    std::vector<SIntPair> out;
    tuple(what, [&] {
      expect("(", "to open a pair");
      skipSpaces();
      SInt a = sint();
      skipSpaces();
      expect(",", "in a pair");
      skipSpaces();
      SInt b = sint();
      skipSpaces();
      expect(")", "to close a pair");
      out.emplace_back(std::move(a), std::move(b));
    });
    return out;
  }
};

} // namespace lazyjit::asttext
