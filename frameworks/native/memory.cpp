#include "frameworks/native/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::native {
namespace {

constexpr std::size_t kAlignment = 64;
// Each block starts with its size, so free() can keep the statistics.
constexpr std::size_t kHeader = kAlignment;

}  // namespace

void* HostMemory::allocate(std::size_t bytes) {
  const std::uint64_t in_use = allocated_.load(std::memory_order_relaxed);
  const std::uint64_t limit = limit_.load(std::memory_order_relaxed);
  if (limit != 0 && in_use + bytes > limit)
    throw Error(ErrorCode::out_of_memory, "native: allocating " + std::to_string(bytes) + " bytes would exceed the " +
                                              std::to_string(limit) + "-byte limit (" + std::to_string(in_use) +
                                              " bytes allocated)");
  const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* block = rounded + kHeader < bytes || plugin::should_fail(plugin::FaultSite::allocation, "native")
                    ? nullptr
                    : std::aligned_alloc(kAlignment, rounded + kHeader);
  if (block == nullptr)
    throw Error(ErrorCode::out_of_memory, "native: the host could not allocate " + std::to_string(bytes) + " bytes (" +
                                              std::to_string(in_use) + " bytes allocated by xylem)");
  std::memcpy(block, &bytes, sizeof bytes);
  const std::uint64_t now = allocated_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  return static_cast<char*>(block) + kHeader;
}

void HostMemory::free(void* data) noexcept {
  if (data == nullptr) return;
  void* block = static_cast<char*>(data) - kHeader;
  std::size_t bytes = 0;
  std::memcpy(&bytes, block, sizeof bytes);
  allocated_.fetch_sub(bytes, std::memory_order_relaxed);
  std::free(block);
}

plugin::MemoryStats HostMemory::stats() const noexcept {
  const auto allocated = allocated_.load(std::memory_order_relaxed);
  return {allocated, allocated, peak_.load(std::memory_order_relaxed), allocations_.load(std::memory_order_relaxed)};
}

}  // namespace xylem::native
