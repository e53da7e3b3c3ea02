// PtrSet and PtrMap: membership and values agree with std::set / std::map through growth from
// their inline slots to large tables, for addresses that differ only in their high bits or only in
// their alignment.
#include "lazyjit/Support/PtrSet.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

using lazyjit::PtrMap;
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

TEST_CASE("PtrMap: emplace and find agree with std::map from 0 to 50,000 keys, with and without reserve") {
  std::vector<int> storage(50000);
  for (bool reserved : {false, true}) {
    std::mt19937 rng(11);
    PtrMap<int, uint32_t> m;
    if (reserved) m.reserve(20000);
    std::map<const int *, uint32_t> model;
    CHECK(m.find(&storage[0]) == nullptr); // an empty map has no slots yet
    for (uint32_t step = 0; step < 100000; ++step) {
      const int *p = &storage[rng() % storage.size()];
      auto [v, fresh] = m.emplace(p, step);
      auto [it, modelFresh] = model.emplace(p, step);
      REQUIRE(fresh == modelFresh);
      REQUIRE(*v == it->second); // a key already there keeps its first value
      REQUIRE(m.size() == model.size());
      const int *q = &storage[rng() % storage.size()];
      const uint32_t *found = m.find(q);
      auto mit = model.find(q);
      REQUIRE((found != nullptr) == (mit != model.end()));
      if (found) REQUIRE(*found == mit->second);
    }
  }
}

TEST_CASE("PtrMap: page-aligned keys keep their values across growth") {
  PtrMap<char, const char *> m;
  std::vector<const char *> ps;
  for (uintptr_t i = 1; i <= 5000; ++i) ps.push_back(reinterpret_cast<const char *>(i << 12));
  for (const char *p : ps) CHECK(m.emplace(p, p + 1).second);
  for (const char *p : ps) {
    const char *const *v = m.find(p);
    REQUIRE(v != nullptr);
    CHECK(*v == p + 1);
  }
  CHECK(m.find(reinterpret_cast<const char *>(uintptr_t{5001} << 12)) == nullptr);
}
