// Soundness of the symbolic simplifier: every simplified expression must evaluate like the plain
// integer expression it came from (Python floor semantics), for every assignment of its variables,
// and stay within its own [min, max]. The reference's TestSymbolicNumeric plus a seeded random
// search.
#include "Graph/TestRng.h"
#include "lazyjit/Graph/Symbolic.h"
#include "lazyjit/Support/Math.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace lazyjit;
using lazyjit::testing::Rng;

namespace {

// ---- TestSymbolicNumeric ------------------------------------------------------------------------

struct NumericCase {
  const char *name;
  std::function<SInt(const SInt &)> f;
};

const std::vector<NumericCase> &numericCases() {
  static const std::vector<NumericCase> cases = {
      {"x%4", [](const SInt &x) { return mod(x, 4); }},
      {"x//4", [](const SInt &x) { return floordiv(x, 4); }},
      {"(x+1)//2", [](const SInt &x) { return floordiv(x + 1, 2); }},
      {"(x+1)%2", [](const SInt &x) { return mod(x + 1, 2); }},
      {"x*2", [](const SInt &x) { return x * 2; }},
      {"x*2+3", [](const SInt &x) { return x * 2 + 3; }},
      {"(x*2+3)%4", [](const SInt &x) { return mod(x * 2 + 3, 4); }},
      {"(x*2+3)//4", [](const SInt &x) { return floordiv(x * 2 + 3, 4); }},
      {"((x*2+3)//4)%4", [](const SInt &x) { return mod(floordiv(x * 2 + 3, 4), 4); }},
  };
  return cases;
}

// ---- a plain expression tree, evaluated without the simplifier ----------------------------------

struct VarSpec {
  std::string name;
  int64_t lo, hi;
};

enum class Op {
  Var,   // a variable
  Num,   // NumNode(k)
  AddK,  // x + k
  RSubK, // k - x
  Add,   // x + y
  Sub,   // x - y
  Neg,   // -x
  MulK,  // x * k
  RMulK, // k * x
  DivK,  // x // k, k > 0
  ModK,  // x % k, k > 0
  Sum,   // Variable.sum([...])
  Lt,    // x < k
  Le,    // x <= k
  Gt,    // x > k
  Ge,    // x >= k
  And,   // Variable.ands([...]) of comparisons
};

struct Expr {
  Op op;
  int64_t k = 0;
  int var = -1;
  std::vector<std::shared_ptr<const Expr>> kids;
};
using ExprRef = std::shared_ptr<const Expr>;

ExprRef mk(Op op, int64_t k, std::vector<ExprRef> kids, int var = -1) {
  auto e = std::make_shared<Expr>();
  e->op = op;
  e->k = k;
  e->var = var;
  e->kids = std::move(kids);
  return e;
}

/// The plain value: Python integer semantics, booleans as 0/1.
int64_t evalPlain(const Expr &e, const std::vector<int64_t> &vals) {
  auto kid = [&](size_t i) { return evalPlain(*e.kids[i], vals); };
  switch (e.op) {
  case Op::Var:
    return vals[e.var];
  case Op::Num:
    return e.k;
  case Op::AddK:
    return kid(0) + e.k;
  case Op::RSubK:
    return e.k - kid(0);
  case Op::Add:
    return kid(0) + kid(1);
  case Op::Sub:
    return kid(0) - kid(1);
  case Op::Neg:
    return -kid(0);
  case Op::MulK:
  case Op::RMulK:
    return kid(0) * e.k;
  case Op::DivK:
    return floorDiv(kid(0), e.k);
  case Op::ModK:
    return floorMod(kid(0), e.k);
  case Op::Sum: {
    int64_t s = 0;
    for (size_t i = 0; i < e.kids.size(); ++i) s += kid(i);
    return s;
  }
  case Op::Lt:
    return kid(0) < e.k;
  case Op::Le:
    return kid(0) <= e.k;
  case Op::Gt:
    return kid(0) > e.k;
  case Op::Ge:
    return kid(0) >= e.k;
  case Op::And: {
    int64_t r = 1;
    for (size_t i = 0; i < e.kids.size(); ++i) r = r && kid(i);
    return r;
  }
  }
  return 0;
}

/// The same expression through the symbolic operators.
SInt build(const Expr &e, const std::vector<NodeRef> &vars) {
  auto kid = [&](size_t i) { return build(*e.kids[i], vars); };
  auto kidNodes = [&] {
    std::vector<NodeRef> out;
    for (size_t i = 0; i < e.kids.size(); ++i) out.push_back(kid(i).toNode());
    return out;
  };
  switch (e.op) {
  case Op::Var:
    return vars[e.var];
  case Op::Num:
    return numNode(e.k);
  case Op::AddK:
    return kid(0) + e.k;
  case Op::RSubK:
    return SInt(e.k) - kid(0);
  case Op::Add:
    return kid(0) + kid(1);
  case Op::Sub:
    return kid(0) - kid(1);
  case Op::Neg:
    return -kid(0);
  case Op::MulK:
    return kid(0) * e.k;
  case Op::RMulK:
    return SInt(e.k) * kid(0);
  case Op::DivK:
    return floordiv(kid(0), e.k);
  case Op::ModK:
    return mod(kid(0), e.k);
  case Op::Sum:
    return sumNodes(kidNodes());
  case Op::Lt:
    return lt(kid(0), e.k);
  case Op::Le:
    return le(kid(0), e.k);
  case Op::Gt:
    return gt(kid(0), e.k);
  case Op::Ge:
    return ge(kid(0), e.k);
  case Op::And:
    return andNodes(kidNodes());
  }
  return 0;
}

/// Python source that rebuilds the expression with the reference (to reproduce a failure).
std::string toPython(const Expr &e, const std::vector<VarSpec> &specs) {
  auto kid = [&](size_t i) { return toPython(*e.kids[i], specs); };
  auto list = [&] {
    std::string s = "[";
    for (size_t i = 0; i < e.kids.size(); ++i) s += (i ? ", " : "") + kid(i);
    return s + "]";
  };
  std::string k = std::to_string(e.k);
  switch (e.op) {
  case Op::Var:
    return specs[e.var].name;
  case Op::Num:
    return "NumNode(" + k + ")";
  case Op::AddK:
    return "(" + kid(0) + "+" + k + ")";
  case Op::RSubK:
    return "(" + k + "-" + kid(0) + ")";
  case Op::Add:
    return "(" + kid(0) + "+" + kid(1) + ")";
  case Op::Sub:
    return "(" + kid(0) + "-" + kid(1) + ")";
  case Op::Neg:
    return "(-" + kid(0) + ")";
  case Op::MulK:
    return "(" + kid(0) + "*" + k + ")";
  case Op::RMulK:
    return "(" + k + "*" + kid(0) + ")";
  case Op::DivK:
    return "(" + kid(0) + "//" + k + ")";
  case Op::ModK:
    return "(" + kid(0) + "%" + k + ")";
  case Op::Sum:
    return "Variable.sum(" + list() + ")";
  case Op::Lt:
    return "(" + kid(0) + "<" + k + ")";
  case Op::Le:
    return "(" + kid(0) + "<=" + k + ")";
  case Op::Gt:
    return "(" + kid(0) + ">" + k + ")";
  case Op::Ge:
    return "(" + kid(0) + ">=" + k + ")";
  case Op::And:
    return "Variable.ands(" + list() + ")";
  }
  return "?";
}

std::string pythonRepro(const Expr &e, const std::vector<VarSpec> &specs) {
  std::string s;
  for (const auto &v : specs)
    s += v.name + "=Variable(\"" + v.name + "\"," + std::to_string(v.lo) + "," +
         std::to_string(v.hi) + "); ";
  return s + "e=" + toPython(e, specs);
}

/// Calls f(values) for every assignment of the variables (the first variable changes fastest).
template <typename F> void forEachAssignment(const std::vector<VarSpec> &specs, F &&f) {
  std::vector<int64_t> vals;
  for (const auto &s : specs) vals.push_back(s.lo);
  while (true) {
    f(vals);
    size_t i = 0;
    for (; i < specs.size(); ++i) {
      if (vals[i] < specs[i].hi) {
        ++vals[i];
        break;
      }
      vals[i] = specs[i].lo;
    }
    if (i == specs.size()) return;
  }
}

/// Random expressions. Arithmetic subtrees may contain everything but comparisons; comparisons and
/// ands sit on top (the reference's LtNode // b divides both sides of the comparison, which is not
/// floor((a<b)/k), so a comparison is never divided). A comparison may also appear scaled in a sum.
/// Index-like sums (`a*12 + b*4 + c`) and divisors that share factors with their strides make the
/// factoring rules of SumNode // and % fire.
class ExprGen {
public:
  ExprGen(Rng &rng, const std::vector<VarSpec> &specs) : rng(rng), specs(specs) {}

