// nn::softmax and nn::softmax_grad (log_softmax with i0 = 1) along axis 1 of
// [outer, r, inner] views.
//
// Forward, dense rows (inner == 1, unit stride, 16-byte aligned rows of up
// to 128 KiB): the row is read once into registers with 16-byte loads
// (8 to 32 lanes per row up to 2 KiB, a 256-thread block up to 32 KiB,
// 1024 threads beyond), its maximum and sum of exponentials reduced there, and
// the output written: one read and one write of memory, the bound.
// The gradient likewise, for rows up to 32 KiB (y and dy in registers).
// Everything else (columns, strided views, longer rows): the
// lanes of a block share each row or column (lanes.cuh), fold it with the
// online max/sum (max_sum.cuh) in one read, then read it again to write;
// the second read usually hits L2, which holds the rows in flight.
#include <cuda_runtime.h>

#include <cmath>

#include "block.cuh"
#include "lanes.cuh"
#include "max_sum.cuh"
#include "softmax_rows.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::TensorArg;

struct RowsArgs {
  std::int64_t outer, r, inner;
  std::int64_t as0, as1, as2;  // first input's strides (x, or y for the gradient)
  std::int64_t bs0, bs1, bs2;  // second input's (dy), gradient only
  std::int64_t ys0, ys1, ys2;  // output's
};

// Max (NaN propagating) and sum over the `width` lanes of a row: xor
// shuffles inside a warp, shared memory across the warps of a block that
// holds one row.
template <class C>
__device__ __forceinline__ C nan_max(C a, C b) {
  return (a > b || a != a) ? a : b;
}
template <bool Max, class C>
__device__ C row_all_reduce(C v, int width) {
  const int w = width < 32 ? width : 32;
  for (int o = w / 2; o > 0; o /= 2) {
    const C other = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? nan_max(v, other) : v + other;
  }
  if (width <= 32) return v;
  __shared__ C partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = width / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int k = 1; k < warps; ++k) v = Max ? nan_max(v, partial[k]) : v + partial[k];
  __syncthreads();
  return v;
}

// Rows held in registers: Width threads per row, Packs 16-byte packs per
// thread; r is a multiple of the pack's element count.
// softmax_epilogue.cpp generates this kernel's text with a tail after it:
// a change to how it reduces a row goes there too.
template <DType D, int Width, int Packs>
__global__ void __launch_bounds__(Width > 256 ? Width : 256)
    softmax_rows_in_registers(const StorageT<D>* x, StorageT<D>* y, RowsArgs a, bool log_softmax) {
  using R = Real<D>;
  using C = ComputeT<D>;
  using P = Pack16<StorageT<D>>;
  constexpr int E = P::size;
  const int lane = threadIdx.x % Width;
  const std::int64_t row = std::int64_t(blockIdx.x) * (blockDim.x / Width) + threadIdx.x / Width;
  const bool valid = row < a.outer;  // a block's rows share barriers: no early return
  const std::int64_t packs = a.r / E;
  const StorageT<D>* xr = x + (valid ? row : 0) * a.as0;
  P v[Packs];
#pragma unroll
  for (int k = 0; k < Packs; ++k) {
    const std::int64_t q = lane + std::int64_t(k) * Width;
    if (valid && q < packs) v[k] = load_pack<true>(xr + q * E);
  }
  C m = C(-INFINITY);
#pragma unroll
  for (int k = 0; k < Packs; ++k)
    if (valid && lane + std::int64_t(k) * Width < packs)
#pragma unroll
      for (int e = 0; e < E; ++e) m = nan_max(m, R::load(v[k].v[e]));
  m = row_all_reduce<true>(m, Width);
  // A row of -Inf: exp(x - m) would be NaN anyway (0/0); a NaN m poisons all.
  C s = C(0);
#pragma unroll
  for (int k = 0; k < Packs; ++k)
    if (valid && lane + std::int64_t(k) * Width < packs)
#pragma unroll
      for (int e = 0; e < E; ++e) s += exp(R::load(v[k].v[e]) - m);
  s = row_all_reduce<false>(s, Width);
  if (!valid) return;
  // log_softmax as (x - m) - log(s): folding m + log(s) first would lose
  // log(s) against a huge m.
  const C log_s = log(s), scale = C(1) / s;
  StorageT<D>* yr = y + row * a.ys0;
#pragma unroll
  for (int k = 0; k < Packs; ++k) {
    const std::int64_t q = lane + std::int64_t(k) * Width;
    if (q < packs) {
      P out;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const C t = R::load(v[k].v[e]) - m;
        out.v[e] = R::store(log_softmax ? t - log_s : exp(t) * scale);
      }
      store_pack(yr + q * E, out);
    }
  }
}

