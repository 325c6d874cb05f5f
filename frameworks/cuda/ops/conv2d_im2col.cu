// The convolution engine used without cuDNN: im2col + cuBLAS.
//
// For a chunk of images, im2col writes the columns [C*R*S, P*Q] of each
// image; each group is then one matrix product with its filters (strided
// batched over images or over groups, whichever needs fewer calls).
// grad_data multiplies by the transposed filters into columns kept in the
// compute type, then col2im gathers them into dx (each dx element sums its
// own R*S terms: no atomics, one rounding). grad_filter accumulates one
// product per image into the compute type, then rounds once.
// A 1x1, stride 1, unpadded convolution uses x itself as its columns.
// Columns live in temporary memory, at most kColumnBytes at a time.
#include <algorithm>
#include <optional>

#include "conv2d.hpp"
#include "gemm_rows.hpp"
#include "nchw.cuh"

namespace xylem::cuda {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kColumnBytes = std::size_t{256} << 20;

// col[b][c][r][s][p*Q + q] = x[n0 + b][c][p*sh - ph + r*dh][q*sw - pw + s*dw], 0 outside.
template <class T>
__global__ void __launch_bounds__(kThreads) im2col(const T* x, T* col, ConvShape s, Split4 split,
                                                   std::int64_t total) {
  const std::int64_t PQ = s.P * s.Q;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 o = split(k);  // (b, c, p, q)
    const T* plane = x + (o.i0 * s.C + o.i1) * s.H * s.W;
    T* out = col + (o.i0 * s.C + o.i1) * s.R * s.S * PQ + o.i2 * s.Q + o.i3;
    const std::int64_t h0 = o.i2 * s.stride_h - s.pad_h, w0 = o.i3 * s.stride_w - s.pad_w;
    for (std::int64_t r = 0; r < s.R; ++r) {
      const std::int64_t h = h0 + r * s.dil_h;
      for (std::int64_t q = 0; q < s.S; ++q) {
        const std::int64_t w = w0 + q * s.dil_w;
        out[(r * s.S + q) * PQ] = h >= 0 && h < s.H && w >= 0 && w < s.W ? plane[h * s.W + w] : T{};
      }
    }
  }
}

// dx[n0 + b][c][h][w] = sum of the column entries that im2col took from it.
template <DType D>
__global__ void __launch_bounds__(kThreads) col2im(const ComputeT<D>* col, StorageT<D>* dx, ConvShape s, Split4 split,
                                                   std::int64_t total) {
  using A = ComputeT<D>;
  const std::int64_t PQ = s.P * s.Q;
  for (std::int64_t k = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const Coord4 i = split(k);  // (b, c, h, w)
    const A* in = col + (i.i0 * s.C + i.i1) * s.R * s.S * PQ;
    A sum = 0;
    for (std::int64_t r = 0; r < s.R; ++r) {
      const std::int64_t ph = i.i2 + s.pad_h - r * s.dil_h;  // = p * stride_h
      if (ph < 0 || ph % s.stride_h != 0 || ph / s.stride_h >= s.P) continue;
      for (std::int64_t q = 0; q < s.S; ++q) {
        const std::int64_t pw = i.i3 + s.pad_w - q * s.dil_w;
        if (pw < 0 || pw % s.stride_w != 0 || pw / s.stride_w >= s.Q) continue;
        sum += in[(r * s.S + q) * PQ + (ph / s.stride_h) * s.Q + pw / s.stride_w];
      }
    }
    dx[k] = Real<D>::store(sum);  // dx is dense: k is its index within the chunk
  }
}

template <DType D>
__global__ void store_rounded(const ComputeT<D>* from, StorageT<D>* to, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    to[i] = Real<D>::store(from[i]);
}

template <DType D>
constexpr cudaDataType_t cuda_type_of() {
  if constexpr (D == DType::f16) return CUDA_R_16F;
  else if constexpr (D == DType::bf16) return CUDA_R_16BF;
  else if constexpr (D == DType::f32) return CUDA_R_32F;
  else return CUDA_R_64F;
}

// The scalars and compute type of cuBLAS calls for dtype D.
template <DType D>
struct GemmSetup {
  using Scalar = ComputeT<D>;
  static constexpr cudaDataType_t storage = cuda_type_of<D>();
  static constexpr cudaDataType_t compute_data = D == DType::f64 ? CUDA_R_64F : CUDA_R_32F;
  static cublasComputeType_t compute() {
    if constexpr (D == DType::f64) return CUBLAS_COMPUTE_64F;
    else if constexpr (D == DType::f32) return conv_tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    else return CUBLAS_COMPUTE_32F;
  }
};

struct Geometry {
  std::int64_t Cg, Kg, CRS, CgRS, PQ, HW;
  bool direct;  // 1x1, stride 1, no padding: the columns are x itself
};

