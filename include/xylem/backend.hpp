#pragma once
// The user's single entry point: one framework, one device.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xylem/dtype.hpp"
#include "xylem/hardware.hpp"
#include "xylem/op.hpp"

namespace xylem {

// What to do when the backend's device cannot run an operation
// (no fp64 on the device, say).
enum class Fallback { raise, native };

struct BackendConfig {
  std::string framework;                 // "native", "opencl", "cuda"; empty: best present
  int device = -1;                       // index within the framework; -1: the best one
  std::optional<HardwareKind> kind;      // prefer this kind of hardware
  std::uint64_t memory_limit = 0;        // bytes; 0: the framework's default
  Fallback fallback = Fallback::raise;
};

// Status of one framework, as `xylem info` shows it.
struct FrameworkStatus {
  std::string name;
  bool available = false;
  std::string reason;   // why not, when unavailable
  std::string source;   // "built in" or the plugin's path
  std::vector<Hardware> hardware;
};

class Backend {
 public:
  // The host CPU. Always works.
  static Backend native();
  // CUDA, then OpenCL GPUs and accelerators, then native. XYLEM_BACKEND
  // ("native", "opencl", "opencl:1", "cuda:0") overrides the choice.
  static Backend best();
  // "native", "opencl:0", "cuda:1"; a framework without index takes its best
  // device. Throws plugin_unavailable (with the reason) or invalid_argument.
  static Backend open(const std::string& spec);
  explicit Backend(const BackendConfig& config);

  [[nodiscard]] const Hardware& hardware() const noexcept;
  [[nodiscard]] std::string framework() const;
  [[nodiscard]] std::string id() const;  // "cuda:0"
  [[nodiscard]] const BackendConfig& config() const noexcept;
  // Whether this backend's device runs `op` on `dtype` (without falling back).
  [[nodiscard]] bool supports(Op op, DType dtype) const noexcept;

  // Waits for all work enqueued on this backend's device.
  void synchronize() const;

  friend bool operator==(const Backend& a, const Backend& b) noexcept;

  // Every framework xylem knows, loaded or not, with the reason.
  static std::vector<FrameworkStatus> frameworks();

  struct Impl;

 private:
  friend const Impl& backend_impl(const Backend& backend) noexcept;
  std::shared_ptr<const Impl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Backend& b);

}  // namespace xylem