// The gradient's rows held in registers (y and dy), as the forward's:
// one read of each and one write.
template <DType D, int Width, int Packs>
__global__ void __launch_bounds__(256) softmax_grad_rows_in_registers(const StorageT<D>* y, const StorageT<D>* dy,
                                                                      StorageT<D>* dx, RowsArgs a, bool log_softmax) {
  using R = Real<D>;
  using C = ComputeT<D>;
  using P = Pack16<StorageT<D>>;
  constexpr int E = P::size;
  const int lane = threadIdx.x % Width;
  const std::int64_t row = std::int64_t(blockIdx.x) * (blockDim.x / Width) + threadIdx.x / Width;
  const bool valid = row < a.outer;  // a block's rows share barriers: no early return
  const std::int64_t packs = a.r / E;
  const StorageT<D>* yr = y + (valid ? row : 0) * a.as0;
  const StorageT<D>* gr = dy + (valid ? row : 0) * a.bs0;
  P yv[Packs], gv[Packs];
#pragma unroll
  for (int k = 0; k < Packs; ++k) {
    const std::int64_t q = lane + std::int64_t(k) * Width;
    if (valid && q < packs) yv[k] = load_pack<true>(yr + q * E), gv[k] = load_pack<true>(gr + q * E);
  }
  C s = C(0);
#pragma unroll
  for (int k = 0; k < Packs; ++k)
    if (valid && lane + std::int64_t(k) * Width < packs)
#pragma unroll
      for (int e = 0; e < E; ++e) s += log_softmax ? R::load(gv[k].v[e]) : R::load(gv[k].v[e]) * R::load(yv[k].v[e]);
  s = row_all_reduce<false>(s, Width);
  if (!valid) return;
  StorageT<D>* out = dx + row * a.ys0;
#pragma unroll
  for (int k = 0; k < Packs; ++k) {
    const std::int64_t q = lane + std::int64_t(k) * Width;
    if (q < packs) {
      P o;
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const C yy = R::load(yv[k].v[e]), g = R::load(gv[k].v[e]);
        o.v[e] = R::store(log_softmax ? g - exp(yy) * s : yy * (g - s));
      }
      store_pack(out + q * E, o);
    }
  }
}

// Any view: online statistics over the lanes, then the write pass.
template <DType D>
__global__ void __launch_bounds__(kLaneThreads)
    softmax_lanes(const StorageT<D>* x, StorageT<D>* y, RowsArgs a, bool rows, bool log_softmax) {
  using R = Real<D>;
  using C = ComputeT<D>;
  const LanePos p = lane_pos(rows, a.outer, a.inner);
  MaxSum<C> st = MaxSum<C>::empty();
  const StorageT<D>* xb = x + (p.valid ? p.o * a.as0 + p.i * a.as2 : 0);
  if (p.valid) fold_max_sum<R>(st, xb, a.as1, p.lane, a.r, p.lanes);
  st = combine_lanes(st, p, MergeMaxSum{});
  if (!p.valid) return;
  const C log_s = log(st.s), scale = C(1) / st.s;
  StorageT<D>* yb = y + p.o * a.ys0 + p.i * a.ys2;
  for (std::int64_t j = p.lane; j < a.r; j += p.lanes) {
    const C t = R::load(xb[j * a.as1]) - st.m;
    yb[j * a.ys1] = R::store(log_softmax ? t - log_s : exp(t) * scale);
  }
}