Geometry geometry(const ConvShape& s) {
  const std::int64_t Cg = s.C / s.groups, Kg = s.K / s.groups;
  return {Cg, Kg, s.C * s.R * s.S, Cg * s.R * s.S, s.P * s.Q, s.H * s.W,
          s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_h == 0 && s.pad_w == 0};
}

std::int64_t images_per_chunk(const ConvShape& s, std::size_t bytes_per_image) {
  return std::clamp<std::int64_t>(std::int64_t(kColumnBytes / std::max<std::size_t>(bytes_per_image, 1)), 1, s.N);
}

// Columns of images [n0, n0 + nb) of x, or x itself when direct.
template <DType D>
const StorageT<D>* columns(const StorageT<D>* x, const ConvShape& s, const Geometry& g, std::int64_t n0,
                           std::int64_t nb, StorageT<D>* col, const Context& ctx) {
  if (g.direct) return x + n0 * s.C * g.HW;
  const std::int64_t total = nb * s.C * g.PQ;
  const std::int64_t dims[4] = {nb, s.C, s.P, s.Q};
  im2col<StorageT<D>><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(x + n0 * s.C * g.HW, col, s,
                                                                                    Split4(dims, total), total);
  XY_CUDA_LAUNCHED(ctx.device, "nn::conv2d (im2col)");
  return col;
}

template <DType D>
void forward(const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  using St = StorageT<D>;
  using G = GemmSetup<D>;
  const Geometry g = geometry(s);
  const auto* x = static_cast<const St*>(ops.in0);
  const auto* w = static_cast<const St*>(ops.in1);
  auto* y = static_cast<St*>(ops.out);
  const std::int64_t nb_max = g.direct ? s.N : images_per_chunk(s, std::size_t(g.CRS * g.PQ) * sizeof(St));
  std::optional<TempBuffer> col;
  if (!g.direct) col.emplace(ctx.temp(std::size_t(nb_max * g.CRS * g.PQ) * sizeof(St)));
  const typename G::Scalar one = 1, zero = 0;
  for (std::int64_t n0 = 0; n0 < s.N; n0 += nb_max) {
    const std::int64_t nb = std::min(nb_max, s.N - n0);
    const St* cols = columns<D>(x, s, g, n0, nb, col ? col->as<St>() : nullptr, ctx);
    // Per image, columns of group gi start at row gi*CgRS; per group, filters at row gi*Kg.
    const std::int64_t image_cols = g.CRS * g.PQ;  // also x's image size when direct
    if (s.groups <= nb) {
      for (std::int64_t gi = 0; gi < s.groups; ++gi)
        gemm_rows(ctx, "nn::conv2d", g.Kg, g.PQ, g.CgRS, &one, {w + gi * g.Kg * g.CgRS, G::storage, g.CgRS, 0},
                  {cols + gi * g.CgRS * g.PQ, G::storage, g.PQ, image_cols}, &zero,
                  {y + (n0 * s.K + gi * g.Kg) * g.PQ, G::storage, g.PQ, s.K * g.PQ}, nb, G::compute());
    } else {
      for (std::int64_t b = 0; b < nb; ++b)
        gemm_rows(ctx, "nn::conv2d", g.Kg, g.PQ, g.CgRS, &one, {w, G::storage, g.CgRS, g.Kg * g.CgRS},
                  {cols + b * image_cols, G::storage, g.PQ, g.CgRS * g.PQ}, &zero,
                  {y + (n0 + b) * s.K * g.PQ, G::storage, g.PQ, g.Kg * g.PQ}, s.groups, G::compute());
    }
  }
}

template <DType D>
void grad_data(const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  using St = StorageT<D>;
  using A = ComputeT<D>;
  using G = GemmSetup<D>;
  const Geometry g = geometry(s);
  const auto* dy = static_cast<const St*>(ops.in0);
  const auto* w = static_cast<const St*>(ops.in1);
  auto* dx = static_cast<St*>(ops.out);
  const std::int64_t nb_max = images_per_chunk(s, std::size_t(g.CRS * g.PQ) * sizeof(A));
  TempBuffer col = ctx.temp(std::size_t(nb_max * g.CRS * g.PQ) * sizeof(A));
  const A one = 1, zero = 0;
  for (std::int64_t n0 = 0; n0 < s.N; n0 += nb_max) {
    const std::int64_t nb = std::min(nb_max, s.N - n0);
    auto* cols = col.as<A>();
    // columns of group gi = w_gi^T [CgRS, Kg] x dy[n, gi] [Kg, PQ]
    if (s.groups <= nb) {
      for (std::int64_t gi = 0; gi < s.groups; ++gi)
        gemm_rows(ctx, "nn::conv2d_grad_data", g.CgRS, g.PQ, g.Kg, &one,
                  {w + gi * g.Kg * g.CgRS, G::storage, g.CgRS, 0, true},
                  {dy + (n0 * s.K + gi * g.Kg) * g.PQ, G::storage, g.PQ, s.K * g.PQ}, &zero,
                  {cols + gi * g.CgRS * g.PQ, G::compute_data, g.PQ, g.CRS * g.PQ}, nb, G::compute());
    } else {
      for (std::int64_t b = 0; b < nb; ++b)
        gemm_rows(ctx, "nn::conv2d_grad_data", g.CgRS, g.PQ, g.Kg, &one,
                  {w, G::storage, g.CgRS, g.Kg * g.CgRS, true},
                  {dy + (n0 + b) * s.K * g.PQ, G::storage, g.PQ, g.Kg * g.PQ}, &zero,
                  {cols + b * g.CRS * g.PQ, G::compute_data, g.PQ, g.CgRS * g.PQ}, s.groups, G::compute());
    }
    const std::int64_t total = nb * s.C * g.HW;
    const std::int64_t dims[4] = {nb, s.C, s.H, s.W};
    col2im<D><<<grid_over(total, kThreads, ctx), kThreads, 0, ctx.stream>>>(cols, dx + n0 * s.C * g.HW, s,
                                                                            Split4(dims, total), total);
    XY_CUDA_LAUNCHED(ctx.device, "nn::conv2d_grad_data (col2im)");
  }
}

