#include "core/registry.hpp"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <mutex>

#include "core/plugin_loader.hpp"
#include "frameworks/native/framework.hpp"

namespace xylem::detail {
namespace {

// Frameworks that always appear in `xylem info`, present or not, in order
// of preference; other plugins follow.
constexpr std::string_view kKnown[] = {"cuda", "opencl", "native"};

// One framework: the files that may provide it, loaded at the first ask.
struct Slot {
  std::string name;
  std::vector<std::filesystem::path> files;
  std::once_flag once;
  FrameworkEntry entry;
};

// Never destroyed: frameworks (and their plugins' code) live until exit,
// and tensors destroyed during exit may still release device memory.
const FrameworkEntry& native_entry() {
  static const auto* entry = new FrameworkEntry{"native", &native::framework(), "", "built in", ""};
  return *entry;
}

std::string searched_directories() {
  std::string searched;
  for (const auto& dir : plugin_directories()) searched += (searched.empty() ? "" : ", ") + dir.string();
  return searched;
}

// Tries the files in search order and keeps the first that gives a
// framework; the others' reasons stay for `xylem info`.
void load(Slot& slot) {
  FrameworkEntry& entry = slot.entry;
  entry.name = slot.name;
  if (slot.files.empty()) {
    entry.reason = "plugin libxylem_" + slot.name + ".so not found (searched: " + searched_directories() +
                   "); this build of xylem may not include it";
    return;
  }
  std::vector<std::string> failures;
  for (const auto& file : slot.files) {
    LoadedPlugin loaded = load_plugin(file, slot.name);
    if (loaded.framework != nullptr) {
      entry.framework = loaded.framework;
      entry.source = loaded.path;
      if (entry.framework->hardware().empty()) {
        entry.reason = entry.framework->unavailable_reason();
        if (entry.reason.empty()) entry.reason = "no devices found";
      }
      break;
    }
    failures.push_back(slot.files.size() > 1 ? loaded.path + ": " + loaded.reason : loaded.reason);
  }
  std::string joined;
  for (const auto& failure : failures) joined += (joined.empty() ? "" : "; ") + failure;
  if (entry.framework != nullptr) {
    entry.passed_over = std::move(joined);
  } else {
    entry.reason = std::move(joined);
    entry.source = slot.files.front().string();
  }
}

class Registry {
 public:
  // Lists the plugin files (no dlopen): the known names first, then the
  // others in search order. "native" is built in: a plugin cannot replace it.
  Registry() {
    auto found = find_plugin_files();
    auto files_of = [&](std::string_view name) {
      auto it = std::find_if(found.begin(), found.end(), [&](const auto& c) { return c.name == name; });
      return it == found.end() ? std::vector<std::filesystem::path>{} : std::move(it->files);
    };
    for (auto known : kKnown) add(std::string(known), files_of(known));
    for (auto& candidates : found)
      if (std::find(std::begin(kKnown), std::end(kKnown), candidates.name) == std::end(kKnown))
        add(candidates.name, std::move(candidates.files));
  }

  [[nodiscard]] const FrameworkEntry& entry(Slot& slot) {
    if (slot.name == "native") return native_entry();
    std::call_once(slot.once, [&] { load(slot); });
    return slot.entry;
  }
  [[nodiscard]] Slot* find(std::string_view name) {
    for (auto& slot : slots_)
      if (slot.name == name) return &slot;
    return nullptr;
  }
  [[nodiscard]] std::deque<Slot>& slots() noexcept { return slots_; }

 private:
  void add(std::string name, std::vector<std::filesystem::path> files) {
    Slot& slot = slots_.emplace_back();
    slot.name = std::move(name);
    slot.files = std::move(files);
  }
  std::deque<Slot> slots_;  // a deque: entries handed out keep their address
};

Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
}

}  // namespace

std::vector<const FrameworkEntry*> frameworks() {
  std::vector<const FrameworkEntry*> entries;
  for (auto& slot : registry().slots()) entries.push_back(&registry().entry(slot));
  return entries;
}

const FrameworkEntry* find_framework(std::string_view name) {
  // Native needs no directory listing either.
  if (name == "native") return &native_entry();
  Slot* slot = registry().find(name);
  return slot ? &registry().entry(*slot) : nullptr;
}

std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const auto& slot : registry().slots()) names.push_back(slot.name);
  return names;
}

}  // namespace xylem::detail