// softmax: dx = y*(dy - sum(dy*y)); log_softmax: dx = dy - exp(y)*sum(dy).
template <DType D>
__global__ void __launch_bounds__(kLaneThreads) softmax_grad_lanes(const StorageT<D>* y, const StorageT<D>* dy,
                                                                    StorageT<D>* dx, RowsArgs a, bool rows,
                                                                    bool log_softmax) {
  using R = Real<D>;
  using C = ComputeT<D>;
  const LanePos p = lane_pos(rows, a.outer, a.inner);
  const StorageT<D>* yb = y + (p.valid ? p.o * a.as0 + p.i * a.as2 : 0);
  const StorageT<D>* db = dy + (p.valid ? p.o * a.bs0 + p.i * a.bs2 : 0);
  C s = C(0);
  if (p.valid) {
    if (log_softmax)
      for (std::int64_t j = p.lane; j < a.r; j += p.lanes) s += R::load(db[j * a.bs1]);
    else
      for (std::int64_t j = p.lane; j < a.r; j += p.lanes) s += R::load(db[j * a.bs1]) * R::load(yb[j * a.as1]);
  }
  s = combine_lanes(s, p, [](C u, C v) { return u + v; });
  if (!p.valid) return;
  StorageT<D>* out = dx + p.o * a.ys0 + p.i * a.ys2;
  for (std::int64_t j = p.lane; j < a.r; j += p.lanes) {
    const C yv = R::load(yb[j * a.as1]), g = R::load(db[j * a.bs1]);
    out[j * a.ys1] = R::store(log_softmax ? g - exp(yv) * s : yv * (g - s));
  }
}

std::int64_t target_blocks(const Context& ctx) { return std::int64_t(ctx.multiprocessors) * kBlocksPerMultiprocessor; }

RowsArgs rows_args(const TensorArg& a, const TensorArg* b, const TensorArg& y) {
  RowsArgs r{};
  r.outer = y.view.dims()[0], r.r = y.view.dims()[1], r.inner = y.view.dims()[2];
  r.as0 = a.view.strides()[0], r.as1 = a.view.strides()[1], r.as2 = a.view.strides()[2];
  if (b != nullptr) r.bs0 = b->view.strides()[0], r.bs1 = b->view.strides()[1], r.bs2 = b->view.strides()[2];
  r.ys0 = y.view.strides()[0], r.ys1 = y.view.strides()[1], r.ys2 = y.view.strides()[2];
  return r;
}

// x: the input (forward) or y (gradient); g: dy (gradient) or null.
template <DType D, int Width, int Packs>
void launch_registers(const StorageT<D>* x, const StorageT<D>* g, StorageT<D>* y, const RowsArgs& a, bool log,
                      const Context& ctx) {
  constexpr int threads = Width > 256 ? Width : 256;
  constexpr int rows_per_block = threads / Width;
  const auto blocks = unsigned((a.outer + rows_per_block - 1) / rows_per_block);
  if (g == nullptr) {
    softmax_rows_in_registers<D, Width, Packs><<<blocks, threads, 0, ctx.stream>>>(x, y, a, log);
  } else if constexpr (Width <= 256) {
    softmax_grad_rows_in_registers<D, Width, Packs><<<blocks, threads, 0, ctx.stream>>>(x, g, y, a, log);
  }
}

// launch_registers of `shape`, if it is this instantiation's.
template <DType D, int Width, int Packs>
bool launch_shape(RowShape shape, const StorageT<D>* x, const StorageT<D>* g, StorageT<D>* y, const RowsArgs& a,
                  bool log, const Context& ctx) {
  if (shape != RowShape{Width, Packs}) return false;
  launch_registers<D, Width, Packs>(x, g, y, a, log, ctx);
  return true;
}

