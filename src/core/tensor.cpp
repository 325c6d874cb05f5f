#include "xylem/tensor.hpp"

#include <cstring>
#include <new>
#include <stdexcept>

#include "core/deferred.hpp"
#include "core/fusion.hpp"
#include "core/storage.hpp"
#include "graph/recorder.hpp"
#include "xylem/backend.hpp"
#include "xylem/plugin/half.hpp"

namespace xylem {

Tensor::Tensor(const Layout& shape, DType dtype)
    : storage_(std::make_shared<detail::Storage>(detail::checked_bytes(shape, dtype, "Tensor"))),
      layout_(Layout(shape.dims())),
      dtype_(dtype) {}

Tensor Tensor::from_bytes(const void* data, std::size_t bytes, const Layout& shape, DType dtype) {
  const Layout dense(shape.dims());
  if (bytes != detail::checked_bytes(dense, dtype, "Tensor::from"))
    throw Error(ErrorCode::shape_mismatch, "Tensor::from: " + std::to_string(bytes / size_of(dtype)) + " elements of " +
                                               std::string(name(dtype)) + " do not fill shape " + dense.dims_string());
  Tensor t(dense, dtype);
  std::lock_guard lock(t.storage_->mutex);
  detail::DeviceCopy& host = t.storage_->allocated_copy(detail::host_device());
  if (bytes) std::memcpy(host.data, data, bytes);
  t.storage_->mark_written(host, nullptr);
  return t;
}

namespace {

// alloc(n), its failures as out_of_memory naming the view and the real byte count.
void* allocate_result(const std::function<void*(std::size_t)>& alloc, std::size_t n, const Layout& shape,
                      DType dtype) {
  const std::size_t bytes = detail::checked_bytes(shape, dtype, "reading a tensor");
  const auto refuse = [&](const std::string& why) {
    return Error(ErrorCode::out_of_memory, "reading a tensor (shape " + shape.dims_string() + ", " +
                                               std::string(name(dtype)) + "): " + std::to_string(bytes) +
                                               " bytes for the result " + why);
  };
  // More than the host's memory cannot be had (and a sanitizer's operator
  // new would end the process rather than throw): refused before trying.
  const std::uint64_t memory = detail::host_device().hardware().memory_bytes;
  if (memory != 0 && bytes > memory) throw refuse("exceed the host's " + std::to_string(memory) + " bytes of memory");
  try {
    return alloc(n);
  } catch (const std::bad_alloc&) {
    throw refuse("could not be allocated on the host");
  } catch (const std::length_error&) {
    throw refuse("exceed the largest host buffer");
  }
}

}  // namespace

void Tensor::require_defined(const char* what) const {
  if (!storage_) throw Error(ErrorCode::invalid_argument, std::string(what) + " on an empty Tensor handle");
}

Tensor Tensor::reshape(std::initializer_list<std::int64_t> dims) const {
  return reshape(std::span<const std::int64_t>(dims.begin(), dims.size()));
}
Tensor Tensor::reshape(std::span<const std::int64_t> dims) const {
  require_defined("reshape");
  return Tensor(storage_, layout_.reshape(dims), dtype_);
}
Tensor Tensor::slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step) const {
  require_defined("slice");
  return Tensor(storage_, layout_.slice(axis, begin, end, step), dtype_);
}
Tensor Tensor::transpose(int a, int b) const {
  require_defined("transpose");
  return Tensor(storage_, layout_.transpose(a, b), dtype_);
}
Tensor Tensor::as_strided(const Layout& view) const {
  require_defined("as_strided");
  // The Layout checked its own arithmetic: lowest() and extent() cannot overflow.
  const auto elements = static_cast<std::int64_t>(storage_->bytes() / size_of(dtype_));
  if (view.offset() < 0 || view.lowest() < 0 || view.extent() > elements)
    throw Error(ErrorCode::invalid_argument, "as_strided: view " + view.dims_string() + " with strides " +
                                                 view.strides_string() + " and offset " + std::to_string(view.offset()) +
                                                 " reaches outside the tensor's " + std::to_string(elements) +
                                                 " elements");
  return Tensor(storage_, view, dtype_);
}

bool Tensor::shares_data_with(const Tensor& other) const noexcept {
  return storage_ != nullptr && storage_ == other.storage_;
}

