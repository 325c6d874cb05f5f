#include "frameworks/native/memory.hpp"

#include <sys/sysinfo.h>

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
  const std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  if (cached > peak + peak / 8) return false;
  if (limit != 0 && allocated_.load(std::memory_order_relaxed) + cached > limit) return false;
  try {
    cache_[capacity].push_back(block);
  } catch (...) {
    return false;  // no memory for the list: the block goes back instead
  }
  cached_.store(cached, std::memory_order_relaxed);
  return true;
}

bool HostMemory::empty_cache() noexcept {
  std::lock_guard lock(cache_mutex_);
  bool any = false;
  for (auto& [capacity, blocks] : cache_) {
    for (void* block : blocks) std::free(block);
    any = any || !blocks.empty();
  }
  cache_.clear();
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