  ExprRef arith(int depth) {
    if (depth <= 0 || rng.chance(15)) return leaf();
    switch (rng.range(0, 13)) {
    case 0:
      return mk(Op::AddK, rng.range(-6, 12), {arith(depth - 1)});
    case 1:
      return mk(Op::RSubK, rng.range(-4, 12), {arith(depth - 1)});
    case 2:
      return mk(Op::Add, 0, {arith(depth - 1), arith(depth - 1)});
    case 3:
      return mk(Op::Sub, 0, {arith(depth - 1), arith(depth - 1)});
    case 4:
      return mk(Op::Neg, 0, {arith(depth - 1)});
    case 5:
    case 6:
      return mk(rng.chance(70) ? Op::MulK : Op::RMulK, coefficient(), {arith(depth - 1)});
    case 7:
    case 8:
      return mk(Op::DivK, divisor(), {arith(depth - 1)});
    case 9:
    case 10:
      return mk(Op::ModK, divisor(), {arith(depth - 1)});
    case 11:
      return indexSum(depth - 1);
    default: {
      std::vector<ExprRef> kids;
      int n = static_cast<int>(rng.range(2, 4));
      for (int i = 0; i < n; ++i) kids.push_back(arith(depth - 1));
      return mk(Op::Sum, 0, kids);
    }
    }
  }

