#pragma once
// Compiled program binaries on disk, so a second process compiles nothing.
//
// Where: $XYLEM_CACHE_DIR, else $XDG_CACHE_HOME/xylem, else ~/.cache/xylem.
// One file per key (device name, driver version, build options, source
// hash), named by the key's hash. A file starts with a header (magic,
// format version, the full key, payload size and checksum); a file whose
// header or checksum does not match is removed and the program rebuilt.
// Files are written to a temporary name and renamed, so readers never see
// half a file.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace xylem::opencl {

[[nodiscard]] std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ull) noexcept;

class ProgramCache {
 public:
  // The cache directory from the environment; empty when none can be found.
  static ProgramCache from_environment();
  explicit ProgramCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  [[nodiscard]] const std::filesystem::path& dir() const noexcept { return dir_; }
  [[nodiscard]] std::filesystem::path path_for(std::string_view key) const;

  // The stored binary for key; nullopt when absent. A corrupt or mismatched
  // file is removed (and nullopt returned).
  [[nodiscard]] std::optional<std::vector<unsigned char>> load(std::string_view key) const;
  // Stores atomically; false when the directory cannot be written (the
  // cache is an optimisation: callers go on without it).
  bool store(std::string_view key, const std::vector<unsigned char>& binary) const;
  // Removes the entry for key (a binary the driver refused).
  void remove(std::string_view key) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace xylem::opencl