template <DType D>
void grad_filter(const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  using St = StorageT<D>;
  using A = ComputeT<D>;
  using G = GemmSetup<D>;
  const Geometry g = geometry(s);
  const auto* x = static_cast<const St*>(ops.in0);
  const auto* dy = static_cast<const St*>(ops.in1);
  const std::int64_t filter_elems = s.K * g.CgRS;
  if (s.N == 0) {  // an empty sum: all bits zero is +0 in every float dtype
    XY_CUDA(cudaMemsetAsync(ops.out, 0, std::size_t(filter_elems) * sizeof(St), ctx.stream), ctx.device,
            "nn::conv2d_grad_filter");
    return;
  }
  // f32 and f64 accumulate in dw itself; f16 and bf16 in an f32 copy.
  constexpr bool same = sizeof(St) == sizeof(A);
  std::optional<TempBuffer> acc_buffer;
  if constexpr (!same) acc_buffer.emplace(ctx.temp(std::size_t(filter_elems) * sizeof(A)));
  A* acc = same ? static_cast<A*>(ops.out) : acc_buffer->as<A>();
  const std::int64_t nb_max = g.direct ? s.N : images_per_chunk(s, std::size_t(g.CRS * g.PQ) * sizeof(St));
  std::optional<TempBuffer> col;
  if (!g.direct) col.emplace(ctx.temp(std::size_t(nb_max * g.CRS * g.PQ) * sizeof(St)));
  const A one = 1, zero = 0;
  for (std::int64_t n0 = 0; n0 < s.N; n0 += nb_max) {
    const std::int64_t nb = std::min(nb_max, s.N - n0);
    const St* cols = columns<D>(x, s, g, n0, nb, col ? col->as<St>() : nullptr, ctx);
    const std::int64_t image_cols = g.CRS * g.PQ;
    for (std::int64_t b = 0; b < nb; ++b) {
      // dw[gi] (+)= dy[n, gi] [Kg, PQ] x columns[n, gi]^T [PQ, CgRS], batched over groups
      gemm_rows(ctx, "nn::conv2d_grad_filter", g.Kg, g.CgRS, g.PQ, &one,
                {dy + (n0 + b) * s.K * g.PQ, G::storage, g.PQ, g.Kg * g.PQ},
                {cols + b * image_cols, G::storage, g.PQ, g.CgRS * g.PQ, true}, n0 + b == 0 ? &zero : &one,
                {acc, G::compute_data, g.CgRS, g.Kg * g.CgRS}, s.groups, G::compute());
    }
  }
  if constexpr (!same) {
    store_rounded<D><<<grid_over(filter_elems, kThreads, ctx), kThreads, 0, ctx.stream>>>(
        acc, static_cast<St*>(ops.out), filter_elems);
    XY_CUDA_LAUNCHED(ctx.device, "nn::conv2d_grad_filter");
  }
}

template <DType D>
void run(ConvPass pass, const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  switch (pass) {
    case ConvPass::forward: forward<D>(s, ops, ctx); break;
    case ConvPass::grad_data: grad_data<D>(s, ops, ctx); break;
    case ConvPass::grad_filter: grad_filter<D>(s, ops, ctx); break;
  }
}

}  // namespace

void conv_im2col(ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops, const Context& ctx) {
  switch (dtype) {
    case DType::f16: run<DType::f16>(pass, s, ops, ctx); break;
    case DType::bf16: run<DType::bf16>(pass, s, ops, ctx); break;
    case DType::f32: run<DType::f32>(pass, s, ops, ctx); break;
    default: run<DType::f64>(pass, s, ops, ctx); break;
  }
}

}  // namespace xylem::cuda
