// The printer of the textual kernel-AST format (grammar in docs/ir.md): one node per line with its
// argument fields, view lines under buffer ops, a label for every subtree that occurs twice, and
// labeled blocks for an AST too deep to indent.
#include "ASTLineParser.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Support/Error.h"

#include <charconv>
#include <optional>
#include <vector>
#include <unordered_map>
#include <unordered_set>

namespace lazyjit {

namespace {

using asttext::isIdentChar;
using asttext::isIdentStart;

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

} // namespace

std::string asttext::printShape(const Shape &shape) {
  std::vector<std::string> items;
  for (const auto &x : shape) items.push_back(printSInt(x));
  return printTuple(items);
}

namespace {

using asttext::printShape;

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

class Printer {
public:
  /// `key`: the compact form of astKey (no indentation; each op line ends with its source count).
  explicit Printer(bool key) : key(key) {}

  std::string print(const KernelOp &root) {
    count(root);
    if (!key && astDepth(root) > kAstTextBlockDepth) return printBlocks(root);
    // preorder with an explicit stack: a merged chain is as deep as it is long
    std::vector<std::pair<const KernelOp *, int>> stack{{&root, 0}};
    while (!stack.empty()) {
      auto [op, indent] = stack.back();
      stack.pop_back();
      if (!op->src.empty()) {
        if (auto it = labels.find(op); it != labels.end()) {
          reference(it->second, indent);
          continue;
        }
      }
      std::optional<int> label;
      if (!op->src.empty() && seen.at(op) > 1) {
        label = nextLabel++;
        labels.emplace(op, *label);
      }
      line(*op, indent, label);
      for (size_t i = op->src.size(); i-- > 0;) stack.emplace_back(op->src[i].get(), indent + 2);
    }
    return std::move(out);
  }

private:
  const bool key;
  // Occurrences of each distinct subtree with operands (equal subtrees are one KernelOp); leaves are
  // never labeled.
  std::unordered_map<const KernelOp *, int> seen;
  std::vector<const KernelOp *> shared; // those seen more than once, in the order found
  std::unordered_map<const KernelOp *, int> labels;
  std::string out;
  int nextLabel = 0;

  void count(const KernelOp &root) {
    std::vector<const KernelOp *> stack{&root};
    while (!stack.empty()) {
      const KernelOp &op = *stack.back();
      stack.pop_back();
      if (op.src.empty()) continue;
      auto [it, fresh] = seen.emplace(&op, 1);
      if (!fresh) {
        if (++it->second == 2) shared.push_back(&op);
        continue;
      }
      for (const auto &s : op.src) stack.push_back(s.get());
    }
  }

  // An AST deeper than kAstTextBlockDepth, as blocks: the root, each shared subtree, and each node
  // that would sit kAstTextBlockDepth - 1 levels below the top of its block begin a block, which
  // the others reference by its label. A block is defined (`$k = OP` in column 1) before the first
  // block that references it; the root's, unlabeled, comes last. Every block is at most
  // kAstTextBlockDepth deep, so the text is linear in the size of the DAG.
  std::string printBlocks(const KernelOp &root) {
    // each block's top, with the blocks it references in preorder (a non-shared node has one
    // parent, so it lies in one block at one depth whatever order the blocks are cut in)
    std::unordered_map<const KernelOp *, std::vector<const KernelOp *>> blocks;
    std::vector<const KernelOp *> todo{&root};
    blocks[&root];
    for (const KernelOp *op : shared) {
      blocks[op];
      todo.push_back(op);
    }
    while (!todo.empty()) {
      const KernelOp *top = todo.back();
      todo.pop_back();
      std::vector<const KernelOp *> used;
      std::vector<std::pair<const KernelOp *, int>> stack;
      for (size_t i = top->src.size(); i-- > 0;) stack.emplace_back(top->src[i].get(), 1);
      while (!stack.empty()) {
        auto [op, depth] = stack.back();
        stack.pop_back();
        if (op->src.empty()) continue;
        bool cut = depth == kAstTextBlockDepth - 1 && !blocks.count(op);
        if (cut) {
          blocks[op];
          todo.push_back(op);
        }
        if (blocks.count(op)) {
          used.push_back(op);
          continue;
        }
        for (size_t i = op->src.size(); i-- > 0;) stack.emplace_back(op->src[i].get(), depth + 1);
      }
      blocks.at(top) = std::move(used);
    }
    // the blocks in post-order from the root's: each is printed before its first reference
    std::vector<const KernelOp *> order;
    std::unordered_set<const KernelOp *> entered{&root};
    std::vector<std::pair<const KernelOp *, size_t>> frames{{&root, 0}};
    while (!frames.empty()) {
      const KernelOp *op = frames.back().first;
      const auto &used = blocks.at(op);
      if (size_t next = frames.back().second++; next < used.size()) {
        if (entered.insert(used[next]).second) frames.emplace_back(used[next], 0);
        continue;
      }
      order.push_back(op);
      frames.pop_back();
    }
    for (size_t i = 0; i + 1 < order.size(); ++i) labels.emplace(order[i], static_cast<int>(i));
    for (const KernelOp *top : order) {
      line(*top, 0, top == &root ? std::nullopt : std::optional<int>(labels.at(top)));
      std::vector<std::pair<const KernelOp *, int>> stack;
      for (size_t i = top->src.size(); i-- > 0;) stack.emplace_back(top->src[i].get(), 2);
      while (!stack.empty()) {
        auto [op, indent] = stack.back();
        stack.pop_back();
        if (!op->src.empty()) {
          if (auto it = labels.find(op); it != labels.end()) {
            reference(it->second, indent);
            continue;
          }
        }
        line(*op, indent, std::nullopt);
        for (size_t i = op->src.size(); i-- > 0;) stack.emplace_back(op->src[i].get(), indent + 2);
      }
    }
    return std::move(out);
  }

  void reference(int label, int indent) {
    out.append(key ? 0 : static_cast<size_t>(indent), ' ');
    out += "$" + std::to_string(label) + "\n";
  }

  // Prints one node's line (with the definition of `label`) and its view lines.
  void line(const KernelOp &op, int indent, std::optional<int> label) {
    std::string pad(key ? 0 : static_cast<size_t>(indent), ' ');
    out += pad;
    if (label) out += "$" + std::to_string(*label) + " = ";
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
            LAZYJIT_INTERNAL_CHECK(false, "printAst: a kernel holds no host function");
          }
        },
        op.arg);
    if (key) out += " #" + std::to_string(op.src.size());
    out += "\n";
    if (st)
      for (const auto &v : st->views) out += pad + (key ? "" : "  ") + printView(v) + "\n";
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

std::string printAst(const KernelOp &ast) { return Printer(false).print(ast); }

int astDepth(const KernelOp &ast) {
  std::unordered_map<const KernelOp *, int> depth; // of each node left
  walkOps(ast, [](const KernelOp &) { return true; }, [&](const KernelOp &op) {
    int d = 0;
    for (const auto &s : op.src) d = std::max(d, depth.at(s.get()));
    depth.emplace(&op, d + 1);
  });
  return depth.at(&ast);
}

std::string astKey(const KernelOp &ast) { return Printer(true).print(ast); }

} // namespace lazyjit
