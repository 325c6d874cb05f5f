// The on-disk program cache (see program_cache.hpp).
#include "frameworks/opencl/program_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <system_error>
#include <thread>

#include "xylem/plugin/tune.hpp"

namespace xylem::opencl {

namespace {

constexpr unsigned char kMagic[8] = {'X', 'Y', 'L', 'C', 'L', 'B', 'I', 'N'};
// 2: the kernel names joined the header (1 had none).
constexpr std::uint32_t kFormatVersion = 2;

// Header: magic[8], u32 format version, u32 key bytes, u32 kernel-name
// bytes, u32 zero, u64 binary bytes, u64 checksum of everything after the
// header; then the key, the kernel names and the binary.
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 4 + 4 + 8 + 8;
// Larger than any program a driver gives back: a size field beyond it is
// corruption, not a binary to allocate for.
constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{1} << 32;

template <class T>
void put(std::vector<unsigned char>& out, T value) {
  unsigned char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.insert(out.end(), raw, raw + sizeof(T));
}

template <class T>
T get(std::span<const unsigned char> in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));  // callers checked at + sizeof(T) <= size
  return value;
}

std::string_view as_text(std::span<const unsigned char> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

std::string hex(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
}

// Moves all n bytes through read or write, retrying short transfers and
// interruptions; false on an error or an early end of file.
template <class Io, class Byte>
bool transfer_all(Io io, int fd, Byte* data, std::size_t n) {
  for (std::size_t done = 0; done < n;) {
    const ssize_t moved = io(fd, data + done, n - done);
    if (moved < 0 && errno == EINTR) continue;
    if (moved <= 0) return false;
    done += static_cast<std::size_t>(moved);
  }
  return true;
}

// The whole file, read through a descriptor: no iostreams, whose reads
// throw on a directory. nullopt when it is not a regular file or any read
// fails.
std::optional<std::vector<unsigned char>> read_regular_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::vector<unsigned char>> result;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) <= kMaxEntryBytes) {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(st.st_size));
    if (transfer_all(::read, fd, bytes.data(), bytes.size())) result = std::move(bytes);
  }
  ::close(fd);
  return result;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed) noexcept {
  std::uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::optional<EntryParts> split_entry(std::span<const unsigned char> file) noexcept {
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  if (get<std::uint32_t>(file, 8) != kFormatVersion || get<std::uint32_t>(file, 20) != 0) return std::nullopt;
  const std::uint64_t key_bytes = get<std::uint32_t>(file, 12);
  const std::uint64_t name_bytes = get<std::uint32_t>(file, 16);
  const std::uint64_t binary_bytes = get<std::uint64_t>(file, 24);
  const std::uint64_t checksum = get<std::uint64_t>(file, 32);
  // The key and the names are under 2^32 bytes each and the binary checked
  // against the body first, so the sum cannot wrap.
  const std::uint64_t body = file.size() - kHeaderBytes;
  if (binary_bytes == 0 || binary_bytes > body || key_bytes + name_bytes + binary_bytes != body) return std::nullopt;
  const auto rest = file.subspan(kHeaderBytes);
  if (fnv1a64(as_text(rest)) != checksum) return std::nullopt;
  return EntryParts{as_text(rest.first(key_bytes)), as_text(rest.subspan(key_bytes, name_bytes)),
                    rest.subspan(key_bytes + name_bytes)};
}

std::optional<CacheEntry> parse_entry(std::span<const unsigned char> file, std::string_view expected_key) noexcept {
  const auto parts = split_entry(file);
  // Another key: a hash collision of file names, or another entry's file.
  if (!parts || parts->key != expected_key) return std::nullopt;
  try {
    return CacheEntry{std::string(parts->kernel_names), {parts->binary.begin(), parts->binary.end()}};
  } catch (...) {
    return std::nullopt;  // no memory for a copy: as good as absent
  }
}

std::optional<std::vector<unsigned char>> parse_cache_entry(std::span<const unsigned char> file,
                                                            std::string_view expected_key) {
  auto entry = parse_entry(file, expected_key);
  if (!entry) return std::nullopt;
  return std::move(entry->binary);
}

std::vector<unsigned char> format_entry(std::string_view key, const CacheEntry& entry) {
  std::vector<unsigned char> body;
  body.reserve(key.size() + entry.kernel_names.size() + entry.binary.size());
  body.insert(body.end(), key.begin(), key.end());
  body.insert(body.end(), entry.kernel_names.begin(), entry.kernel_names.end());
  body.insert(body.end(), entry.binary.begin(), entry.binary.end());
  std::vector<unsigned char> file(std::begin(kMagic), std::end(kMagic));
  file.reserve(kHeaderBytes + body.size());
  put<std::uint32_t>(file, kFormatVersion);
  put<std::uint32_t>(file, static_cast<std::uint32_t>(key.size()));
  put<std::uint32_t>(file, static_cast<std::uint32_t>(entry.kernel_names.size()));
  put<std::uint32_t>(file, 0);
  put<std::uint64_t>(file, entry.binary.size());
  put<std::uint64_t>(file, fnv1a64(as_text(body)));
  file.insert(file.end(), body.begin(), body.end());
  return file;
}

std::string kernel_name_list(std::string_view names) {
  std::vector<std::string_view> list;
  for (std::size_t start = 0; start <= names.size();) {
    const auto end = std::min(names.find(';', start), names.size());
    if (end > start) list.push_back(names.substr(start, end - start));
    start = end + 1;
  }
  std::sort(list.begin(), list.end());
  std::string joined;
  for (auto name : list) (joined += joined.empty() ? "" : ";") += name;
  return joined;
}

ProgramCache ProgramCache::from_environment() { return ProgramCache(plugin::tune::cache_directory()); }

std::filesystem::path ProgramCache::path_for(std::string_view key) const {
  return dir_ / ("opencl-" + hex(fnv1a64(key)) + ".bin");
}

std::optional<CacheEntry> ProgramCache::load(std::string_view key) const noexcept {
  if (dir_.empty()) return std::nullopt;
  try {
    const auto file = read_regular_file(path_for(key));
    auto entry = file ? parse_entry(*file, key) : std::nullopt;
    if (!entry) remove(key);  // a bad file, or a directory in its place (removed only when empty)
    return entry;
  } catch (...) {
    return std::nullopt;
  }
}

bool ProgramCache::store(std::string_view key, const CacheEntry& entry) const noexcept {
  if (dir_.empty() || entry.binary.empty()) return false;
  try {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return false;
    const std::vector<unsigned char> file = format_entry(key, entry);
    // A name of our own (process and thread) in the same directory, then an
    // atomic rename over the entry.
    const auto final_path = path_for(key);
    auto tmp = final_path;
    tmp += ".tmp." + std::to_string(::getpid()) + "." +
           std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const bool all = transfer_all(::write, fd, file.data(), file.size());
    const bool written = ::close(fd) == 0 && all;
    if (written) std::filesystem::rename(tmp, final_path, ec);
    if (!written || ec) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
    return true;
  } catch (...) {
    return false;
  }
}

void ProgramCache::remove(std::string_view key) const noexcept {
  if (dir_.empty()) return;
  try {
    std::error_code ec;
    std::filesystem::remove(path_for(key), ec);
  } catch (...) {
  }
}

}  // namespace xylem::opencl