// The register shape that holds the rows (softmax_rows.hpp), if they are
// dense and aligned and one fits.
// The gradient (g: dy) holds two rows per thread: up to 32 KiB rows only.
template <DType D>
bool try_registers(const StorageT<D>* x, const StorageT<D>* g, StorageT<D>* y, const RowsArgs& a, bool log,
                   const Context& ctx) {
  constexpr int E = Pack16<StorageT<D>>::size;
  const std::int64_t row_bytes = a.r * std::int64_t(sizeof(StorageT<D>));
  bool dense = a.inner == 1 && a.as1 == 1 && a.ys1 == 1 && a.r % E == 0 && aligned16(x) && aligned16(y) &&
               (a.outer == 1 || (a.as0 % E == 0 && a.ys0 % E == 0));
  if (g != nullptr) dense = dense && a.bs1 == 1 && aligned16(g) && (a.outer == 1 || a.bs0 % E == 0);
  if (!dense || (g != nullptr && row_bytes > 32768)) return false;
  const RowShape s = softmax_row_shape(row_bytes);
  return launch_shape<D, 8, 1>(s, x, g, y, a, log, ctx) || launch_shape<D, 16, 1>(s, x, g, y, a, log, ctx) ||
         launch_shape<D, 32, 1>(s, x, g, y, a, log, ctx) || launch_shape<D, 32, 2>(s, x, g, y, a, log, ctx) ||
         launch_shape<D, 32, 4>(s, x, g, y, a, log, ctx) || launch_shape<D, 256, 1>(s, x, g, y, a, log, ctx) ||
         launch_shape<D, 256, 2>(s, x, g, y, a, log, ctx) || launch_shape<D, 256, 4>(s, x, g, y, a, log, ctx) ||
         launch_shape<D, 256, 8>(s, x, g, y, a, log, ctx) || launch_shape<D, 1024, 4>(s, x, g, y, a, log, ctx) ||
         launch_shape<D, 1024, 8>(s, x, g, y, a, log, ctx);
}

// x, y [outer, r, inner]; log = 1: log_softmax.
template <DType D>
void softmax(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_softmax>(c);
  const RowsArgs a = rows_args(args.x, nullptr, args.y);
  if (a.outer * a.inner == 0 || a.r == 0) return;
  const bool log = args.log != 0;
  const auto* x = element_ptr<const StorageT<D>>(args.x);
  auto* y = element_ptr<StorageT<D>>(args.y);
  if (!try_registers<D>(x, nullptr, y, a, log, ctx)) {
    const LanePlan plan = plan_lanes(a.r, a.outer, a.inner, sizeof(StorageT<D>), target_blocks(ctx));
    softmax_lanes<D><<<unsigned(plan.blocks(a.outer, a.inner)), plan.block(), 0, ctx.stream>>>(x, y, a, plan.rows,
                                                                                                log);
  }
  XY_CUDA_LAUNCHED(ctx.device, "nn::softmax");
}

template <DType D>
void softmax_grad(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_softmax_grad>(c);
  const RowsArgs a = rows_args(args.y, &args.dy, args.dx);
  if (a.outer * a.inner == 0 || a.r == 0) return;
  const bool log = args.log != 0;
  const auto* y = element_ptr<const StorageT<D>>(args.y);
  const auto* dy = element_ptr<const StorageT<D>>(args.dy);
  auto* dx = element_ptr<StorageT<D>>(args.dx);
  if (!try_registers<D>(y, dy, dx, a, log, ctx)) {
    const LanePlan plan = plan_lanes(a.r, a.outer, a.inner, sizeof(StorageT<D>), target_blocks(ctx));
    softmax_grad_lanes<D><<<unsigned(plan.blocks(a.outer, a.inner)), plan.block(), 0, ctx.stream>>>(y, dy, dx, a,
                                                                                                     plan.rows, log);
  }
  XY_CUDA_LAUNCHED(ctx.device, "nn::softmax_grad");
}

}  // namespace

void register_softmax(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(plugin::OpId::nn_softmax, D, &softmax<D>);
    table.set(plugin::OpId::nn_softmax_grad, D, &softmax_grad<D>);
  });
}

}  // namespace xylem::cuda
