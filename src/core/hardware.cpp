#include "xylem/hardware.hpp"

#include <ostream>

namespace xylem {

std::string_view name(HardwareKind kind) noexcept {
  switch (kind) {
    case HardwareKind::cpu: return "cpu";
    case HardwareKind::gpu: return "gpu";
    case HardwareKind::accelerator: return "accelerator";
    case HardwareKind::dsp: return "dsp";
    case HardwareKind::other: return "other";
  }
  return "?";
}

std::string Hardware::id() const { return framework + ":" + std::to_string(index); }

std::ostream& operator<<(std::ostream& os, const Hardware& hw) {
  os << hw.id() << "  " << hw.name << " (" << name(hw.kind) << ", " << hw.compute_units << " compute units, "
     << (hw.memory_bytes >> 20) << " MiB";
  if (hw.caps.fp64) os << ", fp64";
  if (hw.caps.fp16) os << ", fp16";
  if (hw.caps.bf16) os << ", bf16";
  os << ")";
  return os;
}

}  // namespace xylem
