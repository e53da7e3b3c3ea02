// PtrSet: membership agrees with std::set through growth from its inline slots to large tables,
// for addresses that differ only in their high bits or only in their alignment.
#include "lazyjit/Support/PtrSet.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

using lazyjit::PtrSet;

TEST_CASE("PtrSet: inserts and lookups agree with std::set from 0 to 100,000 members") {
  std::vector<int> storage(100000);
  std::mt19937 rng(7);
  PtrSet<int> s;
  std::set<const int *> model;
  CHECK(!s.contains(&storage[0])); // an empty set has no slots yet
  for (int step = 0; step < 200000; ++step) {
    const int *p = &storage[rng() % storage.size()];
    bool fresh = model.insert(p).second;
    REQUIRE(s.insert(p) == fresh);
    REQUIRE(s.size() == model.size());
    const int *q = &storage[rng() % storage.size()];
    REQUIRE(s.contains(q) == (model.count(q) != 0));
  }
}

TEST_CASE("PtrSet: addresses 4 KiB apart, as page-aligned nodes are, still spread") {
  PtrSet<char> s;
  std::vector<const char *> ps;
  for (uintptr_t i = 1; i <= 5000; ++i) ps.push_back(reinterpret_cast<const char *>(i << 12));
  for (const char *p : ps) CHECK(s.insert(p));
  for (const char *p : ps) CHECK(!s.insert(p));
  CHECK(s.size() == ps.size());
  CHECK(!s.contains(reinterpret_cast<const char *>(uintptr_t{5001} << 12)));
}
