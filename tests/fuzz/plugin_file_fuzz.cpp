// libFuzzer target: the plugin file check the loader runs before dlopen
// (src/core/plugin_file_check.hpp), on mutations of a real, stripped test
// plugin (corpus/plugin_file/). In process, nothing is loaded: the check must
// never crash or read outside the bytes (ASan), and must never accept a file
// that glibc would map past its end: the ELF and program headers, and every
// PT_LOAD segment's file range, inside the file. This parses the headers
// itself, apart from the code under test.
#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "core/plugin_file_check.hpp"

namespace {

template <class T>
T read_at(const std::uint8_t* data, std::uint64_t offset) {
  T value;
  std::memcpy(&value, data + offset, sizeof(T));
  return value;
}

// Whether offset + size fits in `file` bytes, in 128-bit arithmetic.
bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t file) {
  return static_cast<unsigned __int128>(offset) + size <= file;
}

[[noreturn]] void finding(const char* what, std::uint64_t a, std::uint64_t b, std::size_t size) {
  std::fprintf(stderr, "\nFINDING: check_plugin_file accepted a %zu-byte file whose %s (%llu, %llu) reaches past its end\n",
               size, what, static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string reason = xylem::detail::check_plugin_file(std::span<const unsigned char>(data, size));
  if (!reason.empty()) return 0;
  if (size < sizeof(Elf64_Ehdr)) finding("ELF header", 0, sizeof(Elf64_Ehdr), size);
  const auto eh = read_at<Elf64_Ehdr>(data, 0);
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || !inside(eh.e_phoff, std::uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr), size))
    finding("program header table", eh.e_phoff, eh.e_phnum, size);
  for (std::uint16_t i = 0; i < eh.e_phnum; ++i) {
    const auto ph = read_at<Elf64_Phdr>(data, eh.e_phoff + std::uint64_t(i) * sizeof(Elf64_Phdr));
    if (ph.p_type == PT_LOAD && !inside(ph.p_offset, ph.p_filesz, size))
      finding("PT_LOAD segment (offset, file size)", ph.p_offset, ph.p_filesz, size);
  }
  return 0;
}
