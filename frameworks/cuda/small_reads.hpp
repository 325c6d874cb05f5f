#pragma once
// Small downloads into pageable host memory without blocking the caller.
// cudaMemcpyAsync into pageable memory returns only once the copy is done,
// so it waits for everything before it on the stream: reading a loss, or
// the flag of an index check (xylem/index.hpp), stalled the host until the
// GPU caught up, and the GPU then idled until the host enqueued more (an
// embedding call: 0.12 ms where its kernels take 0.095). Instead the bytes
// land in a pinned slot and a host function enqueued behind the copy moves
// them to their destination; the transfer's event, recorded after both,
// completes once the destination holds them.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace xylem::cuda {

class SmallReads {
 public:
  static constexpr std::size_t kSlot = 4096;  // bytes a read may have
  static constexpr std::size_t kSlots = 256;  // reads in flight at once

  explicit SmallReads(int device) : device_(device) {}
  ~SmallReads();
  SmallReads(const SmallReads&) = delete;
  SmallReads& operator=(const SmallReads&) = delete;

  // Enqueues the read of `bytes` (at most kSlot) from device `src` into
  // host `dst` on `stream`; false, enqueuing nothing, when every slot is in
  // flight or bytes is too large (the caller copies the blocking way).
  bool download(cudaStream_t stream, void* dst, const void* src, std::size_t bytes);

 private:
  struct Read {
    SmallReads* owner = nullptr;
    std::size_t slot = 0;
    void* dst = nullptr;
    std::size_t bytes = 0;
  };
  static void CUDART_CB deliver(void* read);  // on CUDA's host-function thread

  int device_;
  std::mutex mutex_;
  char* pinned_ = nullptr;          // kSlots slots of kSlot bytes, allocated at first use
  std::vector<Read> reads_;         // one per slot
  std::vector<std::size_t> free_;   // slots not in flight
};

}  // namespace xylem::cuda