  /// A comparison with a bound near the values the operand takes, so that it rarely folds away.
  ExprRef comparison(int depth) {
    static const Op ops[] = {Op::Lt, Op::Lt, Op::Le, Op::Gt, Op::Ge};
    ExprRef x = arith(depth);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    forEachAssignment(specs, [&](const std::vector<int64_t> &vals) {
      int64_t v = evalPlain(*x, vals);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    });
    return mk(ops[rng.range(0, 4)], rng.range(lo - 1, hi + 1), {x});
  }

  ExprRef boolean(int depth) {
    if (!rng.chance(35)) return comparison(depth);
    std::vector<ExprRef> kids;
    int n = static_cast<int>(rng.range(1, 3));
    for (int i = 0; i < n; ++i)
      kids.push_back(rng.chance(85) ? comparison(depth) : boolean(depth - 1));
    return mk(Op::And, 0, kids);
  }

  ExprRef top(int depth) {
    int r = static_cast<int>(rng.range(0, 99));
    if (r < 62) return arith(depth);
    if (r < 88) return boolean(depth - 1);
    // a comparison used as a 0/1 term of an index sum
    ExprRef b = mk(Op::MulK, rng.range(1, 5), {comparison(depth - 1)});
    return mk(Op::Sum, 0, {arith(depth - 1), b});
  }

private:
  ExprRef leaf() {
    if (rng.chance(8)) return mk(Op::Num, rng.range(-5, 20), {});
    return var();
  }
  ExprRef var() {
    return mk(Op::Var, 0, {},
              static_cast<int>(rng.range(0, static_cast<int64_t>(specs.size()) - 1)));
  }
  /// `v0*s0 + v1*s1 + ... (+ k)` with strides that are multiples of each other.
  ExprRef indexSum(int depth) {
    std::vector<ExprRef> kids;
    int n = static_cast<int>(rng.range(1, 3));
    int64_t stride = rng.range(1, 2);
    for (int i = 0; i < n; ++i) {
      ExprRef x = rng.chance(75) ? var() : arith(depth);
      kids.push_back(stride == 1 ? x : mk(Op::MulK, stride, {x}));
      stride *= rng.range(2, 4);
    }
    if (rng.chance(30)) kids.push_back(mk(Op::Num, rng.range(-8, 16), {}));
    std::reverse(kids.begin(), kids.end());
    return mk(Op::Sum, 0, kids);
  }
  int64_t coefficient() {
    static const int64_t ks[] = {-3, -2, -1, 0, 1, 2, 2, 3, 4, 4, 5, 6, 8, 10, 12, 16};
    return ks[rng.range(0, 15)];
  }
  int64_t divisor() {
    static const int64_t ks[] = {1, 2, 2, 3, 3, 4, 4, 5, 6, 7, 8, 8, 9, 12, 16, 24};
    return ks[rng.range(0, 15)];
  }

  Rng &rng;
  const std::vector<VarSpec> &specs;
};

} // namespace

TEST_CASE("Symbolic: TestSymbolicNumeric - constants fold to the plain value") {
  for (const auto &c : numericCases()) {
    for (int64_t i = 0; i < 10; ++i) {
      INFO(c.name, " at ", i);
      SInt v = c.f(numNode(i));
      int64_t want = c.f(SInt(i)).asInt();
      REQUIRE(v.isNode());
      CHECK(pyEq(v.node()->min, v.node()->max));
      CHECK(pyEq(v.node()->min, want));
    }
  }
}

