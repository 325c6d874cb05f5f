#include "core/memory_usage.hpp"

#include <map>
#include <mutex>

namespace xylem::detail {

void DeviceUsage::add(std::uint64_t bytes) noexcept {
  const std::uint64_t now = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void DeviceUsage::remove(std::uint64_t bytes) noexcept { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

MemoryUsage DeviceUsage::get() const noexcept {
  return {in_use_.load(std::memory_order_relaxed), peak_.load(std::memory_order_relaxed)};
}

// An allocation racing with the reset may leave a peak below a moment's use
// that it already counted; the reset is meant for quiet points (between
// benchmark runs), where nothing races.
void DeviceUsage::reset_peak() noexcept { peak_.store(in_use_.load(std::memory_order_relaxed), std::memory_order_relaxed); }

DeviceUsage& usage_of(const plugin::Device& device) {
  // Every allocation asks: the thread's last answer first (entries are never
  // removed and map nodes never move, so it stays right), not the lock and
  // the lookup (~5% of a small op into a new tensor).
  thread_local const plugin::Device* last_device = nullptr;
  thread_local DeviceUsage* last_usage = nullptr;
  if (&device == last_device) return *last_usage;
  struct Registry {
    std::mutex mutex;
    std::map<const plugin::Device*, DeviceUsage> usages;  // map nodes never move
  };
  // Never destroyed: tensors held by statics are released after main.
  static auto* registry = new Registry();
  const std::lock_guard lock(registry->mutex);
  last_device = &device;
  last_usage = &registry->usages[&device];
  return *last_usage;
}

}  // namespace xylem::detail
