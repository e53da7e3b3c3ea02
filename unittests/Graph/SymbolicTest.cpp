// The reference's symbolic-algebra cases: every helper_test_variable row of test_symbolic.py
// (S01..S77 in tinygrad-cases.md §3) as render/min/max tables, pinned with the values the
// reference produces (the exact equalities S78..S99: SymbolicExactTest.cpp).
#include "Graph/SymbolicTestUtil.h"
#include "lazyjit/Support/Math.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

/// One helper_test_variable assertion: the expression, its render, min and max.
struct Row {
  const char *id;
  std::function<SInt()> build;
  int64_t min, max;
  const char *render;
};

void checkRows(const std::vector<Row> &rows) {
  for (const Row &r : rows) {
    INFO(r.id, ": expected ", r.render);
    SInt e = r.build();
    REQUIRE(e.isNode()); // the reference's operators on a Node always return a Node
    const Node &n = *e.node();
    CHECK(n.render() == r.render);
    REQUIRE(n.min.isInt());
    REQUIRE(n.max.isInt());
    CHECK(n.min.asInt() == r.min);
    CHECK(n.max.asInt() == r.max);
  }
}

} // namespace

TEST_CASE("Symbolic: comparisons fold to constants or keep an LtNode (S01-S16, S43-S44, S50-S53, "
          "S60-S66)") {
  auto a38 = [] { return var("a", 3, 8); };
  auto a06 = [] { return var("a", 0, 6); };
  checkRows({
      {"S01", [&] { return ge(a38(), 77); }, 0, 0, "0"},
      {"S02", [&] { return ge(a38(), 9); }, 0, 0, "0"},
      {"S03", [&] { return ge(a38(), 8); }, 0, 1, "((a*-1)<-7)"},
      {"S04", [&] { return ge(a38(), 4); }, 0, 1, "((a*-1)<-3)"},
      {"S05", [&] { return ge(a38(), 3); }, 1, 1, "1"},
      {"S06", [&] { return ge(a38(), 2); }, 1, 1, "1"},
      {"S07", [&] { return lt(a38(), 77); }, 1, 1, "1"},
      {"S08", [&] { return lt(a38(), 9); }, 1, 1, "1"},
      {"S09", [&] { return lt(a38(), 8); }, 0, 1, "(a<8)"},
      {"S10", [&] { return lt(a38(), 4); }, 0, 1, "(a<4)"},
      {"S11", [&] { return lt(a38(), 3); }, 0, 0, "0"},
      {"S12", [&] { return lt(a38(), 2); }, 0, 0, "0"},
      {"S13", [] { return lt(var("idx", 0, 511) * 4 + var("FLOAT4_INDEX", 0, 3), 512); }, 0, 1,
       "(idx<128)"},
      {"S14",
       [] {
         return andOf({lt(var("idx1", 0, 511) * 4 + var("FLOAT4_INDEX", 0, 3), 512),
                       lt(var("idx2", 0, 511) * 4 + var("FLOAT4_INDEX", 0, 3), 512)});
       },
       0, 1, "((idx1<128) and (idx2<128))"},
      {"S15",
       [] {
         SInt e = andOf({lt(var("idx1", 0, 511) * 4 + var("FLOAT4_INDEX", 0, 3), 512),
                         lt(var("idx2", 0, 511) * 4 + var("FLOAT8_INDEX", 0, 7), 512)});
         return floordiv(e, 4);
       },
       0, 1, "((((FLOAT8_INDEX//4)+idx2)<128) and ((idx1//4)<32))"},
      {"S16",
       [] { return andOf({lt(var("idx1", 0, 511) * 4 + var("FLOAT4_INDEX", 0, 256), 512)}); }, 0, 1,
       "(((idx1*4)+FLOAT4_INDEX)<512)"},
      {"S43",
       [] {
         return lt(sumOf({var("a", 0, 7) * 4, var("b", 0, 3)}), 16);
       },
       0, 1, "(a<4)"},
      {"S44",
       [] {
         return lt(sumOf({var("a", 0, 7) * 4, var("b", 0, 4)}), 16);
       },
       0, 1, "(((a*4)+b)<16)"},
      {"S50", [] { return lt(var("a", 0, 5) * 4, 13); }, 0, 1, "(a<4)"},
      {"S51", [] { return lt(var("a", 0, 5) * 4, 16); }, 0, 1, "(a<4)"},
      {"S52", [] { return gt(var("a", 0, 5) * 4, 11); }, 0, 1, "((a*-1)<-2)"},
      {"S53", [] { return gt(var("a", 0, 5) * 4, 12); }, 0, 1, "((a*-1)<-3)"},
      {"S60", [&] { return ge(a06(), 25); }, 0, 0, "0"},
      {"S61", [&] { return lt(a06(), -3); }, 0, 0, "0"},
      {"S62", [&] { return lt(a06(), 3); }, 0, 1, "(a<3)"},
      {"S63", [&] { return lt(a06(), 8); }, 1, 1, "1"},
      {"S64", [&] { return lt(a06() + 2, 3); }, 0, 1, "(a<1)"},
      {"S65",
       [] {
         return andOf({num(0), var("a", 0, 1)});
       },
       0, 0, "0"},
      {"S66",
       [] {
         return andOf({num(1), var("a", 0, 1)});
       },
       0, 1, "a"},
  });
}

