// Modules: models whose tensors can be walked and named, and the state dicts built from that walk
// (the reference's nn.state.get_state_dict / get_parameters). A module, its state dict and an
// optimizer over it may be shared by threads that read them (inference from several request
// threads); a training step changes them and is one thread's at a time.
//
// C++ has no __dict__, so a model lists its members once, in one line:
//
//   struct Net : nn::Module {
//     nn::Linear l1{784, 128}, l2{128, 10};
//     LAZYJIT_MODULE(l1, l2)
//     Tensor operator()(const Tensor &x) { return l2(l1(x).relu()); }
//   };
//
// nn::getStateDict(net) then names its tensors as the reference does ("l1.weight", "l2.bias");
// a member may be a Tensor, a std::optional<Tensor>, another Module, or a std::vector, std::array,
// std::map or smart pointer of those (list elements are named by index: "layers.0.weight").
// Tensors are handles, so the state dict, the parameter list and an optimizer all alias the
// model's own tensors: an assign through any of them updates the model.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lazyjit::nn {

/// Named tensors in insertion order (a Python dict).
class StateDict {
public:
  using Entry = std::pair<std::string, Tensor>;
  /// Adds `name`, or replaces its tensor in place if it is present (dict assignment).
  void insert(std::string name, Tensor t);
  /// The tensor named `name`, or null.
  const Tensor *find(std::string_view name) const;
  /// The tensor named `name`; throws an Error naming the key when it is missing.
  const Tensor &at(std::string_view name) const;
  bool contains(std::string_view name) const { return find(name) != nullptr; }
  size_t size() const { return entries.size(); }
  bool empty() const { return entries.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries.end(); }
  std::vector<std::string> keys() const;
  std::vector<Tensor> values() const;

private:
  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> index;
};

class Members;

/// A model or layer: lists its tensors and sub-modules in members() (see LAZYJIT_MODULE).
class Module {
public:
  virtual ~Module() = default;
  /// Calls `m(name, member)` for each member, in declaration order.
  virtual void members(Members &m) = 0;
};

/// Walks members, naming each tensor by its path from the root (the reference's prefix rules).
class Members {
public:
  using Visit = std::function<void(const std::string &name, Tensor &t)>;
  Members(std::string prefix, Visit visit) : prefix(std::move(prefix)), visit(std::move(visit)) {}

  template <typename T> Members &operator()(std::string_view name, T &member) {
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, Tensor>) {
      if (member.defined()) visitTensor(name, member);
    } else if constexpr (std::is_base_of_v<Module, U>) {
      Members child(childPrefix(name), visit);
      member.members(child);
    } else if constexpr (isOptional<U>::value || isPointer<U>::value) {
      if (member) (*this)(name, *member);
    } else if constexpr (isSequence<U>::value) {
      Members child(childPrefix(name), visit);
      size_t i = 0;
      for (auto &x : member) child(std::to_string(i++), x);
    } else if constexpr (isMap<U>::value) {
      Members child(childPrefix(name), visit);
      for (auto &[k, x] : member) child(k, x);
    } else {
      static_assert(sizeof(U) == 0, "nn::Members: this member type cannot be walked (give a Tensor, "
                                    "a Module, or an optional/vector/array/map/pointer of them)");
    }
    return *this;
  }

  /// Walks `members` with names from `names`, a comma-separated list (what LAZYJIT_MODULE passes).
  template <typename... T> void fields(std::string_view names, T &...members) {
    std::vector<std::string_view> split = splitNames(names);
    size_t i = 0;
    ((*this)(split.at(i++), members), ...);
  }

private:
  std::string prefix;
  Visit visit;

  void visitTensor(std::string_view name, Tensor &t);
  std::string childPrefix(std::string_view name) const;
  static std::vector<std::string_view> splitNames(std::string_view names);

  template <typename T> struct isOptional : std::false_type {};
  template <typename T> struct isOptional<std::optional<T>> : std::true_type {};
  template <typename T> struct isPointer : std::false_type {};
  template <typename T> struct isPointer<std::shared_ptr<T>> : std::true_type {};
  template <typename T> struct isPointer<std::unique_ptr<T>> : std::true_type {};
  template <typename T> struct isSequence : std::false_type {};
  template <typename T> struct isSequence<std::vector<T>> : std::true_type {};
  template <typename T, size_t N> struct isSequence<std::array<T, N>> : std::true_type {};
  template <typename T> struct isMap : std::false_type {};
  template <typename T> struct isMap<std::map<std::string, T>> : std::true_type {};
};

/// Declares a Module's members in one line: LAZYJIT_MODULE(conv1, bn1, layers).
#define LAZYJIT_MODULE(...)                                                                        \
  void members(::lazyjit::nn::Members &lazyjitMembers_) override {                                 \
    lazyjitMembers_.fields(#__VA_ARGS__, __VA_ARGS__);                                             \
  }

/// The named tensors of a model, a layer, a tensor or a container of them.
template <typename T> StateDict getStateDict(T &obj, const std::string &prefix = "") {
  StateDict sd;
  Members m(prefix, [&](const std::string &name, Tensor &t) { sd.insert(name, t); });
  m("", obj);
  return sd;
}

/// Every tensor of getStateDict, in order: parameters and buffers (the optimizers tell them apart
/// by requires_grad, as the reference's do).
template <typename T> std::vector<Tensor> getParameters(T &obj) { return getStateDict(obj).values(); }

/// Layers and plain functions applied in order (the reference's `x.sequential(layers)` over a
/// list). Layers are named by their index: a Sequential member `layers` holding a Conv2d first
/// names its weight "layers.0.weight".
class Sequential : public Module {
public:
  using Fn = std::function<Tensor(const Tensor &)>;
  /// A layer (a Module callable on a Tensor, kept by shared_ptr) or a function.
  struct Item {
    template <typename L> Item(L layer) {
      if constexpr (std::is_base_of_v<Module, L>) {
        auto p = std::make_shared<L>(std::move(layer));
        module = p;
        fn = [p](const Tensor &x) { return (*p)(x); };
      } else {
        fn = Fn(std::move(layer));
      }
    }
    std::shared_ptr<Module> module;
    Fn fn;
  };

  Sequential() = default;
  Sequential(std::initializer_list<Item> items) : items(items) {}
  void push_back(Item item) { items.push_back(std::move(item)); }
  size_t size() const { return items.size(); }
  /// The layer at `i` as an L (throws if it is a function or another layer type).
  template <typename L> L &at(size_t i) const {
    L *p = i < items.size() ? dynamic_cast<L *>(items[i].module.get()) : nullptr;
    if (!p) throwNotA(i);
    return *p;
  }
  Tensor operator()(const Tensor &x) const;
  void members(Members &m) override;

private:
  std::vector<Item> items;
  [[noreturn]] void throwNotA(size_t i) const;
};

} // namespace lazyjit::nn
