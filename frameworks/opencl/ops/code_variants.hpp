#pragma once
// The programs split by op code (program_spec.hpp's variants): a call's
// variant is its code, OpCall::i[0], and a variant's label the code's name
// in math.h's X-list ("XY_UN_SIGMOID": "sigmoid").
#include <array>
#include <cctype>
#include <climits>
#include <cstddef>
#include <string>
#include <string_view>

#include "xylem/plugin/args.hpp"

namespace xylem::opencl {

[[nodiscard]] inline int code_variant(const plugin::OpCall& call) noexcept {
  return call.i[0] >= 0 && call.i[0] <= INT_MAX ? static_cast<int>(call.i[0]) : -1;
}

// The names of an X-list's codes, indexed by code:
// XY_CODE_NAMES(XY_UN_COUNT, XY_UNARY_FORMULAS(XY_CODE_NAME_AT, ...)).
#define XY_CODE_NAME_AT(code, expression) names[code] = #code;
#define XY_CODE_NAMES(count, ...)              \
  [] {                                         \
    std::array<const char*, count> names{};    \
    __VA_ARGS__                                \
    return names;                              \
  }()

// Whether every code has its name (its line in the X-list).
template <std::size_t n>
[[nodiscard]] constexpr bool all_named(const std::array<const char*, n>& names) {
  for (const char* name : names)
    if (name == nullptr) return false;
  return true;
}

// "XY_UN_SIGMOID" -> "sigmoid": past the "XY_" and the family prefix.
[[nodiscard]] inline std::string code_label(std::string_view code_name) {
  std::size_t start = code_name.find('_', code_name.find('_') + 1);
  start = start == std::string_view::npos ? 0 : start + 1;
  std::string label;
  for (char c : code_name.substr(start)) label += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return label;
}

// ProgramSpec::variant_name for a list of code names.
template <const auto& names>
[[nodiscard]] std::string code_variant_name(int code) {
  return code_label(names[static_cast<std::size_t>(code)]);
}

}  // namespace xylem::opencl
