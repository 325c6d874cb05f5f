#pragma once
/// @file
/// The user's single entry point: one framework, one device.
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

/// What to do when the backend's device cannot run an operation
/// (no fp64 on the device, say).
enum class Fallback {
  raise,  ///< throw an Error with ErrorCode::unsupported, naming the op, dtype and device
  native  ///< run the operation on Backend::native() instead, moving the tensors there and back as needed
};

/// How a Backend is made: which framework, which of its devices, and what to
/// do where that device lacks an operation. The defaults pick the best device
/// present, as Backend::best() does (without reading XYLEM_BACKEND).
struct BackendConfig {
  std::string framework;                 ///< "native", "opencl", "cuda"; empty: best present
  int device = -1;                       ///< index within the framework; -1: the best one
  std::optional<HardwareKind> kind;      ///< prefer this kind of hardware
  std::uint64_t memory_limit = 0;        ///< bytes; 0: the framework's default
  Fallback fallback = Fallback::raise;   ///< when the device cannot run an operation
};

/// Bytes of tensor storage on one device (Backend::memory()).
struct MemoryUsage {
  std::uint64_t in_use = 0;  ///< bytes allocated for tensors' copies on the device now
  std::uint64_t peak = 0;    ///< the most in use at once since the last reset_peak_memory()
};

/// Status of one framework, as `xylem info` shows it.
struct FrameworkStatus {
  std::string name;                ///< "native", "opencl", "cuda"
  bool available = false;          ///< whether a Backend can be opened on it
  std::string reason;   ///< why not, when unavailable
  std::string source;   ///< "built in" or the plugin's path
  std::vector<Hardware> hardware;  ///< the devices it sees (empty when unavailable)
};

/// One framework and one of its devices: what every operation takes to say
/// where it runs. A cheap handle (copies share the opened device); usable from
/// several host threads.
///
/// Operations enqueue on the device's queue and return at once; host reads
/// (Tensor::read, to_vector, printing) wait only for the work they read, and
/// synchronize() waits for everything.
class Backend {
 public:
  /// The host CPU. Always works.
  static Backend native();
  /// CUDA, then OpenCL GPUs and accelerators, then native. XYLEM_BACKEND
  /// ("native", "opencl", "opencl:1", "cuda:0") overrides the choice.
  /// Throws as open() does for a bad or unavailable XYLEM_BACKEND.
  static Backend best();
  /// "native", "opencl:0", "cuda:1"; a framework without index takes its best
  /// device. Throws plugin_unavailable (with the reason) or invalid_argument.
  static Backend open(const std::string& spec);
  /// The backend `config` describes. Throws invalid_argument for an unknown
  /// framework or a device index past its devices, plugin_unavailable (with
  /// the reason) for a framework that did not load, and unsupported for a
  /// memory_limit the framework cannot set.
  explicit Backend(const BackendConfig& config);

  /// The device this backend runs on.
  [[nodiscard]] const Hardware& hardware() const noexcept;
  /// The framework's name: "native", "opencl" or "cuda".
  [[nodiscard]] std::string framework() const;
  [[nodiscard]] std::string id() const;  ///< "cuda:0"
  /// The configuration, with the framework and device it resolved to.
  [[nodiscard]] const BackendConfig& config() const noexcept;
  /// Whether this backend's device runs `op` on `dtype` (without falling back).
  [[nodiscard]] bool supports(Op op, DType dtype) const noexcept;

  /// Waits for all work enqueued on this backend's device; rethrows an error
  /// that work raised (device_lost...).
  void synchronize() const;

  /// Tensor storage on this backend's device: the bytes in use now and the
  /// peak since reset_peak_memory() (or since the process started). Counted
  /// by the core where it allocates and releases tensors' device copies, so
  /// every framework reports the same thing: a tensor counts from its first
  /// use on the device until its last handle goes (a framework may reuse
  /// the memory only later, when the work reading it has finished). Memory a
  /// framework holds for itself (cached blocks, cuDNN workspace, compiled
  /// programs) is not counted. Backends on the same device share the counts.
  [[nodiscard]] MemoryUsage memory() const;
  /// Starts a new peak from the bytes in use now (PyTorch's
  /// reset_peak_memory_stats). Meant for quiet moments: an allocation racing
  /// with it may be left out of the new peak.
  void reset_peak_memory() const;

  /// True when both run on the same device.
  friend bool operator==(const Backend& a, const Backend& b) noexcept;

  /// Every framework xylem knows, loaded or not, with the reason.
  static std::vector<FrameworkStatus> frameworks();

  struct Impl;

 private:
  friend const Impl& backend_impl(const Backend& backend) noexcept;
  std::shared_ptr<const Impl> impl_;
};

/// Prints the id and the device's name: "cuda:0 (NVIDIA H100)".
std::ostream& operator<<(std::ostream& os, const Backend& b);

}  // namespace xylem
