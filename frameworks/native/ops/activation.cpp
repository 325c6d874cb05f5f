// Native activations and their gradients, f32 and f64. Runs that are dense in
// every argument go to the SIMD code in activation_simd-inl.h (best target
// for this CPU, chosen at run time); other views use math.h's scalar
// formulas with strides. Both are split into chunks that oneTBB spreads
// over the cores.

// SSSE3-only machines are rare; skipping that target saves compile time. They
// still run, on Highway's portable baseline.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/activation_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/activation_simd-inl.h"

#if HWY_ONCE
#include <cstdint>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(GradF32);
HWY_EXPORT(GradF64);

namespace {

using plugin::OpCall;
using plugin::OpId;

// 16K elements (64 KiB of f32 per argument): amortises the task overhead
// while keeping each chunk's data in L2 until it is written back.
constexpr std::int64_t kGrain = 16 * 1024;

// Outputs above this size (a typical L3 slice) go out through streaming
// (non-temporal) stores: they mostly leave the caches before the next op
// reads them anyway, and streaming saves reading each destination line
// before it is overwritten, a third of the traffic (measured: sigmoid over
// 64M f32 went from about copy speed to 1.2x a memcpy). Smaller outputs use
// normal stores, which leave the result in cache for the consumer.
constexpr std::int64_t kStreamBytes = 32 << 20;

bool stream_output(std::int64_t numel, std::size_t element_bytes) {
  return numel * std::int64_t(element_bytes) > kStreamBytes;
}

void simd_unary(Unary kind, const float* x, float* y, std::int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(UnaryF32)(kind, x, y, std::size_t(n), stream);
}
void simd_unary(Unary kind, const double* x, double* y, std::int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(UnaryF64)(kind, x, y, std::size_t(n), stream);
}
void simd_grad(Grad kind, const float* a, const float* b, float* out, std::int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(GradF32)(kind, a, b, out, std::size_t(n), stream);
}
void simd_grad(Grad kind, const double* a, const double* b, double* out, std::int64_t n, bool stream) {
  HWY_DYNAMIC_DISPATCH(GradF64)(kind, a, b, out, std::size_t(n), stream);
}

// math.h's scalar formulas, by kind and type, for strided views.
template <Unary K>
float scalar(float x) {
  if constexpr (K == Unary::sigmoid) return xy_sigmoid_f(x);
  if constexpr (K == Unary::relu) return xy_relu_f(x);
  if constexpr (K == Unary::tanh) return xy_tanh_f(x);
}
template <Unary K>
double scalar(double x) {
  if constexpr (K == Unary::sigmoid) return xy_sigmoid_d(x);
  if constexpr (K == Unary::relu) return xy_relu_d(x);
  if constexpr (K == Unary::tanh) return xy_tanh_d(x);
}
template <Grad K>
float scalar(float a, float b) {
  if constexpr (K == Grad::sigmoid) return xy_sigmoid_grad_f(a, b);
  if constexpr (K == Grad::relu) return xy_relu_grad_f(a, b);
  if constexpr (K == Grad::tanh) return xy_tanh_grad_f(a, b);
}
template <Grad K>
double scalar(double a, double b) {
  if constexpr (K == Grad::sigmoid) return xy_sigmoid_grad_d(a, b);
  if constexpr (K == Grad::relu) return xy_relu_grad_d(a, b);
  if constexpr (K == Grad::tanh) return xy_tanh_grad_d(a, b);
}

// t0 = x, t1 = y. In place (y the same view as x) works: each element is
// read before it is written.
template <class T, Unary K>
void unary_kernel(const OpCall& call) {
  const T* x = element_ptr<const T>(call.t[0]);
  T* y = element_ptr<T>(call.t[1]);
  const auto layout = make_layout<2>({&call.t[0].view, &call.t[1].view});
  if (layout.inner_unit()) {
    const bool stream = stream_output(layout.numel, sizeof(T));
    parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t) {
      simd_unary(K, x + offsets[0], y + offsets[1], count, stream);
    });
    return;
  }
  const std::int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t) {
    const T* in = x + offsets[0];
    T* out = y + offsets[1];
    for (std::int64_t j = 0; j < count; ++j) out[j * sy] = scalar<K>(in[j * sx]);
  });
}

