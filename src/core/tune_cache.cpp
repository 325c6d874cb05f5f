// The tuning cache's process side (xylem/plugin/tune.hpp): whether tuning
// is on, which file, and the entries read from it, kept in memory so an
// op's lookup costs a lock and a search, not a read.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/tune_file.hpp"
#include "xylem/plugin/tune.hpp"

namespace xylem::plugin::tune {

namespace {

using core::tune::TuneFile;

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{env_flag("XYLEM_TUNE")};
  return on;
}

struct State {
  std::mutex mutex;
  bool path_set = false;  // set_path was called: use `path` even when empty
  std::filesystem::path path;
  bool loaded = false;
  std::vector<Entry> entries;  // the file's, then this process's stores
};

State& state() {
  static State s;
  return s;
}

std::filesystem::path default_path() {
  const auto dir = cache_directory();
  if (dir.empty()) return {};
  return dir / ("tune-v" + std::to_string(core::tune::kFormatVersion) + ".txt");
}

// The file's entries in memory, read once. A damaged file is rewritten
// without what was damaged at once, so the next reader finds it clean.
void load(State& s) {
  if (s.loaded) return;
  s.loaded = true;
  if (!s.path_set) s.path = default_path();
  if (s.path.empty()) return;
  const TuneFile file(s.path);
  auto parsed = file.read();
  if (!parsed.clean) (void)file.update([](std::vector<Entry>&) {});
  s.entries = std::move(parsed.entries);
}

void put(std::vector<Entry>& entries, const Key& key, const Winner& winner) {
  for (Entry& e : entries) {
    if (core::tune::same_slot(e.key, key)) {
      e = Entry{key, winner};
      return;
    }
  }
  entries.push_back(Entry{key, winner});
}

}  // namespace

bool enabled() noexcept { return enabled_flag().load(std::memory_order_relaxed); }

void set_enabled(bool on) noexcept { enabled_flag().store(on, std::memory_order_relaxed); }

std::filesystem::path path() noexcept {
  State& s = state();
  try {
    const std::lock_guard lock(s.mutex);
    return s.path_set ? s.path : default_path();
  } catch (...) {
    return {};
  }
}

void set_path(const std::filesystem::path& file) noexcept {
  State& s = state();
  try {
    const std::lock_guard lock(s.mutex);
    s.path = file;
    s.path_set = true;
    s.loaded = false;
    s.entries.clear();
  } catch (...) {
    s.path.clear();  // no memory for the name: no file, rather than the old one
  }
}

std::optional<Winner> lookup(const Key& key) noexcept {
  State& s = state();
  try {
    const std::lock_guard lock(s.mutex);
    load(s);
    for (const Entry& e : s.entries) {
      if (core::tune::same_slot(e.key, key)) {
        if (e.key.candidates != key.candidates) return std::nullopt;  // stale: chosen among other candidates
        return e.winner;
      }
    }
  } catch (...) {
  }
  return std::nullopt;
}

bool store(const Key& key, const Winner& winner) noexcept {
  State& s = state();
  try {
    const std::lock_guard lock(s.mutex);
    load(s);
    put(s.entries, key, winner);
    if (s.path.empty()) return false;
    return TuneFile(s.path).update([&](std::vector<Entry>& entries) { put(entries, key, winner); });
  } catch (...) {
    return false;
  }
}

std::vector<Entry> entries() noexcept {
  try {
    const auto file = path();
    if (file.empty()) return {};
    return TuneFile(file).read().entries;
  } catch (...) {
    return {};
  }
}

std::filesystem::path cache_directory() {
  if (const char* dir = std::getenv("XYLEM_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "xylem";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "xylem";
  return {};
}

}  // namespace xylem::plugin::tune
