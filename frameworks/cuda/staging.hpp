#pragma once
// Transfers between pageable host memory and a device, pipelined through a
// small pool of pinned buffers allocated once per device (never pinned per
// transfer): while the copy engine moves chunk c, host threads copy chunk
// c+1 into the next pinned buffer. Pinned host memory skips the staging.
#include <cuda_runtime_api.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace xylem::cuda {

// memcpy split across a few host threads: one thread cannot read pageable
// memory as fast as the copy engine drains pinned memory.
class ParallelCopier {
 public:
  explicit ParallelCopier(unsigned threads);
  ~ParallelCopier();
  ParallelCopier(const ParallelCopier&) = delete;
  ParallelCopier& operator=(const ParallelCopier&) = delete;
  void copy(void* dst, const void* src, std::size_t bytes);

 private:
  struct Job {
    std::uint32_t generation = 0;
    char* dst = nullptr;
    const char* src = nullptr;
    std::size_t bytes = 0, part = 0, parts = 0;
  };
  void work(const std::stop_token& stop);
  void run_parts(const Job& job);

  std::mutex call_mutex_;  // one copy at a time
  std::mutex mutex_;
  std::condition_variable_any start_cv_;
  std::condition_variable done_cv_;
  Job job_;
  std::size_t finished_ = 0;
  // generation << 32 | next part: a thread late for one job cannot claim a
  // part of the next one.
  std::atomic<std::uint64_t> claim_{0};
  std::vector<std::jthread> threads_;
};

// True when the host pointer is page-locked (cudaHostAlloc or registered).
[[nodiscard]] bool is_pinned(const void* host, int device);

class StagingPool {
 public:
  explicit StagingPool(int device) : device_(device) {}
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // Both return once the host side is done with `src` (upload) or `dst`
  // (download); the device side of an upload completes in stream order.
  void upload(cudaStream_t stream, void* dst, const void* src, std::size_t bytes);
  void download(cudaStream_t stream, void* dst, const void* src, std::size_t bytes);

  static constexpr std::size_t kChunk = std::size_t{8} << 20;
  static constexpr std::size_t kBuffers = 4;

 private:
  struct Buffer {
    void* host = nullptr;
    cudaEvent_t done = nullptr;  // the copy that last used it
    bool busy = false;
  };
  void ensure_buffers();
  void wait(Buffer& b);

  int device_;
  std::mutex mutex_;
  std::vector<Buffer> buffers_;
};

// Shared by all devices.
[[nodiscard]] ParallelCopier& host_copier();

}  // namespace xylem::cuda
