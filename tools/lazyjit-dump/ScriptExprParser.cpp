// The expressions of the tensor-script language: Python's precedence levels from tuples and
// comparisons down to postfix calls, attributes and subscripts, and atoms (names, numbers,
// strings, lists, parenthesized expressions).
#include "ScriptParser.h"

#include <cmath>
#include <limits>
#include <set>

namespace lazyjit::script {

// `a, b` (a tuple without parentheses) or one expression.
ExprPtr Parser::exprList() {
  Loc loc = peek().loc;
  ExprPtr first = expr();
  if (!isOp(",")) return first;
  auto tup = make(ExprKind::Tuple, loc);
  tup->kids.push_back(std::move(first));
  while (acceptOp(",")) {
    if (atExprEnd()) break;
    tup->kids.push_back(expr());
  }
  return finish(std::move(tup));
}

bool Parser::atExprEnd() const {
  return peek().kind == Tok::Newline || peek().kind == Tok::End || isOp("=") || isOp(")") ||
         isOp("]") || isOp(";");
}

ExprPtr Parser::expr() {
  ExprPtr lhs = additive();
  static const char *cmps[] = {"<", ">", "<=", ">=", "==", "!="};
  for (const char *c : cmps)
    if (isOp(c)) {
      auto e = make(ExprKind::Compare, peek().loc);
      e->op = t[i++].text;
      e->kids.push_back(std::move(lhs));
      e->kids.push_back(additive());
      for (const char *c2 : cmps)
        if (isOp(c2)) fail(file, peek().loc, "chained comparisons are not supported");
      return finish(std::move(e));
    }
  return lhs;
}

ExprPtr Parser::additive() {
  ExprPtr lhs = multiplicative();
  while (isOp("+") || isOp("-")) {
    auto e = make(ExprKind::Binary, peek().loc);
    e->op = t[i++].text;
    e->kids.push_back(std::move(lhs));
    e->kids.push_back(multiplicative());
    lhs = finish(std::move(e));
  }
  return lhs;
}

ExprPtr Parser::multiplicative() {
  ExprPtr lhs = unary();
  while (isOp("*") || isOp("/") || isOp("@") || isOp("//") || isOp("%")) {
    if (isOp("//") || isOp("%"))
      fail(file, peek().loc, "operator '" + peek().text + "' is not supported");
    auto e = make(ExprKind::Binary, peek().loc);
    e->op = t[i++].text;
    e->kids.push_back(std::move(lhs));
    e->kids.push_back(unary());
    lhs = finish(std::move(e));
  }
  return lhs;
}

ExprPtr Parser::unary() {
  if (isOp("-") || isOp("+")) {
    NestGuard g(*this, peek().loc);
    auto e = make(isOp("-") ? ExprKind::Neg : ExprKind::Pos, peek().loc);
    ++i;
    e->kids.push_back(unary());
    return finish(std::move(e));
  }
  return power();
}

ExprPtr Parser::power() {
  ExprPtr base = postfix();
  if (isOp("**")) {
    NestGuard g(*this, peek().loc);
    auto e = make(ExprKind::Binary, peek().loc);
    e->op = t[i++].text;
    e->kids.push_back(std::move(base));
    e->kids.push_back(unary());
    return finish(std::move(e));
  }
  return base;
}

ExprPtr Parser::postfix() {
  ExprPtr e = atom();
  while (true) {
    if (isOp(".")) {
      ++i;
      auto a = make(ExprKind::Attr, peek().loc);
      a->name = expectName("after '.'");
      a->kids.push_back(std::move(e));
      e = finish(std::move(a));
    } else if (isOp("(")) {
      NestGuard g(*this, peek().loc);
      auto c = make(ExprKind::Call, peek().loc);
      ++i;
      c->kids.push_back(std::move(e));
      callArgs(*c);
      e = finish(std::move(c));
    } else if (isOp("[")) {
      NestGuard g(*this, peek().loc);
      auto s = make(ExprKind::Subscript, peek().loc);
      ++i;
      s->kids.push_back(std::move(e));
      if (isOp("]")) fail(file, peek().loc, "expected an index");
      do {
        if (isOp("]")) break;
        s->kids.push_back(subscriptItem());
      } while (acceptOp(","));
      expectOp("]", "to close the index");
      e = finish(std::move(s));
    } else {
      return e;
    }
  }
}

void Parser::callArgs(Expr &call) {
  while (!isOp(")")) {
    if (peek().kind == Tok::Name && isOp("=", 1)) {
      std::string kw = t[i].text;
      for (const auto &k : call.kwNames)
        if (k == kw) fail(file, peek().loc, "keyword argument '" + kw + "' repeated");
      i += 2;
      call.kwNames.push_back(kw);
      call.kids.push_back(expr());
    } else {
      if (!call.kwNames.empty())
        fail(file, peek().loc, "positional argument follows keyword argument");
      if (isOp("*")) {
        auto st = make(ExprKind::Starred, peek().loc);
        ++i;
        st->kids.push_back(expr());
        call.kids.push_back(finish(std::move(st)));
      } else {
        call.kids.push_back(expr());
      }
    }
    if (!acceptOp(",")) break;
  }
  expectOp(")", "to close the call");
}

ExprPtr Parser::subscriptItem() {
  Loc loc = peek().loc;
  ExprPtr start;
  if (!isOp(":")) start = expr();
  if (!isOp(":")) return start;
  auto sl = make(ExprKind::Slice, loc);
  auto part = [&]() -> ExprPtr {
    if (isOp(":") || isOp(",") || isOp("]")) return make(ExprKind::None, peek().loc);
    return expr();
  };
  sl->kids.push_back(start ? std::move(start) : make(ExprKind::None, loc));
  expectOp(":", "in the slice");
  sl->kids.push_back(part());
  if (acceptOp(":"))
    sl->kids.push_back(part());
  else
    sl->kids.push_back(make(ExprKind::None, peek().loc));
  return finish(std::move(sl));
}

ExprPtr Parser::atom() {
  const Token &tok = peek();
  switch (tok.kind) {
  case Tok::Int: {
    auto e = make(ExprKind::Int, tok.loc);
    e->ival = tok.ival;
    ++i;
    return e;
  }
  case Tok::Float: {
    auto e = make(ExprKind::Float, tok.loc);
    e->fval = tok.fval;
    ++i;
    return e;
  }
  case Tok::Str: {
    auto e = make(ExprKind::Str, tok.loc);
    e->name = tok.text;
    ++i;
    return e;
  }
  case Tok::Name: {
    ExprPtr e;
    if (tok.text == "True" || tok.text == "False") {
      e = make(ExprKind::Bool, tok.loc);
      e->ival = tok.text == "True";
    } else if (tok.text == "None") {
      e = make(ExprKind::None, tok.loc);
    } else if (tok.text == "inf" || tok.text == "nan") {
      e = make(ExprKind::Float, tok.loc);
      e->fval = tok.text == "inf" ? std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::quiet_NaN();
    } else {
      static const std::set<std::string> reserved = {
          "def",    "class", "for",    "while", "if",    "else",   "elif",   "return",
          "import", "from",  "lambda", "with",  "and",   "or",     "not",    "in",
          "is",     "try",   "except", "pass",  "yield", "global", "assert", "raise"};
      if (reserved.count(tok.text))
        fail(file, tok.loc, "'" + tok.text + "' is not supported in lazyjit scripts");
      e = make(ExprKind::Name, tok.loc);
      e->name = tok.text;
    }
    ++i;
    return e;
  }
  case Tok::Op:
    if (tok.text == "...") {
      ++i;
      return make(ExprKind::Ellipsis, tok.loc);
    }
    if (tok.text == "(") {
      NestGuard g(*this, tok.loc);
      Loc loc = tok.loc;
      ++i;
      if (acceptOp(")")) return make(ExprKind::Tuple, loc);
      ExprPtr inner = expr();
      if (acceptOp(")")) return inner;
      auto tup = make(ExprKind::Tuple, loc);
      tup->kids.push_back(std::move(inner));
      while (acceptOp(",")) {
        if (isOp(")")) break;
        tup->kids.push_back(expr());
      }
      expectOp(")", "to close the tuple");
      return finish(std::move(tup));
    }
    if (tok.text == "[") {
      NestGuard g(*this, tok.loc);
      auto lst = make(ExprKind::List, tok.loc);
      ++i;
      while (!isOp("]")) {
        lst->kids.push_back(expr());
        if (!acceptOp(",")) break;
      }
      expectOp("]", "to close the list");
      return finish(std::move(lst));
    }
    break;
  default:
    break;
  }
  fail(file, tok.loc, "expected an expression, got " + describe(tok));
}

} // namespace lazyjit::script
