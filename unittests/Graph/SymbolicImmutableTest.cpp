// Symbolic nodes never change once built: binding a variable makes a new node, so expressions
// built before the bind keep their keys and renders, and references to their keys stay valid
// (the reference mutates the variable; a const std::string& taken from key() was freed by it).
#include "lazyjit/Graph/Symbolic.h"

#include <doctest/doctest.h>

using namespace lazyjit;

TEST_CASE("Symbolic immutability: a bind changes no expression built before it") {
  NodeRef n = variable("n", 1, 64);
  SInt x = SInt(n) * 4;
  const std::string &xKey = x.node()->key(); // held across the bind (run in the sanitizer build)
  REQUIRE(xKey == "(n[1-64]*4)");
  NodeRef bound = n->bind(4);
  SInt y = SInt(n) * 4;
  CHECK(xKey == "(n[1-64]*4)");
  CHECK(x.node()->key() == "(n[1-64]*4)");
  CHECK(y.node()->key() == "(n[1-64]*4)");
  CHECK(x == y);
  CHECK(n->key() == "n[1-64]");
  CHECK_FALSE(n->boundValue().has_value());
  SInt z = SInt(bound) * 4;
  CHECK(z.node()->key() == "(n[1-64=4]*4)");
  CHECK(z.render() == "(n*4)");
  CHECK(z != x);
  CHECK(z.node()->unbind()->key() == x.node()->key());
}

TEST_CASE("Symbolic immutability: one variable is bound to different values side by side") {
  NodeRef n = variable("n", 1, 64);
  NodeRef three = n->bind(3), five = n->bind(5);
  CHECK(three->key() == "n[1-64=3]");
  CHECK(five->key() == "n[1-64=5]");
  CHECK(*three->boundValue() == 3);
  CHECK(*five->boundValue() == 5);
  CHECK(evalNode(*(SInt(three) + SInt(five)).node(), {{"n", 7}}) == 14); // evaluation goes by name
  CHECK_THROWS_WITH_AS(three->bind(5), doctest::Contains("already bound to 3"), Error);
  CHECK_THROWS_WITH_AS(n->bind(65), doctest::Contains("cannot bind 65 to n[1-64]: out of range"), Error);
}
