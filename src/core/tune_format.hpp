#pragma once
// The tuning cache's file format (include/xylem/plugin/tune.hpp), on text
// alone: no files, no locks, so it is tested (and could be fuzzed) by
// itself.
//
//   xylem-tune <format version>
//   <crc32, 8 hex digits> TAB device TAB driver TAB op TAB shape TAB
//       candidates TAB choice TAB seconds
//
// one entry per line; the checksum covers the line after its first tab, so
// a damaged line is dropped without costing its neighbours.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/plugin/tune.hpp"

namespace xylem::core::tune {

using plugin::tune::Entry;
using plugin::tune::Key;
using plugin::tune::Winner;

// 1: the first format. A file of another version is dropped whole.
inline constexpr std::uint32_t kFormatVersion = 1;

struct Parsed {
  std::vector<Entry> entries;  // the valid lines, in file order
  bool clean = true;           // false when something was dropped (a bad line, another version)
};

// Never throws but for memory; empty text is a clean empty file.
[[nodiscard]] Parsed parse(std::string_view text);
// The text parse() reads back. Tabs and line breaks in the fields become
// spaces (they separate fields and lines).
[[nodiscard]] std::string format(std::span<const Entry> entries);

// Whether a and b name the same choice, whatever their candidate sets.
[[nodiscard]] bool same_slot(const Key& a, const Key& b) noexcept;

}  // namespace xylem::core::tune
