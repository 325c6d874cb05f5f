// Device memory: buffers, transfers to and from the host, and copies
// between devices of one context.
#include <algorithm>
#include <bit>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>

#include "frameworks/opencl/device.hpp"
#include "frameworks/opencl/host_blocks.hpp"

namespace xylem::opencl {

namespace {

cl_mem as_mem(const void* data) noexcept { return static_cast<cl_mem>(const_cast<void*>(data)); }

std::string bytes_text(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

// A buffer's block, handed back when the runtime destroys the buffer.
struct Lent {
  std::shared_ptr<HostBlocks> blocks;
  void* block;
  std::size_t capacity;
};

void CL_CALLBACK give_back(cl_mem, void* user) {
  const std::unique_ptr<Lent> lent(static_cast<Lent*>(user));
  lent->blocks->give(lent->block, lent->capacity);
}

}  // namespace

std::size_t HostBlocks::capacity_for(std::size_t bytes) noexcept {
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const std::size_t step = std::max(std::bit_floor(rounded) / 8, kAlignment);
  return (rounded + step - 1) / step * step;
}

void* HostBlocks::take(std::size_t capacity) noexcept {
  void* block = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (const auto it = cache_.find(capacity); it != cache_.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      // The newest of its class: found from the back.
      const auto at = std::find_if(order_.rbegin(), order_.rend(), [&](const auto& e) { return e.first == block; });
      order_.erase(std::prev(at.base()));
      cached_.fetch_sub(capacity, std::memory_order_relaxed);
    }
  }
  if (!block) block = std::aligned_alloc(kAlignment, capacity);
  if (!block && empty()) block = std::aligned_alloc(kAlignment, capacity);
  if (block) {
    std::lock_guard lock(mutex_);
    in_use_ += capacity;
    peak_ = std::max(peak_, in_use_);
  }
  return block;
}

void HostBlocks::give(void* block, std::size_t capacity) noexcept {
  std::lock_guard lock(mutex_);
  in_use_ -= capacity;
  // Over the bound, the longest-cached blocks go first, so that the sizes
  // of the work at hand stay (as the native framework's cache).
  const auto over = [&](std::uint64_t total) { return total > peak_ + peak_ / 8; };
  std::uint64_t total = cached_.load(std::memory_order_relaxed) + capacity;
  if (over(capacity)) {
    std::free(block);
    return;
  }
  while (over(total) && !order_.empty()) total -= evict_oldest();
  try {
    order_.emplace_back(block, capacity);
    try {
      cache_[capacity].push_back(block);
    } catch (...) {
      order_.pop_back();
      throw;
    }
  } catch (...) {  // no memory for the lists: the block goes back instead
    std::free(block);
    total -= capacity;
  }
  cached_.store(total, std::memory_order_relaxed);
}

std::size_t HostBlocks::evict_oldest() noexcept {
  const auto [block, capacity] = order_.front();
  order_.pop_front();
  std::vector<void*>& blocks = cache_.find(capacity)->second;
  blocks.erase(std::find(blocks.begin(), blocks.end(), block));
  std::free(block);
  return capacity;
}

bool HostBlocks::empty() noexcept {
  std::lock_guard lock(mutex_);
  const bool any = !order_.empty();
  for (const auto& [block, capacity] : order_) std::free(block);
  order_.clear();
  cache_.clear();
  cached_.store(0, std::memory_order_relaxed);
  return any;
}

std::shared_ptr<HostBlocks> host_blocks_for(const DeviceInfo& info) {
  return (info.type & CL_DEVICE_TYPE_CPU) ? std::make_shared<HostBlocks>() : nullptr;
}

std::size_t Device::block_capacity(std::size_t bytes) const noexcept {
  if (!host_blocks_ || bytes < HostBlocks::kCachedFrom) return 0;
  const std::size_t capacity = HostBlocks::capacity_for(bytes);
  return info_.max_alloc && capacity > info_.max_alloc ? 0 : capacity;
}

cl_mem Device::buffer_on_block(std::size_t capacity, cl_int& status) {
  void* block = host_blocks_->take(capacity);
  if (!block) {
    status = CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return nullptr;
  }
  cl_mem mem = clCreateBuffer(context_.get(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, capacity, block, &status);
  if (status != CL_SUCCESS) {
    host_blocks_->give(block, capacity);
    return nullptr;
  }
  auto* lent = new (std::nothrow) Lent{host_blocks_, block, capacity};
  if (lent && clSetMemObjectDestructorCallback(mem, give_back, lent) == CL_SUCCESS) return mem;
  // No word of the buffer's end: an unused buffer goes at once, then its
  // block.
  delete lent;
  clReleaseMemObject(mem);
  host_blocks_->give(block, capacity);
  status = CL_OUT_OF_HOST_MEMORY;
  return nullptr;
}

cl_mem Device::new_buffer(std::size_t bytes, cl_int& status) {
  const std::size_t capacity = block_capacity(bytes);
  return capacity ? buffer_on_block(capacity, status)
                  : clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &status);
}

void* Device::allocate(std::size_t bytes) {
  // A zero-byte tensor still gets a handle of its own.
  const std::size_t request = std::max<std::size_t>(bytes, 1);
  if (info_.max_alloc && request > info_.max_alloc)
    throw Error(ErrorCode::out_of_memory, "opencl: allocating " + bytes_text(bytes) + " on " + label() +
                                              ": the device allows at most " + bytes_text(info_.max_alloc) +
                                              " in one buffer");
  cl_int status = CL_SUCCESS;
  cl_mem mem = create_buffer(request, /*drop_scratch=*/true, status);
  check(status, [&] { return "opencl: allocating " + bytes_text(bytes) + " on " + label(); });
  // release() subtracts the buffer's size: a block's capacity where it has one.
  const std::size_t size = std::max(block_capacity(request), request);
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t now = allocated_.fetch_add(size, std::memory_order_relaxed) + size;
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return mem;
}

cl_mem Device::create_buffer(std::size_t bytes, bool drop_scratch, cl_int& status) {
  const auto attempt = [&] {
    cl_mem mem = nullptr;
    status = unless_fault(plugin::FaultSite::allocation, CL_MEM_OBJECT_ALLOCATION_FAILURE, [&] {
      cl_int created = CL_SUCCESS;
      mem = new_buffer(bytes, created);
      return created;
    });
    return mem;
  };
  cl_mem mem = attempt();
  if (status == CL_SUCCESS || error_code_of(status) != ErrorCode::out_of_memory) return mem;
  release_held_memory(drop_scratch);
  plugin::note_allocation_retry("opencl");
  return attempt();
}

void Device::release_held_memory(bool drop_scratch) {
  // Released buffers wait for a marker whose callback frees them: finish
  // the queue, then run the callbacks it posted.
  synchronize();
  callbacks_->drain();
  if (host_blocks_) (void)host_blocks_->empty();
  if (!drop_scratch) return;
  std::lock_guard lock(launch_mutex_);
  scratch_ = {};
  scratch_bytes_ = {};
}

void Device::release(void* data, Deps after) noexcept {
  if (!data) return;
  cl_mem mem = as_mem(data);
  std::size_t size = 0;
  if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof size, &size, nullptr) == CL_SUCCESS)
    allocated_.fetch_sub(size, std::memory_order_relaxed);
  // The runtime keeps a buffer alive until the commands queued on it
  // complete; only dependencies outside our queue need waiting for.
  try {
    const WaitList waits(after, context_.get(), queue_.get());
    if (waits.empty()) {
      clReleaseMemObject(mem);
      return;
    }
    cl_event done = nullptr;
    check(clEnqueueMarkerWithWaitList(queue_.get(), waits.size(), waits.data(), &done), "release");
    const ClEventHandle marker(done);
    when_complete(marker.get(), *callbacks_, [mem](cl_int) { clReleaseMemObject(mem); }, "release");
  } catch (...) {
    // Could not order the release after its dependencies: wait for them
    // on this thread instead, then free.
    for (const EventPtr& e : after) {
      try {
        if (e) e->wait();
      } catch (...) {
      }
    }
    clFinish(queue_.get());
    clReleaseMemObject(mem);
  }
}

