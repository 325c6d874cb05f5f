#pragma once
// What every op family's launch code shares: enqueuing kernels in order
// after a call's dependencies, kernel arguments, the collapsed layout of
// strided views, and error messages that name the call.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "frameworks/opencl/device.hpp"
#include "frameworks/opencl/recording.hpp"

namespace xylem::opencl {

// Mirrors xy_layout in kernels/common.cl (all 64-bit fields: no padding).
inline constexpr int kLayoutRank = 8;
struct KernelLayout {
  cl_long rank = 0;
  cl_long dims[kLayoutRank] = {};
  cl_long strides[3][kLayoutRank] = {};
  cl_long offsets[3] = {};
};
static_assert(sizeof(KernelLayout) == (1 + 8 + 24 + 3) * 8);

// Up to three views of the same dims, collapsed for a kernel: dims of one
// element dropped, neighbouring dims merged where every operand steps
// through them as one. `contiguous` when every operand is then a dense run.
struct Collapsed {
  KernelLayout layout;
  std::int64_t numel = 0;
  bool contiguous = false;
};
[[nodiscard]] Collapsed collapse(std::initializer_list<const Layout*> views);
// collapse() with at least one axis (a single element collapses to none):
// the layout of the kernels that walk views in runs (XY_RUNS in
// kernels/storage.cl).
[[nodiscard]] Collapsed collapse_for_runs(std::initializer_list<const Layout*> views);

// A kernel argument of __local memory.
struct LocalBytes {
  std::size_t bytes;
};

// A scalar in the kernel's element type T (float or double).
struct Scalar {
  DType dtype;
  double value;
};

// "nn::sigmoid(x: f32 [4, 5] strides [5, 1], y: f32 [4, 5] strides [5, 1]) on opencl:0 (name)"
[[nodiscard]] std::string describe(const plugin::OpCall& call, const Device& device);

// Enqueues the commands of one call: the first waits for the call's
// dependencies, the rest follow on the in-order queue. finish() returns the
// event of the last (or of a marker when nothing was enqueued). While the
// device collects a recording (Device::collecting), kernels go to that list
// with their arguments instead, and finish() returns null.
class Launcher {
 public:
  Launcher(Device& device, const plugin::OpCall& call, Deps deps)
      : device_(device), call_(call), waits_(deps, device.context(), device.queue()),
        collecting_(device.collecting()) {}

  [[nodiscard]] Device& device() const noexcept { return device_; }
  [[nodiscard]] const plugin::OpCall& call() const noexcept { return call_; }
  // The program of `spec` that holds dtype's kernels, of the call's variant
  // (Device::launch has refused a call without one).
  [[nodiscard]] const ProgramPackage& program(const ProgramSpec& spec, DType dtype) const {
    return device_.program(spec, dtype, variant_for(spec, call_));
  }
  [[nodiscard]] std::string describe() const { return opencl::describe(call_, device_); }
  // The list this launch records into, or null when it enqueues.
  [[nodiscard]] CommandList* collecting() const noexcept { return collecting_; }

  // One work-item per element of [0, items): global rounded up to the
  // kernel's local size (kernels check the bound).
  template <class... Args>
  void run(const KernelInfo& kernel, std::size_t items, const Args&... args) {
    const std::size_t local = local_for(kernel, items);
    const std::size_t global = (items + local - 1) / local * local;
    enqueue(kernel, global, local, args...);
  }
  // A contiguous elementwise kernel over n elements: each work-item takes a
  // run of DeviceInfo::per_item of them (XY_FOR_RUN).
  template <class... Args>
  void run_runs(const KernelInfo& kernel, std::size_t n, const Args&... args) {
    const std::size_t per = device_.info().per_item;
    run(kernel, (n + per - 1) / per, args...);
  }
  // A chunked contiguous kernel over n elements of `element_bytes` each
  // (XY_CHUNK_BOUNDS in kernels/common.cl): appends the kernel's `stream`
  // (int) and `per` (long) arguments to args.
  template <class... Args>
  void run_chunks(const KernelInfo& kernel, std::size_t n, std::size_t element_bytes, const Args&... args) {
    const ChunkShape s = chunk_shape(kernel, n, element_bytes);
    enqueue(kernel, s.global, s.local, args..., s.stream, s.per);
  }
  // The same for a kernel that updates an operand in place (axpy, scal):
  // appends only `per`. Streaming stores do not pay there: every line is
  // read before it is written, so they save no traffic, and they push the
  // line out of the cache (measured on PoCL: 0.85x OpenBLAS's scal with
  // them, 1.0x without).
  template <class... Args>
  void run_chunks_in_place(const KernelInfo& kernel, std::size_t n, const Args&... args) {
    const ChunkShape s = chunk_shape(kernel, n, 0);
    enqueue(kernel, s.global, s.local, args..., s.per);
  }
  // Exactly `groups` work-groups of `local` items.
  template <class... Args>
  void run_groups(const KernelInfo& kernel, std::size_t groups, std::size_t local, const Args&... args) {
    enqueue(kernel, groups * local, local, args...);
  }

