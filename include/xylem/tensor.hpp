#pragma once
/// @file
/// A shared tensor: n-dimensional data of one dtype and shape, with copies
/// on every device that touched it and the knowledge of which are current.
/// Copying a Tensor copies the handle (like std::shared_ptr); views share
/// the data.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "xylem/dtype.hpp"
#include "xylem/error.hpp"
#include "xylem/future.hpp"
#include "xylem/layout.hpp"

namespace xylem {

/// Transfers of tensor data between devices, by the route each took (see
/// Tensor::transfer_routes() and xylem::transfer_routes()). A copy between
/// two devices with no direct route is one `staged` transfer and also the
/// download and upload it is made of.
struct TransferRoutes {
  std::uint64_t uploads = 0;           ///< from the host copy to a device
  std::uint64_t downloads = 0;         ///< from a device to the host copy
  std::uint64_t device_to_device = 0;  ///< directly, within one framework: one device, or peer to peer
  std::uint64_t staged = 0;            ///< between two devices, through the host copy
  std::uint64_t bytes = 0;             ///< bytes moved by uploads, downloads and direct copies
  /// Copies made: every upload, download and direct copy (staged ones are
  /// counted in their parts); what transfers() and transfer_count() say.
  [[nodiscard]] std::uint64_t total() const noexcept { return uploads + downloads + device_to_device; }
};

class Backend;
namespace detail {
class Storage;
}

/// n-dimensional data of one dtype, kept coherent across devices.
///
/// A Tensor allocates on a device when an operation first uses it there,
/// and transfers only when an operation reads a copy that is out of date.
/// Copying a Tensor copies the handle; views share the data.
class Tensor {
 public:
  Tensor() = default;  ///< empty handle; most calls throw invalid_argument
  /// A tensor of `shape` and `dtype`. Allocates nothing until first written.
  Tensor(const Layout& shape, DType dtype);

  /// From host data (copied); the tensor lives on the host until used
  /// elsewhere. Shape {data.size()}; the dtype follows T (dtype_of).
  template <class T>
  static Tensor from(std::span<const T> data) {
    return from(data, Layout{static_cast<std::int64_t>(data.size())});
  }
  /// From host data in row-major order, with the given shape.
  template <class T>
  static Tensor from(std::span<const T> data, const Layout& shape) {
    return from_bytes(data.data(), data.size() * sizeof(T), shape, dtype_of_v<T>);
  }
  /// From a vector: shape {data.size()}.
  template <class T>
  static Tensor from(const std::vector<T>& data) {
    return from(std::span<const T>(data));
  }
  /// From a vector in row-major order, with the given shape.
  template <class T>
  static Tensor from(const std::vector<T>& data, const Layout& shape) {
    return from(std::span<const T>(data), shape);
  }
  /// From a list of values: shape {n}.
  template <class T>
  static Tensor from(std::initializer_list<T> data) {
    return from(std::span<const T>(data.begin(), data.size()));
  }
  /// From `bytes` bytes of host data holding `shape`'s elements of `dtype`,
  /// row-major (for dtypes with no C++ type: f16, bf16).
  static Tensor from_bytes(const void* data, std::size_t bytes, const Layout& shape, DType dtype);

  /// False for a default-constructed (empty) handle.
  [[nodiscard]] bool defined() const noexcept { return storage_ != nullptr; }
  /// Dimensions, strides and offset into the data.
  [[nodiscard]] const Layout& layout() const noexcept { return layout_; }
  /// The dimensions alone (PyTorch's t.shape, NumPy's a.shape).
  [[nodiscard]] std::span<const std::int64_t> shape() const noexcept { return layout_.dims(); }
  /// The element type.
  [[nodiscard]] DType dtype() const noexcept { return dtype_; }
  /// The number of elements (1 for rank 0).
  [[nodiscard]] std::int64_t numel() const noexcept { return layout_.numel(); }
  /// The number of dimensions.
  [[nodiscard]] int rank() const noexcept { return layout_.rank(); }

  /// @name Views over the same data (no copy)
  /// Each makes a new Layout over the same storage (see Layout's views).
  /// @{

