// The op table (Ops.def) states each op's operand count and argument kind, and the AST printer,
// parser and verifier read it from there. These tests hold the graph and the scheduler to it:
// every op they build, over a program that uses every movement op, casts, reductions, constants,
// a host-filled buffer and a contiguous copy, has the table's operands and argument kind; the
// host-filled buffer is scheduled as a host step, and no kernel holds a load op or a LazyBuffer.
#include "TensorTestUtil.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Schedule/Schedule.h"

#include <set>
#include <unordered_set>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

// (a node of the lazy graph or of the kernel IR)
template <typename NodeT> void checkAgainstTable(const NodeT &node, std::set<Op> &seen) {
  seen.insert(node.op);
  int arity = opArity(node.op);
  if (arity >= 0)
    CHECK_MESSAGE(static_cast<int>(node.src.size()) == arity, opName(node.op));
  else
    CHECK_MESSAGE(node.src.size() <= 1, opName(node.op));
  CHECK_MESSAGE(argKindOf(node.arg) == opArgKind(node.op), opName(node.op), " carries ", opArgText(argKindOf(node.arg)));
}

// Every op of the lazy graph below `roots`, through the buffers it reads.
void walkGraph(const std::vector<LazyBufferRef> &roots, std::set<Op> &seen) {
  std::vector<const LazyBuffer *> stack;
  std::unordered_set<const LazyBuffer *> visited;
  for (const auto &r : roots) stack.push_back(r.get());
  while (!stack.empty()) {
    const LazyBuffer *b = stack.back();
    stack.pop_back();
    if (!visited.insert(b).second || !b->op) continue;
    for (const LazyOp *node : b->op->lazyops()) checkAgainstTable(*node, seen);
    for (const LazyBuffer *src : b->op->buffers()) stack.push_back(src);
  }
}

} // namespace

TEST_CASE("Op table: every op the graph and the scheduler build has the table's operands and argument") {
  Tensor x = Tensor::rand({4, 6});
  Tensor moved = x.reshape({6, 4})
                     .permute({1, 0})
                     .flip({0})
                     .pad2d({1, 1})
                     .shrink({SIntPair{0, 4}, SIntPair{1, 7}});
  Tensor rowMax = moved.max(std::vector<int64_t>{1}, true).expand({4, 6});
  Tensor cast = (moved * 3).cast(dtypes::int32).cast(dtypes::float32);
  Tensor picked = (moved > 0.5).where(cast, rowMax);
  Tensor out = (picked.matmul(x.transpose()).sum(std::vector<int64_t>{0}) + Tensor::full({4}, 2.0)).contiguous();

  std::set<Op> graphOps;
  walkGraph({out.lazydata()}, graphOps);
  for (Op op : {Op::Reshape, Op::Permute, Op::Expand, Op::Pad, Op::Shrink, Op::Stride, Op::Cast, Op::Sum,
                Op::ReduceMax, Op::Where, Op::CmpLt, Op::Custom, Op::LoadConst, Op::Contiguous})
    CHECK_MESSAGE(graphOps.count(op), "the program builds no ", opName(op));

  std::set<Op> kernelOps, hostSteps;
  for (const ScheduleItem &si : schedule(out.lazydata())) {
    if (!si.isKernel()) {
      // the host-filled buffer is a host step of its item, not an op tree
      CHECK(si.ast == nullptr);
      hostSteps.insert(si.host->kind);
      CHECK((si.host->kind == Op::Custom) == (si.host->custom != nullptr));
      continue;
    }
    for (const KernelOp *node : si.ast->lazyops()) {
      checkAgainstTable(*node, kernelOps);
      CHECK_FALSE(isLoadOp(node->op)); // no EMPTY, COPY or CUSTOM inside a kernel
    }
  }
  for (Op op : {Op::Load, Op::Store, Op::Const, Op::Cast, Op::Sum, Op::ReduceMax, Op::Where})
    CHECK_MESSAGE(kernelOps.count(op), "the schedule has no ", opName(op));
  CHECK(hostSteps == std::set<Op>{Op::Custom});
}

TEST_CASE("Op table: names round-trip and every row is consistent with its class") {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    CHECK(opFromName(opName(op)) == op);
    names.insert(std::string(opName(op)));
    CHECK_FALSE(opMeaning(op).empty());
    if (isElementwise(op)) CHECK((opArgKind(op) == OpArg::None) == (op != Op::Cast));
    if (isReduceOp(op)) CHECK(opArgKind(op) == OpArg::Shape);
    if (op == Op::Load || op == Op::Store) CHECK(opArgKind(op) == OpArg::Mem);
  }
  CHECK(names.size() == static_cast<size_t>(kNumOps)); // no two ops print alike
}
