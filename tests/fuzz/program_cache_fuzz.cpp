// libFuzzer target: the OpenCL program cache's entry reader
// (frameworks/opencl/program_cache.hpp, built in: it holds no OpenCL). The
// first input byte picks a mode, the rest is an entry file:
//   bit 0  rewrite the file's checksum first, so mutations reach the size
//          and key checks behind it instead of dying at the checksum;
//   bit 1  also split the rest into key, kernel names and binary, format an
//          entry from them and read it back (the round trip must hold).
// Properties: no crash and no read outside the bytes (ASan), and whatever
// parse_cache_entry accepts is a well-formed entry for the expected key:
// formatting what it read gives back the file byte for byte.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "frameworks/opencl/program_cache.hpp"

namespace {

constexpr std::string_view kKey = "xylem-opencl\nfamily=fuzz\ndevice=fuzz\n";
constexpr std::size_t kHeaderBytes = 40;  // the format's fixed header; the checksum is its last 8 bytes

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "\nFINDING in the program cache reader: %s\n", what);
  std::abort();
}

void fix_checksum(std::vector<unsigned char>& file) {
  if (file.size() < kHeaderBytes) return;
  const std::string_view body(reinterpret_cast<const char*>(file.data()) + kHeaderBytes, file.size() - kHeaderBytes);
  const std::uint64_t sum = xylem::opencl::fnv1a64(body);
  std::memcpy(file.data() + kHeaderBytes - 8, &sum, 8);
}

void round_trip(const std::vector<unsigned char>& bytes) {
  if (bytes.size() < 3) return;
  const std::size_t key_len = bytes[0] % (bytes.size() - 2), names_len = bytes[1] % (bytes.size() - 2 - key_len);
  const auto* p = reinterpret_cast<const char*>(bytes.data()) + 2;
  const std::string key(p, key_len);
  const xylem::opencl::CacheEntry entry{std::string(p + key_len, names_len),
                                        {bytes.begin() + 2 + std::ptrdiff_t(key_len + names_len), bytes.end()}};
  const auto file = xylem::opencl::format_entry(key, entry);
  const auto back = xylem::opencl::parse_entry(file, key);
  // An empty binary is refused by design (no driver gives one back).
  if (entry.binary.empty() ? back.has_value()
                           : !back || back->kernel_names != entry.kernel_names || back->binary != entry.binary)
    finding("format_entry then parse_entry did not give the entry back");
  if (!key.empty() && xylem::opencl::parse_entry(file, key.substr(1))) finding("an entry read under another key");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const unsigned mode = data[0];
  std::vector<unsigned char> file(data + 1, data + size);
  if (mode & 1) fix_checksum(file);
  if (mode & 2) round_trip(file);
  const auto binary = xylem::opencl::parse_cache_entry(file, kKey);
  if (!binary) return 0;
  const auto entry = xylem::opencl::parse_entry(file, kKey);
  if (!entry || entry->binary != *binary) finding("parse_cache_entry and parse_entry disagree");
  if (xylem::opencl::format_entry(kKey, *entry) != file)
    finding("accepted a file that is not the entry it read (formatting it back differs)");
  return 0;
}