  /// The same elements with new dimensions; one may be -1.
  [[nodiscard]] Tensor reshape(std::initializer_list<std::int64_t> dims) const;
  /// The same elements with new dimensions; one may be -1.
  [[nodiscard]] Tensor reshape(std::span<const std::int64_t> dims) const;
  /// Elements begin, begin+step, ... before end along axis.
  [[nodiscard]] Tensor slice(int axis, std::int64_t begin, std::int64_t end, std::int64_t step = 1) const;
  /// Axes a and b swapped.
  [[nodiscard]] Tensor transpose(int a = 0, int b = 1) const;
  /// Any view of the same data; throws invalid_argument if it reaches
  /// outside the storage.
  [[nodiscard]] Tensor as_strided(const Layout& view) const;
  /// @}
  /// True when both are views of the same storage.
  [[nodiscard]] bool shares_data_with(const Tensor& other) const noexcept;

  /// Host reads: wait only for the work that writes this tensor.
  /// T must be the tensor's element type (dtype_mismatch otherwise).
  /// The elements come in row-major order of the view.
  template <class T>
  [[nodiscard]] Future<std::vector<T>> read() const {
    auto state = std::make_shared<detail::FutureState<std::vector<T>>>();
    state->value.emplace();
    auto event = read_into(dtype_of_v<T>, [state](std::size_t n) {
      state->value->resize(n);
      return static_cast<void*>(state->value->data());
    });
    return Future<std::vector<T>>(std::move(event), std::move(state));
  }
  /// read<T>() and wait for it: the elements, row-major.
  template <class T>
  [[nodiscard]] std::vector<T> to_vector() const {
    return std::move(read<T>()).get();
  }
  /// The elements' bytes, row-major, in the tensor's own dtype (f16 and
  /// bf16 have no C++ type): what a file writer needs. Waits like read().
  [[nodiscard]] Future<std::vector<unsigned char>> read_bytes() const {
    auto state = std::make_shared<detail::FutureState<std::vector<unsigned char>>>();
    state->value.emplace();
    auto event = read_into(dtype_, [state, element = size_of(dtype_)](std::size_t n) {
      state->value->resize(n * element);
      return static_cast<void*>(state->value->data());
    });
    return Future<std::vector<unsigned char>>(std::move(event), std::move(state));
  }
  /// Any dtype, converted to double (for printing and tests); a complex
  /// element gives two, its real and imaginary parts.
  [[nodiscard]] std::vector<double> to_doubles() const;

  /// @name Coherence introspection (tests, diagnostics)
  /// @{

  [[nodiscard]] std::uint64_t transfers() const noexcept;     ///< transfers of this tensor's data so far
  [[nodiscard]] TransferRoutes transfer_routes() const noexcept;  ///< the same, by route
  [[nodiscard]] std::uint64_t version() const noexcept;       ///< bumps at every write; 0: never written
  [[nodiscard]] bool is_current_on(const Backend& backend) const;  ///< its copy there is up to date
  [[nodiscard]] bool is_allocated_on(const Backend& backend) const;  ///< it has memory there
  /// @}

  /// The shared storage (the core's and plugins' use).
  [[nodiscard]] const std::shared_ptr<detail::Storage>& storage() const noexcept { return storage_; }

 private:
  Tensor(std::shared_ptr<detail::Storage> storage, const Layout& shape, DType dtype)
      : storage_(std::move(storage)), layout_(shape), dtype_(dtype) {}
  void require_defined(const char* what) const;
  /// Calls `alloc(n)` for a host buffer (now, on this thread: its bad_alloc
  /// becomes out_of_memory), then enqueues a copy of the view into it in
  /// row-major order, as `as`; returns the event of that copy.
  EventPtr read_into(DType as, std::function<void*(std::size_t)> alloc) const;

  std::shared_ptr<detail::Storage> storage_;
  Layout layout_;
  DType dtype_ = DType::f32;
};

/// Prints the elements (waiting for them), then shape and strides:
/// "[0.97068775, 0.9999959, 0.62245935, 0.9984988] shape=[4], strides=[1]".
std::ostream& operator<<(std::ostream& os, const Tensor& t);

/// Total number of transfers between devices since start (all tensors).
[[nodiscard]] std::uint64_t transfer_count() noexcept;
/// The same, by route: which transfers went peer to peer, which through the host.
[[nodiscard]] TransferRoutes transfer_routes() noexcept;

}  // namespace xylem
