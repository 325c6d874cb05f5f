#include "core/storage.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "core/memory_usage.hpp"
#include "core/registry.hpp"
#include "xylem/error.hpp"

namespace xylem::detail {
namespace {

RouteCounters g_routes;

// Reads lists grow while a tensor is read many times without a write; drop
// finished ones now and then.
constexpr std::size_t kPruneReadsAt = 16;

bool same_framework(const plugin::Device& a, const plugin::Device& b) {
  return a.hardware().framework == b.hardware().framework;
}

plugin::Device& open_host_device() {
  const FrameworkEntry* host = host_framework();
  if (host == nullptr)
    throw Error(ErrorCode::plugin_unavailable,
                "no framework holding host memory is linked in (libxylem links native): tensors cannot be made "
                "from host data, read back or moved between frameworks");
  if (!host->available())
    throw Error(ErrorCode::plugin_unavailable,
                "the host framework '" + host->name + "' is unavailable: " + host->reason);
  return host->framework->device(0);
}

// A failed event no longer uses the memory: it counts as done.
bool finished(const EventPtr& event) noexcept {
  try {
    return !event || event->ready();
  } catch (...) {
    return true;
  }
}

// Hands application memory back once the work in `after` is done: at once
// when it is (the usual case), else from a host task of the device.
void return_external(plugin::Device& device, std::function<void()> on_release, plugin::Deps after) noexcept {
  if (!on_release) return;
  std::vector<EventPtr> pending;
  for (const EventPtr& e : after)
    if (!finished(e)) pending.push_back(e);
  const bool idle = pending.empty();
  // The callback is the application's: an exception from it has no caller
  // left to reach (the last handle is gone), so it is dropped.
  auto run = [on_release = std::move(on_release), pending = std::move(pending)] {
    for (const EventPtr& e : pending) {
      try {
        e->wait();
      } catch (...) {
        // Failed work is over too: the memory is free to go back.
      }
    }
    try {
      on_release();
    } catch (...) {
    }
  };
  if (idle) return run();
  // The task itself waits, so a failed dependency cannot skip the release.
  try {
    (void)device.host_task(run, {});
  } catch (...) {
    run();  // no task could be queued: wait here
  }
}

}  // namespace

plugin::Device& host_device() {
  // A failed attempt leaves the static unset: the next call tries again.
  static plugin::Device& device = open_host_device();
  return device;
}

plugin::Device* find_host_device() noexcept {
  try {
    return &host_device();
  } catch (...) {
    return nullptr;
  }
}

RouteCounters& global_routes() noexcept { return g_routes; }

void DeviceCopy::add_read(EventPtr event) {
  // Queues run in order: a later read on the same queue ends after an
  // earlier one, so a writer needs only the last read of each queue.
  const void* queue = event->queue();
  for (auto& read : reads) {
    if (queue != nullptr && read->queue() == queue) {
      read = std::move(event);
      return;
    }
  }
  if (reads.size() >= kPruneReadsAt) std::erase_if(reads, [](const EventPtr& e) { return e->ready(); });
  reads.push_back(std::move(event));
}

void DeviceCopy::append_write_deps(EventList& deps) const {
  deps.push(last_write);
  for (const auto& read : reads) deps.push(read);
}

std::size_t checked_bytes(const Layout& shape, DType dtype, const char* op) {
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(shape.numel(), static_cast<std::int64_t>(size_of(dtype)), &bytes) ||
      static_cast<std::uint64_t>(bytes) > std::numeric_limits<std::size_t>::max())
    throw Error(ErrorCode::invalid_argument,
                std::string(op) + ": shape " + shape.dims_string() + " of " + std::string(name(dtype)) + " holds " +
                    std::to_string(shape.numel()) + " elements of " + std::to_string(size_of(dtype)) +
                    " bytes, more bytes than int64 can count: no device can hold it");
  return static_cast<std::size_t>(bytes);
}

Storage::Storage(std::size_t bytes) : bytes_(bytes) {
  if (bytes > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))
    throw Error(ErrorCode::invalid_argument,
                "tensor storage of " + std::to_string(bytes) + " bytes: more than int64 can count");
}

