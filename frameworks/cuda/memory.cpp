#include "memory.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "check.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::cuda {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kRound = 512;                // every block is a multiple of this
constexpr std::size_t kSmallMax = 1 * kMiB;        // blocks up to this come from the small pool
constexpr std::size_t kSmallSegment = 2 * kMiB;
constexpr std::size_t kMidMax = 10 * kMiB;         // up to this: 20 MiB segments shared by several blocks
constexpr std::size_t kMidSegment = 20 * kMiB;
constexpr std::size_t kLargeRound = 2 * kMiB;

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

std::string human(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (std::uint64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1 << 30));
  else
    std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / double(kMiB));
  return buf;
}

// cudaMalloc behind the allocation fault point: a failed one is not made,
// and reports what the driver reports when memory runs out.
cudaError_t injected_or_malloc(void** out, std::size_t bytes) {
  if (plugin::should_fail(plugin::FaultSite::allocation, "cuda")) return cudaErrorMemoryAllocation;
  return cudaMalloc(out, bytes);
}

}  // namespace

std::uint64_t parse_memory_size(const char* text) {
  const std::string s(text);
  std::size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  std::uint64_t value = i > 0 ? std::strtoull(s.substr(0, i).c_str(), nullptr, 10) : 0;
  std::string suffix = s.substr(i);
  for (char& c : suffix) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB")) suffix.resize(suffix.size() - 2);
  else if (suffix.size() > 1 && suffix.ends_with("B")) suffix.pop_back();
  int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : suffix == "T" ? 40 : -1;
  if (i == 0 || shift < 0)
    throw Error(ErrorCode::invalid_argument,
                "XYLEM_CUDA_MEMORY_LIMIT='" + s + "': expected bytes, or a number with K, M, G or T (e.g. 8G)");
  return value << shift;
}

std::uint64_t memory_limit_from_env() {
  const char* text = std::getenv("XYLEM_CUDA_MEMORY_LIMIT");
  return text && *text ? parse_memory_size(text) : 0;
}

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes, const char* what) {
  XY_CUDA(cudaSetDevice(device), device, what);
  XY_CUDA(injected_or_malloc(&ptr_, bytes), device, what);
}

DeviceBuffer::~DeviceBuffer() { (void)cudaFree(ptr_); }  // errors ignored: see queue.cpp

TempBuffer::TempBuffer(CachingAllocator& memory, std::size_t bytes, std::uint64_t fence)
    : memory_(&memory), ptr_(memory.allocate(bytes)), fence_(fence) {}

TempBuffer::TempBuffer(std::size_t bytes, cudaStream_t capturing, int device) : capturing_(capturing) {
  XY_CUDA(cudaMallocAsync(&ptr_, bytes, capturing), device, "temporary memory of a captured op");
}

TempBuffer::TempBuffer(TempBuffer&& other) noexcept
    : memory_(other.memory_), ptr_(std::exchange(other.ptr_, nullptr)), fence_(other.fence_),
      capturing_(other.capturing_) {}

TempBuffer::~TempBuffer() {
  if (ptr_ == nullptr) return;
  if (memory_ != nullptr) {
    memory_->release(ptr_, {}, fence_);
  } else {
    // A failure here invalidates the capture, which ending it reports.
    (void)cudaFreeAsync(ptr_, capturing_);
  }
}

CachingAllocator::CachingAllocator(int device, std::uint64_t limit) : device_(device), limit_(limit) {}

CachingAllocator::~CachingAllocator() {
  // At exit: give every segment back; errors are ignored (the runtime may be
  // gone already, and a destructor cannot report them).
  for (auto& [base, head] : segments_) {
    (void)cudaFree(base);
    for (Block* b = head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes, kRound);
  const bool small = size <= kSmallMax;
  std::lock_guard lock(mutex_);
  Pool& pool = small ? small_ : large_;
  Block* block = find_free(pool, size);
  // Held-back blocks are looked at only when the free ones do not serve:
  // a look queries each one's events, and with a collective's gradients
  // held back on every allocation that doubled the host's time per op
  // (data-parallel training on two H100s).
  if (block == nullptr && !pending_.empty()) {
    collect_pending(false);
    block = find_free(pool, size);
  }
  if (block == nullptr) {
    const std::size_t segment = small ? kSmallSegment : size <= kMidMax ? kMidSegment : round_up(size, kLargeRound);
    block = new_segment(segment, small);
    if (block == nullptr) {
      // Out of memory (or over the limit): wait for held-back blocks, return
      // the cache to the driver, and try again, at the exact size if the
      // shared segment was too much.
      collect_pending(true);
      block = find_free(pool, size);
      if (block == nullptr) {
        release_cached_segments();
        plugin::note_allocation_retry("cuda");
        block = new_segment(segment, small);
        if (block == nullptr && segment > round_up(size, kLargeRound) && !small)
          block = new_segment(round_up(size, kLargeRound), small);
      }
      if (block == nullptr) throw_oom(bytes);
    }
  }
  split(block, size);
  block->in_use = true;
  in_use_.emplace(block->ptr, block);
  stats_.allocated += block->size;
  if (stats_.allocated > stats_.peak) stats_.peak = stats_.allocated;
  return block->ptr;
}

void CachingAllocator::release(void* ptr, std::span<const EventPtr> pending, std::uint64_t fence) noexcept {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return;  // not ours: nothing to free
  Block* block = it->second;
  in_use_.erase(it);
  block->fence = std::max(block->fence, fence);
  if (pending.empty()) {
    free_block(block);
    return;
  }
  try {
    pending_.push_back({block, std::vector<EventPtr>(pending.begin(), pending.end())});
  } catch (...) {
    // No memory to remember the events: wait for them instead.
    for (const auto& e : pending) {
      try {
        e->wait();
      } catch (...) {
      }
    }
    free_block(block);
  }
}

std::uint64_t CachingAllocator::take_fence(void* ptr) noexcept {
  std::lock_guard lock(mutex_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) return kUnknownFence;
  return std::exchange(it->second->fence, 0);
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  collect_pending(true);
  release_cached_segments();
}

void CachingAllocator::set_limit(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  limit_ = bytes;
  if (limit_ != 0 && stats_.reserved > limit_) release_cached_segments();
}

plugin::MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  plugin::MemoryStats stats = stats_;
  // A held-back block whose users are done is free, though collected only
  // when an allocation needs it.
  for (const Pending& p : pending_) {
    const bool done = std::all_of(p.events.begin(), p.events.end(), [](const EventPtr& e) {
      try {
        return e->ready();
      } catch (...) {
        return true;  // a failed event no longer uses the block
      }
    });
    if (done) stats.allocated -= p.block->size;
  }
  return stats;
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, std::size_t size) {
  Block key;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end()) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

