// ProbeTable: the open-addressed table behind the kernel IR's intern table and the lazy graph's
// dedup cache. Values are found by hash and predicate, erased in place (a tombstone a later probe
// walks over), kept through growth, and the table shrinks once emptied.
#include "lazyjit/Support/ProbeTable.h"

#include <doctest/doctest.h>

#include <map>
#include <random>

using namespace lazyjit;

namespace {

using Table = ProbeTable<const int *>;

// The table holds pointers: value v is the address of pool()[v].
const int *P(int v) {
  static const std::vector<int> pool = [] {
    std::vector<int> p(200000);
    for (int i = 0; i < 200000; ++i) p[static_cast<size_t>(i)] = i;
    return p;
  }();
  return &pool.at(static_cast<size_t>(v));
}

// Every value stored under hash `h`, in probe order (a predicate that accepts none sees them all).
std::vector<int> under(Table &t, size_t h) {
  std::vector<int> out;
  t.find(h, [&](const int *v) {
    out.push_back(*v);
    return false;
  });
  return out;
}

} // namespace

TEST_CASE("ProbeTable: values are found by hash and predicate, equal hashes kept apart") {
  Table t;
  t.insert(7, P(1));
  t.insert(7, P(2));
  t.insert(8, P(3));
  CHECK(t.size() == 3);
  REQUIRE(t.find(7, [](const int *v) { return *v == 2; }) != nullptr);
  CHECK(**t.find(7, [](const int *v) { return *v == 2; }) == 2);
  CHECK(t.find(7, [](const int *v) { return *v == 3; }) == nullptr); // 3 is under another hash
  CHECK(t.find(9, [](const int *) { return true; }) == nullptr);
  CHECK(under(t, 7) == std::vector<int>{1, 2});
  // a found value can be changed in place
  *t.find(8, [](const int *) { return true; }) = P(30);
  CHECK(under(t, 8) == std::vector<int>{30});
}

TEST_CASE("ProbeTable: an erased value leaves a tombstone the values after it are still found across") {
  Table t;
  for (int v = 0; v < 5; ++v) t.insert(42, P(v)); // one probe run
  CHECK(t.erase(42, P(1)));
  CHECK(t.size() == 4);
  CHECK(under(t, 42) == std::vector<int>{0, 2, 3, 4});
  for (int v : {0, 2, 4}) CHECK(t.erase(42, P(v)));
  CHECK(under(t, 42) == std::vector<int>{3});
  // a value that is not there (or is under another hash) is not erased
  CHECK_FALSE(t.erase(42, P(1)));
  CHECK_FALSE(t.erase(43, P(3)));
  CHECK(t.size() == 1);
  // a new value takes the first tombstone of its run: the one value left is still found after it
  t.insert(42, P(5));
  CHECK(under(t, 42) == std::vector<int>{5, 3});
  CHECK(t.size() == 2);
}

TEST_CASE("ProbeTable: growth and tombstone churn keep exactly the live values") {
  Table t;
  std::multimap<size_t, int> model;
  std::mt19937_64 rng(0x9b0be);
  // few distinct hashes (long runs of equal ones) and many: both probe patterns
  for (size_t hashes : {size_t(37), size_t(1) << 40}) {
    for (int step = 0; step < 60000; ++step) {
      size_t h = rng() % hashes;
      if (rng() % 3 != 0 || model.empty()) {
        t.insert(h, P(step));
        model.emplace(h, step);
      } else {
        auto it = std::next(model.begin(), static_cast<long>(rng() % std::min<size_t>(model.size(), 64)));
        int victim = it->second;
        size_t vh = it->first;
        model.erase(it);
        REQUIRE(t.erase(vh, P(victim)));
      }
    }
    REQUIRE(t.size() == model.size());
    for (auto [h, v] : model) {
      int x = v;
      REQUIRE(t.find(h, [x](const int *y) { return *y == x; }) != nullptr);
    }
    // erasing the odd values keeps the even ones findable, through every shrink on the way
    std::multimap<size_t, int> kept;
    for (auto [h, v] : model) {
      if (v % 2) REQUIRE(t.erase(h, P(v)));
      else kept.emplace(h, v);
    }
    REQUIRE(t.size() == kept.size());
    for (auto [h, v] : kept) {
      int x = v;
      REQUIRE(t.find(h, [x](const int *y) { return *y == x; }) != nullptr);
    }
    for (auto [h, v] : kept) REQUIRE(t.erase(h, P(v)));
    CHECK(t.size() == 0);
    model.clear();
  }
}

TEST_CASE("ProbeTable: it grows to stay at most half full and gives its slots back once nearly empty") {
  Table t;
  size_t small = t.capacity();
  for (int v = 0; v < 100000; ++v) {
    t.insert(static_cast<size_t>(v) * 7919, P(v));
    REQUIRE(t.size() * 2 <= t.capacity());
  }
  size_t big = t.capacity();
  CHECK(big > small);
  // a freed graph: every value erased in turn; the table shrinks on the way, what is left found
  for (int v = 0; v < 100000; ++v) {
    REQUIRE(t.erase(static_cast<size_t>(v) * 7919, P(v)));
    // not at every step down: a sixteenth full, it keeps its slots (a graph freed and built
    // again refills them without rehashing)
    if (t.size() == big / 16) CHECK(t.capacity() == big);
    if (v == 95000) {
      CHECK(t.capacity() < big);
      for (int w = 95001; w < 100000; w += 997) {
        int x = w;
        REQUIRE(t.find(static_cast<size_t>(w) * 7919, [x](const int *y) { return *y == x; }) != nullptr);
      }
    }
  }
  CHECK(t.size() == 0);
  // down to the size it keeps, not below
  CHECK(t.capacity() == Table::kKeptSlots);
}

TEST_CASE("ProbeTable: a table of up to kKeptSlots keeps its slots through emptying and refilling") {
  Table t;
  auto fill = [&](int n) {
    for (int v = 0; v < n; ++v) t.insert(static_cast<size_t>(v) * 7919, P(v));
  };
  fill(3000);
  size_t grown = t.capacity();
  CHECK(grown <= Table::kKeptSlots);
  for (int round = 0; round < 20; ++round) {
    for (int v = 0; v < 3000; ++v) REQUIRE(t.erase(static_cast<size_t>(v) * 7919, P(v)));
    REQUIRE(t.size() == 0);
    REQUIRE(t.capacity() == grown); // emptied, not shrunk
    fill(3000); // the tombstones are swept in place, at the same size
    REQUIRE(t.capacity() == grown);
    for (int v = 0; v < 3000; v += 101) {
      int x = v;
      REQUIRE(t.find(static_cast<size_t>(v) * 7919, [x](const int *y) { return *y == x; }) != nullptr);
    }
  }
}
