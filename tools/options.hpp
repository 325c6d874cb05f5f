#pragma once
// Reading the subcommands' options: "--name value" pairs, each handed to a
// setter, and flags without a value. A bad option throws xylem::Error
// (invalid_argument) beginning with the command's name.
#include <charconv>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include "xylem/error.hpp"

namespace xylem::cli {

[[noreturn]] inline void bad_option(std::string_view command, std::string_view name, const std::string& why) {
  throw Error(ErrorCode::invalid_argument, std::string(command) + ": " + std::string(name) + " " + why);
}

// `text` as a number of at least `low`.
template <class T>
T option_number(std::string_view command, std::string_view name, std::string_view text, T low) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < low)
    bad_option(command, name,
               "takes a number of at least " + (std::ostringstream() << low).str() + ", not '" + std::string(text) + "'");
  return value;
}

using OptionSetter = std::function<void(std::string_view name, std::string_view value)>;

// Calls the setter of each "--name value" in `args`, and `flag` for each of
// `flags` (options without a value).
inline void parse_options(std::string_view command, std::span<const std::string_view> args,
                          const std::map<std::string_view, OptionSetter>& setters,
                          const std::set<std::string_view>& flags, const std::function<void(std::string_view)>& flag) {
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (flags.count(args[k])) {
      flag(args[k]);
      continue;
    }
    const auto setter = setters.find(args[k]);
    if (setter == setters.end())
      bad_option(command, args[k], "is not an option of " + std::string(command) + " (see --help)");
    if (k + 1 == args.size()) bad_option(command, args[k], "needs a value");
    setter->second(args[k], args[k + 1]);
    ++k;
  }
}

}  // namespace xylem::cli
