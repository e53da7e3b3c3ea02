// The recursive-descent parser of the tensor-script language, one class in two files:
// ScriptParser.cpp parses statements (assignments, `with` blocks, imports), ScriptExprParser.cpp
// expressions. Nesting is bounded (kMaxNesting, kMaxDepth) so that pathological input gets an
// error, not a stack overflow. Private to the tool: parseScript (Script.h) is its interface.
#pragma once

#include "Script.h"
#include "ScriptLexer.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <string>
#include <vector>

namespace lazyjit::script {

class Parser {
public:
  Parser(std::vector<Token> toks, const std::string &file) : t(std::move(toks)), file(file) {}

  Script run() {
    Script sc;
    sc.filename = file;
    block(sc.stmts, false);
    return sc;
  }

private:
  static constexpr int kMaxDepth = 500; // height of one expression tree (long chains included)

  [[noreturn]] static void fail(const std::string &file, Loc loc, const std::string &msg) {
    failAt(file, loc, msg);
  }

  std::vector<Token> t;
  const std::string &file;
  size_t i = 0;
  int nest = 0;

  const Token &peek(size_t ahead = 0) const { return t[std::min(i + ahead, t.size() - 1)]; }
  bool isOp(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::Op && peek(ahead).text == op;
  }
  bool acceptOp(std::string_view op) {
    if (!isOp(op)) return false;
    ++i;
    return true;
  }
  static std::string describe(const Token &tok) {
    switch (tok.kind) {
    case Tok::Newline:
      return "the end of the line";
    case Tok::Indent:
      return "an indentation";
    case Tok::Dedent:
      return "the end of an indented block";
    case Tok::End:
      return "the end of the input";
    case Tok::Str:
      return "a string";
    default:
      return "'" + tok.text + "'";
    }
  }
  void expectOp(std::string_view op, std::string_view context) {
    if (acceptOp(op)) return;
    fail(file, peek().loc, fmt::format("expected '{}' {}, got {}", op, context, describe(peek())));
  }
  std::string expectName(std::string_view context) {
    if (peek().kind != Tok::Name)
      fail(file, peek().loc, fmt::format("expected a name {}, got {}", context, describe(peek())));
    return t[i++].text;
  }

  ExprPtr make(ExprKind k, Loc loc) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->loc = loc;
    return e;
  }
  ExprPtr finish(ExprPtr e) {
    int d = 0;
    for (const auto &k : e->kids) d = std::max(d, k->depth);
    e->depth = d + 1;
    if (e->depth > kMaxDepth) fail(file, e->loc, "expression is nested too deeply");
    return e;
  }

  struct NestGuard {
    Parser &p;
    NestGuard(Parser &parser, Loc loc) : p(parser) {
      if (++p.nest > kMaxNesting) fail(p.file, loc, "expression is nested too deeply");
    }
    ~NestGuard() { --p.nest; }
  };

  // ---- statements (ScriptParser.cpp) ----
  void block(std::vector<Stmt> &out, bool nested);
  bool compound(std::vector<Stmt> &out);
  bool withStatement(std::vector<Stmt> &out);
  void importStatement(std::vector<Stmt> &out);
  void bindImport(std::vector<Stmt> &out, Loc loc, const std::string &as, const std::string &name,
                  const std::string &module);
  Stmt statement();

  // ---- expressions (ScriptExprParser.cpp) ----
  ExprPtr exprList();
  bool atExprEnd() const;
  ExprPtr expr();
  ExprPtr additive();
  ExprPtr multiplicative();
  ExprPtr unary();
  ExprPtr power();
  ExprPtr postfix();
  void callArgs(Expr &call);
  ExprPtr subscriptItem();
  ExprPtr atom();
};

} // namespace lazyjit::script
