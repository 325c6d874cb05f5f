#pragma once
// The JSON subset file headers use (safetensors): objects, arrays, strings
// with escapes and non-negative integers. Nothing else is accepted, so a
// header's every value has one meaning and no float rounding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xylem::io {

struct JsonMember;

/// One parsed value. `offset` is where it starts, counted from the start of
/// the parsed text plus the base the caller gave, so errors can name the
/// byte of the file.
struct Json {
  enum class Kind { object, array, string, integer };
  Kind kind = Kind::object;
  std::size_t offset = 0;
  std::string text;                 ///< string
  std::uint64_t integer = 0;        ///< integer
  std::vector<Json> items;          ///< array
  std::vector<JsonMember> members;  ///< object, in the text's order, keys unique
};

/// One key and value of an object.
struct JsonMember {
  std::string key;
  Json value;
};

/// Parses `text` as one value with only whitespace around it. Throws
/// Error(invalid_argument) "<source>: bad JSON at byte N: ..." where N is
/// `base` plus the position in `text`; a key repeated in one object is
/// refused by name.
[[nodiscard]] Json parse_json(std::string_view text, const std::string& source, std::size_t base);

/// `s` as a JSON string literal, quotes included: `"`, `\` and control
/// characters escaped, other bytes as they are.
[[nodiscard]] std::string json_quote(std::string_view s);

/// The kind's name for messages: "an object", "a string"...
[[nodiscard]] const char* json_kind_name(Json::Kind kind) noexcept;

}  // namespace xylem::io