TEST_CASE("Symbolic: add, sub, mul and sums factorise and fold constants (S17-S30, S49, S55, S57, "
          "S69-S70)") {
  auto a08 = [] { return var("a", 0, 8); };
  checkRows({
      {"S17", [&] { return a08() * 2 + a08() * 3; }, 0, 40, "(a*5)"},
      {"S18", [&] { return a08() + a08() * 3; }, 0, 32, "(a*4)"},
      {"S19", [&] { return -a08(); }, -8, 0, "(a*-1)"},
      {"S20", [&] { return a08() + 1; }, 1, 9, "(1+a)"},
      {"S21", [&] { return a08() + num(1); }, 1, 9, "(1+a)"},
      {"S22", [&] { return a08() - 1; }, -1, 7, "(-1+a)"},
      {"S23", [&] { return a08() - num(1); }, -1, 7, "(-1+a)"},
      {"S24", [&] { return a08() * 0; }, 0, 0, "0"},
      {"S25", [&] { return a08() * 1; }, 0, 8, "a"},
      {"S27", [&] { return a08() * 2; }, 0, 16, "(a*2)"},
      {"S30", [&] { return a08() * 2 + 12; }, 12, 28, "((a*2)+12)"},
      {"S49", [] { return var("a", 0, 5) * 10 * 9; }, 0, 450, "(a*90)"},
      {"S55",
       [] {
         return sumOf({var("a", 0, 3), var("b", 0, 5)}) * 3;
       },
       0, 24, "((a*3)+(b*3))"},
      {"S57", [] { return sumOf({var("a", 0, 7)}); }, 0, 7, "a"},
      {"S69",
       [] {
         return sumOf({num(29), var("a", 0, 10), num(-23)});
       },
       6, 16, "(6+a)"},
      {"S70",
       [] {
         return sumOf({var("a", 0, 1) * -4 + 1, var("a", 0, 1) * 4});
       },
       1, 1, "1"},
  });
}

