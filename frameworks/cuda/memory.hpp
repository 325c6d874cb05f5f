#pragma once
// A stream-ordered caching allocator for one device.
//
// Kernels run on the device's compute stream, so a block whose last users
// were kernels can be handed out again at once: later kernels run after
// them. Transfers run on a second stream; a block freed while still in use
// elsewhere (a transfer, another device's stream, a host task) is held back
// until those events complete. The other direction, a block last used by
// kernels and reused by a transfer, is covered by a fence: the compute
// stream's sequence number at the release, which the transfer stream waits
// for (take_fence) before writing into the block.
//
// Sizes are rounded to 512 bytes; blocks of up to 1 MiB come from 2 MiB
// segments, up to 10 MiB from 20 MiB segments, larger ones from a segment of
// their own (2 MiB granularity). Free neighbours within a segment
// merge. When the driver (or the memory limit) refuses, cached segments go
// back to the driver and the allocation is retried once before
// Error{out_of_memory}.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "xylem/future.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::cuda {

// XYLEM_CUDA_MEMORY_LIMIT: bytes, or with a K, M or G suffix (powers of
// 1024); unset or 0: no limit. Throws invalid_argument for other text.
[[nodiscard]] std::uint64_t memory_limit_from_env();
[[nodiscard]] std::uint64_t parse_memory_size(const char* text);

// Device memory of the framework's own (reduction scratch, the cuBLAS
// workspace): allocated once, outside the allocator, so its statistics and
// limit count only what tensors use.
class DeviceBuffer {
 public:
  DeviceBuffer(int device, std::size_t bytes, const char* what);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] void* get() const noexcept { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class CachingAllocator;

// A kernel's temporary device memory (im2col columns, cuDNN workspaces,
// partial sums larger than the scratch buffer), from the caching allocator.
// Kernels run in compute-stream order, so the block goes back as soon as the
// launching kernel function returns: later kernels are queued after the
// ones that use it. `fence` is the compute sequence number of the op being
// launched, which a transfer reusing the block waits for (see above).
//
// Inside a stream capture (recording.hpp) the block is the graph's own
// instead: allocated and freed by graph nodes on the capturing stream
// (cudaMallocAsync, cudaFreeAsync), so no cudaMalloc runs during the
// capture, and the memory is never handed to another op while a replay may
// still use it.
class TempBuffer {
 public:
  TempBuffer(CachingAllocator& memory, std::size_t bytes, std::uint64_t fence);
  TempBuffer(std::size_t bytes, cudaStream_t capturing, int device);
  ~TempBuffer();
  TempBuffer(TempBuffer&& other) noexcept;
  TempBuffer& operator=(TempBuffer&&) = delete;
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;
  [[nodiscard]] void* get() const noexcept { return ptr_; }
  template <class T>
  [[nodiscard]] T* as() const noexcept { return static_cast<T*>(ptr_); }

 private:
  CachingAllocator* memory_ = nullptr;  // null: the capture's (capturing_)
  void* ptr_ = nullptr;
  std::uint64_t fence_ = 0;
  cudaStream_t capturing_ = nullptr;
};

class CachingAllocator {
 public:
  CachingAllocator(int device, std::uint64_t limit);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  [[nodiscard]] void* allocate(std::size_t bytes);
  // `pending`: events on other queues that must complete before reuse;
  // `fence`: the compute stream's sequence number when the block was freed.
  void release(void* ptr, std::span<const EventPtr> pending, std::uint64_t fence) noexcept;
  // For a transfer about to write into the allocation at ptr: the compute
  // sequence number it must wait for (0: none), cleared once taken. An
  // unknown pointer (not an allocation's start) gets kUnknownFence.
  [[nodiscard]] std::uint64_t take_fence(void* ptr) noexcept;
  static constexpr std::uint64_t kUnknownFence = ~std::uint64_t{0};
  // Returns every fully free segment to the driver.
  void empty_cache();
  [[nodiscard]] plugin::MemoryStats stats() const;
  // Caps reserved bytes from now on (0: none); cached blocks over it go back.
  void set_limit(std::uint64_t bytes);

 private:
  struct Block {
    char* ptr = nullptr;
    std::size_t size = 0;
    bool small = false;      // which pool it lives in
    bool in_use = false;
    std::uint64_t fence = 0;  // compute sequence number at the last release
    Block* prev = nullptr;   // neighbours within its segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const noexcept {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, BySize>;
  struct Pending {
    Block* block;
    std::vector<EventPtr> events;
  };

  Block* find_free(Pool& pool, std::size_t size);
  Block* new_segment(std::size_t segment_size, bool small);
  [[nodiscard]] bool try_device_malloc(std::size_t bytes, void** out);
  void split(Block* block, std::size_t size);
  void free_block(Block* block);
  void collect_pending(bool wait);
  void release_cached_segments();
  [[noreturn]] void throw_oom(std::size_t bytes) const;

  int device_;
  std::uint64_t limit_;
  mutable std::mutex mutex_;
  Pool small_, large_;
  std::unordered_map<void*, Block*> in_use_;
  std::vector<Pending> pending_;
  std::unordered_map<char*, Block*> segments_;  // base -> first block
  plugin::MemoryStats stats_;
};

}  // namespace xylem::cuda
