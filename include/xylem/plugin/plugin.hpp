#pragma once
// What a framework implements, and the one versioned C entry point a plugin
// exports. The core owns policy (coherence, argument checks, fallback); a
// framework supplies only the mechanism: memory, copies, kernels, events.
//
// Lifetime: a Framework is created once per process and never destroyed
// before exit (plugins are never unloaded); it owns its Devices.
// Threads: every Device method may be called from several host threads.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "xylem/dtype.hpp"
#include "xylem/future.hpp"
#include "xylem/hardware.hpp"
#include "xylem/plugin/ops.hpp"
#include "xylem/shape.hpp"

namespace xylem::plugin {

// Bumped whenever anything in this folder changes shape; the loader refuses a
// plugin built for another version.
inline constexpr std::uint32_t kApiVersion = 1;

using Deps = std::span<const EventPtr>;

// One tensor argument as a kernel sees it.
struct TensorArg {
  void* data = nullptr;  // the allocation: host pointer (native), cl_mem (opencl), device pointer (cuda)
  Shape view;            // dims, strides and offset, in elements, into data
  DType dtype = DType::f32;
};

inline constexpr std::size_t kMaxOpTensors = 6;

// One operation call. Fixed size: enqueuing never allocates for arguments.
//
// Argument conventions (the core checks shapes and dtypes before launch):
//   creation::fill     t0=y; f0=value
//   creation::arange   t0=y; f0=start, f1=step; y[k] = start + k*step, k = row-major logical index
//   creation::uniform  t0=y; f0=low, f1=high; i0=seed, i1=counter offset (see philox.h)
//   creation::normal   t0=y; f0=mean, f1=stddev; i0=seed, i1=counter offset
//   core::copy_view    t0=x, t1=y; same dims and dtype, any strides
//   blas level 1       vectors are rank-1 views (any stride, also negative); result is a
//                      one-element tensor of x's dtype (iamax: i64, 0-based, first maximum)
//     axpy: y += f0*x   scal: x *= f0   swap: x <-> y   copy: y = x
//   blas::gemm         t0=a, t1=b, t2=c; i0=transpose a, i1=transpose b; f0=alpha, f1=beta;
//                      c = alpha*op(a)*op(b) + beta*c. Each matrix view has stride(1)==1 and
//                      stride(0) >= its columns (the core normalises transposed views).
//                      With beta == 0, c is write-only and may hold NaN: do not read it.
//                      f16/bf16: products accumulate in f32, alpha and beta applied in
//                      f32, c rounded to its dtype (nearest even).
//   nn activations     t0=x, t1=y, same dims, any strides
//   nn gradients       sigmoid_grad(y, dy, dx): dx = dy*y*(1-y)
//                      relu_grad(x, dy, dx):    dx = x > 0 ? dy : 0
//                      tanh_grad(y, dy, dx):    dx = dy*(1-y*y)
struct OpCall {
  OpId op = OpId::count_;
  std::uint8_t num_tensors = 0;
  std::array<TensorArg, kMaxOpTensors> t{};
  std::array<double, 4> f{};
  std::array<std::int64_t, 4> i{};
};

struct MemoryStats {
  std::uint64_t allocated = 0;      // bytes handed to tensors now
  std::uint64_t reserved = 0;       // bytes held from the driver (allocated + cached)
  std::uint64_t peak = 0;           // most bytes allocated at once
  std::uint64_t device_allocations = 0;  // calls into the driver's allocator
};

// The per-device state of an op set: compiled programs, library handles,
// tuned parameters. Built at first use by a PackageCache, then kept.
class Package {
 public:
  virtual ~Package() = default;
};

class Device {
 public:
  virtual ~Device() = default;
  [[nodiscard]] virtual const Hardware& hardware() const noexcept = 0;

  // Memory. allocate throws Error{out_of_memory} (after freeing caches).
  // release frees once `after` and all work queued so far are complete.
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* data, Deps after) noexcept = 0;

  // Transfers of whole allocations, asynchronous; the returned event marks
  // completion. Host memory passed here stays valid until then.
  [[nodiscard]] virtual EventPtr upload(void* dst, const void* host_src, std::size_t bytes, Deps deps) = 0;
  [[nodiscard]] virtual EventPtr download(void* host_dst, const void* src, std::size_t bytes, Deps deps) = 0;
  // Device-to-device from another device of this framework (or this one).
  // Returns nullptr when no direct route exists; the core then stages
  // through host memory.
  [[nodiscard]] virtual EventPtr copy_from(Device& src_device, const void* src, void* dst, std::size_t bytes,
                                           Deps deps) {
    (void)src_device, (void)src, (void)dst, (void)bytes, (void)deps;
    return nullptr;
  }

  // Operations.
  [[nodiscard]] virtual bool supports(OpId op, DType dtype) const noexcept = 0;
  [[nodiscard]] virtual EventPtr launch(const OpCall& call, Deps deps) = 0;

  // Runs fn on a host thread in queue order, after deps. Used for host reads
  // and tests; frameworks without host callbacks may run it after waiting.
  [[nodiscard]] virtual EventPtr host_task(std::function<void()> fn, Deps deps) = 0;

  virtual void synchronize() = 0;
  [[nodiscard]] virtual MemoryStats memory_stats() const { return {}; }
  // Caps the bytes this device may hand out (BackendConfig::memory_limit);
  // returns false where the framework cannot enforce a limit.
  [[nodiscard]] virtual bool set_memory_limit(std::uint64_t bytes) {
    (void)bytes;
    return false;
  }
};

class Framework {
 public:
  virtual ~Framework() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  // Hardware found; empty when none (then unavailable_reason says why).
  [[nodiscard]] virtual const std::vector<Hardware>& hardware() const noexcept = 0;
  [[nodiscard]] virtual std::string unavailable_reason() const { return {}; }
  // Opens hardware()[index] on first call; the framework keeps it.
  [[nodiscard]] virtual Device& device(std::size_t index) = 0;
};

// Builds each op set's Package once per device, on first use, thread-safe.
template <std::size_t N>
class PackageCache {
 public:
  template <class P, class Build>
  P& get(std::size_t slot, Build&& build) {
    std::call_once(once_[slot], [&] { packages_[slot] = build(); });
    return static_cast<P&>(*packages_[slot]);
  }

 private:
  std::array<std::once_flag, N> once_;
  std::array<std::unique_ptr<Package>, N> packages_;
};

}  // namespace xylem::plugin

// The entry point: a plugin exports exactly this C function.
extern "C" {
struct XylemPluginInfo {
  std::uint32_t api_version;  // xylem::plugin::kApiVersion the plugin was built with
  const char* name;           // framework name: "opencl", "cuda"
  // Creates the framework; on failure returns null and sets *error to a
  // static or heap string that explains why (the framework is then unavailable).
  xylem::plugin::Framework* (*create)(const char** error);
};
#define XYLEM_PLUGIN_ENTRY_NAME "xylem_plugin_entry"
typedef const XylemPluginInfo* (*XylemPluginEntryFn)(void);
}

#if defined(_WIN32)
#define XYLEM_PLUGIN_EXPORT extern "C" __declspec(dllexport)
#else
#define XYLEM_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#endif