  // Takes the event of a command enqueued by other means (clEnqueueCopyBuffer,
  // CLBlast) that waited on wait_list().
  [[nodiscard]] const cl_event* wait_list() const noexcept { return first_ ? waits_.data() : nullptr; }
  [[nodiscard]] cl_uint wait_count() const noexcept { return first_ ? waits_.size() : 0; }
  void enqueued(cl_event event) noexcept {
    first_ = false;
    last_ = ClEventHandle(event);
  }
  // Makes later commands (from libraries without wait lists) follow the
  // dependencies: a marker on the in-order queue.
  void wait_for_deps();
  // Runs `step`, another op's call (its kernels' launch code, launch_step), as a
  // step of this one: after this call's dependencies, and this launcher's
  // later commands (and finish()) after it. For ops built of others.
  void run_step(const plugin::OpCall& step, EventPtr (*launch_step)(Launcher&));

  [[nodiscard]] EventPtr finish();

 private:
  struct ChunkShape {
    std::size_t global, local;
    cl_int stream;
    cl_long per;
  };
  [[nodiscard]] ChunkShape chunk_shape(const KernelInfo& kernel, std::size_t n, std::size_t element_bytes) const;
  // run's work-group size: the kernel's, smaller on CPU devices where it
  // would leave the device's threads without a group each.
  [[nodiscard]] std::size_t local_for(const KernelInfo& kernel, std::size_t items) const;

  void set_arg(cl_kernel k, cl_uint i, const LocalBytes& a) { set_raw(k, i, a.bytes, nullptr); }
  void set_arg(cl_kernel k, cl_uint i, const Scalar& a) {
    if (a.dtype == DType::f64) {
      const double v = a.value;
      set_raw(k, i, sizeof v, &v);
    } else {
      const float v = static_cast<float>(a.value);
      set_raw(k, i, sizeof v, &v);
    }
  }
  template <class A>
  void set_arg(cl_kernel k, cl_uint i, const A& a) {
    set_raw(k, i, sizeof(A), &a);
  }
  void set_raw(cl_kernel k, cl_uint i, std::size_t size, const void* value);

  template <class... Args>
  void enqueue(const KernelInfo& kernel, std::size_t global, std::size_t local, const Args&... args) {
    cl_uint i = 0;
    (set_arg(kernel.kernel.get(), i++, args), ...);
    enqueue_range(kernel, global, local);
  }
  void enqueue_range(const KernelInfo& kernel, std::size_t global, std::size_t local);

  Device& device_;
  const plugin::OpCall& call_;
  WaitList waits_;
  bool first_ = true;
  ClEventHandle last_;
  CommandList* collecting_;
  std::vector<KernelArg> args_;  // of the next kernel, while collecting
};

// The element offset of a view and its (single) stride, for rank-1 views.
[[nodiscard]] inline cl_long offset_of(const plugin::TensorArg& a) noexcept { return a.view.offset(); }
[[nodiscard]] inline cl_mem mem_of(const plugin::TensorArg& a) noexcept { return static_cast<cl_mem>(a.data); }
// The kernel name suffix of a dtype: "_f32", "_f64".
[[nodiscard]] std::string suffix(DType dtype);
// Concatenates a kernel name from its parts.
[[nodiscard]] std::string join(std::initializer_list<std::string_view> parts);

// A device buffer of `elements` of `dtype` (at least one element: a buffer
// cannot be empty) for one call's intermediate results. Dropping the Mem
// after enqueuing is safe: OpenCL keeps a buffer alive until the commands
// queued on it complete; a list being collected keeps it too. Throws out_of_memory past the device's largest
// allocation.
[[nodiscard]] Mem temporary_buffer(Launcher& launch, std::int64_t elements, DType dtype);

// A strided or contiguous copy of t0 into t1 (copy_view and blas::copy).
void enqueue_copy(Launcher& launch, const plugin::TensorArg& x, const plugin::TensorArg& y);

}  // namespace xylem::opencl
