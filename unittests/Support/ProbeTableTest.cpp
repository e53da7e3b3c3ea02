// ProbeTable: the open-addressed table behind the kernel IR's intern table and the lazy graph's
// dedup cache. Values are found by hash and predicate, erased in place (a tombstone a later probe
// walks over), kept through growth, and the table shrinks once emptied.
#include "lazyjit/Support/ProbeTable.h"

#include <doctest/doctest.h>

#include <map>
#include <random>

using namespace lazyjit;

namespace {

using Table = ProbeTable<int>;

// Every value stored under hash `h`, in probe order (a predicate that accepts none sees them all).
std::vector<int> under(Table &t, size_t h) {
  std::vector<int> out;
  t.find(h, [&](int v) {
    out.push_back(v);
    return false;
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
  CHECK(t.erase(42, 1));
  CHECK(t.size() == 4);
  CHECK(under(t, 42) == std::vector<int>{0, 2, 3, 4});
  for (int v : {0, 2, 4}) CHECK(t.erase(42, v));
  CHECK(under(t, 42) == std::vector<int>{3});
  // a value that is not there (or is under another hash) is not erased
  CHECK_FALSE(t.erase(42, 1));
  CHECK_FALSE(t.erase(43, 3));
  CHECK(t.size() == 1);
  // a new value takes the first tombstone of its run: the one value left is still found after it
  t.insert(42, 5);
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
        t.insert(h, step);
        model.emplace(h, step);
      } else {
        auto it = std::next(model.begin(), static_cast<long>(rng() % std::min<size_t>(model.size(), 64)));
        int victim = it->second;
        size_t vh = it->first;
        model.erase(it);
        REQUIRE(t.erase(vh, victim));
      }
    }
    REQUIRE(t.size() == model.size());
    for (auto [h, v] : model) {
      int x = v;
      REQUIRE(t.find(h, [x](int y) { return y == x; }) != nullptr);
    }
    // erasing the odd values keeps the even ones findable, through every shrink on the way
    std::multimap<size_t, int> kept;
    for (auto [h, v] : model) {
      if (v % 2) REQUIRE(t.erase(h, v));
      else kept.emplace(h, v);
    }
    REQUIRE(t.size() == kept.size());
    for (auto [h, v] : kept) {
      int x = v;
      REQUIRE(t.find(h, [x](int y) { return y == x; }) != nullptr);
    }
    for (auto [h, v] : kept) REQUIRE(t.erase(h, v));
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
    REQUIRE(t.erase(static_cast<size_t>(v) * 7919, v));
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
