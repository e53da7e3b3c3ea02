// The recursive-descent parser and the name checker of the tensor-script language. Nesting is
// bounded (kMaxNesting, kMaxDepth) so that pathological input gets an error, not a stack overflow.
#include "Script.h"
#include "ScriptLexer.h"

#include "lazyjit/Support/Error.h"

#include <cmath>
#include <limits>
#include <set>

namespace lazyjit::script {

namespace {

constexpr int kMaxDepth = 500; // height of one expression tree (long chains included)

[[noreturn]] void fail(const std::string &file, Loc loc, const std::string &msg) {
  failAt(file, loc, msg);
}

class Parser {
public:
  Parser(std::vector<Token> toks, const std::string &file) : t(std::move(toks)), file(file) {}

  Script run() {
    Script sc;
    sc.filename = file;
    while (peek().kind != Tok::End) {
      if (peek().kind == Tok::Newline || isOp(";")) {
        ++i;
        continue;
      }
      sc.stmts.push_back(statement());
      if (isOp(";") || peek().kind == Tok::Newline) {
        ++i;
      } else if (peek().kind != Tok::End) {
        fail(file, peek().loc, "expected the end of the statement, got " + describe(peek()));
      }
    }
    return sc;
  }

private:
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

  Stmt statement() {
    Stmt st;
    st.loc = peek().loc;
    if (peek().kind == Tok::Name && peek(1).kind == Tok::Name &&
        (peek().text == "del" || peek().text == "realize" || peek().text == "out")) {
      std::string kw = t[i++].text;
      st.kind = kw == "del" ? StmtKind::Del : kw == "realize" ? StmtKind::Realize : StmtKind::Out;
      do {
        st.nameLocs.push_back(peek().loc);
        st.names.push_back(expectName("after '" + kw + "'"));
      } while (acceptOp(","));
      return st;
    }
    if (peek().kind == Tok::Name &&
        (peek().text == "del" || peek().text == "realize" || peek().text == "out") &&
        (peek(1).kind == Tok::Newline || peek(1).kind == Tok::End))
      fail(file, peek(1).loc, fmt::format("expected a name after '{}'", peek().text));

    ExprPtr first = exprList();
    if (!isOp("=")) {
      if (peek().kind == Tok::Op && peek().text.size() == 2 && peek().text[1] == '=' &&
          std::string_view("+-*/").find(peek().text[0]) != std::string_view::npos)
        fail(file, peek().loc, "augmented assignment ('" + peek().text + "') is not supported");
      st.kind = StmtKind::Eval;
      st.value = std::move(first);
      return st;
    }
    std::vector<ExprPtr> chain;
    chain.push_back(std::move(first));
    while (acceptOp("=")) chain.push_back(exprList());
    st.value = std::move(chain.back());
    chain.pop_back();
    // `Tensor.training = True`
    if (chain.size() == 1 && chain[0]->kind == ExprKind::Attr &&
        chain[0]->kids[0]->kind == ExprKind::Name) {
      st.kind = StmtKind::SetAttr;
      st.attrObject = chain[0]->kids[0]->name;
      st.attrName = chain[0]->name;
      if (st.attrObject != "Tensor" || st.attrName != "training")
        fail(file, chain[0]->loc, "only Tensor.training can be assigned to");
      return st;
    }
    st.kind = StmtKind::Assign;
    for (const auto &target : chain) {
      std::vector<std::string> names;
      if (target->kind == ExprKind::Name) {
        names.push_back(target->name);
      } else if (target->kind == ExprKind::Tuple || target->kind == ExprKind::List) {
        for (const auto &k : target->kids) {
          if (k->kind != ExprKind::Name) fail(file, k->loc, "cannot assign to this expression");
          names.push_back(k->name);
        }
      } else {
        fail(file, target->loc, "cannot assign to this expression");
      }
      st.targets.push_back(std::move(names));
    }
    return st;
  }