EventPtr Tensor::read_into(DType as, std::function<void*(std::size_t)> alloc) const {
  require_defined("read");
  detail::refuse_in_capture("reading a tensor on the host (to_vector, read, read_bytes, printing)");
  detail::flush_fusion_for(*storage_, /*writes=*/false);
  if (as != dtype_)
    throw Error(ErrorCode::dtype_mismatch, "reading a " + std::string(name(dtype_)) + " tensor (shape " +
                                               layout_.dims_string() + ") as " + std::string(name(as)));
  std::lock_guard lock(storage_->mutex);
  if (!storage_->written())
    throw Error(ErrorCode::uninitialized_read,
                "reading a tensor (shape " + layout_.dims_string() + ", " + std::string(name(dtype_)) +
                    ") that was never written");
  // The result's buffer is made now, on this thread, before anything is
  // queued: a view too large for the host (a broadcast view may be far
  // larger than its storage) fails here with a typed error.
  const std::size_t n = static_cast<std::size_t>(layout_.numel());
  void* result = allocate_result(alloc, n, layout_, dtype_);
  plugin::Device& host = detail::host_device();
  detail::DeviceCopy& copy = storage_->allocated_copy(host);
  storage_->make_current(copy);
  // Gather the view in row-major order with the host device's copy_view,
  // on its queue, so the read sees exactly the writes enqueued before it.
  // An empty view has nothing to gather but still reads after those writes.
  EventPtr deps[] = {copy.last_write};
  const plugin::Deps after(deps, copy.last_write ? 1u : 0u);
  EventPtr done;
  if (n == 0) {
    done = host.host_task([] {}, after);
  } else {
    plugin::OpCall gather;
    gather.op = plugin::OpId::core_copy_view;
    gather.num_tensors = 2;
    gather.t[0] = {copy.data, layout_, dtype_};
    gather.t[1] = {result, Layout(layout_.dims()), dtype_};
    done = host.launch(gather, after);
  }
  copy.add_read(done);
  return detail::checked(std::move(done));
}

std::vector<double> Tensor::to_doubles() const {
  std::vector<unsigned char> bytes;
  const std::size_t element = size_of(dtype_);
  read_into(dtype_, [&](std::size_t n) {
    bytes.resize(n * element);
    return static_cast<void*>(bytes.data());
  })->wait();
  const std::size_t n = bytes.size() / element;
  std::vector<double> out(is_complex(dtype_) ? 2 * n : n);
  const unsigned char* p = bytes.data();
  for (std::size_t k = 0; k < n; ++k, p += element) {
    switch (dtype_) {
      case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); out[k] = detail::half_to_float(h); break; }
      case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); out[k] = detail::bf16_to_float(h); break; }
      case DType::f32: { float v; std::memcpy(&v, p, 4); out[k] = v; break; }
      case DType::f64: { std::memcpy(&out[k], p, 8); break; }
      case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); out[k] = v; break; }
      case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); out[k] = static_cast<double>(v); break; }
      case DType::u8: out[k] = *p; break;
      case DType::boolean: out[k] = *p != 0; break;
      case DType::c64: { float v[2]; std::memcpy(v, p, 8); out[2 * k] = v[0]; out[2 * k + 1] = v[1]; break; }
      case DType::c128: { std::memcpy(&out[2 * k], p, 16); break; }
    }
  }
  return out;
}

// The queries below see the state after every call made so far: a pending
// fused chain runs first. They are noexcept: a chain that fails here keeps
// its error for nobody (its outputs stay unwritten, and reading them says so).
namespace {
// All that is pending (`s` null), or every pending call that uses `s`: the
// queries below report the state after the calls made so far (a pending
// read of `s` will transfer it, a pending write change its version).
void flush_quietly(const detail::Storage* s = nullptr) noexcept {
  try {
    if (s == nullptr) {
      detail::flush_fusion();
    } else {
      detail::flush_fusion_for(*s, /*writes=*/true);
    }
  } catch (...) {
  }
}
}  // namespace

std::uint64_t Tensor::transfers() const noexcept {
  if (storage_) flush_quietly(storage_.get());
  return storage_ ? storage_->transfers() : 0;
}

TransferRoutes Tensor::transfer_routes() const noexcept {
  if (storage_) flush_quietly(storage_.get());
  return storage_ ? storage_->transfer_routes() : TransferRoutes{};
}

std::uint64_t Tensor::version() const noexcept {
  if (!storage_) return 0;
  flush_quietly(storage_.get());
  std::lock_guard lock(storage_->mutex);
  return storage_->latest();
}

bool Tensor::is_current_on(const Backend& backend) const {
  require_defined("is_current_on");
  detail::flush_fusion_for(*storage_, /*writes=*/true);  // any pending use: see flush_quietly
  std::lock_guard lock(storage_->mutex);
  const auto* copy = storage_->find(plugin::device_of(backend));
  return copy != nullptr && storage_->written() && copy->version == storage_->latest();
}

bool Tensor::is_allocated_on(const Backend& backend) const {
  require_defined("is_allocated_on");
  detail::flush_fusion_for(*storage_, /*writes=*/true);
  std::lock_guard lock(storage_->mutex);
  const auto* copy = storage_->find(plugin::device_of(backend));
  return copy != nullptr && copy->data != nullptr;
}

std::uint64_t transfer_count() noexcept {
  flush_quietly();
  return detail::global_routes().snapshot().total();
}

TransferRoutes transfer_routes() noexcept {
  flush_quietly();
  return detail::global_routes().snapshot();
}

}  // namespace xylem
