// The `xylem info` report (see info_report.hpp).
#include "info_report.hpp"

#include <iomanip>
#include <ostream>
#include <sstream>

#include "xylem/backend.hpp"
#include "xylem/dist.hpp"
#include "xylem/fused.hpp"
#include "xylem/plugin/tune.hpp"

namespace xylem::cli {
namespace {

std::string memory(std::uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << double(bytes) / double(1ull << 30) << " GiB";
  return os.str();
}

}  // namespace

void print_info(std::ostream& os) {
  os << "xylem frameworks\n";
  for (const auto& fw : Backend::frameworks()) {
    os << "  " << std::left << std::setw(8) << fw.name << ' ';
    if (fw.available) {
      os << "available (" << fw.source << ")\n";
      // Broken files of the same name earlier on the path, and why.
      if (!fw.reason.empty()) os << "    " << fw.reason << "\n";
    } else {
      os << "unavailable: " << fw.reason << "\n";
    }
    for (const auto& hw : fw.hardware) {
      os << "    " << std::setw(10) << hw.id() << hw.name << "\n"
         << "              kind " << name(hw.kind) << ", " << hw.compute_units << " compute units, "
         << memory(hw.memory_bytes) << " memory" << (hw.caps.fp64 ? ", fp64" : "") << (hw.caps.fp16 ? ", fp16" : "")
         << (hw.caps.bf16 ? ", bf16" : "") << "\n";
      if (!hw.driver.empty()) os << "              driver " << hw.driver << "\n";
      if (!hw.details.empty()) os << "              " << hw.details << "\n";
    }
  }
  os << "xylem dist transports\n";
  for (const auto& t : dist::transports()) {
    os << "  " << std::left << std::setw(8) << t.name << ' '
       << (t.available ? "available" + (t.reason.empty() ? std::string() : ": " + t.reason)
                       : "unavailable: " + t.reason) << "\n";
  }
  const auto tune_path = plugin::tune::path();
  os << "tuning cache: "
     << (tune_path.empty() ? std::string("none (no cache directory)")
                           : tune_path.string() + " (" + std::to_string(plugin::tune::entries().size()) + " entries)")
     << ", tuning " << (plugin::tune::enabled() ? "on" : "off (XYLEM_TUNE=1 or xylem tune)") << "\n";
  os << "fusion of elementwise calls: " << (fusion_enabled() ? "on (XYLEM_FUSE=0 turns it off)" : "off") << "\n";
  os << "best backend: " << Backend::best() << "\n";
}

}  // namespace xylem::cli
