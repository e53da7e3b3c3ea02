// The recursive-descent parser of the tensor-script language (statements, `with` blocks, imports
// and expressions). Nesting is bounded (kMaxNesting, kMaxDepth) so that pathological input gets an
// error, not a stack overflow.
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
    block(sc.stmts, false);
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

  // Statements up to the end of the input or, in a `with` block, up to its Dedent.
  void block(std::vector<Stmt> &out, bool nested) {
    while (peek().kind != Tok::End) {
      if (peek().kind == Tok::Newline || isOp(";")) {
        ++i;
        continue;
      }
      if (peek().kind == Tok::Dedent && nested) {
        ++i;
        return;
      }
      if (peek().kind == Tok::Indent)
        fail(file, peek().loc, "unexpected indentation: only the body of a 'with' is indented");
      if (compound(out)) continue; // a `with` block ends at its Dedent
      if (isOp(";") || peek().kind == Tok::Newline) {
        ++i;
      } else if (peek().kind != Tok::End && peek().kind != Tok::Dedent) {
        fail(file, peek().loc, "expected the end of the statement, got " + describe(peek()));
      }
    }
  }

  // One statement: an import, a `with`, or a simple statement. Returns true when it ended with an
  // indented block (so no end of line follows).
  bool compound(std::vector<Stmt> &out) {
    if (peek().kind == Tok::Name && (peek().text == "import" || peek().text == "from")) {
      importStatement(out);
      return false;
    }
    if (peek().kind == Tok::Name && peek().text == "with") return withStatement(out);
    out.push_back(statement());
    return false;
  }

  // `with A [as x], B [as y]: BODY` is `with A as x:` around `with B as y: BODY`; the body is an
  // indented block or statements on the same line separated by ';'.
  bool withStatement(std::vector<Stmt> &out) {
    NestGuard g(*this, peek().loc);
    ++i;
    std::vector<Stmt> *into = &out;
    do {
      Stmt st;
      st.kind = StmtKind::With;
      st.loc = peek().loc;
      st.value = expr();
      if (peek().kind == Tok::Name && peek().text == "as") {
        ++i;
        st.nameLocs.push_back(peek().loc);
        st.targets.push_back({expectName("after 'as'")});
      }
      into->push_back(std::move(st));
      into = &into->back().body;
    } while (acceptOp(","));
    expectOp(":", "after the 'with' items");
    if (peek().kind == Tok::Newline) {
      ++i;
      if (peek().kind != Tok::Indent)
        fail(file, peek().loc, "expected an indented block after 'with'");
      ++i;
      block(*into, true);
      return true;
    }
    do {
      if (peek().kind == Tok::Newline || peek().kind == Tok::End) break;
      if (peek().kind == Tok::Name && peek().text == "with")
        fail(file, peek().loc, "a 'with' on one line cannot hold another 'with'");
      compound(*into);
    } while (acceptOp(";"));
    if (into->empty()) fail(file, peek().loc, "expected a statement after 'with ...:'");
    return false;
  }

  // `from tinygrad.nn import optim`, `import tinygrad.nn as nn`: the names a script imports from
  // tinygrad are builtins of the language, so importing one is a no-op; a name that is bound
  // differently (`from tinygrad.nn.optim import SGD`, an `as` alias) becomes an assignment
  // (`SGD = optim.SGD`). Anything else is an error.
  void importStatement(std::vector<Stmt> &out) {
    Loc loc = peek().loc;
    bool isFrom = t[i++].text == "from";
    std::string module = expectName(isFrom ? "after 'from'" : "after 'import'");
    while (acceptOp(".")) module += "." + expectName("in the module name");
    if (module != "tinygrad" && module.rfind("tinygrad.", 0) != 0)
      fail(file, loc,
           fmt::format("cannot import from '{}': a script can only import the tinygrad "
                       "names it already has (Tensor, nn, optim, dtypes, ...)",
                       module));
    auto alias = [&](const std::string &dflt) {
      if (peek().kind != Tok::Name || peek().text != "as") return dflt;
      ++i;
      return expectName("after 'as'");
    };
    if (!isFrom) {
      size_t dot = module.rfind('.');
      if (dot == std::string::npos)
        fail(file, loc,
             "a script cannot use the module 'tinygrad' itself: import the names it uses "
             "(from tinygrad.tensor import Tensor)");
      if (!(peek().kind == Tok::Name && peek().text == "as"))
        fail(file, loc, "write 'import " + module + " as NAME' or 'from ... import NAME'");
      bindImport(out, loc, alias(""), module.substr(dot + 1), module.substr(0, dot));
      return;
    }
    if (!(peek().kind == Tok::Name && peek().text == "import"))
      fail(file, peek().loc,
           "expected 'import' after 'from " + module + "', got " + describe(peek()));
    ++i;
    bool paren = acceptOp("(");
    do {
      if (paren && isOp(")")) break;
      Loc nameLoc = peek().loc;
      std::string name = expectName("to import");
      bindImport(out, nameLoc, alias(name), name, module);
    } while (acceptOp(","));
    if (paren) expectOp(")", "to close the import list");
  }

  void bindImport(std::vector<Stmt> &out, Loc loc, const std::string &as, const std::string &name,
                  const std::string &module) {
    ExprPtr value;
    if (isBuiltinName(name)) {
      if (as == name) return;
      value = make(ExprKind::Name, loc);
      value->name = name;
    } else {
      const char *object = module == "tinygrad.nn"         ? "nn"
                           : module == "tinygrad.nn.optim" ? "optim"
                                                           : "";
      if (!*object || !isBuiltinMember(object, name))
        fail(file, loc,
             fmt::format("cannot import '{}' from '{}': it is not a name lazyjit scripts "
                         "know",
                         name, module));
      auto obj = make(ExprKind::Name, loc);
      obj->name = object;
      value = make(ExprKind::Attr, loc);
      value->name = name;
      value->kids.push_back(std::move(obj));
      value = finish(std::move(value));
    }
    Stmt st;
    st.kind = StmtKind::Assign;
    st.loc = loc;
    st.targets.push_back({as});
    st.value = std::move(value);
    out.push_back(std::move(st));
  }

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
    // `Tensor.training = True`, `x.requires_grad = True`, `c1.weight = w`, `opt.lr = 0.01`
    if (chain.size() == 1 && chain[0]->kind == ExprKind::Attr) {
      st.kind = StmtKind::SetAttr;
      st.attrName = chain[0]->name;
      st.attrLoc = chain[0]->loc;
      st.target = std::move(chain[0]->kids[0]);
      return st;
    }
    for (const auto &target : chain)
      if (target->kind == ExprKind::Attr)
        fail(file, target->loc, "an attribute can only be assigned alone (one '=' per statement)");
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

} // namespace

Script parseScript(std::string_view text, const std::string &filename) {
  Parser parser(tokenize(text, filename), filename);
  Script sc = parser.run();
  checkNames(sc);
  return sc;
}

} // namespace lazyjit::script
