// The tensor-script language of lazyjit-dump (SCRIPT.md): a small Python subset. This header holds
// its syntax tree and the entry point that tokenizes, parses and name-checks a whole script before
// anything runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit::script {

/// A position in the script, 1-based.
struct Loc {
  int line = 1, col = 1;
};

enum class ExprKind {
  Int,   // ival
  Float, // fval
  Str,   // name holds the text
  Bool,  // ival 0/1
  None,
  Ellipsis,  // `...`
  Name,      // name
  Tuple,     // kids
  List,      // kids
  Neg,       // -kids[0]
  Pos,       // +kids[0]
  Binary,    // kids[0] op kids[1]
  Compare,   // kids[0] op kids[1]
  Attr,      // kids[0].name
  Call,      // kids[0](kids[1..]); the last kwNames.size() arguments are keyword arguments
  Subscript, // kids[0][kids[1..]]
  Slice,     // kids[0]:kids[1]:kids[2], absent parts are None literals
  Starred,   // *kids[0] inside a call
};

struct Expr {
  ExprKind kind;
  Loc loc;
  int64_t ival = 0;
  double fval = 0;
  std::string name; // Name, Attr, Str
  std::string op;   // Binary, Compare: "+", "-", "*", "/", "@", "**", "<", "<=", ...
  std::vector<std::unique_ptr<Expr>> kids;
  std::vector<std::string> kwNames; // Call
  int depth = 1;                    // height of the tree below (bounded by the parser)
};
using ExprPtr = std::unique_ptr<Expr>;

enum class StmtKind {
  Assign,  // targets = value (each target group is one name or a tuple of names)
  SetAttr, // target.attrName = value (Tensor.training, x.requires_grad, layer.weight, opt.lr, ...)
  SetItem, // target[...] = value (target is the Subscript expression)
  Del,     // del names
  Realize, // realize names
  Out,     // out names
  Eval,    // an expression evaluated for its effect
  With,    // with value [as targets[0][0]]: body
};

struct Stmt {
  StmtKind kind;
  Loc loc;
  std::vector<std::vector<std::string>> targets; // Assign: one group per `=`; With: the `as` name
  std::vector<Loc> nameLocs;                     // Del/Realize/Out: where each name is
  std::vector<std::string> names;                // Del/Realize/Out
  ExprPtr target;                                // SetAttr: the object; SetItem: the subscript
  std::string attrName;                          // SetAttr
  Loc attrLoc;                                   // SetAttr: where attrName is
  ExprPtr value;                                 // Assign/SetAttr/Eval/With
  std::vector<Stmt> body;                        // With
};

struct Script {
  std::string filename;
  std::vector<Stmt> stmts;
};

/// Tokenizes, parses and checks names (every name is bound before use; attribute names exist).
/// Throws ParseError with `FILE:LINE:COL: error: <message>`.
Script parseScript(std::string_view text, const std::string &filename);

/// The names that every script sees (Tensor, Variable, dtypes, nn, optim, get_parameters, ...).
bool isBuiltinName(std::string_view name);
/// True if `name` is an attribute of some script value (method, property or member).
bool isKnownAttribute(std::string_view name);
/// True if `name` is a member of the builtin object `object` ("Tensor", "dtypes", "nn").
bool isBuiltinMember(std::string_view object, std::string_view name);

} // namespace lazyjit::script
