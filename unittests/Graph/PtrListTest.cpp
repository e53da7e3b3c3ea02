// PtrList: the graph's link lists. One element inline, then a heap array, then a hash index past
// kIndexed elements; erase moves the last element into the gap; the contents stay a set in every
// representation.
#include "lazyjit/Graph/PtrList.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

using namespace lazyjit;

TEST_CASE("PtrList behaves as a set through inline, heap and indexed storage") {
  std::vector<int> pool(200);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    PtrList<int> list;
    std::set<int *> model;
    for (int step = 0; step < 400; ++step) {
      int *p = &pool[rng() % pool.size()];
      if (rng() % 3 != 0) {
        if (!model.count(p)) {
          list.push_back(p);
          model.insert(p);
        }
      } else {
        CHECK(list.erase(p) == (model.erase(p) == 1));
      }
      REQUIRE(list.size() == model.size());
      CHECK(list.empty() == model.empty());
      std::set<int *> seen(list.begin(), list.end());
      CHECK(seen == model);
      for (int *q : model) CHECK(list.contains(q));
      if (!model.empty()) CHECK(model.count(list.back()) == 1);
    }
  }
}

TEST_CASE("PtrList keeps its first element inline and finds by position") {
  int a = 0, b = 0, c = 0;
  PtrList<int> list;
  CHECK(sizeof(list) == 16); // (the index, when there is one, hangs off the heap array)
  list.push_back(&a);
  CHECK(list[0] == &a);
  CHECK(list.find(&a) == 0);
  CHECK(list.find(&b) == 1); // absent: size()
  list.push_back(&b);
  list.push_back(&c);
  CHECK(list.find(&c) == 2);
  CHECK(list.erase(&a));
  CHECK(list[0] == &c); // the last element took the gap
  CHECK(!list.erase(&a));
  CHECK(list.size() == 2);
}