bool CachingAllocator::try_device_malloc(std::size_t bytes, void** out) {
  if (limit_ != 0 && stats_.reserved + bytes > limit_) return false;
  XY_CUDA(cudaSetDevice(device_), device_, "allocate");
  cudaError_t err = injected_or_malloc(out, bytes);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // clear it: out of memory is handled here
    return false;
  }
  XY_CUDA(err, device_, "allocate " + human(bytes));
  return true;
}

CachingAllocator::Block* CachingAllocator::new_segment(std::size_t segment_size, bool small) {
  void* ptr = nullptr;
  if (!try_device_malloc(segment_size, &ptr)) return nullptr;
  auto* block = new Block;
  block->ptr = static_cast<char*>(ptr);
  block->size = segment_size;
  block->small = small;
  segments_.emplace(block->ptr, block);
  stats_.reserved += segment_size;
  ++stats_.device_allocations;
  return block;
}

void CachingAllocator::split(Block* block, std::size_t size) {
  const std::size_t rest = block->size - size;
  // Small blocks split down to the rounding; large ones keep a sliver rather
  // than fragment the large pool with pieces the small pool would serve.
  if (rest < (block->small ? kRound : kSmallMax + 1)) return;
  auto* tail = new Block;
  tail->ptr = block->ptr + size;
  tail->size = rest;
  tail->small = block->small;
  tail->fence = block->fence;
  tail->prev = block;
  tail->next = block->next;
  if (block->next) block->next->prev = tail;
  block->next = tail;
  block->size = size;
  (block->small ? small_ : large_).insert(tail);
}

void CachingAllocator::free_block(Block* block) {
  stats_.allocated -= block->size;
  block->in_use = false;
  Pool& pool = block->small ? small_ : large_;
  // `right` joins `left`, its neighbour in the segment. The free one leaves
  // the pool first: the pool orders blocks by size.
  const auto merge = [](Block* left, Block* right) {
    left->size += right->size;
    left->fence = std::max(left->fence, right->fence);
    left->next = right->next;
    if (right->next) right->next->prev = left;
    delete right;
  };
  if (Block* prev = block->prev; prev != nullptr && !prev->in_use) {
    pool.erase(prev);
    merge(prev, block);
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && !next->in_use) {
    pool.erase(next);
    merge(block, next);
  }
  pool.insert(block);
}

void CachingAllocator::collect_pending(bool wait) {
  std::vector<const Event*> busy;  // found not ready in this pass: a bucket's blocks share one
  std::erase_if(pending_, [&](Pending& p) {
    for (const auto& e : p.events) {
      try {
        if (wait) {
          e->wait();
        } else if (std::find(busy.begin(), busy.end(), e.get()) != busy.end()) {
          return false;
        } else if (!e->ready()) {
          if (busy.size() < 64) busy.push_back(e.get());
          return false;
        }
      } catch (...) {
        // A failed event (device lost) no longer uses the block.
      }
    }
    free_block(p.block);
    return true;
  });
}

void CachingAllocator::release_cached_segments() {
  for (Pool* pool : {&small_, &large_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {
        // cudaFree waits for the device, so queued work still using the
        // (stream-order freed) block is done before it goes.
        XY_CUDA(cudaSetDevice(device_), device_, "free cached memory");
        XY_CUDA(cudaFree(b->ptr), device_, "free cached memory");
        stats_.reserved -= b->size;
        segments_.erase(b->ptr);
        delete b;
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

void CachingAllocator::throw_oom(std::size_t bytes) const {
  std::size_t free_bytes = 0, total_bytes = 0;
  std::string device_state;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    device_state = ", device has " + human(free_bytes) + " free of " + human(total_bytes);
  else
    (void)cudaGetLastError();
  throw Error(ErrorCode::out_of_memory,
              "cuda:" + std::to_string(device_) + ": out of memory allocating " + std::to_string(bytes) + " bytes (" +
                  human(bytes) + "; allocated " +
                  human(stats_.allocated) + ", reserved " + human(stats_.reserved) +
                  (limit_ ? ", limit " + human(limit_) + " from XYLEM_CUDA_MEMORY_LIMIT" : std::string()) +
                  device_state + "); free tensors you no longer need or raise the limit");
}

}  // namespace xylem::cuda
