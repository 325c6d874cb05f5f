#include "io/file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "xylem/error.hpp"

namespace xylem::io {

namespace {

std::string os_error() { return std::strerror(errno); }

}  // namespace

InputFile::InputFile(const std::filesystem::path& path, std::string source) : source_(std::move(source)) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(ErrorCode::io, source_ + ": cannot open: " + os_error());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string why = S_ISDIR(st.st_mode) ? "a directory" : "not a regular file";
    ::close(fd_);
    throw Error(ErrorCode::io, source_ + ": cannot read: " + why);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

InputFile::~InputFile() { ::close(fd_); }

void InputFile::read_at(std::uint64_t offset, void* out, std::size_t n) const {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0)
      throw Error(ErrorCode::io,
                  source_ + ": read failed at byte " + std::to_string(offset + done) + ": " + os_error());
    if (got == 0)
      throw Error(ErrorCode::io, source_ + ": truncated: the data ends at byte " + std::to_string(offset + done) +
                                     ", " + std::to_string(n - done) + " bytes short");
    done += static_cast<std::size_t>(got);
  }
}

AtomicFile::AtomicFile(const std::filesystem::path& path, std::string source)
    : path_(path), source_(std::move(source)) {
  // Unique within the process (the counter) and across processes (the pid),
  // in the target's directory so the rename stays on one file system.
  static std::atomic<unsigned> counter{0};
  temp_ = path_;
  temp_ += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(ErrorCode::io, source_ + ": cannot create " + temp_.string() + ": " + os_error());
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void AtomicFile::fail(const std::string& what) const {
  throw Error(ErrorCode::io, source_ + ": " + what + " (" + temp_.string() + ", at byte " + std::to_string(written_) +
                                 "): " + os_error());
}

void AtomicFile::write(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(fd_, p, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail("write failed");
    p += put;
    n -= static_cast<std::size_t>(put);
    written_ += static_cast<std::uint64_t>(put);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("flushing to disk failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const std::string why = os_error();
    ::unlink(temp_.c_str());
    throw Error(ErrorCode::io, source_ + ": closing " + temp_.string() + " failed: " + why);
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const std::string why = os_error();
    ::unlink(temp_.c_str());
    throw Error(ErrorCode::io, source_ + ": cannot rename " + temp_.string() + " over it: " + why);
  }
}

}  // namespace xylem::io
