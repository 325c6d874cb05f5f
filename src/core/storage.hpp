#pragma once
// The data behind a Tensor: one copy per device that touched it, each with
// the version it holds. The copy whose version equals `latest` is current.
// All members are guarded by `mutex`; the helpers expect it held.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <functional>
#include <mutex>
#include <vector>

#include "xylem/dtype.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/layout.hpp"
#include "xylem/tensor.hpp"

namespace xylem::detail {

// The events one launch waits for. Few in practice: kept inline, so a
// launch does not allocate for them.
class EventList {
 public:
  void push(const EventPtr& event) {
    if (!event) return;
    if (!spilled_.empty() || size_ == kInline) {
      if (spilled_.empty()) spilled_.assign(inline_.begin(), inline_.end());
      spilled_.push_back(event);
    } else {
      inline_[size_++] = event;
    }
  }
  [[nodiscard]] plugin::Deps span() const noexcept {
    return spilled_.empty() ? plugin::Deps(inline_.data(), size_) : plugin::Deps(spilled_);
  }
  void clear() noexcept {
    for (std::size_t i = 0; i < size_; ++i) inline_[i].reset();
    size_ = 0;
    spilled_.clear();
  }

 private:
  static constexpr std::size_t kInline = 8;
  std::array<EventPtr, kInline> inline_;
  std::size_t size_ = 0;
  std::vector<EventPtr> spilled_;
};

enum class Route : std::uint8_t { upload, download, device_to_device, staged };

// TransferRoutes, counted from any thread.
class RouteCounters {
 public:
  // `bytes` moved by this transfer (0 for `staged`, whose parts count theirs).
  void add(Route route, std::size_t bytes) noexcept {
    counts_[static_cast<std::size_t>(route)].fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  [[nodiscard]] TransferRoutes snapshot() const noexcept {
    const auto count = [&](Route r) { return counts_[static_cast<std::size_t>(r)].load(std::memory_order_relaxed); };
    return {count(Route::upload), count(Route::download), count(Route::device_to_device), count(Route::staged),
            bytes_.load(std::memory_order_relaxed)};
  }

 private:
  std::array<std::atomic<std::uint64_t>, 4> counts_{};
  std::atomic<std::uint64_t> bytes_{0};
};

class DeviceUsage;

struct DeviceCopy {
  plugin::Device* device = nullptr;
  void* data = nullptr;          // allocated at first use on the device
  DeviceUsage* usage = nullptr;  // the device's byte counters, set with data
  std::uint64_t version = 0;
  EventPtr last_write;          // the work that last wrote this copy
  std::vector<EventPtr> reads;  // work reading it since (a writer must wait for them)
  // Memory lent by the application (interop::wrap): never freed by the
  // device; this runs instead once the storage is gone and its work done.
  bool external = false;
  std::function<void()> on_release;

  void add_read(EventPtr event);
  // Events a writer of this copy must wait for.
  void append_write_deps(EventList& deps) const;
};

// Bytes of a dense `shape` of `dtype`, checked to fit in int64 (so in
// size_t and in any device's signed size too); throws invalid_argument
// naming `op`, the shape and the dtype otherwise.
[[nodiscard]] std::size_t checked_bytes(const Layout& shape, DType dtype, const char* op);

class Storage {
 public:
  // Throws invalid_argument for more bytes than int64 holds: no device is
  // ever asked for a size that wraps or reads as negative.
  explicit Storage(std::size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::mutex mutex;

  // Calls pending in the automatic-fusion chain (core/fusion.*) that read
  // or write this storage. Whatever reads it runs the chain first where a
  // pending call writes it, whatever writes it where one reads or writes it.
  std::atomic<std::uint32_t> fusion_reads{0}, fusion_writes{0};

  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::uint64_t latest() const noexcept { return latest_; }
  [[nodiscard]] bool written() const noexcept { return latest_ != 0; }
  [[nodiscard]] std::uint64_t transfers() const noexcept { return routes_.snapshot().total(); }
  [[nodiscard]] TransferRoutes transfer_routes() const noexcept { return routes_.snapshot(); }

  [[nodiscard]] DeviceCopy* find(const plugin::Device& device) noexcept;
  [[nodiscard]] const std::list<DeviceCopy>& copies() const noexcept { return copies_; }
  // Another copy than `copy` holds the latest version.
  [[nodiscard]] bool current_elsewhere(const DeviceCopy& copy) const noexcept;
  // The copy on `device`, made and allocated if needed (throws out_of_memory).
  DeviceCopy& allocated_copy(plugin::Device& device);
  // Brings `copy` up to date by the cheapest route: same framework peer
  // copy, upload from a current host copy, download to host, else staged
  // through the host.
  void make_current(DeviceCopy& copy);
  // After a write by `event` on `copy`: it alone is current.
  void mark_written(DeviceCopy& copy, EventPtr event);
  // `copy`, just written by one kernel that stands for `writes` calls (a
  // fused chain writing one tensor several times): the version counts each,
  // as the calls run one by one would have.
  void count_writes(DeviceCopy& copy, std::uint64_t writes) noexcept {
    if (copy.version != latest_ || writes < 2) return;
    latest_ += writes - 1;
    copy.version = latest_;
  }
  // A copy on `device` holding the application's memory at `data`, current.
  DeviceCopy& adopt(plugin::Device& device, void* data, std::function<void()> on_release);
  // Something outside xylem wrote `copy` (ordered by the caller): it alone
  // is current, its events stay as they are.
  void mark_written_outside(DeviceCopy& copy) noexcept { copy.version = ++latest_; }
  // Where a copy recorded `stand_in` (its last write or a read), it now
  // records `event` instead: work recorded before the work it stands for
  // was enqueued (a collective waiting for the other ranks of its group)
  // hands its place to that work once it is.
  void replace_event(const Event* stand_in, const EventPtr& event);

 private:
  // `host`: the host device, or null when there is none.
  DeviceCopy* current_copy(const plugin::Device& for_device, const plugin::Device* host) noexcept;
  void count_transfer(Route route) noexcept;

  std::size_t bytes_;
  std::uint64_t latest_ = 0;
  // One per device touched, allocated as each is (most tensors touch one
  // device, many never allocate at all); a list keeps references stable.
  // (libstdc++'s deque allocates its map and a first block when constructed:
  // two mallocs and two frees for every tensor made.)
  std::list<DeviceCopy> copies_;
  RouteCounters routes_;
};

// The device of the host framework (plugin::BuiltinMemory::host: native in
// libxylem), where host reads and Tensor::from live and copies between
// frameworks are staged. Throws plugin_unavailable, saying why, when no
// such framework is linked in or it cannot start.
[[nodiscard]] plugin::Device& host_device();
// The same, or null instead of the error.
[[nodiscard]] plugin::Device* find_host_device() noexcept;

// Process-wide transfer counters.
[[nodiscard]] RouteCounters& global_routes() noexcept;

}  // namespace xylem::detail