EventPtr Device::upload(void* dst, const void* host_src, std::size_t bytes, Deps deps) {
  const WaitList waits(deps, context_.get(), queue_.get());
  if (bytes == 0) return marker(waits, "upload");
  cl_event done = nullptr;
  check(unless_fault(plugin::FaultSite::transfer, CL_OUT_OF_RESOURCES,
                     [&] {
                       return clEnqueueWriteBuffer(queue_.get(), as_mem(dst), CL_FALSE, 0, bytes, host_src,
                                                   waits.size(), waits.data(), &done);
                     }),
        [&] { return "opencl: upload of " + bytes_text(bytes) + " to " + label(); });
  return wrap(done);
}

EventPtr Device::download(void* host_dst, const void* src, std::size_t bytes, Deps deps) {
  const WaitList waits(deps, context_.get(), queue_.get());
  if (bytes == 0) return marker(waits, "download");
  cl_event done = nullptr;
  check(unless_fault(plugin::FaultSite::transfer, CL_OUT_OF_RESOURCES,
                     [&] {
                       return clEnqueueReadBuffer(queue_.get(), as_mem(src), CL_FALSE, 0, bytes, host_dst,
                                                  waits.size(), waits.data(), &done);
                     }),
        [&] { return "opencl: download of " + bytes_text(bytes) + " from " + label(); });
  return wrap(done);
}

EventPtr Device::copy_from(plugin::Device& src_device, const void* src, void* dst, std::size_t bytes, Deps deps) {
  const auto* source = dynamic_cast<const Device*>(&src_device);
  // Buffers of another context (another platform) cannot be named here.
  if (!source || source->context() != context()) return nullptr;
  const WaitList waits(deps, context_.get(), queue_.get());
  if (bytes == 0) return marker(waits, "copy");
  cl_event done = nullptr;
  check(unless_fault(plugin::FaultSite::transfer, CL_OUT_OF_RESOURCES,
                     [&] {
                       return clEnqueueCopyBuffer(queue_.get(), as_mem(src), as_mem(dst), 0, 0, bytes, waits.size(),
                                                  waits.data(), &done);
                     }),
        [&] { return "opencl: copy of " + bytes_text(bytes) + " from " + source->label() + " to " + label(); });
  return wrap(done);
}

plugin::MemoryStats Device::memory_stats() const {
  plugin::MemoryStats stats;
  stats.allocated = allocated_.load(std::memory_order_relaxed);
  stats.reserved = stats.allocated + (host_blocks_ ? host_blocks_->cached() : 0);
  stats.peak = peak_.load(std::memory_order_relaxed);
  stats.device_allocations = allocations_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace xylem::opencl
