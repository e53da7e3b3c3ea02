// The parser of the textual kernel-AST format (grammar in docs/ir.md): lines into trees by their
// indentation, labels and references (and the labeled blocks a deep AST defines before its root),
// view lines into ShapeTrackers, and the checks that each op has its operands and fields. The
// parser rebuilds symbolic nodes with the reference's raw constructors, not the simplifying
// operators, so that a printed node key parses back to a node with the same key (node equality is
// key equality).
#include "ASTLineParser.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Error.h"

#include <map>
#include <optional>

namespace lazyjit {

namespace {

using asttext::fail;
using asttext::LineParser;
using asttext::printShape;


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
  Views views;
  std::vector<KernelOpRef> srcs;
  KernelOpRef done; // Ref: the referenced node
};

bool isBufferLeaf(Op op) { return op == Op::Load || op == Op::Const || op == Op::Store; }

std::string plural(size_t n, std::string_view word) {
  return std::to_string(n) + " " + std::string(word) + (n == 1 ? "" : "s");
}

class AstParser {
public:
  AstParser(std::string_view text, const std::string &file) : text(text), file(file) {}

  std::vector<KernelOpRef> parse(bool single) {
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
    if (block)
      fail(file, eofLine, eofCol,
           fmt::format("unexpected end of input: the block ${} (line {}) is not followed by its AST",
                       block->first, block->second));
    if (roots.empty()) fail(file, 1, 1, "expected a kernel AST, found none");
    return std::move(roots);
  }

private:
  std::string_view text;
  const std::string &file;
  std::vector<Pending> stack;
  std::vector<KernelOpRef> roots;
  std::map<int, KernelOpRef> labels;
  // The label and line of the last block (a labeled node in column 1) of an AST whose root has not
  // come yet; the next unlabeled node in column 1 is that root.
  std::optional<std::pair<int, int>> block;
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
      if (!block) { // a new AST, not its next block
        if (single && !roots.empty()) p.error("expected one AST, found a second one");
        labels.clear(); // labels are local to one AST
        varRanges.clear();
      }
    } else {
      const Pending &parent = stack.back();
      if (ind != parent.indent + 2)
        p.error(fmt::format("expected an indentation of {} spaces under the line {} operator, "
                            "got {}",
                            parent.indent + 2, parent.line, ind));
      if (static_cast<int>(stack.size()) >= kMaxAstTextDepth) p.error("the AST is nested too deeply");
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
    KernelOpRef built = n.kind == Pending::Kind::Ref ? n.done : build(n, atEof);
    if (n.label) labels.emplace(*n.label, built);
    if (!stack.empty()) {
      stack.back().srcs.emplace_back(std::move(built));
    } else if (n.label) {
      block = std::make_pair(*n.label, n.line); // a block: its AST's root follows
    } else {
      block.reset();
      roots.push_back(std::move(built));
    }
  }

  [[noreturn]] void nodeError(const Pending &n, bool atEof, const std::string &msg) {
    if (atEof)
      fail(file, eofLine, eofCol,
           fmt::format("unexpected end of input: {} (line {})", msg, n.line));
    fail(file, n.line, n.col, msg);
  }

  KernelOpRef build(Pending &n, bool atEof) {
    std::string name(opName(n.op));
    int arity = opArity(n.op);
    size_t got = n.srcs.size();
    if (arity >= 0 && got != static_cast<size_t>(arity))
      nodeError(n, atEof && got < static_cast<size_t>(arity),
                fmt::format("{} expects {}, got {}", name, plural(arity, "operand"), got));
    if (arity < 0 && got > 1)
      nodeError(n, false, fmt::format("{} expects at most 1 operand, got {}", name, got));

    if (isLoadOp(n.op))
      nodeError(n, false, fmt::format("{} cannot be in a kernel AST: EMPTY, COPY and CUSTOM are host steps "
                                      "of a schedule item",
                                      name));

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
    // the fields an op takes follow from its argument kind in the op table (Ops.def)
    LazyOpArg arg;
    switch (opArgKind(n.op)) {
    case OpArg::Mem:
      require(f.idx && f.dtype, "idx= and dtype=");
      only({!f.shape, !f.axes, !f.pad, !f.bitcast, !f.val}, "only idx= and dtype=");
      requireViews();
      arg = MemBuffer{static_cast<int>(*f.idx), *f.dtype, ShapeTracker{std::move(n.views)}};
      break;
    case OpArg::ConstBuf:
      require(f.val && f.dtype, "val= and dtype=");
      only({!f.shape, !f.axes, !f.pad, !f.bitcast, !f.idx}, "only val= and dtype=");
      requireViews();
      arg = ConstBuffer{*f.val, *f.dtype, ShapeTracker{std::move(n.views)}};
      break;
    case OpArg::Cast:
      require(f.dtype.has_value(), "dtype=");
      only({!f.shape, !f.axes, !f.pad, !f.idx, !f.val}, "only dtype= and bitcast=");
      arg = CastArg{*f.dtype, f.bitcast.value_or(false)};
      break;
    case OpArg::Shape:
      require(f.shape.has_value(), "shape= (the output shape)");
      only({!f.axes, !f.pad, !f.dtype, !f.bitcast, !f.idx, !f.val}, "only shape=");
      arg = std::move(*f.shape);
      break;
    case OpArg::Axes:
      require(f.axes.has_value(), "axes=");
      only({!f.shape, !f.pad, !f.dtype, !f.bitcast, !f.idx, !f.val}, "only axes=");
      arg = std::move(*f.axes);
      break;
    case OpArg::Pairs:
      require(f.pad.has_value(), "pad= (per-axis (begin, end) pairs)");
      only({!f.shape, !f.axes, !f.dtype, !f.bitcast, !f.idx, !f.val}, "only pad=");
      arg = std::move(*f.pad);
      break;
    case OpArg::Value:
      require(f.val.has_value(), "val=");
      only({!f.shape, !f.axes, !f.pad, !f.dtype, !f.bitcast, !f.idx}, "only val=");
      arg = *f.val;
      break;
    case OpArg::None:
      only({!f.shape, !f.axes, !f.pad, !f.dtype, !f.bitcast, !f.idx, !f.val}, "no argument");
      break;
    case OpArg::Custom: nodeError(n, false, fmt::format("{} runs a host function and cannot be parsed", name));
    }
    return KernelOp::make(n.op, std::move(n.srcs), std::move(arg));
  }
};

} // namespace

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

KernelOpRef parseAst(std::string_view text, const std::string &filename) {
  return AstParser(text, filename).parse(true).front();
}

std::vector<KernelOpRef> parseAsts(std::string_view text, const std::string &filename) {
  return AstParser(text, filename).parse(false);
}

} // namespace lazyjit