TEST_CASE("Symbolic: floor division by ints (S26, S28, S31-S38, S41-S42, S54, S71-S77)") {
  auto a07 = [] { return var("a", 0, 7); };
  checkRows({
      {"S26", [] { return floordiv(var("a", 0, 2) * -1, 3); }, -1, 0, "((((a*-1)+3)//3)+-1)"},
      {"S28", [] { return floordiv(var("a", 0, 8), 1); }, 0, 8, "a"},
      {"S31", [&] { return floordiv(a07(), 2); }, 0, 3, "(a//2)"},
      {"S32", [&] { return floordiv(a07(), -2); }, -3, 0, "((a//2)*-1)"},
      {"S33",
       [&] {
         return floordiv(sumOf({a07(), var("b", 0, 3)}), 2);
       },
       0, 5, "((a+b)//2)"},
      {"S34",
       [&] {
         return floordiv(sumOf({a07() * 4, var("b", 0, 3) * 4}), 2);
       },
       0, 20, "((a*2)+(b*2))"},
      {"S35",
       [&] {
         return floordiv(sumOf({a07() * 5, var("b", 0, 3) * 4}), 2);
       },
       0, 23, "(((a*5)//2)+(b*2))"},
      {"S36",
       [&] {
         return floordiv(sumOf({a07() * 6, var("b", 0, 7) * 6}), 16);
       },
       0, 5, "(((a*3)+(b*3))//8)"},
      {"S37",
       [&] {
         return floordiv(sumOf({num(16), a07() * 6, var("b", 0, 7) * 6}), 16);
       },
       1, 6, "((((a*3)+(b*3))//8)+1)"},
      {"S38",
       [&] {
         return floordiv(sumOf({a07() * 5, var("b", 0, 3) * 5}), 2);
       },
       0, 25, "(((a*5)+(b*5))//2)"},
      {"S41",
       [&] {
         return floordiv(sumOf({a07() * 4, num(3)}), 4);
       },
       0, 7, "a"},
      {"S42",
       [&] {
         return floordiv(sumOf({a07() * 4, num(3)}), 16);
       },
       0, 1, "(a//4)"},
      {"S54", [] { return floordiv(floordiv(var("a", 0, 1800), 10), 9); }, 0, 20, "(a//90)"},
      {"S71",
       [] {
         return floordiv(sumOf({num(-40), var("a", 0, 10) * 2, var("b", 0, 10) * 40}), 40);
       },
       -1, 9, "(-1+b)"},
      {"S72", [] { return floordiv(var("a", 0, 10) * 4, 4); }, 0, 10, "a"},
      {"S73", [] { return floordiv(var("a", 0, 10) * 8, 4); }, 0, 20, "(a*2)"},
      {"S74", [] { return floordiv(var("a", 0, 10) * 4, 8); }, 0, 5, "(a//2)"},
      {"S75",
       [] {
         return floordiv(sumOf({var("idx0", 0, 127) * 4, var("idx2", 0, 3)}), 4);
       },
       0, 127, "idx0"},
      {"S76", [] { return floordiv(var("idx", 0, 9) * -10, 11); }, -9, 0,
       "((((idx*-10)+99)//11)+-9)"},
      {"S77", [] { return floordiv(mod(var("idx", 0, 16) * 4, 8), 4); }, 0, 1, "(idx%2)"},
  });
}

TEST_CASE("Symbolic: modulo by ints (S29, S39-S40, S45-S48, S56, S58-S59, S67-S68)") {
  checkRows({
      {"S29", [] { return mod(var("a", 0, 8), 1); }, 0, 0, "0"},
      {"S39",
       [] {
         return mod(sumOf({var("a", 0, 7) * 100, var("b", 0, 3) * 50}), 100);
       },
       0, 99, "((b*50)%100)"},
      {"S40", [] { return mod(1 + var("a", 1, 2), 2); }, 0, 1, "(-1+a)"},
      {"S45", [] { return mod(var("a", 0, 5) * 10, 9); }, 0, 5, "a"},
      {"S46", [] { return mod(mod(var("a", 0, 31), 12), 4); }, 0, 3, "(a%4)"},
      {"S47", [] { return mod(mod(4 * var("a", 0, 31), 12), 4); }, 0, 0, "0"},
      {"S48", [] { return mod(mod(var("a", 0, 31), 4), 12); }, 0, 3, "(a%4)"},
      {"S56",
       [] {
         return mod(sumOf({var("b", 0, 2), var("a", 0, 5) * 10}), 9);
       },
       0, 7, "(a+b)"},
      {"S58", [] { return mod(var("a", 0, 6), 100); }, 0, 6, "a"},
      {"S59", [] { return mod(var("a", 0, 20), 10); }, 0, 9, "(a%10)"},
      {"S67",
       [] {
         return mod(sumOf({num(-29), var("a", 0, 10), var("b", 0, 10) * 28}), 28);
       },
       0, 27, "((27+a)%28)"},
      {"S68",
       [] {
         return mod(sumOf({num(-29), var("a", 0, 100), var("b", 0, 10) * 28}), 28);
       },
       0, 27, "((27+a)%28)"},
  });
}
