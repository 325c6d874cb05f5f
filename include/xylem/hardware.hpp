#pragma once
/// @file
/// What a framework can see: one Hardware per processing unit.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace xylem {

/// What sort of processing unit a Hardware is.
enum class HardwareKind { cpu, gpu, accelerator, dsp, other };
/// "cpu", "gpu", "accelerator", "dsp" or "other".
[[nodiscard]] std::string_view name(HardwareKind kind) noexcept;

/// What a processing unit can do beyond f32 arithmetic.
struct Capabilities {
  bool fp16 = false;            ///< computes in half precision
  bool bf16 = false;            ///< computes in bfloat16
  bool fp64 = false;            ///< computes in double precision (else f64 ops are unsupported there)
  bool unified_memory = false;  ///< shares memory with the host
  bool peer_access = false;     ///< reads other devices' memory directly
};

/// One processing unit a framework can see, as `xylem info` lists it.
struct Hardware {
  std::string framework;  ///< "native", "opencl", "cuda"
  int index = 0;          ///< within the framework: the N of "opencl:N"
  std::string name;       ///< the device's own name
  std::string vendor;     ///< who made it
  std::string driver;     ///< driver or runtime version, when known
  HardwareKind kind = HardwareKind::other;  ///< CPU, GPU...
  int compute_units = 0;           ///< cores, compute units or streaming multiprocessors
  std::uint64_t memory_bytes = 0;  ///< global memory
  Capabilities caps;               ///< dtypes and memory features
  std::string details;    ///< framework-specific: "compute capability 9.0", "OpenCL 3.0 PoCL"...

  [[nodiscard]] std::string id() const;  ///< "cuda:0"
};

/// One line: id, name, kind, compute units, memory and fp64/fp16/bf16.
std::ostream& operator<<(std::ostream& os, const Hardware& hw);

}  // namespace xylem
