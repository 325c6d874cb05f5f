// The plugin file check (see plugin_file_check.hpp).
#include "core/plugin_file_check.hpp"

#include <elf.h>

#include <bit>
#include <cstdint>
#include <cstring>

namespace xylem::detail {
namespace {

#if defined(__x86_64__)
constexpr std::uint16_t kMachine = EM_X86_64;
constexpr const char* kMachineName = "x86-64";
#elif defined(__aarch64__)
constexpr std::uint16_t kMachine = EM_AARCH64;
constexpr const char* kMachineName = "aarch64";
#elif defined(__powerpc64__)
constexpr std::uint16_t kMachine = EM_PPC64;
constexpr const char* kMachineName = "ppc64";
#elif defined(__riscv) && __riscv_xlen == 64
constexpr std::uint16_t kMachine = EM_RISCV;
constexpr const char* kMachineName = "riscv64";
#else
#error "plugin_file_check: add this machine's ELF e_machine"
#endif

static_assert(sizeof(void*) == 8 && std::endian::native == std::endian::little,
              "plugin_file_check accepts 64-bit little-endian objects only");

// Whether [offset, offset + count * size) lies inside a file of `file` bytes,
// without overflowing on the way.
bool range_fits(std::uint64_t offset, std::uint64_t count, std::uint64_t size, std::uint64_t file) {
  if (offset > file) return false;
  if (size != 0 && count > (file - offset) / size) return false;
  return true;
}

template <class T>
T read_at(std::span<const unsigned char> bytes, std::uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));  // the caller checked the range
  return value;
}

std::string segment_type(std::uint32_t type) { return type == PT_LOAD ? "PT_LOAD" : "PT_DYNAMIC"; }

}  // namespace

std::string check_plugin_file(std::span<const unsigned char> bytes) {
  const std::uint64_t size = bytes.size();
  const std::string of_size = " (file of " + std::to_string(size) + " bytes)";
  if (size < sizeof(Elf64_Ehdr))
    return "too short for an ELF header: " + std::to_string(size) + " bytes (a truncated copy?)";
  if (std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) return "not an ELF file (no \\x7fELF magic)";
  const auto header = read_at<Elf64_Ehdr>(bytes, 0);
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return "not a 64-bit ELF object";
  if (header.e_ident[EI_DATA] != ELFDATA2LSB) return "not a little-endian ELF object";
  if (header.e_ident[EI_VERSION] != EV_CURRENT) return "unknown ELF version " + std::to_string(header.e_ident[EI_VERSION]);
  if (header.e_type != ET_DYN)
    return "not a shared object (ELF type " + std::to_string(header.e_type) + ", expected ET_DYN)";
  if (header.e_machine != kMachine)
    return "built for another machine (ELF machine " + std::to_string(header.e_machine) + ", this is " +
           kMachineName + ")";

  if (header.e_phnum == 0) return "no program headers";
  if (header.e_phentsize != sizeof(Elf64_Phdr))
    return "program header entries of " + std::to_string(header.e_phentsize) + " bytes, expected " +
           std::to_string(sizeof(Elf64_Phdr));
  if (!range_fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size))
    return "program headers (" + std::to_string(header.e_phnum) + " at offset " + std::to_string(header.e_phoff) +
           ") extend past the end" + of_size + ": truncated";
  // e_shnum == 0 with e_shoff set: the count is in section 0 (extended
  // numbering), so at least that entry must be there.
  if (header.e_shoff != 0) {
    if (header.e_shentsize != sizeof(Elf64_Shdr))
      return "section header entries of " + std::to_string(header.e_shentsize) + " bytes, expected " +
             std::to_string(sizeof(Elf64_Shdr));
    const std::uint64_t sections = header.e_shnum == 0 ? 1 : header.e_shnum;
    if (!range_fits(header.e_shoff, sections, sizeof(Elf64_Shdr), size))
      return "section headers (" + std::to_string(sections) + " at offset " + std::to_string(header.e_shoff) +
             ") extend past the end" + of_size + ": truncated";
  }

  bool loads = false;
  for (std::uint64_t i = 0; i < header.e_phnum; ++i) {
    const auto ph = read_at<Elf64_Phdr>(bytes, header.e_phoff + i * sizeof(Elf64_Phdr));
    if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC) continue;
    loads = loads || ph.p_type == PT_LOAD;
    if (!range_fits(ph.p_offset, 1, ph.p_filesz, size))
      return segment_type(ph.p_type) + " segment " + std::to_string(i) + " (bytes " + std::to_string(ph.p_offset) +
             " + " + std::to_string(ph.p_filesz) + ") extends past the end" + of_size + ": truncated";
    if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
      return "PT_LOAD segment " + std::to_string(i) + " has more file bytes than memory bytes";
  }
  if (!loads) return "no PT_LOAD segment: nothing to map";
  return {};
}

}  // namespace xylem::detail