  // `a, b` (a tuple without parentheses) or one expression.
  ExprPtr exprList() {
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

  bool atExprEnd() const {
    return peek().kind == Tok::Newline || peek().kind == Tok::End || isOp("=") || isOp(")") ||
           isOp("]") || isOp(";");
  }

  ExprPtr expr() {
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

  ExprPtr additive() {
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

  ExprPtr multiplicative() {
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

  ExprPtr unary() {
    if (isOp("-") || isOp("+")) {
      NestGuard g(*this, peek().loc);
      auto e = make(isOp("-") ? ExprKind::Neg : ExprKind::Pos, peek().loc);
      ++i;
      e->kids.push_back(unary());
      return finish(std::move(e));
    }
    return power();
  }

  ExprPtr power() {
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

  ExprPtr postfix() {
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

  void callArgs(Expr &call) {
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

  ExprPtr subscriptItem() {
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

  ExprPtr atom() {
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
};

// ---- name checking ------------------------------------------------------------------------------

class NameChecker {
public:
  explicit NameChecker(const std::string &file) : file(file) {}

  void run(const Script &sc) {
    const Stmt *lastOut = nullptr;
    for (const Stmt &st : sc.stmts) {
      switch (st.kind) {
      case StmtKind::Assign:
        check(*st.value);
        for (const auto &group : st.targets)
          for (const auto &n : group) define(n);
        break;
      case StmtKind::SetAttr:
      case StmtKind::Eval:
        check(*st.value);
        break;
      case StmtKind::Del:
        for (size_t k = 0; k < st.names.size(); ++k) {
          use(st.names[k], st.nameLocs[k]);
          defined.erase(st.names[k]);
          shadowed.insert(st.names[k]); // a deleted builtin name stays deleted
        }
        break;
      case StmtKind::Realize:
      case StmtKind::Out:
        for (size_t k = 0; k < st.names.size(); ++k) use(st.names[k], st.nameLocs[k]);
        if (st.kind == StmtKind::Out) lastOut = &st;
        break;
      }
    }
    if (lastOut)
      for (size_t k = 0; k < lastOut->names.size(); ++k)
        if (!defined.count(lastOut->names[k]))
          fail(file, lastOut->nameLocs[k],
               "output '" + lastOut->names[k] + "' is deleted before the end of the script");
  }

private:
  const std::string &file;
  std::set<std::string> defined;  // user-bound names
  std::set<std::string> shadowed; // builtin names the script rebinds or deletes

  void define(const std::string &n) {
    defined.insert(n);
    if (isBuiltinName(n)) shadowed.insert(n);
  }
  bool isDefined(const std::string &n) const {
    return defined.count(n) || (isBuiltinName(n) && !shadowed.count(n));
  }
  void use(const std::string &n, Loc loc) {
    if (!isDefined(n)) fail(file, loc, "name '" + n + "' is not defined");
  }

  void check(const Expr &e, bool callee = false) {
    switch (e.kind) {
    case ExprKind::Name:
      use(e.name, e.loc);
      return;
    case ExprKind::Attr: {
      const Expr &obj = *e.kids[0];
      check(obj);
      if (obj.kind == ExprKind::Name && !defined.count(obj.name) && isBuiltinName(obj.name)) {
        if (!isBuiltinMember(obj.name, e.name))
          fail(file, e.loc, fmt::format("{} has no attribute '{}'", obj.name, e.name));
      } else if (!isKnownAttribute(e.name)) {
        fail(file, e.loc, fmt::format("unknown {} '{}'", callee ? "method" : "attribute", e.name));
      }
      return;
    }
    case ExprKind::Call:
      check(*e.kids[0], true);
      for (size_t k = 1; k < e.kids.size(); ++k) check(*e.kids[k]);
      return;
    default:
      for (const auto &k : e.kids) check(*k);
      return;
    }
  }
};

} // namespace

Script parseScript(std::string_view text, const std::string &filename) {
  Parser parser(tokenize(text, filename), filename);
  Script sc = parser.run();
  NameChecker(filename).run(sc);
  return sc;
}

} // namespace lazyjit::script
