// libFuzzer target: the safetensors header parser and checker
// (src/io/safetensors_header.hpp, with the JSON reader under it). The
// input's first 8 bytes are the data section's size (little-endian), the
// rest the header text. Whatever the bytes, the parser must raise
// xylem::Error or return a header that keeps the format's promises: byte
// ranges that tile the data section, each the size its shape and dtype
// say. A header it accepts must also survive being written again and
// re-read unchanged.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "io/safetensors_header.hpp"
#include "xylem/error.hpp"
#include "xylem/layout.hpp"

namespace {

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "\nFINDING: %s\n", what.c_str());
  std::abort();
}

void check_promises(const xylem::io::SafetensorsHeader& h, std::uint64_t data_bytes) {
  std::uint64_t next = 0;
  for (const auto& e : h.tensors) {
    if (e.begin != next) finding("tensor \"" + e.name + "\" does not start where the one before it ends");
    if (e.shape.size() > std::size_t(xylem::kMaxRank)) finding("a rank over kMaxRank was accepted");
    unsigned __int128 bytes = xylem::size_of(e.dtype);
    for (const std::int64_t d : e.shape) bytes *= static_cast<std::uint64_t>(d);
    if (bytes != e.end - e.begin) finding("tensor \"" + e.name + "\" has a byte range unlike its shape");
    next = e.end;
  }
  if (next != data_bytes) finding("the tensors do not cover the data section");
}

bool same(const xylem::io::SafetensorsHeader& a, const xylem::io::SafetensorsHeader& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (std::size_t k = 0; k < a.tensors.size(); ++k) {
    const auto &x = a.tensors[k], &y = b.tensors[k];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.begin != y.begin || x.end != y.end)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  std::uint64_t data_bytes = 0;
  std::memcpy(&data_bytes, data, 8);
  const std::string_view json(reinterpret_cast<const char*>(data + 8), size - 8);
  xylem::io::SafetensorsHeader header;
  try {
    header = xylem::io::parse_safetensors_header(json, data_bytes, "fuzz");
  } catch (const xylem::Error&) {
    return 0;
  }
  check_promises(header, data_bytes);
  const std::string again = xylem::io::format_safetensors_header(header.tensors, header.metadata);
  xylem::io::SafetensorsHeader reread;
  try {
    reread = xylem::io::parse_safetensors_header(again, data_bytes, "fuzz (rewritten)");
  } catch (const xylem::Error& e) {
    finding(std::string("a header accepted once is refused once rewritten: ") + e.what());
  }
  if (!same(header, reread)) finding("a header changed on being rewritten and re-read");
  return 0;
}
