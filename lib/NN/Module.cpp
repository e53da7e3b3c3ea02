// State dicts, the member walk behind them, and Sequential.
#include "lazyjit/NN/Module.h"
#include "lazyjit/Support/Error.h"

namespace lazyjit::nn {

void StateDict::insert(std::string name, Tensor t) {
  auto it = index.find(name);
  if (it != index.end()) {
    entries[it->second].second = std::move(t);
    return;
  }
  index.emplace(name, entries.size());
  entries.emplace_back(std::move(name), std::move(t));
}

const Tensor *StateDict::find(std::string_view name) const {
  auto it = index.find(std::string(name));
  return it == index.end() ? nullptr : &entries[it->second].second;
}

const Tensor &StateDict::at(std::string_view name) const {
  const Tensor *t = find(name);
  LAZYJIT_USER_CHECK(t != nullptr, Error, "state dict has no key '{}'", name);
  return *t;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto &e : entries) out.push_back(e.first);
  return out;
}

std::vector<Tensor> StateDict::values() const {
  std::vector<Tensor> out;
  for (const auto &e : entries) out.push_back(e.second);
  return out;
}

// The reference names a tensor prefix.strip('.') where prefix grows by "<key>." at each level.
void Members::visitTensor(std::string_view name, Tensor &t) {
  std::string full = prefix + std::string(name);
  size_t b = full.find_first_not_of('.');
  size_t e = full.find_last_not_of('.');
  visit(b == std::string::npos ? std::string() : full.substr(b, e - b + 1), t);
}

// The root of a walk has the empty name and adds no level (getStateDict(obj, "model.") names
// obj's weight "model.weight").
std::string Members::childPrefix(std::string_view name) const {
  return name.empty() ? prefix : prefix + std::string(name) + ".";
}

std::vector<std::string_view> Members::splitNames(std::string_view names) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= names.size()) {
    size_t c = names.find(',', pos);
    std::string_view part = names.substr(pos, c == std::string_view::npos ? std::string_view::npos : c - pos);
    size_t b = part.find_first_not_of(" \t\n");
    size_t e = part.find_last_not_of(" \t\n");
    out.push_back(b == std::string_view::npos ? std::string_view() : part.substr(b, e - b + 1));
    if (c == std::string_view::npos) break;
    pos = c + 1;
  }
  return out;
}

Tensor Sequential::operator()(const Tensor &x) const {
  Tensor y = x;
  for (const auto &item : items) y = item.fn(y);
  return y;
}

void Sequential::members(Members &m) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].module) m(std::to_string(i), *items[i].module);
}

void Sequential::throwNotA(size_t i) const {
  throw Error(fmt::format("Sequential: item {} of {} is not a layer of the requested type", i, items.size()));
}

} // namespace lazyjit::nn
