#pragma once
// Files for the readers and writers of src/io: reads at an offset that say
// which file and byte failed, and writes that replace a file atomically.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace xylem::io {

/// A regular file open for reading. Errors are Error(io) beginning with
/// `source`.
class InputFile {
 public:
  InputFile(const std::filesystem::path& path, std::string source);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  /// Reads exactly `n` bytes at `offset`; a short read is an io error
  /// naming the byte where the data ran out.
  void read_at(std::uint64_t offset, void* out, std::size_t n) const;

 private:
  std::string source_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// Writes a new file beside `path` and renames it over `path` on commit(),
/// so readers see the old file or the whole new one, never a part. Without
/// commit() (an exception on the way) the new file is removed and `path`
/// is untouched. Errors are Error(io) beginning with `source`.
class AtomicFile {
 public:
  AtomicFile(const std::filesystem::path& path, std::string source);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t n);
  /// Flushes the data to disk, then renames it into place.
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::filesystem::path path_;
  std::filesystem::path temp_;
  std::string source_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
};

}  // namespace xylem::io
