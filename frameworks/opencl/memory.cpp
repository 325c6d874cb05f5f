// Device memory: buffers, transfers to and from the host, and copies
// between devices of one context.
#include <algorithm>
#include <string>

#include "frameworks/opencl/device.hpp"

namespace xylem::opencl {

namespace {

cl_mem as_mem(const void* data) noexcept { return static_cast<cl_mem>(const_cast<void*>(data)); }

std::string bytes_text(std::size_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

void* Device::allocate(std::size_t bytes) {
  // A zero-byte tensor still gets a handle of its own.
  const std::size_t size = std::max<std::size_t>(bytes, 1);
  if (info_.max_alloc && size > info_.max_alloc)
    throw Error(ErrorCode::out_of_memory, "opencl: allocating " + bytes_text(bytes) + " on " + label() +
                                              ": the device allows at most " + bytes_text(info_.max_alloc) +
                                              " in one buffer");
  cl_int status = CL_SUCCESS;
  cl_mem mem = create_buffer(size, /*drop_scratch=*/true, status);
  check(status, [&] { return "opencl: allocating " + bytes_text(bytes) + " on " + label(); });
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
      mem = clCreateBuffer(context_.get(), CL_MEM_READ_WRITE, bytes, nullptr, &created);
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
  stats.reserved = stats.allocated;  // no cache of our own: the core's allocator keeps one
  stats.peak = peak_.load(std::memory_order_relaxed);
  stats.device_allocations = allocations_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace xylem::opencl
