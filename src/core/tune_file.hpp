#pragma once
// The tuning cache's file on disk (format in tune_format.hpp): read whole,
// and changed under an exclusive lock on a file beside it (flock), written
// to a temporary file and renamed over it, so two processes updating it at
// once both keep their entries and a reader sees the old file or the new
// one, never a part.
#include <filesystem>
#include <functional>
#include <vector>

#include "core/tune_format.hpp"

namespace xylem::core::tune {

class TuneFile {
 public:
  explicit TuneFile(std::filesystem::path path) : path_(std::move(path)) {}

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  // What the file holds now; clean == false when something in it was
  // dropped. A missing file is clean and empty. Takes no lock: renames are
  // atomic.
  [[nodiscard]] Parsed read() const;

  // Under the lock: reads the entries, lets `change` edit them, and writes
  // the result back (also when the file had damaged lines, which are then
  // gone). False when the directory, the lock or the write failed.
  bool update(const std::function<void(std::vector<Entry>&)>& change) const;

 private:
  std::filesystem::path path_;
};

}  // namespace xylem::core::tune
