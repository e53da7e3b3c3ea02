// The statements of the tensor-script language: blocks, simple statements (assignments, `out`,
// `del`, expression statements), `with` blocks and imports of tinygrad names; and parseScript.
#include "ScriptParser.h"

namespace lazyjit::script {

// Statements up to the end of the input or, in a `with` block, up to its Dedent.
void Parser::block(std::vector<Stmt> &out, bool nested) {
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
bool Parser::compound(std::vector<Stmt> &out) {
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
bool Parser::withStatement(std::vector<Stmt> &out) {
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
void Parser::importStatement(std::vector<Stmt> &out) {
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

void Parser::bindImport(std::vector<Stmt> &out, Loc loc, const std::string &as,
                        const std::string &name, const std::string &module) {
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

Stmt Parser::statement() {
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
  // `x[0, 1:3] = v`
  if (chain.size() == 1 && chain[0]->kind == ExprKind::Subscript) {
    st.kind = StmtKind::SetItem;
    st.target = std::move(chain[0]);
    return st;
  }
  for (const auto &target : chain)
    if (target->kind == ExprKind::Attr || target->kind == ExprKind::Subscript)
      fail(file, target->loc, "an attribute or item can only be assigned alone (one '=' per statement)");
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

Script parseScript(std::string_view text, const std::string &filename) {
  Parser parser(tokenize(text, filename), filename);
  Script sc = parser.run();
  checkNames(sc);
  return sc;
}

} // namespace lazyjit::script
