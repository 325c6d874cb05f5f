#pragma once
// Host memory for the native framework: 64-byte aligned (a cache line and
// an AVX-512 vector), with statistics and an optional limit.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

class HostMemory {
 public:
  explicit HostMemory(std::uint64_t limit = 0) : limit_(limit) {}
  [[nodiscard]] void* allocate(std::size_t bytes);
  void free(void* data) noexcept;
  [[nodiscard]] plugin::MemoryStats stats() const noexcept;
  void set_limit(std::uint64_t bytes) noexcept { limit_.store(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> limit_;
  std::atomic<std::uint64_t> allocated_{0};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<std::uint64_t> allocations_{0};
};

}  // namespace xylem::native
