#include "staging.hpp"

#include <algorithm>
#include <cstring>

#include "check.hpp"

namespace xylem::cuda {
namespace {
constexpr std::size_t kMinPart = std::size_t{1} << 20;  // below this, more threads cost more than they give
}

ParallelCopier::ParallelCopier(unsigned threads) {
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this](const std::stop_token& st) { work(st); });
}

ParallelCopier::~ParallelCopier() {
  for (auto& t : threads_) t.request_stop();
  start_cv_.notify_all();
}

void ParallelCopier::run_parts(const Job& job) {
  auto claim = [&](std::size_t& p) {
    std::uint64_t c = claim_.load();
    do {
      p = std::size_t(c & 0xffffffffu);
      if ((c >> 32) != job.generation || p >= job.parts) return false;
    } while (!claim_.compare_exchange_weak(c, c + 1));
    return true;
  };
  std::size_t done = 0;
  for (std::size_t p = 0; claim(p); ++done) {
    const std::size_t begin = p * job.part;
    std::memcpy(job.dst + begin, job.src + begin, std::min(job.part, job.bytes - begin));
  }
  if (done > 0) {
    std::lock_guard lock(mutex_);
    finished_ += done;
    if (finished_ == job.parts) done_cv_.notify_all();
  }
}

void ParallelCopier::work(const std::stop_token& stop) {
  std::uint32_t seen = 0;
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      if (!start_cv_.wait(lock, stop, [&] { return job_.generation != seen; })) return;
      job = job_;
      seen = job.generation;
    }
    run_parts(job);
  }
}

void ParallelCopier::copy(void* dst, const void* src, std::size_t bytes) {
  const std::size_t parts = std::clamp<std::size_t>(bytes / kMinPart, 1, threads_.size() + 1);
  if (parts == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  std::lock_guard call(call_mutex_);
  Job job;
  {
    std::lock_guard lock(mutex_);
    job.generation = job_.generation + 1;
    job.dst = static_cast<char*>(dst);
    job.src = static_cast<const char*>(src);
    job.bytes = bytes;
    job.parts = parts;
    job.part = (bytes + parts - 1) / parts;
    job_ = job;
    finished_ = 0;
    claim_.store(std::uint64_t{job.generation} << 32);
  }
  start_cv_.notify_all();
  run_parts(job);
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [&] { return finished_ == job.parts; });
}

ParallelCopier& host_copier() {
  static ParallelCopier copier(std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u) - 1);
  return copier;
}

bool is_pinned(const void* host, int device) {
  cudaPointerAttributes attr{};
  XY_CUDA(cudaPointerGetAttributes(&attr, host), device, "transfer");
  return attr.type == cudaMemoryTypeHost;
}

StagingPool::~StagingPool() {
  // Errors ignored: see queue.cpp.
  for (Buffer& b : buffers_) {
    (void)cudaEventDestroy(b.done);
    (void)cudaFreeHost(b.host);
  }
}

void StagingPool::ensure_buffers() {
  if (!buffers_.empty()) return;
  buffers_.resize(kBuffers);
  for (Buffer& b : buffers_) {
    XY_CUDA(cudaHostAlloc(&b.host, kChunk, cudaHostAllocPortable), device_, "allocate pinned staging buffers");
    XY_CUDA(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), device_, "allocate pinned staging buffers");
  }
}

void StagingPool::wait(Buffer& b) {
  if (b.busy) XY_CUDA(cudaEventSynchronize(b.done), device_, "staged transfer");
  b.busy = false;
}

void StagingPool::upload(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  ensure_buffers();
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  for (std::size_t off = 0, c = 0; off < bytes; off += kChunk, ++c) {
    Buffer& b = buffers_[c % kBuffers];
    const std::size_t n = std::min(kChunk, bytes - off);
    wait(b);
    host_copier().copy(b.host, s + off, n);
    XY_CUDA_TRANSFER(cudaMemcpyAsync(d + off, b.host, n, cudaMemcpyHostToDevice, stream), device_, "upload");
    XY_CUDA(cudaEventRecord(b.done, stream), device_, "upload");
    b.busy = true;
  }
}

void StagingPool::download(cudaStream_t stream, void* dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  ensure_buffers();
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto enqueue = [&](std::size_t c) {
    Buffer& b = buffers_[c % kBuffers];
    const std::size_t off = c * kChunk;
    wait(b);
    XY_CUDA_TRANSFER(cudaMemcpyAsync(b.host, s + off, std::min(kChunk, bytes - off), cudaMemcpyDeviceToHost, stream),
            device_, "download");
    XY_CUDA(cudaEventRecord(b.done, stream), device_, "download");
    b.busy = true;
  };
  for (std::size_t c = 0; c < std::min(chunks, kBuffers); ++c) enqueue(c);
  for (std::size_t c = 0; c < chunks; ++c) {
    Buffer& b = buffers_[c % kBuffers];
    wait(b);
    const std::size_t off = c * kChunk;
    host_copier().copy(d + off, b.host, std::min(kChunk, bytes - off));
    if (c + kBuffers < chunks) enqueue(c + kBuffers);
  }
}

}  // namespace xylem::cuda