Storage::~Storage() {
  for (auto& copy : copies_) {
    if (copy.data == nullptr) continue;
    EventList after;
    copy.append_write_deps(after);
    if (copy.external) {
      // Not xylem's memory: neither freed nor counted in the usage.
      return_external(*copy.device, std::move(copy.on_release), after.span());
    } else {
      copy.device->release(copy.data, after.span());
      copy.usage->remove(bytes_);
    }
  }
}

DeviceCopy& Storage::adopt(plugin::Device& device, void* data, std::function<void()> on_release) {
  copies_.push_back(DeviceCopy{&device, data});
  DeviceCopy& copy = copies_.back();
  copy.external = true;
  copy.on_release = std::move(on_release);
  mark_written(copy, nullptr);
  return copy;
}

DeviceCopy* Storage::find(const plugin::Device& device) noexcept {
  for (auto& copy : copies_)
    if (copy.device == &device) return &copy;
  return nullptr;
}

bool Storage::current_elsewhere(const DeviceCopy& copy) const noexcept {
  for (const auto& other : copies_)
    if (&other != &copy && other.data != nullptr && other.version == latest_) return true;
  return false;
}

DeviceCopy& Storage::allocated_copy(plugin::Device& device) {
  DeviceCopy* copy = find(device);
  if (copy == nullptr) {
    copies_.push_back(DeviceCopy{&device});
    copy = &copies_.back();
  }
  if (copy->data == nullptr) {
    DeviceUsage& usage = usage_of(device);
    copy->data = device.allocate(std::max<std::size_t>(bytes_, 1));
    copy->usage = &usage;
    usage.add(bytes_);
  }
  return *copy;
}

DeviceCopy* Storage::current_copy(const plugin::Device& for_device, const plugin::Device* host) noexcept {
  DeviceCopy* any = nullptr;
  for (auto& copy : copies_) {
    if (copy.version != latest_ || copy.data == nullptr) continue;
    if (same_framework(*copy.device, for_device)) return &copy;  // a peer route may exist
    if (any == nullptr || copy.device == host) any = &copy;
  }
  return any;
}

void Storage::count_transfer(Route route) noexcept {
  const std::size_t moved = route == Route::staged ? 0 : bytes_;
  routes_.add(route, moved);
  g_routes.add(route, moved);
}

void Storage::make_current(DeviceCopy& dst) {
  if (dst.version == latest_ || latest_ == 0) return;
  // Null without a host framework: then only routes within one framework exist.
  const plugin::Device* host = find_host_device();
  DeviceCopy* src = current_copy(*dst.device, host);
  if (src == nullptr) throw Error(ErrorCode::internal, "tensor data has no current copy");

  EventList deps;
  deps.push(src->last_write);
  dst.append_write_deps(deps);  // do not overwrite what is still being read

  EventPtr done;
  Route route = Route::device_to_device;
  if (same_framework(*src->device, *dst.device)) {
    done = dst.device->copy_from(*src->device, src->data, dst.data, bytes_, deps.span());
  }
  if (!done && src->device == host) {
    route = Route::upload;
    done = dst.device->upload(dst.data, src->data, bytes_, deps.span());
  } else if (!done && dst.device == host) {
    route = Route::download;
    done = src->device->download(dst.data, src->data, bytes_, deps.span());
  }
  if (!done) {
    // Different frameworks, or no peer route: stage through the host copy
    // (host_device() says why when there is no host framework).
    src = &allocated_copy(host_device());
    make_current(*src);
    deps.clear();
    deps.push(src->last_write);
    dst.append_write_deps(deps);
    done = dst.device->upload(dst.data, src->data, bytes_, deps.span());
    count_transfer(Route::staged);
    route = Route::upload;
  }
  src->add_read(done);
  dst.last_write = std::move(done);
  dst.reads.clear();
  dst.version = latest_;
  count_transfer(route);
}

void Storage::mark_written(DeviceCopy& copy, EventPtr event) {
  copy.last_write = std::move(event);
  copy.reads.clear();
  copy.version = ++latest_;
}

void Storage::replace_event(const Event* stand_in, const EventPtr& event) {
  for (DeviceCopy& copy : copies_) {
    if (copy.last_write.get() == stand_in) copy.last_write = event;
    for (EventPtr& read : copy.reads)
      if (read.get() == stand_in) read = event;
  }
}

}  // namespace xylem::detail
