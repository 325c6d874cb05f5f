#pragma once
// Bytes of tensor storage per device, counted where the core allocates and
// releases device copies (Storage), so every framework reports the same
// quantity: what Backend::memory() returns.
#include <atomic>
#include <cstdint>

#include "xylem/backend.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::detail {

class DeviceUsage {
 public:
  void add(std::uint64_t bytes) noexcept;
  void remove(std::uint64_t bytes) noexcept;
  [[nodiscard]] MemoryUsage get() const noexcept;
  void reset_peak() noexcept;

 private:
  std::atomic<std::uint64_t> in_use_{0};
  std::atomic<std::uint64_t> peak_{0};
};

// The counters of `device`, made at first use; the reference stays valid
// for the life of the process (tensors may be released during exit).
[[nodiscard]] DeviceUsage& usage_of(const plugin::Device& device);

}  // namespace xylem::detail
