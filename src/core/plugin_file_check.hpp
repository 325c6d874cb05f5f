#pragma once
// Whether a file's bytes can be handed to dlopen. glibc maps a shared object
// by its program headers without comparing them with the file's size: a
// truncated plugin makes it touch pages past the end of the file, and the
// process dies of SIGBUS inside dlopen. The loader checks first.
#include <span>
#include <string>

namespace xylem::detail {

// "" when the bytes look like a shared object this process can load: ELF,
// 64-bit, little endian, ET_DYN, this machine's e_machine, the program and
// section header tables and every PT_LOAD / PT_DYNAMIC segment's file range
// inside the bytes (every offset + size checked for overflow). Otherwise one
// line saying what is wrong. Pure: reads only `bytes`, never throws.
[[nodiscard]] std::string check_plugin_file(std::span<const unsigned char> bytes);

}  // namespace xylem::detail
