#include "xylem/backend.hpp"

#include <cstdlib>
#include <ostream>

#include "core/deferred.hpp"
#include "core/fusion.hpp"
#include "core/memory_usage.hpp"
#include "core/registry.hpp"
#include "xylem/error.hpp"

namespace xylem {

struct Backend::Impl {
  plugin::Framework* framework = nullptr;
  plugin::Device* device = nullptr;
  BackendConfig config;
};

namespace {

const detail::FrameworkEntry& available_framework(const std::string& name) {
  const auto* entry = detail::find_framework(name);
  if (entry == nullptr) {
    std::string known;
    for (const auto& known_name : detail::framework_names()) known += (known.empty() ? "" : ", ") + known_name;
    throw Error(ErrorCode::invalid_argument, "unknown framework '" + name + "' (known: " + known + ")");
  }
  if (!entry->available())
    throw Error(ErrorCode::plugin_unavailable, "framework '" + name + "' is unavailable: " + entry->reason);
  return *entry;
}

// GPUs first, then accelerators, then the rest; optionally only one kind.
int best_device(const plugin::Framework& fw, std::optional<HardwareKind> only) {
  constexpr HardwareKind preference[] = {HardwareKind::gpu, HardwareKind::accelerator, HardwareKind::cpu,
                                         HardwareKind::dsp, HardwareKind::other};
  for (HardwareKind kind : preference) {
    if (only && kind != *only) continue;
    for (const auto& hw : fw.hardware())
      if (hw.kind == kind) return hw.index;
  }
  return -1;
}

std::pair<std::string, int> parse_spec(const std::string& spec) {
  if (spec.empty() || spec.front() == ':')
    throw Error(ErrorCode::invalid_argument,
                "empty backend name: expected framework[:index], e.g. native, opencl:0, cuda:1");
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return {spec, -1};
  const std::string index = spec.substr(colon + 1);
  char* end = nullptr;
  const long value = std::strtol(index.c_str(), &end, 10);
  if (index.empty() || *end != '\0' || value < 0)
    throw Error(ErrorCode::invalid_argument,
                "bad backend '" + spec + "': expected framework[:index], e.g. native, opencl:0, cuda:1");
  return {spec.substr(0, colon), static_cast<int>(value)};
}

// The framework Backend::best() takes when nothing overrides it.
BackendConfig best_config(std::optional<HardwareKind> kind) {
  if (const auto* cuda = detail::find_framework("cuda"); cuda && cuda->available()) {
    if (int d = best_device(*cuda->framework, kind ? kind : HardwareKind::gpu); d >= 0) return {"cuda", d};
  }
  if (const auto* opencl = detail::find_framework("opencl"); opencl && opencl->available()) {
    // OpenCL on the CPU only when asked for: native already serves the host.
    for (HardwareKind k : {HardwareKind::gpu, HardwareKind::accelerator}) {
      if (kind && *kind != k) continue;
      if (int d = best_device(*opencl->framework, k); d >= 0) return {"opencl", d};
    }
  }
  return {"native", 0};
}

}  // namespace

Backend::Backend(const BackendConfig& requested) {
  BackendConfig config = requested;
  if (config.framework.empty()) {
    BackendConfig chosen = best_config(config.kind);
    config.framework = chosen.framework;
    config.device = chosen.device;
  }
  const auto& entry = available_framework(config.framework);
  if (config.device < 0) config.device = best_device(*entry.framework, config.kind);
  if (config.device < 0) config.device = 0;
  if (static_cast<std::size_t>(config.device) >= entry.framework->hardware().size())
    throw Error(ErrorCode::invalid_argument, config.framework + ":" + std::to_string(config.device) +
                                                 " does not exist; " + config.framework + " has " +
                                                 std::to_string(entry.framework->hardware().size()) + " device(s)");
  auto impl = std::make_shared<Impl>();
  impl->framework = entry.framework;
  impl->device = &entry.framework->device(static_cast<std::size_t>(config.device));
  if (config.memory_limit != 0 && !impl->device->set_memory_limit(config.memory_limit))
    throw Error(ErrorCode::unsupported, config.framework + " cannot limit its memory");
  impl->config = std::move(config);
  impl_ = std::move(impl);
}

Backend Backend::native() {
  static const Backend backend(BackendConfig{"native", 0});
  return backend;
}

Backend Backend::open(const std::string& spec) {
  auto [framework, index] = parse_spec(spec);
  BackendConfig config;
  config.framework = framework;
  config.device = index;
  return Backend(config);
}

Backend Backend::best() {
  if (const char* env = std::getenv("XYLEM_BACKEND"); env != nullptr && *env != '\0') return open(env);
  return Backend(BackendConfig{});
}

const Hardware& Backend::hardware() const noexcept { return impl_->device->hardware(); }
std::string Backend::framework() const { return impl_->config.framework; }
std::string Backend::id() const { return hardware().id(); }
const BackendConfig& Backend::config() const noexcept { return impl_->config; }
void Backend::synchronize() const {
  detail::flush_fusion();
  impl_->device->synchronize();
  detail::raise_deferred();
}

MemoryUsage Backend::memory() const {
  detail::flush_fusion();
  return detail::usage_of(*impl_->device).get(); }
void Backend::reset_peak_memory() const { detail::usage_of(*impl_->device).reset_peak(); }

bool Backend::supports(Op op, DType dtype) const noexcept { return impl_->device->supports(op, dtype); }

const Backend::Impl& backend_impl(const Backend& backend) noexcept { return *backend.impl_; }

namespace plugin {
Device& device_of(const Backend& backend) noexcept { return *backend_impl(backend).device; }
}  // namespace plugin

bool operator==(const Backend& a, const Backend& b) noexcept { return a.impl_->device == b.impl_->device; }

std::vector<FrameworkStatus> Backend::frameworks() {
  std::vector<FrameworkStatus> result;
  for (const auto* entry : detail::frameworks()) {
    FrameworkStatus status;
    status.name = entry->name;
    status.available = entry->available();
    // FrameworkStatus has no field of its own for the files passed over on
    // the way to an available plugin: its reason carries them.
    status.reason = status.available && !entry->passed_over.empty() ? "passed over " + entry->passed_over
                                                                     : entry->reason;
    status.source = entry->source;
    if (entry->framework) status.hardware = entry->framework->hardware();
    result.push_back(std::move(status));
  }
  return result;
}

std::ostream& operator<<(std::ostream& os, const Backend& b) { return os << b.id() << " (" << b.hardware().name << ")"; }

}  // namespace xylem
