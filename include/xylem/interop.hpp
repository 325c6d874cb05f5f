#pragma once
/// @file
/// Zero-copy exchange with other libraries: NumPy arrays on the host,
/// PyTorch, CuPy or JAX memory on a GPU (what DLPack hands over), and the
/// queues (CUDA streams) their work runs on.
///
/// The memory a tensor has on a device is that device's *copy*; xylem
/// keeps track of which copies are up to date and of the queued work that
/// reads or writes each. These functions lend that bookkeeping to the other
/// side: a copy can be the other library's memory (wrap), the other library
/// can get a copy's address (data_pointer), wait for xylem's work on it
/// (synchronize on the host, export_to on a stream), make xylem wait for
/// its own (import_from) and say that it wrote it (mark_modified).
#include <functional>

#include "xylem/backend.hpp"
#include "xylem/dtype.hpp"
#include "xylem/layout.hpp"
#include "xylem/tensor.hpp"

/// Zero-copy exchange of memory and queues with other libraries.
namespace xylem::interop {

/// A tensor whose copy on b's device is the application's memory at
/// `data`: a host pointer on native, a device pointer on CUDA, a cl_mem of
/// b's context on OpenCL. `view` indexes elements from `data` (offset and strides in
/// elements, any sign), so the memory from `data` up to the view's extent
/// is the tensor's: to wrap an array with negative strides, pass the
/// address of its lowest element and the first element's index as offset.
/// The tensor is written (its copy on b is current); xylem never frees the
/// memory. `release` (may be empty) runs once, when the last handle to the
/// data is gone and all queued work using the memory is done, on the
/// thread dropping that handle or on a xylem host thread; it must not
/// throw.
///
/// Throws invalid_argument, without calling `release`, for a view that
/// reaches below `data` (negative offset or lowest element), a null `data`
/// (an empty array may have one), or, where memory is addressed by
/// pointers, `data` not aligned to the dtype: the caller then copies
/// instead.
///
/// While the tensor lives, write the memory from outside only as
/// mark_modified says, and leave the elements between a strided view's
/// elements alone too: bringing this copy up to date after a write on
/// another device writes the whole range.
[[nodiscard]] Tensor wrap(const Backend& b, void* data, const Layout& view, DType dtype,
                          std::function<void()> release);

/// The address of t's first element (the view's offset applied) in its
/// copy on b's device, made current first (allocated and transferred as
/// needed, on b's queues: call synchronize or export_to before reading it
/// from outside). A tensor never written gets memory, not data. The
/// address stays valid while any handle to t's data lives; it holds t's
/// latest data until xylem writes t elsewhere. On OpenCL it is the cl_mem
/// itself, and a view with an offset is unsupported.
[[nodiscard]] void* data_pointer(const Tensor& t, const Backend& b);

/// Blocks until all queued work reading or writing t's copy on b's device
/// is done: then the host may read that memory (it holds what xylem wrote)
/// or write it (then call mark_modified). Errors of that work are raised.
void synchronize(const Tensor& t, const Backend& b);

/// Says that something outside xylem wrote t's copy on b's device (after
/// synchronize, on the host, or ordered by import_from, on a stream): that
/// copy alone becomes current, so work on other devices transfers again.
/// Throws invalid_argument when t has no memory on b's device or that copy
/// was out of date (call data_pointer before writing it).
void mark_modified(const Tensor& t, const Backend& b);

/// The native handle of the queue b's operations run on: a cudaStream_t on
/// CUDA, a cl_command_queue on OpenCL; unsupported on native. Work put on
/// it follows every op enqueued before this call: elementwise calls that
/// automatic fusion still holds run first (ask again after later ops).
[[nodiscard]] void* native_queue(const Backend& b);

/// Makes the CUDA stream `consumer_stream` wait, on the device, for all
/// queued work reading or writing t's copy on b's device, made current
/// first; the host does not wait. Work the consumer then queues may read
/// and write that memory. If xylem may write t while that work still
/// runs, call import_from(t, b, consumer_stream) after it. Unsupported
/// outside CUDA.
void export_to(const Tensor& t, const Backend& b, void* consumer_stream);

/// Makes xylem's later work on t's copy on b's device wait, on the device,
/// for everything queued on the CUDA stream `producer_stream` so far.
/// Throws invalid_argument when t has no memory on b's device;
/// unsupported outside CUDA.
void import_from(const Tensor& t, const Backend& b, void* producer_stream);

}  // namespace xylem::interop
