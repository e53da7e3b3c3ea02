// The textual kernel-AST format: printer and parser (grammar in docs/ir.md). The parser rebuilds
// symbolic nodes with the reference's raw constructors, not the simplifying operators, so that a
// printed node key parses back to a node with the same key (node equality is key equality).
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Error.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

namespace lazyjit {

namespace {

// ---- printing -----------------------------------------------------------------------------------

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || (c >= '0' && c <= '9'); }

bool isIdentifier(std::string_view s) {
  if (s.empty() || !isIdentStart(s[0])) return false;
  for (char c : s)
    if (!isIdentChar(c)) return false;
  return true;
}

// Variable names are printed verbatim inside node keys, so they must be identifiers.
void checkPrintable(const Node &n) {
  for (const auto &v : n.vars())
    LAZYJIT_USER_CHECK(!v->expr || isIdentifier(*v->expr), UnsupportedError,
                       "printAst: variable name '{}' is not an identifier", *v->expr);
}

std::string printTuple(const std::vector<std::string> &items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  if (items.size() == 1) s += ",";
  return s + ")";
}

std::string printShape(const Shape &shape) {
  std::vector<std::string> items;
  for (const auto &x : shape) items.push_back(printSInt(x));
  return printTuple(items);
}

std::string printPairs(const std::vector<SIntPair> &pairs) {
  std::vector<std::string> items;
  for (const auto &[a, b] : pairs) items.push_back("(" + printSInt(a) + ", " + printSInt(b) + ")");
  return printTuple(items);
}

std::string printView(const View &v) {
  return "view shape=" + printShape(v.shape) + " strides=" + printShape(v.strides) +
         " offset=" + printSInt(v.offset) + " mask=" + (v.mask ? printPairs(*v.mask) : "None") +
         " contiguous=" + (v.contiguous ? "True" : "False");
}

struct StructuralHash {
  size_t operator()(const LazyOp *op) const { return op->hash(); }
};
struct StructuralEq {
  bool operator()(const LazyOp *a, const LazyOp *b) const { return *a == *b; }
};

class Printer {
public:
  std::string print(const LazyOp &root) {
    count(root);
    emit(root, 0);
    return std::move(out);
  }

private:
  // Occurrences of each distinct (structurally) subtree with operands; leaves are never labeled.
  std::unordered_map<const LazyOp *, int, StructuralHash, StructuralEq> seen;
  std::unordered_map<const LazyOp *, int, StructuralHash, StructuralEq> labels;
  std::string out;
  int nextLabel = 0;

  void count(const LazyOp &op) {
    for (const auto &s : op.src)
      LAZYJIT_USER_CHECK(!s.isBuffer(), UnsupportedError,
                         "printAst: {} has a LazyBuffer source; only scheduled ASTs have a "
                         "textual form",
                         opName(op.op));
    if (op.src.empty()) return;
    auto [it, fresh] = seen.emplace(&op, 1);
    if (!fresh) {
      ++it->second;
      return;
    }
    for (const auto &s : op.src) count(*s.op);
  }

  void emit(const LazyOp &op, int indent) {
    std::string pad(static_cast<size_t>(indent), ' ');
    if (!op.src.empty()) {
      if (auto it = labels.find(&op); it != labels.end()) {
        out += pad + "$" + std::to_string(it->second) + "\n";
        return;
      }
    }
    out += pad;
    if (!op.src.empty() && seen.at(&op) > 1) {
      int label = nextLabel++;
      labels.emplace(&op, label);
      out += "$" + std::to_string(label) + " = ";
    }
    out += opName(op.op);
    const ShapeTracker *st = nullptr;
    std::visit(
        [&](const auto &a) {
          using T = std::decay_t<decltype(a)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
          } else if constexpr (std::is_same_v<T, Shape>) {
            out += " shape=" + printShape(a);
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            std::vector<std::string> items;
            for (int64_t x : a) items.push_back(std::to_string(x));
            out += " axes=" + printTuple(items);
          } else if constexpr (std::is_same_v<T, PadArg>) {
            out += " pad=" + printPairs(a);
          } else if constexpr (std::is_same_v<T, CastArg>) {
            out += " dtype=" + std::string(a.dtype.name()) +
                   " bitcast=" + (a.bitcast ? "True" : "False");
          } else if constexpr (std::is_same_v<T, MemBuffer>) {
            out += " idx=" + std::to_string(a.idx) + " dtype=" + std::string(a.dtype.name());
            st = &a.st;
          } else if constexpr (std::is_same_v<T, ConstBuffer>) {
            out += " val=" + printDouble(a.val) + " dtype=" + std::string(a.dtype.name());
            st = &a.st;
          } else if constexpr (std::is_same_v<T, double>) {
            out += " val=" + printDouble(a);
          } else if constexpr (std::is_same_v<T, CustomOpRef>) {
            throw UnsupportedError("printAst: the CUSTOM function " + (a ? a->name : "?") +
                                   " has no textual form");
          }
        },
        op.arg);
    out += "\n";
    if (st)
      for (const auto &v : st->views) out += pad + "  " + printView(v) + "\n";
    for (const auto &s : op.src) emit(*s.op, indent + 2);
  }
};

