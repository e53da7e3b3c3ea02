// Every Tensor method of lazyjit/Tensor/TensorOps.def is callable from a tensor script: the table
// is iterated here and each script name looked up in lazyjit-dump's method registry, then a few
// bindings are called with positional and keyword arguments to show they reach the method.
#include "Builtins.h"

#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <string_view>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::script;

namespace {

struct Entry {
  std::string_view cppName; ///< empty for a script method Tensor.h declares by hand
  std::string_view scriptName;
};

const std::vector<Entry> &tableEntries() {
  static const std::vector<Entry> entries = {
#define LAZYJIT_TENSOR_METHOD(Name, ScriptName, Params, Args, ...) {#Name, ScriptName},
#define LAZYJIT_TENSOR_SCRIPT_METHOD(ScriptName, ...) {"", ScriptName},
#include "lazyjit/Tensor/TensorOps.def"
  };
  return entries;
}

Value call(Tensor self, const std::string &name, std::vector<Value> pos,
           std::vector<std::pair<std::string, Value>> kw = {}) {
  CallArgs args(name, std::move(pos), std::move(kw));
  return callTensorMethod(std::move(self), name, args);
}

std::vector<float> valuesOf(const Value &v) { return v.as<Tensor>().toVector<float>(); }

} // namespace

TEST_CASE("TensorScriptBindings: every table entry has a script binding") {
  REQUIRE(tableEntries().size() > 100);
  for (const Entry &e : tableEntries()) {
    CAPTURE(e.cppName);
    CAPTURE(e.scriptName);
    CHECK(isTensorMethod(e.scriptName));
  }
  CHECK_FALSE(isTensorMethod("no_such_method"));
}

TEST_CASE("TensorScriptBindings: bindings take positional, keyword and default arguments") {
  Tensor x = Tensor::fromValues({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(valuesOf(call(x, "sum", {}, {{"axis", Value(int64_t{1})}})) == std::vector<float>{6, 15});
  CHECK(valuesOf(call(x, "sum", {})) == std::vector<float>{21});
  CHECK(call(x, "reshape", {Value(int64_t{3}), Value(int64_t{2})}).as<Tensor>().intShape() ==
        std::vector<int64_t>{3, 2});
  CHECK(valuesOf(call(x, "add", {Value(1.0)}, {{"reverse", Value(true)}})) ==
        std::vector<float>{2, 3, 4, 5, 6, 7});
  CHECK(valuesOf(call(x, "__getitem__", {Value(int64_t{1})})) == std::vector<float>{4, 5, 6});
  CHECK(call(x, "multinomial", {Value(int64_t{2})}, {{"replacement", Value(true)}})
            .as<Tensor>()
            .intShape() == std::vector<int64_t>{2, 2});
  CHECK(call(x, "numel", {}).as<int64_t>() == 6);
}

TEST_CASE("TensorScriptBindings: a binding rejects arguments the method does not take") {
  Tensor x = Tensor::fromValues({1, 2}, {2});
  CHECK_THROWS_WITH(call(x, "relu", {Value(int64_t{1})}), doctest::Contains("relu"));
  CHECK_THROWS_WITH(call(x, "softmax", {}, {{"dim", Value(int64_t{0})}}),
                    doctest::Contains("dim"));
}

TEST_CASE("TensorScriptBindings: x.__getitem__(v) indexes as x[v] does") {
  Tensor x = Tensor::fromValues({1, 2, 3, 4, 5, 6}, {2, 3});
  auto ints = [](std::vector<int64_t> v, bool isList) {
    SeqV s{{}, isList};
    for (int64_t i : v) s.items.emplace_back(i);
    return Value(std::move(s));
  };
  // a tuple spreads over the dims: x[(1, 2)] is x[1, 2]
  CHECK(valuesOf(call(x, "__getitem__", {ints({1, 2}, false)})) == std::vector<float>{6});
  // a list of ints is one integer-tensor index on the first dim
  CHECK(valuesOf(call(x, "__getitem__", {ints({1, 0}, true)})) == std::vector<float>{4, 5, 6, 1, 2, 3});
  // a list that is not all ints spreads too: x[[[1], [0]]] is x[[1], [0]], one index list per dim
  SeqV nested{{ints({1}, true), ints({0}, true)}, true};
  Tensor picked = call(x, "__getitem__", {Value(nested)}).as<Tensor>();
  CHECK(picked.intShape() == std::vector<int64_t>{1});
  CHECK(valuesOf(picked) == std::vector<float>{4});
  CHECK_THROWS_WITH(call(x, "__getitem__", {Value(std::string("a"))}),
                    doctest::Contains("a Tensor index must be an int, a slice, None, ..., a Tensor or a list of ints, got str"));
}
