#pragma once
/// @file
/// Test support: hold a backend's queue closed to prove that operations
/// return before their work runs, and make chosen device calls fail.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "xylem/backend.hpp"

/// Test support: hold a queue closed, inject device faults.
namespace xylem::testing {

/// Enqueues a task that blocks the backend's queue until open() (or the
/// destructor). Work enqueued after it cannot start before then.
class Gate {
 public:
  /// Enqueues the gate on backend's queue.
  explicit Gate(const Backend& backend);
  ~Gate();  ///< opens the gate if still closed
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open();  ///< lets the queue run on
  /// True once the queue has reached the gate.
  [[nodiscard]] bool reached() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

/// The kinds of device call a fault can be injected into.
enum class FaultSite : std::uint8_t {
  allocation,    ///< device memory: raises out_of_memory
  kernel_build,  ///< compiling or loading a program or module: raises compile_failed
  transfer,      ///< upload, download, device-to-device copy
  library_call,  ///< a vendor library (BLAS, cuDNN, oneDNN, CLBlast) call
};
/// The site's name, as XYLEM_FAULT spells it: "allocation"...
[[nodiscard]] std::string_view name(FaultSite site) noexcept;

/// Fails the `nth` (1-based) call at `site` made from now on, counting only
/// calls of `framework` ("native", "opencl", "cuda"; empty: any), and
/// `count` calls from there (1: just that one). One injection is armed at a
/// time; the destructor disarms it. The environment can arm one for a whole
/// process instead: XYLEM_FAULT=site:nth[:count[:framework]], site one of
/// allocation, kernel_build, transfer, library_call.
///
/// What a failure raises, per site: allocation out_of_memory (after the
/// allocator flushed its cache and retried once: count 1 is absorbed by the
/// retry, count 2 reaches the caller), kernel_build compile_failed,
/// transfer and library_call what the framework's real failure raises
/// (device_lost, out_of_memory or internal). Calls made inside queued work
/// (native kernels) fail that work: its event, every later task that
/// depends on it and the next host read raise the error.
class FaultInjection {
 public:
  /// Arms the injection, replacing any armed before (the environment's too);
  /// nth counts from 1.
  FaultInjection(FaultSite site, std::uint64_t nth, std::string_view framework = {}, std::uint64_t count = 1);
  ~FaultInjection();  ///< disarms it
  FaultInjection(const FaultInjection&) = delete;
  FaultInjection& operator=(const FaultInjection&) = delete;
  /// Calls at the site (of the framework) seen since arming, and failures made.
  [[nodiscard]] std::uint64_t calls() const noexcept;
  /// Calls made to fail since arming.
  [[nodiscard]] std::uint64_t failures() const noexcept;
  /// Allocations (of the framework) retried after a failure flushed the
  /// allocator's cache, since arming.
  [[nodiscard]] std::uint64_t retries() const noexcept;
};

}  // namespace xylem::testing
