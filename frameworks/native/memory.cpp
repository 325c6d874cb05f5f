#include "frameworks/native/memory.hpp"

#include <sys/sysinfo.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <string>

#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::native {
namespace {

constexpr std::size_t kAlignment = 64;
// Each block starts with its requested size (for the statistics) and its
// capacity (for the cache).
struct Header {
  std::size_t bytes, capacity;
};
constexpr std::size_t kHeader = kAlignment;
static_assert(sizeof(Header) <= kHeader);
// Blocks from 1 KiB up are kept: below it glibc's per-thread cache serves
// frees and allocations at once; above it each allocation of a small op's
// result went through malloc's bins and consolidation (10% of a small op
// returning a new tensor from Python). Under AddressSanitizer from 1 MiB
// only, so that it still sees a small block used after its free.
#if defined(__SANITIZE_ADDRESS__)
constexpr std::size_t kCachedFrom = std::size_t{1} << 20;
#else
constexpr std::size_t kCachedFrom = std::size_t{1} << 10;
#endif

// The capacity of a block for `rounded` bytes: cached sizes round up to a
// multiple of an eighth of their power of two (at most 1/8 unused).
[[nodiscard]] std::size_t capacity_for(std::size_t rounded) noexcept {
  if (rounded < kCachedFrom) return rounded;
  const std::size_t step = std::bit_floor(rounded) / 8;
  return (rounded + step - 1) / step * step;
}

// What the host can back: its RAM and swap. A larger request can never be
// met, but where the kernel overcommits memory (vm.overcommit_memory=1, as
// on many GPU servers) malloc grants it and the process is killed when the
// pages are touched; xylem refuses it instead, as out_of_memory.
std::uint64_t host_memory_bytes() noexcept {
  static const std::uint64_t bytes = [] {
    struct sysinfo info {};
    if (sysinfo(&info) != 0) return ~std::uint64_t{0};
    return (std::uint64_t(info.totalram) + std::uint64_t(info.totalswap)) * std::uint64_t(info.mem_unit);
  }();
  return bytes;
}

}  // namespace

HostMemory::~HostMemory() { (void)empty_cache(); }

void* HostMemory::take_cached(std::size_t capacity) noexcept {
  std::lock_guard lock(cache_mutex_);
  const auto it = cache_.find(capacity);
  if (it == cache_.end() || it->second.empty()) return nullptr;
  void* block = it->second.back();
  it->second.pop_back();
  // The newest of its class: found from the back.
  cached_order_.erase(std::find(cached_order_.rbegin(), cached_order_.rend(), block).base() - 1);
  cached_.fetch_sub(capacity, std::memory_order_relaxed);
  return block;
}

bool HostMemory::cache(void* block, std::size_t capacity) noexcept {
  if (capacity < kCachedFrom) return false;
  std::lock_guard lock(cache_mutex_);
  const std::uint64_t cached = cached_.load(std::memory_order_relaxed) + capacity;
  const std::uint64_t limit = limit_.load(std::memory_order_relaxed);
  // The peak counts requested bytes, the cache capacities, which round up
  // by less than an eighth: a bound of the peak alone refused a lone large
  // block (a 31.25 MiB one_hot takes a 32 MiB capacity), so each call faulted
  // in and zeroed its pages afresh (33 ms instead of 3 for that one_hot).
  //
  // Over the bound, the longest-cached blocks go back to the system first:
  // refusing the newcomer instead kept the sizes of earlier work and made
  // every call of the current one fault in fresh pages (one_hot took 3.4-4.3
  // ms at 16 threads after the rows before it in the host benchmark, 0.39
  // alone).
  const std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  const auto over = [&](std::uint64_t total) {
    return total > peak + peak / 8 || (limit != 0 && allocated_.load(std::memory_order_relaxed) + total > limit);
  };
  if (over(capacity)) return false;
  std::uint64_t total = cached;
  while (over(total) && !cached_order_.empty()) total -= evict_oldest();
  try {
    cached_order_.push_back(block);
    try {
      cache_[capacity].push_back(block);
    } catch (...) {
      cached_order_.pop_back();
      throw;
    }
  } catch (...) {
    cached_.store(total - capacity, std::memory_order_relaxed);
    return false;  // no memory for the lists: the block goes back instead
  }
  cached_.store(total, std::memory_order_relaxed);
  return true;
}

std::size_t HostMemory::evict_oldest() noexcept {
  void* block = cached_order_.front();
  cached_order_.pop_front();
  Header header{};
  std::memcpy(&header, block, sizeof header);
  std::vector<void*>& blocks = cache_.find(header.capacity)->second;
  blocks.erase(std::find(blocks.begin(), blocks.end(), block));
  std::free(block);
  return header.capacity;
}

bool HostMemory::empty_cache() noexcept {
  std::lock_guard lock(cache_mutex_);
  bool any = false;
  for (auto& [capacity, blocks] : cache_) {
    for (void* block : blocks) std::free(block);
    any = any || !blocks.empty();
  }
  cache_.clear();
  cached_order_.clear();
  cached_.store(0, std::memory_order_relaxed);
  return any;
}

void* HostMemory::allocate(std::size_t bytes) {
  const std::uint64_t in_use = allocated_.load(std::memory_order_relaxed);
  const std::uint64_t limit = limit_.load(std::memory_order_relaxed);
  if (limit != 0 && in_use + bytes > limit)
    throw Error(ErrorCode::out_of_memory, "native: allocating " + std::to_string(bytes) + " bytes would exceed the " +
                                              std::to_string(limit) + "-byte limit (" + std::to_string(in_use) +
                                              " bytes allocated)");
  if (const std::uint64_t host = host_memory_bytes(); bytes > host || in_use > host - bytes)
    throw Error(ErrorCode::out_of_memory, "native: allocating " + std::to_string(bytes) + " bytes would exceed the " +
                                              std::to_string(host) + " bytes of the host's RAM and swap (" +
                                              std::to_string(in_use) + " bytes allocated by xylem)");
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  const std::size_t capacity = capacity_for(rounded);
  void* block = nullptr;
  if (capacity + kHeader >= bytes && !plugin::should_fail(plugin::FaultSite::allocation, "native")) {
    if (capacity >= kCachedFrom) block = take_cached(capacity);
    if (block == nullptr) {
      block = std::aligned_alloc(kAlignment, capacity + kHeader);
      if (block == nullptr && empty_cache()) block = std::aligned_alloc(kAlignment, capacity + kHeader);
      if (block != nullptr) allocations_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (block == nullptr)
    throw Error(ErrorCode::out_of_memory, "native: the host could not allocate " + std::to_string(bytes) + " bytes (" +
                                              std::to_string(in_use) + " bytes allocated by xylem)");
  const Header header{bytes, capacity};
  std::memcpy(block, &header, sizeof header);
  const std::uint64_t now = allocated_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return static_cast<char*>(block) + kHeader;
}

void HostMemory::free(void* data) noexcept {
  if (data == nullptr) return;
  void* block = static_cast<char*>(data) - kHeader;
  Header header{};
  std::memcpy(&header, block, sizeof header);
  allocated_.fetch_sub(header.bytes, std::memory_order_relaxed);
  if (!cache(block, header.capacity)) std::free(block);
}

plugin::MemoryStats HostMemory::stats() const noexcept {
  const auto allocated = allocated_.load(std::memory_order_relaxed);
  return {allocated, allocated + cached_.load(std::memory_order_relaxed), peak_.load(std::memory_order_relaxed),
          allocations_.load(std::memory_order_relaxed)};
}

}  // namespace xylem::native
