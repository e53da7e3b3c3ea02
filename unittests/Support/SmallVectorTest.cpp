// SmallVector: the std::vector interface, checked against std::vector itself through random edits
// that cross the inline/heap boundary, plus the cases a vector of pointers into itself gets wrong.
#include "lazyjit/Support/SmallVector.h"

#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

using lazyjit::SmallVector;

namespace {

// A value whose copies are counted, so a leak or a double destruction shows in `live`.
struct Counted {
  static inline int live = 0;
  std::shared_ptr<int> v;
  Counted() : v(std::make_shared<int>(0)) { ++live; }
  explicit Counted(int x) : v(std::make_shared<int>(x)) { ++live; }
  Counted(const Counted &o) : v(o.v) { ++live; }
  Counted(Counted &&o) noexcept : v(std::move(o.v)) { ++live; }
  Counted &operator=(const Counted &) = default;
  Counted &operator=(Counted &&) noexcept = default;
  ~Counted() { --live; }
  int get() const { return v ? *v : -1; }
  bool operator==(const Counted &o) const { return get() == o.get(); }
};

template <typename S> std::vector<int> values(const S &s) {
  std::vector<int> out;
  for (const auto &x : s) out.push_back(x.get());
  return out;
}

} // namespace

TEST_CASE("SmallVector: random edits agree with std::vector across the inline/heap boundary") {
  std::mt19937 rng(12345);
  {
    SmallVector<Counted, 4> s;
    std::vector<Counted> v;
    for (int step = 0; step < 20000; ++step) {
      int x = static_cast<int>(rng() % 1000);
      switch (rng() % 9) {
      case 0:
      case 1: s.push_back(Counted(x)); v.push_back(Counted(x)); break;
      case 2:
        if (!v.empty()) { s.pop_back(); v.pop_back(); }
        break;
      case 3: {
        size_t at = v.empty() ? 0 : rng() % (v.size() + 1);
        s.insert(s.begin() + at, Counted(x));
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), Counted(x));
        break;
      }
      case 4:
        if (!v.empty()) {
          size_t at = rng() % v.size(), n = std::min<size_t>(rng() % 3, v.size() - at);
          s.erase(s.begin() + at, s.begin() + at + n);
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + n));
        }
        break;
      case 5: {
        size_t n = rng() % 9;
        s.resize(n, Counted(x));
        v.resize(n, Counted(x));
        break;
      }
      case 6: { // a copy and a move, each way
        SmallVector<Counted, 4> c = s;
        SmallVector<Counted, 4> m = std::move(c);
        s = m;
        SmallVector<Counted, 4> other{Counted(1), Counted(2), Counted(3), Counted(4), Counted(5)};
        other = std::move(m);
        s = std::move(other);
        break;
      }
      case 7: {
        size_t at = v.empty() ? 0 : rng() % (v.size() + 1);
        std::vector<Counted> src{Counted(x), Counted(x + 1), Counted(x + 2)};
        s.insert(s.begin() + at, src.begin(), src.end());
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), src.begin(), src.end());
        break;
      }
      case 8:
        if (rng() % 16 == 0) { s.clear(); v.clear(); }
        break;
      }
      REQUIRE(values(s) == values(v));
      REQUIRE(s.size() <= s.capacity());
    }
  }
  CHECK(Counted::live == 0); // every element built was destroyed once
}

TEST_CASE("SmallVector: elements of the vector itself as arguments, while it grows") {
  SmallVector<std::string, 2> s{"a", "b"};
  s.push_back(s[0]); // grows: the argument is read before the old storage goes
  s.push_back(s.back());
  s.insert(s.begin(), s[3]);
  s.insert(s.begin() + 1, s.begin(), s.end()); // a range inside the vector
  CHECK(std::vector<std::string>(s) ==
        std::vector<std::string>{"a", "a", "a", "b", "a", "a", "a", "b", "a", "a"});
  s.assign(s.begin() + 2, s.begin() + 4);
  CHECK(std::vector<std::string>(s) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("SmallVector: inline until it outgrows N, then one heap block that a move hands over") {
  SmallVector<int, 4> s{1, 2, 3};
  CHECK(s.capacity() == 4);
  const int *inlineAt = s.data();
  s.push_back(4);
  CHECK(s.data() == inlineAt); // four fit
  s.push_back(5);
  CHECK(s.data() != inlineAt);
  const int *heap = s.data();
  SmallVector<int, 4> moved = std::move(s);
  CHECK(moved.data() == heap); // the block itself, no copy
  CHECK(s.empty());
  CHECK(s.capacity() == 4);
  s.push_back(9); // the moved-from vector is usable again
  CHECK(s[0] == 9);
  CHECK(moved == SmallVector<int, 4>{1, 2, 3, 4, 5});
  CHECK(SmallVector<int, 4>{1, 2} < SmallVector<int, 4>{1, 3});
  CHECK(SmallVector<int, 4>(std::vector<int>{7, 8}) == SmallVector<int, 4>{7, 8});
  CHECK(SmallVector<int, 4>(3, 7) == SmallVector<int, 4>{7, 7, 7});
  CHECK_THROWS_WITH_AS(moved.at(5), "SmallVector::at", std::out_of_range);
}
