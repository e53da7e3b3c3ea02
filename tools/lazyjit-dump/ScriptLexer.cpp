// The tokenizer of the tensor-script language (see ScriptLexer.h).
#include "ScriptLexer.h"

#include "lazyjit/Support/Error.h"

#include <cctype>
#include <charconv>

namespace lazyjit::script {

void failAt(const std::string &file, Loc loc, const std::string &msg) {
  throw ParseError(fmt::format("{}:{}:{}: error: {}", file, loc.line, loc.col, msg));
}

namespace {

[[noreturn]] void fail(const std::string &file, Loc loc, const std::string &msg) {
  failAt(file, loc, msg);
}

class Lexer {
public:
  Lexer(std::string_view text, const std::string &file) : s(text), file(file) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool lineStart = true;
    while (pos < s.size()) {
      char c = s[pos];
      if (lineStart && depth == 0) {
        lineStart = false;
        size_t p = pos;
        while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
        bool blank = p >= s.size() || s[p] == '\n' || s[p] == '#' || s[p] == '\r';
        if (!blank) {
          Loc l = here();
          int width = static_cast<int>(p - pos);
          l.col += width;
          if (width > indents.back()) {
            indents.push_back(width);
            out.push_back({Tok::Indent, "indent", l});
          }
          while (width < indents.back()) {
            indents.pop_back();
            out.push_back({Tok::Dedent, "dedent", l});
          }
          if (width != indents.back())
            fail(file, l, "unindent does not match any outer indentation level");
        }
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos < s.size() && s[pos] != '\n') advance();
      } else if (c == '\\' && pos + 1 < s.size() && s[pos + 1] == '\n') {
        advance();
        advance();
      } else if (c == '\n') {
        if (depth == 0 && !out.empty() && out.back().kind != Tok::Newline)
          out.push_back({Tok::Newline, "newline", here()});
        advance();
        lineStart = depth == 0; // inside brackets a line continues the statement
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && pos + 1 < s.size() && std::isdigit((unsigned char)s[pos + 1]))) {
        out.push_back(number());
      } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        Token t{Tok::Name, "", here()};
        while (pos < s.size() && (std::isalnum((unsigned char)s[pos]) || s[pos] == '_'))
          t.text += s[pos], advance();
        out.push_back(std::move(t));
      } else if (c == '"' || c == '\'') {
        out.push_back(string());
      } else {
        out.push_back(op());
      }
    }
    if (depth > 0) fail(file, openLocs.back(), "'" + openChars.back() + "' is never closed");
    if (!out.empty() && out.back().kind != Tok::Newline)
      out.push_back({Tok::Newline, "newline", here()});
    for (size_t k = 1; k < indents.size(); ++k) out.push_back({Tok::Dedent, "dedent", here()});
    out.push_back({Tok::End, "end of input", here()});
    return out;
  }

private:
  std::string_view s;
  const std::string &file;
  size_t pos = 0;
  int line = 1, col = 1;
  int depth = 0;
  std::vector<int> indents{0}; ///< the indentation widths of the open blocks
  std::vector<Loc> openLocs;
  std::vector<std::string> openChars;

  Loc here() const { return {line, col}; }
  void advance() {
    if (s[pos] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    ++pos;
  }

  Token number() {
    Token t{Tok::Int, "", here()};
    size_t start = pos;
    bool isFloat = false;
    while (pos < s.size() && std::isdigit((unsigned char)s[pos])) advance();
    if (pos < s.size() && s[pos] == '.') {
      isFloat = true;
      advance();
      while (pos < s.size() && std::isdigit((unsigned char)s[pos])) advance();
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      size_t p = pos + 1;
      if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
      if (p < s.size() && std::isdigit((unsigned char)s[p])) {
        isFloat = true;
        while (pos < p) advance();
        while (pos < s.size() && std::isdigit((unsigned char)s[pos])) advance();
      }
    }
    if (pos < s.size() && (std::isalpha((unsigned char)s[pos]) || s[pos] == '_'))
      fail(file, here(),
           fmt::format("invalid number literal '{}{}'", s.substr(start, pos - start), s[pos]));
    t.text = std::string(s.substr(start, pos - start));
    if (isFloat) {
      t.kind = Tok::Float;
      t.fval = std::strtod(t.text.c_str(), nullptr);
    } else {
      auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), t.ival);
      (void)p;
      if (ec != std::errc()) fail(file, t.loc, "integer literal " + t.text + " is too large");
    }
    return t;
  }

  Token string() {
    Token t{Tok::Str, "", here()};
    char quote = s[pos];
    advance();
    while (true) {
      if (pos >= s.size() || s[pos] == '\n') fail(file, t.loc, "unterminated string literal");
      char c = s[pos];
      advance();
      if (c == quote) break;
      if (c == '\\' && pos < s.size() && s[pos] != '\n') {
        char e = s[pos];
        advance();
        t.text += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        t.text += c;
      }
    }
    return t;
  }

  Token op() {
    Token t{Tok::Op, "", here()};
    static const char *multi[] = {"**", "//", "<=", ">=", "==", "!=", "...",
                                  "+=", "-=", "*=", "/=", "->", "<<", ">>"};
    for (const char *m : multi) {
      std::string_view mv(m);
      if (s.substr(pos, mv.size()) == mv) {
        for (size_t i = 0; i < mv.size(); ++i) advance();
        t.text = std::string(mv);
        return t;
      }
    }
    char c = s[pos];
    if (std::string_view("()[]{},:.=+-*/@<>;%&|^~!").find(c) == std::string_view::npos)
      fail(file, t.loc,
           (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
               ? fmt::format("unexpected character (byte 0x{:02x})", static_cast<unsigned char>(c))
               : fmt::format("unexpected character '{}'", c));
    advance();
    t.text = std::string(1, c);
    if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxNesting) fail(file, t.loc, "brackets are nested too deeply");
      openLocs.push_back(t.loc);
      openChars.push_back(t.text);
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) fail(file, t.loc, fmt::format("unmatched '{}'", c));
      char open = openChars.back()[0];
      if ((c == ')' && open != '(') || (c == ']' && open != '[') || (c == '}' && open != '{'))
        fail(file, t.loc,
             fmt::format("'{}' does not match '{}' at {}:{}", c, open, openLocs.back().line,
                         openLocs.back().col));
      --depth;
      openLocs.pop_back();
      openChars.pop_back();
    }
    return t;
  }
};

} // namespace

std::vector<Token> tokenize(std::string_view text, const std::string &filename) {
  return Lexer(text, filename).run();
}

} // namespace lazyjit::script
