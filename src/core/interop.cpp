#include "xylem/interop.hpp"

#include <cstdint>
#include <mutex>
#include <string>

#include "core/deferred.hpp"
#include "core/fusion.hpp"
#include "core/storage.hpp"
#include "graph/recorder.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::interop {
namespace {

std::string describe(const Tensor& t) {
  return "tensor (shape " + t.layout().dims_string() + ", " + std::string(name(t.dtype())) + ")";
}

detail::Storage& storage_of(const Tensor& t, const char* op) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, std::string("interop::") + op + " on an empty Tensor handle");
  return *t.storage();
}

// t's copy on device, allocated and up to date; the storage's lock held.
detail::DeviceCopy& current_copy(detail::Storage& storage, plugin::Device& device) {
  detail::DeviceCopy& copy = storage.allocated_copy(device);
  storage.make_current(copy);
  return copy;
}

// t's copy on device, which must have memory; the storage's lock held.
detail::DeviceCopy& existing_copy(detail::Storage& storage, const Tensor& t, plugin::Device& device, const char* op) {
  detail::DeviceCopy* copy = storage.find(device);
  if (copy == nullptr || copy->data == nullptr)
    throw Error(ErrorCode::invalid_argument, std::string("interop::") + op + ": the " + describe(t) +
                                                 " has no memory on " + device.hardware().id() +
                                                 ": call data_pointer first");
  return *copy;
}

detail::EventList users_of(const detail::DeviceCopy& copy) {
  detail::EventList events;
  copy.append_write_deps(events);
  return events;
}

}  // namespace

Tensor wrap(const Backend& b, void* data, const Layout& view, DType dtype, std::function<void()> release) {
  plugin::Device& device = plugin::device_of(b);
  const auto refuse = [&](const std::string& why) {
    return Error(ErrorCode::invalid_argument, "interop::wrap: view " + view.dims_string() + " with strides " +
                                                  view.strides_string() + " and offset " +
                                                  std::to_string(view.offset()) + " of " + std::string(name(dtype)) +
                                                  " on " + device.hardware().id() + ": " + why);
  };
  if (view.offset() < 0 || view.lowest() < 0)
    throw refuse("reaches below the memory given; pass the lowest element's address and a non-negative offset");
  // Null marks a copy without memory in the storage; an empty array with
  // no address is as cheap to copy as to wrap.
  if (data == nullptr) throw refuse("no memory given (null): make an ordinary tensor instead");
  if (device.addressable_memory() && reinterpret_cast<std::uintptr_t>(data) % size_of(dtype) != 0)
    throw refuse("the address is not aligned to the element size " + std::to_string(size_of(dtype)));
  // The storage spans the elements from `data` to the view's extent.
  Tensor whole(Layout{view.extent()}, dtype);
  {
    detail::Storage& storage = *whole.storage();
    std::lock_guard lock(storage.mutex);
    (void)storage.adopt(device, data, std::move(release));
  }
  return whole.as_strided(view);
}

void* data_pointer(const Tensor& t, const Backend& b) {
  // Another library's reads and writes are not part of a replay.
  detail::refuse_in_capture("lending a tensor's memory to another library (interop::data_pointer, NumPy, DLPack)");
  detail::Storage& storage = storage_of(t, "data_pointer");
  detail::flush_fusion_for(storage, /*writes=*/true);  // another library may read and write it
  plugin::Device& device = plugin::device_of(b);
  std::lock_guard lock(storage.mutex);
  detail::DeviceCopy& copy = current_copy(storage, device);
  const std::int64_t offset = t.layout().offset();
  if (device.addressable_memory())
    return static_cast<unsigned char*>(copy.data) + offset * static_cast<std::int64_t>(size_of(t.dtype()));
  if (offset != 0)
    throw Error(ErrorCode::unsupported, "interop::data_pointer: the " + describe(t) + " starts at element " +
                                            std::to_string(offset) + " of its memory on " + device.hardware().id() +
                                            ", a handle that cannot be offset: take xylem::contiguous(b, t) first");
  return copy.data;
}

void synchronize(const Tensor& t, const Backend& b) {
  detail::Storage& storage = storage_of(t, "synchronize");
  detail::flush_fusion_for(storage, /*writes=*/true);  // another library may read and write it
  detail::EventList users;
  {
    std::lock_guard lock(storage.mutex);
    if (const detail::DeviceCopy* copy = storage.find(plugin::device_of(b))) users = users_of(*copy);
  }
  // Waited for outside the lock: other threads may queue work meanwhile.
  for (const EventPtr& e : users.span()) e->wait();
  detail::raise_deferred();  // a host wait like a read: a deferred error surfaces here
}

void mark_modified(const Tensor& t, const Backend& b) {
  detail::Storage& storage = storage_of(t, "mark_modified");
  detail::flush_fusion_for(storage, /*writes=*/true);  // another library may read and write it
  plugin::Device& device = plugin::device_of(b);
  std::lock_guard lock(storage.mutex);
  detail::DeviceCopy& copy = existing_copy(storage, t, device, "mark_modified");
  if (storage.written() && copy.version != storage.latest())
    throw Error(ErrorCode::invalid_argument,
                "interop::mark_modified: the " + describe(t) + " on " + device.hardware().id() +
                    " was out of date when it was written: call data_pointer before writing it");
  storage.mark_written_outside(copy);
}

void* native_queue(const Backend& b) {
  plugin::Device& device = plugin::device_of(b);
  void* queue = device.native_queue();  // unsupported (native) before any flush
  detail::flush_fusion();  // the caller's work on the queue must follow every op so far
  return queue;
}

void export_to(const Tensor& t, const Backend& b, void* consumer_stream) {
  detail::Storage& storage = storage_of(t, "export_to");
  detail::flush_fusion_for(storage, /*writes=*/true);  // another library may read and write it
  plugin::Device& device = plugin::device_of(b);
  std::lock_guard lock(storage.mutex);
  const detail::DeviceCopy& copy = current_copy(storage, device);
  device.export_to_queue(consumer_stream, users_of(copy).span());
}

void import_from(const Tensor& t, const Backend& b, void* producer_stream) {
  detail::Storage& storage = storage_of(t, "import_from");
  detail::flush_fusion_for(storage, /*writes=*/true);  // another library may read and write it
  plugin::Device& device = plugin::device_of(b);
  std::lock_guard lock(storage.mutex);
  detail::DeviceCopy& copy = existing_copy(storage, t, device, "import_from");
  // After every user of the copy and the producer: every later reader and
  // writer waits for it, so it replaces them all.
  copy.last_write = device.import_from_queue(producer_stream, users_of(copy).span());
  copy.reads.clear();
}

}  // namespace xylem::interop
