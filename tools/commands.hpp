#pragma once
// The `xylem` command's subcommands. Each takes the arguments after its
// name and returns the process exit code.
#include <span>
#include <string_view>

namespace xylem::cli {

int info(std::span<const std::string_view> args);
int demo(std::span<const std::string_view> args);
int warm(std::span<const std::string_view> args);
int train(std::span<const std::string_view> args);
int first_call(std::span<const std::string_view> args);
int tune(std::span<const std::string_view> args);
int lm(std::span<const std::string_view> args);

// True (and the help printed) when args ask for help.
bool wants_help(std::span<const std::string_view> args, std::string_view help_text);

}  // namespace xylem::cli
