// ProbeTable: the open-addressed table behind the kernel IR's intern table and the lazy graph's
// dedup cache. Values are found by hash and predicate, erased in place (a tombstone a later probe
// walks over), kept through growth, and rewritten by a sweep.
#include "lazyjit/Support/ProbeTable.h"

#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>

using namespace lazyjit;

namespace {

using Table = ProbeTable<int>;
using Visit = Table::Visit;

// Every value stored under hash `h`, in probe order.
std::vector<int> under(Table &t, size_t h) {
  std::vector<int> out;
  t.visit(h, [&](int v) {
    out.push_back(v);
    return Visit::Next;
  });
  return out;
}

} // namespace

TEST_CASE("ProbeTable: values are found by hash and predicate, equal hashes kept apart") {
  Table t;
  t.insert(7, 1);
  t.insert(7, 2);
  t.insert(8, 3);
  CHECK(t.size() == 3);
  REQUIRE(t.find(7, [](int v) { return v == 2; }) != nullptr);
  CHECK(*t.find(7, [](int v) { return v == 2; }) == 2);
  CHECK(t.find(7, [](int v) { return v == 3; }) == nullptr); // 3 is under another hash
  CHECK(t.find(9, [](int) { return true; }) == nullptr);
  CHECK(under(t, 7) == std::vector<int>{1, 2});
  // a found value can be changed in place
  *t.find(8, [](int) { return true; }) = 30;
  CHECK(under(t, 8) == std::vector<int>{30});
}

TEST_CASE("ProbeTable: an erased value leaves a tombstone the values after it are still found across") {
  Table t;
  for (int v = 0; v < 5; ++v) t.insert(42, v); // one probe run
  t.visit(42, [](int v) { return v == 1 ? Visit::EraseStop : Visit::Next; });
  CHECK(t.size() == 4);
  CHECK(under(t, 42) == std::vector<int>{0, 2, 3, 4});
  // Erase goes on, Stop ends the visit
  t.visit(42, [](int v) { return v % 2 == 0 ? Visit::Erase : Visit::Next; });
  CHECK(under(t, 42) == std::vector<int>{3});
  int seen = 0;
  t.insert(42, 5);
  t.visit(42, [&](int) {
    ++seen;
    return Visit::Stop;
  });
  CHECK(seen == 1);
  CHECK(t.size() == 2);
}

TEST_CASE("ProbeTable: growth, tombstone churn and sweeps keep exactly the live values") {
  Table t;
  std::multimap<size_t, int> model;
  std::mt19937_64 rng(0x9b0be);
  // few distinct hashes (long runs of equal ones) and many: both probe patterns
  for (size_t hashes : {size_t(37), size_t(1) << 40}) {
    for (int step = 0; step < 60000; ++step) {
      size_t h = rng() % hashes;
      if (rng() % 3 != 0 || model.empty()) {
        t.insert(h, step);
        model.emplace(h, step);
      } else {
        auto it = std::next(model.begin(), static_cast<long>(rng() % std::min<size_t>(model.size(), 64)));
        int victim = it->second;
        size_t vh = it->first;
        model.erase(it);
        int erased = 0;
        t.visit(vh, [&](int v) {
          if (v != victim) return Visit::Next;
          ++erased;
          return Visit::EraseStop;
        });
        REQUIRE(erased == 1);
      }
    }
    REQUIRE(t.size() == model.size());
    for (auto [h, v] : model) {
      int x = v;
      REQUIRE(t.find(h, [x](int y) { return y == x; }) != nullptr);
    }
    // a sweep drops what it is told to and may rewrite what it keeps
    t.eraseIf([](int &v) {
      if (v % 2) return true;
      v = -v;
      return false;
    });
    std::multimap<size_t, int> kept;
    for (auto [h, v] : model)
      if (v % 2 == 0) kept.emplace(h, -v);
    REQUIRE(t.size() == kept.size());
    for (auto [h, v] : kept) {
      int x = v;
      REQUIRE(t.find(h, [x](int y) { return y == x; }) != nullptr);
    }
    t.eraseIf([](int &) { return true; });
    CHECK(t.size() == 0);
    model.clear();
  }
}

TEST_CASE("ProbeTable: it grows to stay at most half full and gives its slots back once emptied") {
  Table t;
  size_t small = t.capacity();
  for (int v = 0; v < 100000; ++v) {
    t.insert(static_cast<size_t>(v) * 7919, v);
    REQUIRE(t.size() * 2 <= t.capacity());
  }
  size_t big = t.capacity();
  CHECK(big > small);
  // a freed graph: every value erased in turn; the table shrinks on the way, what is left found
  for (int v = 0; v < 100000; ++v) {
    t.visit(static_cast<size_t>(v) * 7919, [v](int x) { return x == v ? Visit::EraseStop : Visit::Next; });
    if (v == 95000) {
      CHECK(t.capacity() < big);
      for (int w = 95001; w < 100000; w += 997) {
        int x = w;
        REQUIRE(t.find(static_cast<size_t>(w) * 7919, [x](int y) { return y == x; }) != nullptr);
      }
    }
  }
  CHECK(t.size() == 0);
  CHECK(t.capacity() == small);
}
