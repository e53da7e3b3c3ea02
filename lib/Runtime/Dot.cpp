// Schedule pictures in dot (see Dot.h).
#include "lazyjit/Runtime/Dot.h"
#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>

namespace lazyjit {

namespace {
std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

class DotWriter {
public:
  std::string out = "digraph schedule {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";

  std::string buffer(const LazyBuffer *b) {
    if (auto it = bufIds.find(b); it != bufIds.end()) return it->second;
    std::string id = "b" + std::to_string(bufIds.size());
    bufIds.emplace(b, id);
    out += "  " + id + " [shape=box, style=filled, fillcolor=\"#e8eef7\", label=\"" + escape(typedShapeText(b->dtype(), b->shape)) + "\"];\n";
    return id;
  }

  // the AST inside a kernel cluster, each node once (a shared subtree has several out-edges);
  // returns the node id of `root`
  std::string astNode(const KernelOp &root, const ScheduleItem &si, int k, std::string &edges) {
    std::unordered_map<const KernelOp *, std::string> ids;
    walkOps(root, [&](const KernelOp &op) {
      std::string id = "k" + std::to_string(k) + "_" + std::to_string(next++);
      std::string label(opShortName(op.op));
      if (op.op == Op::Const) label += " " + printDouble(op.constBuffer().val);
      out += "    " + id + " [shape=ellipse, label=\"" + escape(label) + "\"];\n";
      ids.emplace(&op, id);
      return true;
    }, [&](const KernelOp &op) {
      const std::string &id = ids.at(&op);
      for (const auto &s : op.src) edges += "  " + ids.at(s.get()) + " -> " + id + ";\n";
      if (op.op == Op::Load) {
        int idx = op.memBuffer().idx;
        if (idx >= 1 && static_cast<size_t>(idx - 1) < si.inputs.size())
          edges += "  " + buffer(si.inputs[static_cast<size_t>(idx - 1)].get()) + " -> " + id + ";\n";
      }
    });
    return ids.at(&root);
  }

  std::unordered_map<const LazyBuffer *, std::string> bufIds;
  int next = 0;
};
} // namespace

std::string scheduleToDot(const std::vector<ScheduleItem> &schedule,
                          const std::vector<std::pair<std::string, LazyBufferRef>> &outputs) {
  DotWriter w;
  std::string edges;
  int kernels = 0;
  for (size_t i = 0; i < schedule.size(); ++i) {
    const ScheduleItem &si = schedule[i];
    std::string outId = w.buffer(si.out.get());
    if (!si.isKernel()) {
      std::string id = "l" + std::to_string(i);
      w.out += "  " + id + " [shape=ellipse, style=dashed, label=\"" + escape(std::string(opShortName(si.kind()))) + "\"];\n";
      for (const auto &x : si.inputs) edges += "  " + w.buffer(x.get()) + " -> " + id + ";\n";
      edges += "  " + id + " -> " + outId + ";\n";
      continue;
    }
    int k = kernels++;
    w.out += "  subgraph cluster_k" + std::to_string(k) + " {\n    label=\"kernel " + std::to_string(k) + " " +
             escape(kernelName(*si.ast, config().mergeView)) + "\";\n    style=rounded; color=\"#4a6fa5\";\n";
    std::string top = w.astNode(*si.ast, si, k, edges); // the STORE
    w.out += "  }\n";
    edges += "  " + top + " -> " + outId + ";\n";
  }
  for (const auto &[name, b] : outputs) {
    const LazyBuffer *base = b->base();
    if (!w.bufIds.count(base)) continue;
    w.out += "  out_" + std::to_string(w.next) + " [shape=plaintext, label=\"" + escape(name) + "\"];\n";
    edges += "  " + w.bufIds.at(base) + " -> out_" + std::to_string(w.next++) + ";\n";
  }
  return w.out + edges + "}\n";
}

void renderDot(const std::string &dotText, const std::string &path) {
  std::string ext = std::filesystem::path(path).extension().string();
  if (!ext.empty()) ext = ext.substr(1);
  LAZYJIT_USER_CHECK(ext == "svg" || ext == "png" || ext == "pdf", Error,
                     "cannot render '{}': the picture format comes from the extension (.svg, .png or .pdf)", path);
  std::string dot;
  for (const char *dir : {"/usr/bin/dot", "/usr/local/bin/dot"})
    if (::access(dir, X_OK) == 0) {
      dot = dir;
      break;
    }
  LAZYJIT_USER_CHECK(!dot.empty(), Error,
                     "cannot render '{}': Graphviz's dot is not installed (apt install graphviz); --emit=dot "
                     "without -o, or -o FILE.dot, writes the dot text",
                     path);
  std::string src = path + ".dot.tmp";
  {
    std::ofstream f(src, std::ios::binary | std::ios::trunc);
    f << dotText;
    LAZYJIT_USER_CHECK(static_cast<bool>(f), Error, "cannot write '{}'", src);
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string fmtArg = "-T" + ext;
    ::execl(dot.c_str(), "dot", fmtArg.c_str(), src.c_str(), "-o", path.c_str(), static_cast<char *>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  if (pid > 0) ::waitpid(pid, &status, 0);
  std::filesystem::remove(src);
  LAZYJIT_USER_CHECK(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, Error,
                     "Graphviz's dot failed to render '{}'", path);
}

} // namespace lazyjit
