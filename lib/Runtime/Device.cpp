// The device registry: canonical names, factories, and the default device.
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>

namespace lazyjit {

namespace {
struct Registry {
  std::mutex mu;
  std::map<std::string, std::function<std::unique_ptr<Device>(const std::string &)>> factories;
  std::map<std::string, std::unique_ptr<Device>> devices;
  std::map<std::string, std::string> failures; // name -> why it could not be opened
};
Registry &registry() {
  static Registry *r = new Registry(); // devices live until process exit
  return *r;
}
} // namespace

void registerBuiltinDevices(); // RegisterDevices.cpp

std::vector<std::shared_ptr<Program>> Device::compileAll(const std::vector<KernelOpRef> &asts) {
  std::vector<std::shared_ptr<Program>> out;
  for (const auto &a : asts) out.push_back(compile(a));
  return out;
}

std::string canonicalizeDevice(const std::string &name) {
  std::string base = name, suffix;
  if (auto pos = name.find(':'); pos != std::string::npos) {
    base = name.substr(0, pos);
    suffix = name.substr(pos + 1);
  }
  std::transform(base.begin(), base.end(), base.begin(), [](unsigned char c) { return std::toupper(c); });
  if (suffix.empty() || suffix == "0") return base;
  return base + ":" + suffix;
}

void registerDeviceFactory(const std::string &baseName,
                           std::function<std::unique_ptr<Device>(const std::string &)> factory) {
  auto &r = registry();
  std::lock_guard lock(r.mu);
  r.factories[baseName] = std::move(factory);
}

Device &getDevice(const std::string &rawName) {
  registerBuiltinDevices();
  std::string name = canonicalizeDevice(rawName);
  auto &r = registry();
  std::lock_guard lock(r.mu);
  if (auto it = r.devices.find(name); it != r.devices.end()) return *it->second;
  if (auto it = r.failures.find(name); it != r.failures.end()) throw DeviceError(it->second);
  std::string base = name.substr(0, name.find(':'));
  auto f = r.factories.find(base);
  if (f == r.factories.end()) {
    std::string known;
    for (const auto &[k, v] : r.factories) known += (known.empty() ? "" : ", ") + k;
    throw DeviceError("unknown device '" + rawName + "' (known: " + known + ")");
  }
  try {
    auto dev = f->second(name);
    Device &ref = *dev;
    r.devices.emplace(name, std::move(dev));
    return ref;
  } catch (const DeviceError &e) {
    r.failures.emplace(name, e.what());
    throw;
  }
}

bool deviceAvailable(const std::string &name, std::string *why) {
  try {
    getDevice(name);
    return true;
  } catch (const Error &e) {
    if (why) *why = e.what();
    return false;
  }
}

std::string defaultDevice() {
  const std::string &d = config().device;
  return d.empty() ? std::string("CPU") : canonicalizeDevice(d);
}

} // namespace lazyjit
