// The name checker of the tensor-script language: before anything runs, every name must be bound
// before it is used (through `with` blocks too), builtin objects are asked only for members they
// have, and an attribute must exist on some script value.
#include "Script.h"
#include "ScriptLexer.h"

#include "lazyjit/Support/Error.h"

#include <set>

namespace lazyjit::script {

namespace {

[[noreturn]] void fail(const std::string &file, Loc loc, const std::string &msg) {
  failAt(file, loc, msg);
}

class NameChecker {
public:
  explicit NameChecker(const std::string &file) : file(file) {}

  void run(const Script &sc) {
    const Stmt *lastOut = nullptr;
    runBody(sc.stmts, lastOut);
    if (lastOut)
      for (size_t k = 0; k < lastOut->names.size(); ++k)
        if (!defined.count(lastOut->names[k]))
          fail(file, lastOut->nameLocs[k],
               "output '" + lastOut->names[k] + "' is deleted before the end of the script");
  }

private:
  void runBody(const std::vector<Stmt> &stmts, const Stmt *&lastOut) {
    for (const Stmt &st : stmts) {
      switch (st.kind) {
      case StmtKind::Assign:
        check(*st.value);
        for (const auto &group : st.targets)
          for (const auto &n : group) define(n);
        break;
      case StmtKind::With:
        check(*st.value);
        for (const auto &group : st.targets)
          for (const auto &n : group) define(n);
        runBody(st.body, lastOut);
        break;
      case StmtKind::SetAttr:
        check(*st.value);
        checkAttr(*st.target, st.attrName, st.attrLoc, false);
        break;
      case StmtKind::Eval:
        check(*st.value);
        break;
      case StmtKind::SetItem:
        check(*st.value);
        check(*st.target);
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
  }

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

  void checkAttr(const Expr &obj, const std::string &name, Loc loc, bool callee) {
    check(obj);
    if (obj.kind == ExprKind::Name && !defined.count(obj.name) && isBuiltinName(obj.name)) {
      if (!isBuiltinMember(obj.name, name))
        fail(file, loc, fmt::format("{} has no attribute '{}'", obj.name, name));
    } else if (!isKnownAttribute(name)) {
      fail(file, loc, fmt::format("unknown {} '{}'", callee ? "method" : "attribute", name));
    }
  }

  void check(const Expr &e, bool callee = false) {
    switch (e.kind) {
    case ExprKind::Name:
      use(e.name, e.loc);
      return;
    case ExprKind::Attr:
      checkAttr(*e.kids[0], e.name, e.loc, callee);
      return;
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

void checkNames(const Script &sc) { NameChecker(sc.filename).run(sc); }

} // namespace lazyjit::script
