#pragma once
// Compiled program binaries on disk, so a second process compiles nothing.
//
// Where: $XYLEM_CACHE_DIR, else $XDG_CACHE_HOME/xylem, else ~/.cache/xylem.
// One file per key (family, device name, driver and platform versions,
// build options, source hash), named by the key's hash. A file holds a
// header (magic, format version, sizes, checksum), the full key, the names
// of the kernels the program holds, then the binary. Anything that does not
// match (another format, another key, a bad checksum, a short file, a
// directory) reads as absent: the caller rebuilds and rewrites the entry.
// Files are written to a temporary name in the same directory and renamed,
// so readers never see half a file. The cache is an optimisation: no error
// of its own ever reaches an op.
//
// No OpenCL in here: the parser is fuzzed on its own.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace xylem::opencl {

[[nodiscard]] std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ull) noexcept;

struct CacheEntry {
  std::string kernel_names;  // sorted, ';'-separated, as kernel_name_list() gives them
  std::vector<unsigned char> binary;
};

// The parts of a well-formed entry file (views into it), whatever its key;
// nullopt for anything else. Never throws, never reads outside `file`.
struct EntryParts {
  std::string_view key, kernel_names;
  std::span<const unsigned char> binary;
};
[[nodiscard]] std::optional<EntryParts> split_entry(std::span<const unsigned char> file) noexcept;

// An entry file's bytes, for key; nullopt unless the whole file is well
// formed and holds that key. Never throws, never reads outside `file`.
[[nodiscard]] std::optional<CacheEntry> parse_entry(std::span<const unsigned char> file,
                                                    std::string_view expected_key) noexcept;
// The program binary of parse_entry (for the fuzzer).
[[nodiscard]] std::optional<std::vector<unsigned char>> parse_cache_entry(std::span<const unsigned char> file,
                                                                          std::string_view expected_key);
// The bytes parse_entry reads back.
[[nodiscard]] std::vector<unsigned char> format_entry(std::string_view key, const CacheEntry& entry);

// CL_PROGRAM_KERNEL_NAMES ("a;b;c", in the driver's order) sorted, so two
// lists of the same kernels compare equal.
[[nodiscard]] std::string kernel_name_list(std::string_view names);

class ProgramCache {
 public:
  // The cache directory from the environment; empty when none can be found.
  static ProgramCache from_environment();
  explicit ProgramCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::filesystem::path path_for(std::string_view key) const;

  // The stored entry for key; nullopt when absent or unreadable. An entry
  // that does not parse is removed. Never throws.
  [[nodiscard]] std::optional<CacheEntry> load(std::string_view key) const noexcept;
  // Stores atomically; false when it cannot (a read-only directory, a
  // directory where the file goes): callers go on without it. Never throws.
  bool store(std::string_view key, const CacheEntry& entry) const noexcept;
  // Removes the entry for key (a binary the driver refused or that holds
  // other kernels). Never throws.
  void remove(std::string_view key) const noexcept;

 private:
  std::filesystem::path dir_;
};

}  // namespace xylem::opencl
