// nn::dropout and nn::dropout_grad natively, f16/bf16/f32/f64, any strides.
// Element k (row-major logical index) is kept when
// xy_uniform01_f(xy_philox(seed, offset + k)) >= p, exactly as on every
// other framework: Philox runs vectorised (philox_simd-inl.h, the same
// code creation::uniform uses), the keep test is math.h's own.
// Kept elements are scaled by 1/(1-p) as x/(1-p) in the compute type.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3  // as in elementwise.cpp: saves compile time
#endif
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/philox_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/philox_simd-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>

#include "frameworks/native/ops/convert.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

HWY_EXPORT(PhiloxBlock);

namespace {

using plugin::OpCall;
using plugin::OpId;

// Philox costs more per element than the scaling: small chunks pay off.
constexpr std::int64_t kGrain = 4 * 1024;

// dropout (x -> y) and its gradient (dy -> dx) are the same map with the
// same mask; out may alias in exactly.
template <class T>
void apply_mask(const plugin::TensorArg& in_arg, const plugin::TensorArg& out_arg, std::int64_t seed_arg,
                std::int64_t offset, double drop) {
  using C = ComputeOf<T>;
  // The keep test compares f32 with f32, as frameworks without fp64 must.
  const float p = static_cast<float>(drop);
  const C keep_scale = C(1) - C(drop);
  const auto seed = static_cast<xy_u64>(seed_arg), counter = static_cast<xy_u64>(offset);
  const T* x = element_ptr<const T>(in_arg);
  T* y = element_ptr<T>(out_arg);
  const auto layout = make_layout<2>({&in_arg.view, &out_arg.view});
  const std::int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t first) {
    const T* in = x + offsets[0];
    T* out = y + offsets[1];
    alignas(64) std::uint64_t words[4][kPhiloxBlock];
    for (std::int64_t b = 0; b < count; b += std::int64_t(kPhiloxBlock)) {
      HWY_DYNAMIC_DISPATCH(PhiloxBlock)
      (seed, counter + static_cast<xy_u64>(first + b), words[0], words[1], words[2], words[3]);
      const std::int64_t m = std::min(std::int64_t(kPhiloxBlock), count - b);
      for (std::int64_t j = 0; j < m; ++j) {
        xy_philox_out r{};
        r.v[0] = static_cast<xy_u32>(words[0][j]);
        const bool keep = xy_uniform01_f(r) >= p;
        const std::int64_t k = b + j;
        out[k * sy] = keep ? from_compute<T>(to_compute(in[k * sx]) / keep_scale) : from_compute<T>(C(0));
      }
    }
  });
}

template <class T>
void dropout_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_dropout>(call);
  apply_mask<T>(a.x, a.y, a.seed, a.offset, a.p);
}

template <class T>
void dropout_grad_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_dropout_grad>(call);
  apply_mask<T>(a.dy, a.dx, a.seed, a.offset, a.p);
}

}  // namespace

void register_dropout(KernelTable& table) {
  for_float_types([&](auto type, DType d) {
    using T = typename decltype(type)::type;
    table.set(OpId::nn_dropout, d, &dropout_kernel<T>);
    table.set(OpId::nn_dropout_grad, d, &dropout_grad_kernel<T>);
  });
}

}  // namespace xylem::native
#endif  // HWY_ONCE
