#include <iostream>

#include "commands.hpp"

namespace xylem::cli {

bool wants_help(std::span<const std::string_view> args, std::string_view help_text) {
  for (auto arg : args) {
    if (arg == "-h" || arg == "--help") {
      std::cout << help_text;
      return true;
    }
  }
  return false;
}

}  // namespace xylem::cli
