#pragma once
// What a framework can see: one Hardware per processing unit.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace xylem {

enum class HardwareKind { cpu, gpu, accelerator, dsp, other };
[[nodiscard]] std::string_view name(HardwareKind kind) noexcept;

struct Capabilities {
  bool fp16 = false;
  bool bf16 = false;
  bool fp64 = false;
  bool unified_memory = false;
  bool peer_access = false;
};

struct Hardware {
  std::string framework;  // "native", "opencl", "cuda"
  int index = 0;          // within the framework: the N of "opencl:N"
  std::string name;
  std::string vendor;
  std::string driver;     // driver or runtime version, when known
  HardwareKind kind = HardwareKind::other;
  int compute_units = 0;
  std::uint64_t memory_bytes = 0;
  Capabilities caps;
  std::string details;    // framework-specific: "compute capability 9.0", "OpenCL 3.0 PoCL"...

  [[nodiscard]] std::string id() const;  // "cuda:0"
};

std::ostream& operator<<(std::ostream& os, const Hardware& hw);

}  // namespace xylem
