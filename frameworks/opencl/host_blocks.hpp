#pragma once
// The host memory under the buffers of a CPU device (memory.cpp), kept for
// reuse. PoCL allocates each buffer with malloc, and glibc maps a block of
// over 32 MiB afresh every time and unmaps it on free, so every op writing
// a new tensor that large faulted in and zeroed each page again: two thirds
// of a pad of [8, 64, 128, 128] f32 (35 MB out), most of an rms_norm of
// [8192, 1024] f32. Buffers over these blocks (CL_MEM_USE_HOST_PTR, which a
// CPU device uses in place) hand theirs back when the runtime destroys them,
// that is after the last command using them, so reuse is always safe. The
// policy is the native framework's (frameworks/native/memory.cpp): size
// classes of an eighth of their power of two, at most the peak in use plus
// an eighth held, the longest-cached given back first.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace xylem::opencl {

class HostBlocks {
 public:
  // Blocks from here up come from the cache: smaller ones glibc keeps on its
  // heap anyway.
  static constexpr std::size_t kCachedFrom = std::size_t{1} << 20;
  // Page-aligned: every device's base address alignment.
  static constexpr std::size_t kAlignment = 4096;

  HostBlocks() = default;
  HostBlocks(const HostBlocks&) = delete;
  HostBlocks& operator=(const HostBlocks&) = delete;
  ~HostBlocks() { (void)empty(); }

  // The capacity of the block for a buffer of `bytes`.
  [[nodiscard]] static std::size_t capacity_for(std::size_t bytes) noexcept;
  // A block of `capacity` bytes, cached or new; null when the host has none.
  [[nodiscard]] void* take(std::size_t capacity) noexcept;
  // Takes back a block from take() whose buffer is gone.
  void give(void* block, std::size_t capacity) noexcept;
  // Frees every cached block; false when none was.
  bool empty() noexcept;
  [[nodiscard]] std::uint64_t cached() const noexcept { return cached_.load(std::memory_order_relaxed); }

 private:
  std::size_t evict_oldest() noexcept;  // under mutex_

  std::mutex mutex_;
  std::uint64_t in_use_ = 0, peak_ = 0;  // under mutex_
  std::atomic<std::uint64_t> cached_{0};
  std::unordered_map<std::size_t, std::vector<void*>> cache_;  // capacity -> free blocks
  std::deque<std::pair<void*, std::size_t>> order_;            // every cached block, the longest-cached first
};

}  // namespace xylem::opencl
