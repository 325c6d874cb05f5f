// `xylem info`: every framework, loaded or not and why, with its hardware.
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "xylem/backend.hpp"
#include "xylem/dist.hpp"

namespace xylem::cli {
namespace {

constexpr std::string_view kHelp = R"(usage: xylem info

Lists every framework xylem knows (cuda, opencl, native and any plugin found),
whether it is available or why not, and for each hardware: its kind, compute
units, memory and capabilities. Then the transports of xylem::dist (mpi,
tcp, self), each available or why not. Ends with the backend
Backend::best() picks.
)";

std::string memory(std::uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << double(bytes) / double(1ull << 30) << " GiB";
  return os.str();
}

}  // namespace

int info(std::span<const std::string_view> args) {
  if (wants_help(args, kHelp)) return 0;
  std::cout << "xylem frameworks\n";
  for (const auto& fw : Backend::frameworks()) {
    std::cout << "  " << std::left << std::setw(8) << fw.name << ' ';
    if (fw.available) {
      std::cout << "available (" << fw.source << ")\n";
      // Broken files of the same name earlier on the path, and why.
      if (!fw.reason.empty()) std::cout << "    " << fw.reason << "\n";
    } else {
      std::cout << "unavailable: " << fw.reason << "\n";
    }
    for (const auto& hw : fw.hardware) {
      std::cout << "    " << std::setw(10) << hw.id() << hw.name << "\n"
                << "              kind " << name(hw.kind) << ", " << hw.compute_units << " compute units, "
                << memory(hw.memory_bytes) << " memory"
                << (hw.caps.fp64 ? ", fp64" : "") << (hw.caps.fp16 ? ", fp16" : "") << (hw.caps.bf16 ? ", bf16" : "")
                << "\n";
      if (!hw.driver.empty()) std::cout << "              driver " << hw.driver << "\n";
      if (!hw.details.empty()) std::cout << "              " << hw.details << "\n";
    }
  }
  std::cout << "xylem dist transports\n";
  for (const auto& t : dist::transports()) {
    std::cout << "  " << std::left << std::setw(8) << t.name << ' ';
    std::cout << (t.available ? std::string("available") : "unavailable: " + t.reason) << "\n";
  }
  std::cout << "best backend: " << Backend::best() << "\n";
  return 0;
}

}  // namespace xylem::cli
