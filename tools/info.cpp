// `xylem info`: every framework, loaded or not and why, with its hardware.
#include <iostream>

#include "commands.hpp"
#include "info_report.hpp"

namespace xylem::cli {
namespace {

constexpr std::string_view kHelp = R"(usage: xylem info

Lists every framework xylem knows (cuda, opencl, native and any plugin found),
whether it is available or why not, and for each hardware: its kind, compute
units, memory and capabilities. Then the transports of xylem::dist (mpi,
tcp, self), each available or why not, and the tuning cache (its file and
number of entries, whether tuning is on). Ends with the backend
Backend::best() picks.
)";

}  // namespace

int info(std::span<const std::string_view> args) {
  if (wants_help(args, kHelp)) return 0;
  print_info(std::cout);
  return 0;
}

}  // namespace xylem::cli
