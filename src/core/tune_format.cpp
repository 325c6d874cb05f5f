// The tuning cache's file format (see tune_format.hpp).
#include "core/tune_format.hpp"

#include <zlib.h>

#include <charconv>
#include <cstdio>

namespace xylem::core::tune {

namespace {

constexpr std::string_view kMagic = "xylem-tune ";
constexpr std::size_t kFields = 7;  // after the checksum

std::uint32_t checksum(std::string_view text) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // crc32 takes a uInt length: the lines are far shorter.
  crc = crc32(crc, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size()));
  return static_cast<std::uint32_t>(crc);
}

std::string clean_field(std::string_view field) {
  std::string out(field);
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

// One entry line; false for anything malformed or failing its checksum.
bool parse_line(std::string_view line, Entry& entry) {
  const std::size_t tab = line.find('\t');
  if (tab != 8) return false;
  // Lower-case hex alone, as format() writes it: one spelling per checksum.
  for (char c : line.substr(0, 8))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  std::uint32_t stored = 0;
  const auto [ptr, ec] = std::from_chars(line.data(), line.data() + 8, stored, 16);
  if (ec != std::errc() || ptr != line.data() + 8) return false;
  const std::string_view body = line.substr(9);
  if (checksum(body) != stored) return false;
  std::string_view fields[kFields];
  std::size_t start = 0;
  for (std::size_t i = 0; i < kFields; ++i) {
    const std::size_t end = i + 1 < kFields ? body.find('\t', start) : body.size();
    if (end == std::string_view::npos) return false;
    fields[i] = body.substr(start, end - start);
    start = end + 1;
  }
  if (fields[6].find('\t') != std::string_view::npos || fields[5].empty()) return false;
  Entry e;
  e.key = Key{std::string(fields[0]), std::string(fields[1]), std::string(fields[2]), std::string(fields[3]), 0};
  if (!parse_number(fields[4], e.key.candidates) || !parse_number(fields[6], e.winner.seconds)) return false;
  if (!(e.winner.seconds >= 0)) return false;  // also refuses NaN
  e.winner.choice = std::string(fields[5]);
  entry = std::move(e);
  return true;
}

}  // namespace

bool same_slot(const Key& a, const Key& b) noexcept {
  return a.device == b.device && a.driver == b.driver && a.op == b.op && a.shape == b.shape;
}

Parsed parse(std::string_view text) {
  Parsed parsed;
  if (text.empty()) return parsed;
  const std::size_t first_end = text.find('\n');
  const std::string_view header = text.substr(0, first_end);
  std::uint32_t version = 0;
  if (!header.starts_with(kMagic) || !parse_number(header.substr(kMagic.size()), version) ||
      version != kFormatVersion) {
    parsed.clean = false;
    return parsed;
  }
  for (std::size_t start = first_end == std::string_view::npos ? text.size() : first_end + 1; start < text.size();) {
    std::size_t end = text.find('\n', start);
    // A last line without its line break was cut short: dropped.
    if (end == std::string_view::npos) {
      parsed.clean = false;
      break;
    }
    Entry entry;
    if (parse_line(text.substr(start, end - start), entry)) {
      parsed.entries.push_back(std::move(entry));
    } else {
      parsed.clean = false;
    }
    start = end + 1;
  }
  return parsed;
}

std::string format(std::span<const Entry> entries) {
  std::string text(kMagic);
  text += std::to_string(kFormatVersion) + "\n";
  for (const Entry& e : entries) {
    // to_chars: the shortest text that reads back exactly, in any locale.
    char seconds[32];
    const double value = e.winner.seconds >= 0 ? e.winner.seconds : 0.0;
    const auto written = std::to_chars(seconds, seconds + sizeof seconds, value);
    const std::string body = clean_field(e.key.device) + '\t' + clean_field(e.key.driver) + '\t' +
                             clean_field(e.key.op) + '\t' + clean_field(e.key.shape) + '\t' +
                             std::to_string(e.key.candidates) + '\t' + clean_field(e.winner.choice) + '\t' +
                             std::string(seconds, written.ptr);
    char sum[16];
    std::snprintf(sum, sizeof sum, "%08x", static_cast<unsigned>(checksum(body)));
    (text += sum) += '\t';
    (text += body) += '\n';
  }
  return text;
}

}  // namespace xylem::core::tune
