#include "core/registry.hpp"

#include <algorithm>

#include "core/plugin_loader.hpp"
#include "frameworks/native/framework.hpp"

namespace xylem::detail {
namespace {

// Frameworks that always appear in `xylem info`, present or not.
constexpr std::string_view kKnown[] = {"cuda", "opencl", "native"};

std::vector<FrameworkEntry> discover() {
  std::vector<FrameworkEntry> entries;
  for (const auto& file : find_plugin_files()) {
    LoadedPlugin loaded = load_plugin(file);
    if (loaded.name == "native") continue;  // built in; a plugin cannot replace it
    FrameworkEntry entry{loaded.name, loaded.framework, loaded.reason, loaded.path};
    if (entry.framework != nullptr && entry.framework->hardware().empty()) {
      entry.reason = entry.framework->unavailable_reason();
      if (entry.reason.empty()) entry.reason = "no devices found";
    }
    entries.push_back(std::move(entry));
  }
  entries.push_back(FrameworkEntry{"native", &native::framework(), "", "built in"});

  std::string searched;
  for (const auto& dir : plugin_directories()) searched += (searched.empty() ? "" : ", ") + dir.string();
  for (auto known : kKnown) {
    const bool found = std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.name == known; });
    if (!found)
      entries.push_back(FrameworkEntry{std::string(known), nullptr,
                                       "plugin libxylem_" + std::string(known) +
                                           ".so not found (searched: " + searched +
                                           "); this build of xylem may not include it",
                                       ""});
  }
  auto rank = [](const FrameworkEntry& e) {
    for (std::size_t i = 0; i < std::size(kKnown); ++i)
      if (e.name == kKnown[i]) return i;
    return std::size(kKnown);
  };
  std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
  return entries;
}

}  // namespace

const std::vector<FrameworkEntry>& frameworks() {
  // Never destroyed: frameworks (and their plugins' code) live until exit,
  // and tensors destroyed during exit may still release device memory.
  static const auto* entries = new std::vector<FrameworkEntry>(discover());
  return *entries;
}

const FrameworkEntry* find_framework(std::string_view name) {
  for (const auto& entry : frameworks())
    if (entry.name == name) return &entry;
  return nullptr;
}

}  // namespace xylem::detail
