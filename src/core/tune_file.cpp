// The tuning cache's file on disk (see tune_file.hpp).
#include "core/tune_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

namespace xylem::core::tune {

namespace {

// Larger than any tuning file: a bigger one is not ours and reads as empty.
constexpr off_t kMaxFileBytes = off_t{64} << 20;

// A descriptor closed on every way out.
class Fd {
 public:
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  // Closes now, reporting whether the close (which may flush) succeeded.
  bool close() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

// The whole file into text; false when it cannot be opened (missing).
// Something other than a regular file, or one far too large, is `damaged`.
bool read_text(const std::filesystem::path& path, std::string& text, bool& damaged) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxFileBytes) {
    damaged = true;
    return true;
  }
  text.resize(static_cast<std::size_t>(st.st_size));
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t got = ::read(fd.get(), text.data() + done, text.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      text.resize(done);  // shrunk meanwhile: what was read, which then fails to parse whole
      break;
    }
    done += static_cast<std::size_t>(got);
  }
  return true;
}

bool write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t put = ::write(fd, text.data() + done, text.size() - done);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    done += static_cast<std::size_t>(put);
  }
  return true;
}

}  // namespace

Parsed TuneFile::read() const {
  std::string text;
  bool damaged = false;
  if (!read_text(path_, text, damaged)) return {};
  Parsed parsed = parse(text);
  if (damaged) parsed.clean = false;
  return parsed;
}

bool TuneFile::update(const std::function<void(std::vector<Entry>&)>& change) const {
  std::error_code ec;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec) return false;
  auto lock_path = path_;
  lock_path += ".lock";
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0) return false;
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return false;
  }
  std::vector<Entry> entries = read().entries;
  change(entries);
  // A name no other writer uses: the lock orders processes, the counter
  // threads of this one that hold other paths' locks.
  static std::atomic<unsigned> counter{0};
  auto temp = path_;
  temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  Fd out(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.get() < 0) return false;
  const bool written = write_all(out.get(), format(entries));
  if (!out.close() || !written) {
    std::filesystem::remove(temp, ec);
    return false;
  }
  std::filesystem::rename(temp, path_, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    return false;
  }
  return true;  // the lock goes with its descriptor
}

}  // namespace xylem::core::tune
