#pragma once
// Host memory for the native framework: 64-byte aligned (a cache line and
// an AVX-512 vector), with statistics and an optional limit.
//
// Blocks are kept when freed and handed out again. glibc maps every block
// over 32 MiB afresh and unmaps it when freed, so each new activation or
// gradient of a training step faulted in and zeroed all its pages again:
// a third of a million faults per VGG-A step at batch 8, 30% of its CPU
// time in the kernel; and a small op's result of a few KiB went through
// malloc's bins and their consolidation each time. A freed block of at
// least 1 KiB (smaller ones glibc's per-thread cache serves) goes to a cache by
// size class (sizes rounded up to an eighth of their power of two, so a
// block serves every later request of its class) while the cache holds no
// more than the peak of allocated bytes, plus the eighth a capacity may
// round up (and, under a limit, while allocated plus cached bytes stay
// within it): a block that would pass the bound makes room by returning
// the longest-cached blocks to the system first, so the sizes in use stay
// and those of earlier work go. A failing allocation first empties the
// cache. Frees arrive after the work that used the block
// (NativeDevice::release makes them then, or queues them), so a cached
// block is idle.
#include <atomic>
#include <cstddef>
#include <deque>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

class HostMemory {
 public:
  explicit HostMemory(std::uint64_t limit = 0) : limit_(limit) {}
  ~HostMemory();
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  [[nodiscard]] void* allocate(std::size_t bytes);
  void free(void* data) noexcept;
  // Returns every cached block to the system; false when there was none.
  bool empty_cache() noexcept;
  [[nodiscard]] plugin::MemoryStats stats() const noexcept;
  // A new limit starts with an empty cache, which may hold more than it.
  void set_limit(std::uint64_t bytes) noexcept {
    limit_.store(bytes, std::memory_order_relaxed);
    (void)empty_cache();
  }

 private:
  [[nodiscard]] void* take_cached(std::size_t capacity) noexcept;
  [[nodiscard]] bool cache(void* block, std::size_t capacity) noexcept;
  // Frees the longest-cached block (the lock held); returns its capacity.
  std::size_t evict_oldest() noexcept;

  std::atomic<std::uint64_t> limit_;
  std::atomic<std::uint64_t> allocated_{0};
  std::atomic<std::uint64_t> peak_{0};
  std::atomic<std::uint64_t> allocations_{0};
  std::atomic<std::uint64_t> cached_{0};
  std::mutex cache_mutex_;
  std::unordered_map<std::size_t, std::vector<void*>> cache_;  // capacity -> free blocks
  std::deque<void*> cached_order_;  // every cached block, the longest-cached first
};

}  // namespace xylem::native