// ---- parsing: one line at a time -------------------------------------------------------------

constexpr int kMaxNodeDepth = 200; // nesting of parentheses in one symbolic value
constexpr int kMaxAstDepth = 1000; // nesting of AST nodes (indentation levels)

[[noreturn]] void fail(const std::string &file, int line, int col, const std::string &msg) {
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
      result = ltNode(first, operand(depth));
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
    auto n = std::make_shared<Node>(NodeKind::Div);
    n->a = std::move(a);
    n->b = b;
    n->min = floordiv(n->a->min, b);
    n->max = floordiv(n->a->max, b);
    return n;
  }

  NodeRef modNode(NodeRef a, int64_t b, size_t at) {
    if (b <= 0) errorAt(at, "a symbolic modulo needs a positive divisor");
    if (!truthy(ge(a->min, 0))) errorAt(at, "a symbolic modulo needs a nonnegative numerator");
    auto n = std::make_shared<Node>(NodeKind::Mod);
    n->a = std::move(a);
    n->b = b;
    const SInt &amin = n->a->min, &amax = n->a->max;
    bool full =
        truthy(ge(amax - amin, b)) || (pyNe(amin, amax) && truthy(ge(mod(amin, b), mod(amax, b))));
    n->min = full ? SInt(0) : mod(amin, b);
    n->max = full ? SInt(b - 1) : mod(amax, b);
    return n;
  }

  NodeRef ltNode(NodeRef a, SInt b) {
    auto n = std::make_shared<Node>(NodeKind::Lt);
    n->a = std::move(a);
    n->b = std::move(b);
    SInt bmin = n->b.isInt() ? n->b : n->b.node()->min;
    SInt bmax = n->b.isInt() ? n->b : n->b.node()->max;
    if (truthy(lt(n->a->max, bmin)))
      n->min = n->max = 1;
    else if (truthy(ge(n->a->min, bmax)))
      n->min = n->max = 0;
    else
      n->min = 0, n->max = 1;
    return n;
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

// ---- parsing: lines into trees -----------------------------------------------------------------

// The `key=value` fields of an op line; each remembers its column for messages.
struct Fields {
  std::optional<Shape> shape;
  std::optional<std::vector<int64_t>> axes;
  std::optional<PadArg> pad;
  std::optional<DType> dtype;
  std::optional<bool> bitcast;
  std::optional<int64_t> idx;
  std::optional<double> val;
};

struct Pending {
  enum class Kind { Op, View, Ref };
  int indent = 0;
  int line = 0, col = 0;
  Kind kind = Kind::Op;
  Op op{};
  Fields fields;
  std::optional<int> label;
  std::vector<View> views;
  std::vector<LazySrc> srcs;
  LazyOpRef done; // Ref: the referenced node
};

bool isBufferLeaf(Op op) { return op == Op::Load || op == Op::Const || op == Op::Store; }

std::string plural(size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

class AstParser {
public:
  AstParser(std::string_view text, const std::string &file) : text(text), file(file) {}

  std::vector<LazyOpRef> parse(bool single) {
    size_t start = 0;
    int lineNo = 0;
    while (start <= text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string_view::npos) end = text.size();
      ++lineNo;
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      eofLine = lineNo;
      eofCol = static_cast<int>(line.size()) + 1;
      parseLine(line, lineNo, single);
      if (end == text.size()) break;
      start = end + 1;
    }
    while (!stack.empty()) finishTop(true);
    if (roots.empty()) fail(file, 1, 1, "expected a kernel AST, found none");
    return std::move(roots);
  }

private:
  std::string_view text;
  const std::string &file;
  std::vector<Pending> stack;
  std::vector<LazyOpRef> roots;
  std::map<int, LazyOpRef> labels;
  std::map<std::string, std::pair<SInt, SInt>> varRanges; // per AST: one range per variable name
  int eofLine = 1, eofCol = 1; // where "unexpected end of input" points

  void parseLine(std::string_view raw, int lineNo, bool single) {
    // strip a comment; no token of the format contains '#'
    std::string_view line = raw.substr(0, raw.find('#'));
    size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    if (indent < line.size() && line[indent] == '\t')
      fail(file, lineNo, static_cast<int>(indent) + 1, "tabs are not allowed; indent with spaces");
    size_t last = line.find_last_not_of(' ');
    if (last == std::string_view::npos) return; // blank
    line = line.substr(0, last + 1);

    LineParser p(line, file, lineNo);
    p.varRanges = &varRanges;
    p.pos = indent;
    int ind = static_cast<int>(indent);

    while (!stack.empty() && (stack.back().indent >= ind || stack.back().kind != Pending::Kind::Op))
      finishTop(false); // view and reference lines have no operands

    if (stack.empty()) {
      if (ind != 0) p.error("unexpected indentation: an AST starts in column 1");
      if (single && !roots.empty()) p.error("expected one AST, found a second one");
      labels.clear(); // labels are local to one AST
      varRanges.clear();
    } else {
      const Pending &parent = stack.back();
      if (ind != parent.indent + 2)
        p.error(fmt::format("expected an indentation of {} spaces under the line {} operator, "
                            "got {}",
                            parent.indent + 2, parent.line, ind));
      if (static_cast<int>(stack.size()) >= kMaxAstDepth) p.error("the AST is nested too deeply");
    }

    Pending n;
    n.indent = ind;
    n.line = lineNo;
    n.col = p.col();
    if (p.peek() == '$') {
      ++p.pos;
      int label = static_cast<int>(p.integer("label"));
      p.skipSpaces();
      if (p.atEnd()) {
        auto it = labels.find(label);
        if (it == labels.end()) p.errorAt(indent, fmt::format("unknown label ${}", label));
        n.kind = Pending::Kind::Ref;
        n.done = it->second;
        push(std::move(n), p);
        return;
      }
      p.expect("=", "after the label");
      p.skipSpaces();
      if (labels.count(label)) p.errorAt(indent, fmt::format("label ${} is defined twice", label));
      n.label = label;
      n.col = p.col();
    }
    size_t wordAt = p.pos;
    std::string_view w = p.word();
    if (w == "view") {
      if (n.label) p.errorAt(wordAt, "a view line cannot have a label");
      n.kind = Pending::Kind::View;
      parseView(p, n);
      push(std::move(n), p);
      return;
    }
    if (w.empty()) p.error("expected an operator such as BinaryOps.ADD, got " + p.describe());
    auto op = opFromName(w);
    if (!op) p.errorAt(wordAt, fmt::format("unknown operator '{}'", w));
    n.op = *op;
    parseFields(p, n);
    push(std::move(n), p);
  }

  void push(Pending n, const LineParser &p) {
    if (!stack.empty()) {
      Pending &parent = stack.back();
      if (n.kind == Pending::Kind::View) {
        if (!isBufferLeaf(parent.op))
          fail(file, n.line, n.col, fmt::format("{} has no views", opName(parent.op)));
        if (!parent.srcs.empty()) fail(file, n.line, n.col, "view lines come before the operands");
      }
    } else if (n.kind != Pending::Kind::Op) {
      fail(file, n.line, n.col,
           n.kind == Pending::Kind::View ? "a view line must follow a buffer operator"
                                         : "an AST cannot start with a reference");
    }
    (void)p;
    stack.push_back(std::move(n));
  }

  void parseFields(LineParser &p, Pending &n) {
    Fields &f = n.fields;
    while (true) {
      p.skipSpaces();
      if (p.atEnd()) return;
      size_t keyAt = p.pos;
      std::string_view key = p.word();
      if (key.empty()) p.error("expected a field such as dtype=float32, got " + p.describe());
      p.expect("=", "after the field name");
      auto once = [&](bool present) {
        if (present) p.errorAt(keyAt, fmt::format("field '{}' is given twice", key));
      };
      if (key == "shape") {
        once(f.shape.has_value());
        f.shape = p.shapeTuple("shape");
        checkShape(p, *f.shape, keyAt);
      } else if (key == "axes") {
        once(f.axes.has_value());
        std::vector<int64_t> axes;
        p.tuple("axes", [&] { axes.push_back(p.integer("axis")); });
        f.axes = std::move(axes);
      } else if (key == "pad") {
        once(f.pad.has_value());
        f.pad = p.pairTuple("pad");
      } else if (key == "dtype") {
        once(f.dtype.has_value());
        f.dtype = p.dtype();
      } else if (key == "bitcast") {
        once(f.bitcast.has_value());
        f.bitcast = p.boolean();
      } else if (key == "idx") {
        once(f.idx.has_value());
        size_t at = p.pos;
        f.idx = p.integer("buffer index");
        if (*f.idx < 0 || *f.idx > 1000000) p.errorAt(at, "buffer index out of range");
      } else if (key == "val") {
        once(f.val.has_value());
        f.val = p.number();
      } else {
        p.errorAt(keyAt, fmt::format("unknown field '{}'", key));
      }
      if (!p.atEnd() && p.peek() != ' ')
        p.error("expected a space between fields, got " + p.describe());
    }
  }

  void checkShape(const LineParser &p, const Shape &shape, size_t at) {
    for (const auto &d : shape)
      if (truthy(lt(d, 0)))
        p.errorAt(at, "bad shape " + printShape(shape) + ": a dimension is negative");
  }

  void parseView(LineParser &p, Pending &n) {
    std::optional<Shape> shape, strides;
    std::optional<SInt> offset;
    std::optional<std::optional<Mask>> mask;
    std::optional<bool> contiguous;
    while (true) {
      p.skipSpaces();
      if (p.atEnd()) break;
      size_t keyAt = p.pos;
      std::string_view key = p.word();
      if (key.empty()) p.error("expected a view field such as shape=(...), got " + p.describe());
      p.expect("=", "after the field name");
      auto once = [&](bool present) {
        if (present) p.errorAt(keyAt, fmt::format("field '{}' is given twice", key));
      };
      if (key == "shape") {
        once(shape.has_value());
        shape = p.shapeTuple("shape");
        checkShape(p, *shape, keyAt);
      } else if (key == "strides") {
        once(strides.has_value());
        strides = p.shapeTuple("strides");
      } else if (key == "offset") {
        once(offset.has_value());
        offset = p.sint();
      } else if (key == "mask") {
        once(mask.has_value());
        if (p.accept("None"))
          mask = std::optional<Mask>();
        else
          mask = std::optional<Mask>(p.pairTuple("mask"));
      } else if (key == "contiguous") {
        once(contiguous.has_value());
        contiguous = p.boolean();
      } else {
        p.errorAt(keyAt, fmt::format("unknown view field '{}'", key));
      }
      if (!p.atEnd() && p.peek() != ' ')
        p.error("expected a space between fields, got " + p.describe());
    }
    const char *missing = !shape        ? "shape"
                          : !strides    ? "strides"
                          : !offset     ? "offset"
                          : !mask       ? "mask"
                          : !contiguous ? "contiguous"
                                        : nullptr;
    if (missing) fail(file, n.line, n.col, fmt::format("the view has no '{}' field", missing));
    if (strides->size() != shape->size())
      fail(file, n.line, n.col,
           fmt::format("bad view: {} for a shape of rank {}", plural(strides->size(), "stride"),
                       shape->size()));
    if (*mask && (*mask)->size() != shape->size())
      fail(file, n.line, n.col,
           fmt::format("bad view: {} for a shape of rank {}", plural((*mask)->size(), "mask pair"),
                       shape->size()));
    View v;
    v.shape = std::move(*shape);
    v.strides = std::move(*strides);
    v.offset = std::move(*offset);
    v.mask = std::move(*mask);
    v.contiguous = *contiguous;
    n.views.push_back(std::move(v));
  }

  // Builds the node on top of the stack and hands it to its parent (or to the roots).
  void finishTop(bool atEof) {
    Pending n = std::move(stack.back());
    stack.pop_back();
    if (n.kind == Pending::Kind::View) {
      stack.back().views.push_back(std::move(n.views[0]));
      return;
    }
    LazyOpRef built = n.kind == Pending::Kind::Ref ? n.done : build(n, atEof);
    if (n.label) labels.emplace(*n.label, built);
    if (stack.empty())
      roots.push_back(std::move(built));
    else
      stack.back().srcs.emplace_back(std::move(built));
  }

  [[noreturn]] void nodeError(const Pending &n, bool atEof, const std::string &msg) {
    if (atEof)
      fail(file, eofLine, eofCol,
           fmt::format("unexpected end of input: {} (line {})", msg, n.line));
    fail(file, n.line, n.col, msg);
  }

  LazyOpRef build(Pending &n, bool atEof) {
    std::string name(opName(n.op));
    int arity = opArity(n.op);
    size_t got = n.srcs.size();
    if (arity >= 0 && got != static_cast<size_t>(arity))
      nodeError(n, atEof && got < static_cast<size_t>(arity),
                fmt::format("{} expects {}, got {}", name, plural(arity, "operand"), got));
    if (arity < 0 && got > 1)
      nodeError(n, false, fmt::format("{} expects at most 1 operand, got {}", name, got));

    Fields &f = n.fields;
    auto require = [&](bool ok, std::string_view what) {
      if (!ok) nodeError(n, false, fmt::format("{} needs {}", name, what));
    };
    // `absent` lists the fields the op does not take; each must be missing
    auto only = [&](std::initializer_list<bool> absent, std::string_view what) {
      for (bool a : absent)
        if (!a) nodeError(n, false, fmt::format("{} takes {}", name, what));
    };
    auto requireViews = [&] {
      if (n.views.empty()) nodeError(n, atEof, fmt::format("{} has no view lines", name));
    };
    LazyOpArg arg;
    if (n.op == Op::Load || n.op == Op::Store) {
      require(f.idx && f.dtype, "idx= and dtype=");
      only({!f.shape, !f.axes, !f.pad, !f.bitcast, !f.val}, "only idx= and dtype=");
      requireViews();
      arg = MemBuffer{static_cast<int>(*f.idx), *f.dtype, ShapeTracker{std::move(n.views)}};
    } else if (n.op == Op::Const) {
      require(f.val && f.dtype, "val= and dtype=");
      only({!f.shape, !f.axes, !f.pad, !f.bitcast, !f.idx}, "only val= and dtype=");
      requireViews();
      arg = ConstBuffer{*f.val, *f.dtype, ShapeTracker{std::move(n.views)}};
    } else if (n.op == Op::Cast) {
      require(f.dtype.has_value(), "dtype=");
      only({!f.shape, !f.axes, !f.pad, !f.idx, !f.val}, "only dtype= and bitcast=");
      arg = CastArg{*f.dtype, f.bitcast.value_or(false)};
    } else if (isReduceOp(n.op)) {
      require(f.shape.has_value(), "shape= (the output shape)");
      only({!f.axes, !f.pad, !f.dtype, !f.bitcast, !f.idx, !f.val}, "only shape=");
      arg = std::move(*f.shape);
    } else if (n.op == Op::Custom) {
      nodeError(n, false, "LoadOps.CUSTOM runs a host function and cannot be parsed");
    } else {
      // Generic ops: at most one argument, chosen by its field.
      int count = !!f.shape + !!f.axes + !!f.pad + !!f.val + !!f.dtype + !!f.bitcast + !!f.idx;
      if (count > 1 || f.dtype || f.bitcast || f.idx)
        nodeError(n, false, fmt::format("{} takes at most one of shape=, axes=, pad=, val=", name));
      if (f.shape)
        arg = std::move(*f.shape);
      else if (f.axes)
        arg = std::move(*f.axes);
      else if (f.pad)
        arg = std::move(*f.pad);
      else if (f.val)
        arg = *f.val;
    }
    return LazyOp::make(n.op, std::move(n.srcs), std::move(arg));
  }
};

} // namespace

std::string printDouble(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (ec != std::errc()) return fmt::format("{:.17g}", v);
  return std::string(buf, p);
}

std::string printSInt(const SInt &x) {
  if (x.isInt()) return std::to_string(x.asInt());
  checkPrintable(*x.node());
  return x.node()->key();
}

SInt parseSInt(std::string_view text, const std::string &filename) {
  LineParser p(text, filename, 1);
  std::map<std::string, std::pair<SInt, SInt>> ranges;
  p.varRanges = &ranges;
  p.skipSpaces();
  SInt v = p.sint();
  p.skipSpaces();
  if (!p.atEnd()) p.error("unexpected " + p.describe() + " after the value");
  return v;
}

std::string printAst(const LazyOp &ast) { return Printer().print(ast); }

LazyOpRef parseAst(std::string_view text, const std::string &filename) {
  return AstParser(text, filename).parse(true).front();
}

std::vector<LazyOpRef> parseAsts(std::string_view text, const std::string &filename) {
  return AstParser(text, filename).parse(false);
}

} // namespace lazyjit
