// The on-disk program cache (see program_cache.hpp).
#include "frameworks/opencl/program_cache.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <system_error>
#include <thread>

namespace xylem::opencl {

namespace {

constexpr char kMagic[8] = {'X', 'Y', 'L', 'C', 'L', 'B', 'I', 'N'};
constexpr std::uint32_t kFormatVersion = 1;

// Header: magic[8], u32 format version, u32 key bytes, u64 payload bytes,
// u64 payload checksum, then the key, then the payload.
constexpr std::size_t kFixedHeader = 8 + 4 + 4 + 8 + 8;

template <class T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

template <class T>
T get(const std::string& in, std::size_t at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof(T));
  return value;
}

std::string hex(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 0xF];
  return s;
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

ProgramCache ProgramCache::from_environment() {
  if (const char* dir = std::getenv("XYLEM_CACHE_DIR"); dir && *dir) return ProgramCache(dir);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return ProgramCache(std::filesystem::path(xdg) / "xylem");
  if (const char* home = std::getenv("HOME"); home && *home)
    return ProgramCache(std::filesystem::path(home) / ".cache" / "xylem");
  return ProgramCache({});
}

std::filesystem::path ProgramCache::path_for(std::string_view key) const {
  return dir_ / ("opencl-" + hex(fnv1a64(key)) + ".bin");
}

std::optional<std::vector<unsigned char>> ProgramCache::load(std::string_view key) const {
  if (dir_.empty()) return std::nullopt;
  const auto path = path_for(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const bool valid = [&] {
    if (file.size() < kFixedHeader || std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return false;
    if (get<std::uint32_t>(file, 8) != kFormatVersion) return false;
    const auto key_bytes = get<std::uint32_t>(file, 12);
    const auto payload_bytes = get<std::uint64_t>(file, 16);
    const auto checksum = get<std::uint64_t>(file, 24);
    if (file.size() != kFixedHeader + key_bytes + payload_bytes) return false;
    if (std::string_view(file).substr(kFixedHeader, key_bytes) != key) return false;  // a hash collision
    return fnv1a64(std::string_view(file).substr(kFixedHeader + key_bytes)) == checksum;
  }();
  if (!valid) {
    remove(key);
    return std::nullopt;
  }
  const std::size_t start = kFixedHeader + get<std::uint32_t>(file, 12);
  return std::vector<unsigned char>(file.begin() + static_cast<std::ptrdiff_t>(start), file.end());
}

bool ProgramCache::store(std::string_view key, const std::vector<unsigned char>& binary) const {
  if (dir_.empty() || binary.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return false;
  const std::string_view payload(reinterpret_cast<const char*>(binary.data()), binary.size());
  std::string file;
  file.reserve(kFixedHeader + key.size() + binary.size());
  file.append(kMagic, sizeof kMagic);
  put<std::uint32_t>(file, kFormatVersion);
  put<std::uint32_t>(file, static_cast<std::uint32_t>(key.size()));
  put<std::uint64_t>(file, binary.size());
  put<std::uint64_t>(file, fnv1a64(payload));
  file.append(key);
  file.append(payload);

  // A name of our own (process and thread), then an atomic rename.
  const auto final_path = path_for(key);
  auto tmp = final_path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(file.data(), static_cast<std::streamsize>(file.size()));
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return false;
  }
  return true;
}

void ProgramCache::remove(std::string_view key) const {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove(path_for(key), ec);
}

}  // namespace xylem::opencl