// t0 = y (or x for relu), t1 = dy, t2 = dx; dx may be either input.
template <class T, Grad K>
void grad_kernel(const OpCall& call) {
  const T* a = element_ptr<const T>(call.t[0]);
  const T* b = element_ptr<const T>(call.t[1]);
  T* out = element_ptr<T>(call.t[2]);
  const auto layout = make_layout<3>({&call.t[0].view, &call.t[1].view, &call.t[2].view});
  if (layout.inner_unit()) {
    const bool stream = stream_output(layout.numel, sizeof(T));
    parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 3>& offsets, std::int64_t count, std::int64_t) {
      simd_grad(K, a + offsets[0], b + offsets[1], out + offsets[2], count, stream);
    });
    return;
  }
  const std::int64_t sa = layout.inner_stride(0), sb = layout.inner_stride(1), so = layout.inner_stride(2);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 3>& offsets, std::int64_t count, std::int64_t) {
    const T* pa = a + offsets[0];
    const T* pb = b + offsets[1];
    T* po = out + offsets[2];
    for (std::int64_t j = 0; j < count; ++j) po[j * so] = scalar<K>(pa[j * sa], pb[j * sb]);
  });
}

// Any other unary code: math.h's scalar formula over any strides.
template <class T>
void generic_unary(const OpCall& call) {
  const T* x = element_ptr<const T>(call.t[0]);
  T* y = element_ptr<T>(call.t[1]);
  const int code = int(call.i[0]);
  const T p0 = T(call.f[0]), p1 = T(call.f[1]);
  const auto layout = make_layout<2>({&call.t[0].view, &call.t[1].view});
  const std::int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t) {
    const T* in = x + offsets[0];
    T* out = y + offsets[1];
    for (std::int64_t j = 0; j < count; ++j) {
      if constexpr (sizeof(T) == 4)
        out[j * sy] = xy_unary_f(code, in[j * sx], p0, p1);
      else
        out[j * sy] = xy_unary_d(code, in[j * sx], p0, p1);
    }
  });
}

template <class T>
void generic_binary(const OpCall& call) {
  const T* a = element_ptr<const T>(call.t[0]);
  const T* b = element_ptr<const T>(call.t[1]);
  T* y = element_ptr<T>(call.t[2]);
  const int code = int(call.i[0]);
  const T p0 = T(call.f[0]), p1 = T(call.f[1]);
  const auto layout = make_layout<3>({&call.t[0].view, &call.t[1].view, &call.t[2].view});
  const std::int64_t sa = layout.inner_stride(0), sb = layout.inner_stride(1), sy = layout.inner_stride(2);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 3>& offsets, std::int64_t count, std::int64_t) {
    const T* pa = a + offsets[0];
    const T* pb = b + offsets[1];
    T* out = y + offsets[2];
    for (std::int64_t j = 0; j < count; ++j) {
      if constexpr (sizeof(T) == 4)
        out[j * sy] = xy_binary_f(code, pa[j * sa], pb[j * sb], p0, p1);
      else
        out[j * sy] = xy_binary_d(code, pa[j * sa], pb[j * sb], p0, p1);
    }
  });
}

// math::unary / math::binary: the SIMD kernels where a code has one.
template <class T>
void unary_dispatch(const OpCall& call) {
  switch (call.i[0]) {
    case XY_UN_SIGMOID: return unary_kernel<T, Unary::sigmoid>(call);
    case XY_UN_TANH: return unary_kernel<T, Unary::tanh>(call);
    default: return generic_unary<T>(call);
  }
}

template <class T>
void binary_dispatch(const OpCall& call) {
  switch (call.i[0]) {
    case XY_BIN_SIGMOID_GRAD: return grad_kernel<T, Grad::sigmoid>(call);
    case XY_BIN_RELU_GRAD: return grad_kernel<T, Grad::relu>(call);
    case XY_BIN_TANH_GRAD: return grad_kernel<T, Grad::tanh>(call);
    default: return generic_binary<T>(call);
  }
}

template <class T>
void register_typed(KernelTable& table) {
  constexpr DType d = dtype_of_v<T>;
  table.set(OpId::math_unary, d, &unary_dispatch<T>);
  table.set(OpId::math_binary, d, &binary_dispatch<T>);
}

}  // namespace

void register_activation(KernelTable& table) {
  register_typed<float>(table);
  register_typed<double>(table);
}

}  // namespace xylem::native
#endif  // HWY_ONCE
