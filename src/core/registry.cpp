#include "core/registry.hpp"

#include <algorithm>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>

#include "core/plugin_loader.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/builtin.hpp"

namespace xylem::detail {
namespace {

// Frameworks that always appear in `xylem info`, present or not, in order
// of preference; other frameworks follow.
constexpr std::string_view kKnown[] = {"cuda", "opencl", "native"};

bool is_known(std::string_view name) {
  return std::find(std::begin(kKnown), std::end(kKnown), name) != std::end(kKnown);
}

// One framework: linked in, or the files that may provide it; started at
// the first ask.
struct Slot {
  std::string name;
  const XylemPluginInfo* builtin = nullptr;  // null for a plugin
  std::vector<std::filesystem::path> files;
  std::once_flag once;
  FrameworkEntry entry;
};

// The built-in frameworks. Registration closes when they are first listed,
// so the slots never change once anyone reads them. Never destroyed:
// frameworks live until exit, and tensors destroyed during exit may still
// release device memory.
struct Builtins {
  std::mutex mutex;
  bool listed = false;
  std::deque<Slot> slots;  // a deque: entries handed out keep their address
  Slot* host = nullptr;
};

Builtins& builtins() {
  static auto* instance = new Builtins();
  return *instance;
}

std::deque<Slot>& builtin_slots() {
  Builtins& linked = builtins();
  std::lock_guard lock(linked.mutex);
  linked.listed = true;
  return linked.slots;
}

Slot* find_builtin(std::string_view name) {
  for (auto& slot : builtin_slots())
    if (slot.name == name) return &slot;
  return nullptr;
}

// A framework that started without hardware: its reason, or a generic one.
void note_missing_hardware(FrameworkEntry& entry) {
  if (!entry.framework->hardware().empty()) return;
  entry.reason = entry.framework->unavailable_reason();
  if (entry.reason.empty()) entry.reason = "no devices found";
}

// What load_plugin does after dlopen, for a framework linked in.
void start(Slot& slot) {
  FrameworkEntry& entry = slot.entry;
  const XylemPluginInfo& info = *slot.builtin;
  entry.name = slot.name;
  entry.source = "built in";
  if (info.api_version != plugin::kApiVersion) {
    entry.reason = "built for plugin API version " + std::to_string(info.api_version) +
                   ", this libxylem speaks version " + std::to_string(plugin::kApiVersion);
    return;
  }
  const char* error = nullptr;
  try {
    entry.framework = info.create(&error);
  } catch (const std::exception& e) {
    entry.reason = std::string("failed to start: ") + e.what();
  } catch (...) {
    entry.reason = "failed to start (threw a non-standard exception)";
  }
  if (entry.framework != nullptr) {
    note_missing_hardware(entry);
  } else if (entry.reason.empty()) {
    entry.reason = error ? error : "could not start (no reason given)";
  }
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
      note_missing_hardware(entry);
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

const FrameworkEntry& entry_of(Slot& slot) {
  std::call_once(slot.once, [&] { slot.builtin ? start(slot) : load(slot); });
  return slot.entry;
}

class Registry {
 public:
  // Lists the plugin files (no dlopen): the known names first, then the
  // other built-in frameworks, then the other plugins in search order. A
  // plugin cannot replace a built-in framework.
  Registry() {
    auto found = find_plugin_files();
    auto files_of = [&](std::string_view name) {
      auto it = std::find_if(found.begin(), found.end(), [&](const auto& c) { return c.name == name; });
      return it == found.end() ? std::vector<std::filesystem::path>{} : std::move(it->files);
    };
    for (auto known : kKnown) {
      if (Slot* linked = find_builtin(known)) {
        order_.push_back(linked);
      } else {
        add(std::string(known), files_of(known));
      }
    }
    for (auto& linked : builtin_slots())
      if (!is_known(linked.name)) order_.push_back(&linked);
    for (auto& candidates : found)
      if (!is_known(candidates.name) && find_builtin(candidates.name) == nullptr)
        add(candidates.name, std::move(candidates.files));
  }

  [[nodiscard]] Slot* find(std::string_view name) {
    for (Slot* slot : order_)
      if (slot->name == name) return slot;
    return nullptr;
  }
  [[nodiscard]] const std::vector<Slot*>& slots() const noexcept { return order_; }

 private:
  void add(std::string name, std::vector<std::filesystem::path> files) {
    Slot& slot = plugins_.emplace_back();
    slot.name = std::move(name);
    slot.files = std::move(files);
    order_.push_back(&slot);
  }
  std::deque<Slot> plugins_;  // a deque: entries handed out keep their address
  std::vector<Slot*> order_;  // every framework, built in or plugin, in order of preference
};

Registry& registry() {
  static auto* instance = new Registry();
  return *instance;
}

}  // namespace

std::vector<const FrameworkEntry*> frameworks() {
  std::vector<const FrameworkEntry*> entries;
  for (Slot* slot : registry().slots()) entries.push_back(&entry_of(*slot));
  return entries;
}

const FrameworkEntry* find_framework(std::string_view name) {
  if (Slot* linked = find_builtin(name)) return &entry_of(*linked);
  Slot* slot = registry().find(name);
  return slot ? &entry_of(*slot) : nullptr;
}

const FrameworkEntry* host_framework() {
  (void)builtin_slots();  // closes registration: the host slot cannot change after this
  Slot* host = builtins().host;
  return host ? &entry_of(*host) : nullptr;
}

std::vector<std::string> framework_names() {
  std::vector<std::string> names;
  for (const Slot* slot : registry().slots()) names.push_back(slot->name);
  return names;
}

}  // namespace xylem::detail

namespace xylem::plugin {

void register_builtin(const XylemPluginInfo& info, BuiltinMemory memory) {
  const std::string name = info.name ? info.name : "";
  const auto refuse = [&](const std::string& why) {
    return Error(ErrorCode::internal, "register_builtin('" + name + "'): " + why);
  };
  if (name.empty() || info.create == nullptr) throw refuse("the entry has no name or no create function");
  xylem::detail::Builtins& linked = xylem::detail::builtins();
  std::lock_guard lock(linked.mutex);
  if (linked.listed) throw refuse("called after the frameworks were listed; register from a static initialiser");
  for (const auto& slot : linked.slots)
    if (slot.name == name) throw refuse("a framework of that name is already built in");
  if (memory == BuiltinMemory::host && linked.host != nullptr)
    throw refuse("'" + linked.host->name + "' already holds host memory");
  xylem::detail::Slot& slot = linked.slots.emplace_back();
  slot.name = name;
  slot.builtin = &info;
  if (memory == BuiltinMemory::host) linked.host = &slot;
}

}  // namespace xylem::plugin