TEST_CASE(
    "Symbolic: TestSymbolicNumeric - bounds of every variable range 0..9 contain the values") {
  for (const auto &c : numericCases()) {
    for (int64_t kmin = 0; kmin < 10; ++kmin) {
      for (int64_t kmax = kmin; kmax < 10; ++kmax) {
        INFO(c.name, " over tmp[", kmin, "-", kmax, "]");
        SInt v = c.f(variable("tmp", kmin, kmax));
        REQUIRE(v.isNode());
        REQUIRE(v.node()->min.isInt());
        REQUIRE(v.node()->max.isInt());
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (int64_t x = kmin; x <= kmax; ++x) {
          int64_t y = c.f(SInt(x)).asInt();
          lo = std::min(lo, y);
          hi = std::max(hi, y);
          // Beyond the reference test: the simplified node evaluates to the plain value too.
          CHECK(evalNode(*v.node(), {{"tmp", x}}) == y);
        }
        CHECK(v.node()->min.asInt() <= lo);
        CHECK(v.node()->max.asInt() >= hi);
      }
    }
  }
}

TEST_CASE("Symbolic: random expressions simplify to the same values within their bounds") {
  constexpr uint64_t seed = 0x5eed2023'12'01ULL;
  constexpr int numExprs = 10000;
  Rng rng(seed);
  static const char *names[] = {"a", "b", "c"};

  int unsupported = 0, checkedValues = 0, failures = 0;
  for (int n = 0; n < numExprs; ++n) {
    int nVars = static_cast<int>(rng.range(1, 3));
    std::vector<VarSpec> specs;
    std::vector<NodeRef> vars;
    for (int v = 0; v < nVars; ++v) {
      int64_t lo = rng.chance(30) ? rng.range(1, 4) : 0;
      int64_t hi = lo + rng.range(1, nVars == 3 ? 5 : 7);
      specs.push_back({names[v], lo, hi});
      vars.push_back(variable(names[v], lo, hi));
    }
    ExprGen gen(rng, specs);
    ExprRef expr = gen.top(static_cast<int>(rng.range(1, 4)));

    SInt simplified;
    try {
      simplified = build(*expr, vars);
    } catch (const UnsupportedError &) {
      ++unsupported;
      continue;
    } catch (const Error &err) {
      FAIL_CHECK("seed ", seed, " expression #", n, " threw '", err.what(), "'\n  ",
                 pythonRepro(*expr, specs));
      ++failures;
      continue;
    }
    NodeRef node = simplified.toNode();
    bool intBounds = node->min.isInt() && node->max.isInt();
    std::map<std::string, int64_t> env;
    bool ok = true;
    forEachAssignment(specs, [&](const std::vector<int64_t> &vals) {
      if (!ok) return;
      for (size_t v = 0; v < specs.size(); ++v) env[specs[v].name] = vals[v];
      int64_t want = evalPlain(*expr, vals);
      int64_t got = evalNode(*node, env);
      ++checkedValues;
      bool inBounds = !intBounds || (node->min.asInt() <= got && got <= node->max.asInt());
      if (got != want || !inBounds) {
        std::string at;
        for (size_t v = 0; v < specs.size(); ++v)
          at += specs[v].name + "=" + std::to_string(vals[v]) + " ";
        FAIL_CHECK("seed ", seed, " expression #", n, " at ", at, ": simplified ", node->render(),
                   " [", node->min.str(), ", ", node->max.str(), "] gives ", got, ", plain gives ",
                   want, "\n  ", pythonRepro(*expr, specs));
        ok = false;
        ++failures;
      }
    });
    // sym_infer re-simplifies with every variable replaced by a NumNode; it must fold to the value.
    if (ok) {
      std::vector<int64_t> vals;
      for (const auto &v : specs) vals.push_back(rng.range(v.lo, v.hi));
      for (size_t v = 0; v < specs.size(); ++v) env[specs[v].name] = vals[v];
      int64_t want = evalPlain(*expr, vals);
      try {
        int64_t got = symInfer(simplified, env);
        if (got != want) {
          FAIL_CHECK("seed ", seed, " expression #", n, ": sym_infer of ", node->render(),
                     " gives ", got, ", plain gives ", want, "\n  ", pythonRepro(*expr, specs));
          ++failures;
        }
      } catch (const UnsupportedError &) {
        ++unsupported;
      }
    }
    if (failures > 20) break;
  }
  MESSAGE("seed ", seed, ": ", numExprs, " expressions, ", checkedValues, " values checked, ",
          unsupported, " not supported");
  CHECK(failures == 0);
  CHECK(unsupported * 100 < numExprs);
}
