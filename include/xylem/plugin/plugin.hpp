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
#include "xylem/layout.hpp"

namespace xylem::plugin {

// Bumped whenever anything in this folder changes shape; the loader refuses a
// plugin built for another version.
inline constexpr std::uint32_t kApiVersion = 2;

using Deps = std::span<const EventPtr>;

// One tensor argument as a kernel sees it.
struct TensorArg {
  void* data = nullptr;  // the allocation: host pointer (native), cl_mem (opencl), device pointer (cuda)
  Layout view;            // dims, strides and offset, in elements, into data
  DType dtype = DType::f32;
};

inline constexpr std::size_t kMaxOpTensors = 8;

// One operation call. Fixed size: enqueuing never allocates for arguments.
// A framework's kernel table is indexed by (op, dispatch dtype): the dtype
// of t0, except where said otherwise below.
//
// Dtypes. "float dtypes" are f16, bf16, f32 and f64. f16 and bf16 are
// storage types: kernels load them, compute in f32 (f64 for f64), and round
// results to the storage type to nearest even. Accumulations (reductions,
// softmax, norms, gemm, convolution) run in f32 for f16/bf16/f32 (wider
// inside where that is cheap) and in f64 for f64.
//
// Argument conventions (the core checks shapes and dtypes before launch;
// every view may have any strides unless said otherwise; views of one call
// may alias only where said):
//   creation::fill     t0=y; f0=value
//   creation::arange   t0=y; f0=start, f1=step; y[k] = start + k*step, k = row-major logical index
//   creation::uniform  t0=y; f0=low, f1=high; i0=seed, i1=counter offset (see philox.h)
//   creation::normal   t0=y; f0=mean, f1=stddev; i0=seed, i1=counter offset
//   core::copy_view    t0=x, t1=y; same dims and dtype, any strides
//   blas level 1       vectors are rank-1 views (any stride, also negative); result is a
//                      one-element tensor of x's dtype (iamax: i64, 0-based, first max |x|, the first NaN wins)
//     axpy: y += f0*x   scal: x *= f0   swap: x <-> y   copy: y = x
//     rot:  (x, y) <- (f0*x + f1*y, f0*y - f1*x)   (c = f0, s = f1)
//   blas::gemv         t0=a [m, n], t1=x, t2=y (rank-1); i0=transpose a; f0=alpha, f1=beta;
//                      y = alpha*op(a)*x + beta*y. a has stride(1)==1, stride(0) >= n.
//                      With beta == 0, y is write-only (may hold NaN). f32, f64.
//   blas::gemm         t0=a, t1=b, t2=c; i0=transpose a, i1=transpose b; f0=alpha, f1=beta;
//                      c = alpha*op(a)*op(b) + beta*c. Each matrix view has stride(1)==1 and
//                      stride(0) >= its columns (the core normalises transposed views).
//                      With beta == 0, c is write-only and may hold NaN: do not read it.
//                      f16/bf16: products accumulate in f32, alpha and beta applied in
//                      f32, c rounded to its dtype (nearest even).
//   blas::gemm_batched as gemm, over rank-3 views [batch, rows, cols]: every matrix of a
//                      batch as gemm's; stride(0) is the batch stride, any value >= 0 (0: the
//                      same matrix for every batch, for a and b only). f32, f64, f16, bf16.
//
//   math::unary        t0=x, t1=y, same dims (y may be x); i0 = XY_UN_* code (math.h);
//                      f0, f1 = the code's parameters. Float dtypes.
//   math::binary       t0=a, t1=b, t2=y, same dims (the core broadcasts: a broadcast input
//                      arrives with stride 0 along its broadcast axes); y may alias a or b
//                      exactly; i0 = XY_BIN_* code; f0 = parameter. Float dtypes.
//   math::compare      as binary; i0 = XY_CMP_* code; y is boolean (0 or 1). Float dtypes.
//   math::where        t0=a, t1=b, t2=cond (boolean), t3=y: y = cond ? a : b. Dispatch
//                      dtype: a's. Float dtypes.
//   math::cast         t0=x, t1=y, same dims, any two dtypes (all 8), dispatch on x's.
//                      Float to integer truncates toward zero, saturating at the integer
//                      type's range, NaN -> 0;
//                      integer to integer saturates too; to boolean: x != 0; boolean/u8/ints to float:
//                      the value (rounded to nearest even); f64 -> f32/f16/bf16: nearest
//                      even (overflow -> Inf). `supports(cast, d)` promises every target
//                      dtype the device has (a device without fp64 supports neither
//                      cast from nor to f64: the core asks for both dtypes).
//   math::reduce       t0=x rank 3 [outer, r, inner], t1=y rank 2 [outer, inner];
//                      y[o, i] = reduce over j of x[o, j, i]. i0 = XY_RED_* code; i1 = var's
//                      correction (divide by r - i1; r - i1 <= 0 gives Inf or NaN as
//                      0/0). r >= 1 always (the core handles empty reductions). argmax and
//                      argmin: y is i64, the first index of the extreme; NaN counts as the
//                      maximum and the minimum (the first NaN wins). max/min propagate NaN.
//                      y's dtype is x's otherwise. Float dtypes.
//
//   nn::softmax        t0=x, t1=y, rank 3 [outer, r, inner], softmax along axis 1; i0 = 0:
//                      softmax, 1: log_softmax. r >= 1. Float dtypes.
//   nn::softmax_grad   t0=y (the forward output), t1=dy, t2=dx, rank 3 as softmax; i0 as
//                      softmax. softmax: dx = y*(dy - sum_j(dy*y)); log: dx = dy - exp(y)*sum_j(dy).
//   nn::layer_norm     t0=x, t3=y rank 2 [rows, n] (normalised over axis 1); t1=gamma, t2=beta
//                      rank 1 [n] or absent (data == nullptr: gamma 1, beta 0); t4=mean,
//                      t5=rstd rank 1 [rows], dtype "stat" = f32 for f16/bf16/f32 x, f64 for
//                      f64. f0 = eps. Biased variance; rstd = 1/sqrt(var + eps).
//                      y = (x - mean)*rstd*gamma + beta.
//   nn::layer_norm_grad_input   t0=x, t1=gamma (or absent), t2=mean, t3=rstd, t4=dy, t5=dx:
//                      with xh = (x-mean)*rstd, g = dy*gamma:
//                      dx = rstd*(g - mean_j(g) - xh*mean_j(g*xh)).
//   nn::layer_norm_grad_params  t0=x, t1=mean, t2=rstd, t3=dy, t4=dgamma, t5=dbeta (rank 1
//                      [n], x's dtype; either may be absent): dgamma = sum_rows(dy*xh),
//                      dbeta = sum_rows(dy). Overwrites (does not accumulate).
//   nn::batch_norm_*   x, y, dy, dx rank 3 [N, C, S] (channel axis 1, S = spatial size,
//                      S may be 1); per-channel mean, var, gamma, beta, dgamma, dbeta rank 1
//                      [C]; mean and var in the stat dtype (see layer_norm); gamma/beta in
//                      x's dtype or absent (1, 0); f0 = eps.
//     stats            mean = mean over (N, S); var = biased variance over (N, S). N*S >= 1.
//     apply            y = (x - mean)/sqrt(var + eps)*gamma + beta.
//     grad_params      dbeta = sum_{N,S}(dy); dgamma = sum_{N,S}(dy*xh), xh = (x-mean)/sqrt(var+eps).
//                      dgamma/dbeta in x's dtype; either may be absent.
//     grad_input       t3=gamma (or absent), t4=dgamma, t5=dbeta (as grad_params wrote them,
//                      never absent), t6=dy, t7=dx; i0 = 1: training (mean/var were the
//                      batch's), 0: inference (running statistics, constants):
//                      training:  dx = gamma*rstd*(dy - dbeta/M - xh*dgamma/M), M = N*S
//                      inference: dx = gamma*rstd*dy
//   nn::dropout        t0=x, t1=y (same dims; may alias exactly); f0 = p in [0, 1);
//                      i0 = seed, i1 = counter offset. Element k (row-major logical index)
//                      is kept when xy_uniform01_f(xy_philox(seed, offset + k)) >= (float)p (f32
//                      uniform for every dtype): y = keep ? x/(1-p) : 0 (x/(1-p) computed in
//                      the compute type).
//   nn::dropout_grad   t0=dy, t1=dx; same parameters, same mask: dx = keep ? dy/(1-p) : 0.
//   nn::cross_entropy  t0=x [N, C] (logits), t1=target rank 1 [N] i64, t2=loss rank 1 [N] in
//                      x's dtype: loss[n] = logsumexp(x[n, :]) - x[n, target[n]]; NaN where
//                      target is outside [0, C). Computed in the stat type.
//   nn::cross_entropy_grad t0=x, t1=target, t2=dloss [N] (x's dtype), t3=dx [N, C]:
//                      dx[n, c] = (softmax(x[n])[c] - (c == target[n]))*dloss[n]; a row with
//                      a target outside [0, C) gets NaN.
//   nn::conv2d         t0=x [N, C, H, W], t1=w [K, C/groups, R, S], t2=y [N, K, P, Q];
//                      i0,i1 = stride h,w; i2,i3 = padding h,w (zeros); i4,i5 = dilation h,w;
//                      i6 = groups. P = (H + 2*pad_h - dil_h*(R-1) - 1)/stride_h + 1 (>= 1).
//                      Cross-correlation (no kernel flip), as cuDNN and PyTorch.
//   nn::conv2d_grad_data   t0=dy [N, K, P, Q], t1=w, t2=dx [N, C, H, W]: the gradient of y
//                      with respect to x; same i0..i6. dx is written, not accumulated.
//   nn::conv2d_grad_filter t0=x, t1=dy, t2=dw [K, C/groups, R, S]; same i0..i6.
//   nn::max_pool2d     t0=x [N, C, H, W], t1=y [N, C, P, Q]; i0,i1 = window h,w; i2,i3 =
//                      stride h,w; i4,i5 = padding h,w (padding never wins: -Inf). The window
//                      maximum, NaN propagating; each window holds at least one real element.
//   nn::max_pool2d_grad t0=x, t1=dy [N, C, P, Q], t2=dx: each dy goes to the first maximum
//                      of its window (row-major; a NaN is the maximum); dx sums over windows.
//   nn::avg_pool2d     t0=x, t1=y; i0..i5 as max_pool2d; i6 = 1: divide by the whole
//                      window (padding counted), 0: by the real elements only.
//   nn::avg_pool2d_grad t0=dy, t1=dx [N, C, H, W]; same parameters.
//   nn::lrn            t0=x, t1=y [N, C, H, W] (any rank >= 2 with channels on axis 1 is
//                      passed as rank 4 with trailing 1s); i0 = size (odd or even: the window
//                      is channels [c - (size-1)/2, c + size/2]); f0 = alpha, f1 = beta,
//                      f2 = k. scale = k + alpha/size * sum_window x^2; y = x * scale^-beta.
//   nn::lrn_grad       t0=x, t1=y, t2=dy, t3=dx: dx = dy*scale^-beta -
//                      2*alpha*beta/size * x * sum_{c' whose window holds c} dy*y/scale.
struct OpCall {
  OpId op = OpId::count_;
  std::uint8_t num_tensors = 0;
  std::array<TensorArg, kMaxOpTensors> t{};
  std::array<double, 4> f{};
  std::array<std::int64_t, 8> i{};
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
