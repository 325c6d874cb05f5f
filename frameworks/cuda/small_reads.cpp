#include "small_reads.hpp"

#include <cstring>

#include "check.hpp"

namespace xylem::cuda {

SmallReads::~SmallReads() {
  // The device synchronised its streams first: no host function is pending.
  // Errors ignored: see queue.cpp.
  if (pinned_ != nullptr) (void)cudaFreeHost(pinned_);
}

bool SmallReads::download(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || bytes > kSlot) return false;
  Read* read = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (pinned_ == nullptr) {
      XY_CUDA(cudaHostAlloc(reinterpret_cast<void**>(&pinned_), kSlot * kSlots, cudaHostAllocPortable), device_,
              "allocate pinned buffers for small reads");
      reads_.resize(kSlots);
      free_.reserve(kSlots);
      for (std::size_t s = kSlots; s-- > 0;) free_.push_back(s);
    }
    if (free_.empty()) return false;
    read = &reads_[free_.back()];
    *read = Read{this, free_.back(), dst, bytes};
    free_.pop_back();
  }
  char* slot = pinned_ + read->slot * kSlot;
  bool copying = false;
  try {
    XY_CUDA_TRANSFER(cudaMemcpyAsync(slot, src, bytes, cudaMemcpyDeviceToHost, stream), device_, "download");
    copying = true;
    XY_CUDA(cudaLaunchHostFunc(stream, &SmallReads::deliver, read), device_, "download");
  } catch (...) {
    // A copy queued without its delivery still writes the slot: let it
    // finish before the slot is free again.
    if (copying) (void)cudaStreamSynchronize(stream);
    std::lock_guard lock(mutex_);
    free_.push_back(read->slot);
    throw;
  }
  return true;
}

void CUDART_CB SmallReads::deliver(void* p) {
  const Read& read = *static_cast<const Read*>(p);
  SmallReads& owner = *read.owner;
  std::memcpy(read.dst, owner.pinned_ + read.slot * kSlot, read.bytes);
  std::lock_guard lock(owner.mutex_);
  owner.free_.push_back(read.slot);
}

}  // namespace xylem::cuda
