// blas level 1 (our kernels: any stride, also negative, results stay on the
// GPU) and gemm (cuBLAS). Semantics follow native's blas.cpp: empty sums are
// 0, iamax is 0-based, the first maximum in the view's order (a NaN is
// larger than everything: the first NaN wins, as NumPy's argmax; cuBLAS's
// Isamax does not do this, so it is not used), -1 when empty; iamin the
// same with the minimum (cuBLAS's Isamin is passed over likewise).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <string>

#include "gemm_rows.hpp"
#include "map.cuh"
#include "nrm2.cuh"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr int kReduceThreads = 256;
constexpr int kMaxPartials = 1024;
static_assert(kMaxPartials * (sizeof(double) + sizeof(std::int64_t)) <= Context::kScratchBytes);
static_assert(kMaxPartials * 3 * sizeof(double) <= Context::kScratchBytes);  // nrm2's three sums

// A rank-1 view: element i is first[i * stride].
template <class T>
struct Strided {
  T* first;
  std::int64_t n;
  std::int64_t stride;
};

template <class T>
Strided<T> vec(const TensorArg& a) noexcept {
  return {element_ptr<T>(a), a.view.dims()[0], a.view.dims()[0] > 1 ? a.view.strides()[0] : 1};
}

// ---- sums: asum, dot, accumulated in double (nrm2: nrm2.cuh) ------------
struct AbsTerm {
  template <class T>
  __device__ double operator()(T x, T) const { return fabs(double(x)); }
};
struct ProductTerm {
  template <class T>
  __device__ double operator()(T x, T y) const { return double(x) * double(y); }
};

__device__ double block_sum(double v) {
  __shared__ double warp_sums[kReduceThreads / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0;
  if (warp == 0)
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;  // in thread 0
}

template <class T, class Term>
__global__ void __launch_bounds__(kReduceThreads)
    sum_partials(Strided<const T> x, Strided<const T> y, double* partials, Term term) {
  double s = 0;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < x.n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    s += term(x.first[i * x.stride], y.first[i * y.stride]);
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

template <class T>
__global__ void __launch_bounds__(kReduceThreads) sum_finish(const double* partials, int count, T* result) {
  double s = 0;
  for (int i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *result = static_cast<T>(s);
}

[[nodiscard]] int reduce_grid(std::int64_t n, const Context& ctx) {
  const std::int64_t wanted = (n + kReduceThreads * 8 - 1) / (kReduceThreads * 8);
  return int(std::clamp<std::int64_t>(wanted, 1, std::min(kMaxPartials, ctx.multiprocessors * 8)));
}

template <class T, class Term>
void sum_kernel(const Context& ctx, std::string_view what, Strided<const T> x, Strided<const T> y,
                const TensorArg& result) {
  auto* partials = static_cast<double*>(ctx.scratch);
  int count = 0;
  if (x.n > 0) {
    count = reduce_grid(x.n, ctx);
    sum_partials<T, Term><<<count, kReduceThreads, 0, ctx.stream>>>(x, y, partials, Term{});
    XY_CUDA_LAUNCHED(ctx.device, what);
  }
  sum_finish<T><<<1, kReduceThreads, 0, ctx.stream>>>(partials, count, element_ptr<T>(result));
  XY_CUDA_LAUNCHED(ctx.device, what);
}

template <class T>
Strided<const T> as_const(Strided<T> v) {
  return {v.first, v.n, v.stride};
}

template <class T>
void asum(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_asum>(c);
  const auto x = as_const(vec<T>(args.x));
  sum_kernel<T, AbsTerm>(ctx, "blas::asum", x, x, args.result);
}
template <class T>
void nrm2(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_nrm2>(c);
  const auto x = as_const(vec<T>(args.x));
  nrm2::launch<T>(ctx, x.first, x.n, x.stride, x.n > 0 ? reduce_grid(x.n, ctx) : 0, element_ptr<T>(args.result));
}
template <class T>
void dot(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_dot>(c);
  sum_kernel<T, ProductTerm>(ctx, "blas::dot", as_const(vec<T>(args.x)), as_const(vec<T>(args.y)), args.result);
}

// ---- iamax, iamin (Least) ---------------------------------------------------
struct Best {
  double value;
  std::int64_t index;  // -1: none yet
};

// v beyond `than`: larger for iamax, smaller for iamin.
template <bool Least>
__device__ bool beyond(double v, double than) {
  return Least ? v < than : v > than;
}

template <bool Least>
__device__ Best better(Best a, Best b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (isnan(a.value)) return isnan(b.value) && b.index < a.index ? b : a;
  if (isnan(b.value) || beyond<Least>(b.value, a.value) || (b.value == a.value && b.index < a.index)) return b;
  return a;
}

template <bool Least>
__device__ Best block_best(Best v) {
  __shared__ Best warp_best[kReduceThreads / 32];
  for (int o = 16; o > 0; o /= 2) {
    Best other{__shfl_down_sync(0xffffffffu, v.value, o), __shfl_down_sync(0xffffffffu, v.index, o)};
    v = better<Least>(v, other);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_best[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? warp_best[threadIdx.x] : Best{0, -1};
  if (warp == 0)
    for (int o = 16; o > 0; o /= 2) {
      Best other{__shfl_down_sync(0xffffffffu, v.value, o), __shfl_down_sync(0xffffffffu, v.index, o)};
      v = better<Least>(v, other);
    }
  return v;
}

template <class T, bool Least>
__global__ void __launch_bounds__(kReduceThreads) iamax_partials(Strided<const T> x, double* values, std::int64_t* indices) {
  Best b{0, -1};
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < x.n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const double v = fabs(double(x.first[i * x.stride]));
    // i only grows: ties keep the first, and so does a NaN (nothing is beyond it).
    if (b.index < 0 || beyond<Least>(v, b.value) || (isnan(v) && !isnan(b.value))) b = {v, i};
  }
  b = block_best<Least>(b);
  if (threadIdx.x == 0) values[blockIdx.x] = b.value, indices[blockIdx.x] = b.index;
}

template <bool Least>
__global__ void __launch_bounds__(kReduceThreads)
    iamax_finish(const double* values, const std::int64_t* indices, int count, std::int64_t* result) {
  Best b{0, -1};
  for (int i = threadIdx.x; i < count; i += blockDim.x) b = better<Least>(b, Best{values[i], indices[i]});
  b = block_best<Least>(b);
  if (threadIdx.x == 0) *result = b.index;
}

template <class T, template <class> class Args, bool Least>
void iamax(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<Args>(c);
  const char* const what = Least ? "blas::iamin" : "blas::iamax";
  const auto x = as_const(vec<T>(args.x));
  auto* values = static_cast<double*>(ctx.scratch);
  auto* indices = reinterpret_cast<std::int64_t*>(values + kMaxPartials);
  int count = 0;
  if (x.n > 0) {
    count = reduce_grid(x.n, ctx);
    iamax_partials<T, Least><<<count, kReduceThreads, 0, ctx.stream>>>(x, values, indices);
    XY_CUDA_LAUNCHED(ctx.device, what);
  }
  iamax_finish<Least><<<1, kReduceThreads, 0, ctx.stream>>>(values, indices, count,
                                                             element_ptr<std::int64_t>(args.result));
  XY_CUDA_LAUNCHED(ctx.device, what);
}

// ---- elementwise level 1 --------------------------------------------------
template <class T>
struct Axpy {
  T alpha;
  __device__ T operator()(std::int64_t, T x, T y) const { return alpha * x + y; }
};
template <class T>
struct Scale {
  T alpha;
  __device__ T operator()(std::int64_t, T x) const { return alpha * x; }
};
template <class T>
struct Zero {
  __device__ T operator()(std::int64_t) const { return T(0); }
};
struct Same {
  template <class T>
  __device__ T operator()(std::int64_t, T x) const { return x; }
};

template <class T>
void axpy(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_axpy>(c);
  map<T>(ctx, "blas::axpy", Axpy<T>{static_cast<T>(args.alpha)}, args.y, args.x, args.y);
}
template <class T>
void scal(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_scal>(c);
  map<T>(ctx, "blas::scal", Scale<T>{static_cast<T>(args.alpha)}, args.x, args.x);
}
template <class T>
void copy(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_copy>(c);
  map<T>(ctx, "blas::copy", Same{}, args.y, args.x);
}

template <class T>
__global__ void swap_kernel(Strided<T> x, Strided<T> y) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < x.n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const T t = x.first[i * x.stride];
    x.first[i * x.stride] = y.first[i * y.stride];
    y.first[i * y.stride] = t;
  }
}

template <class T>
void swap(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_swap>(c);
  const auto x = vec<T>(args.x), y = vec<T>(args.y);
  if (x.n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(swap_kernel<T>);
  swap_kernel<T><<<grid_for(x.n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(x, y);
  XY_CUDA_LAUNCHED(ctx.device, "blas::swap");
}

// (x, y) <- (c*x + s*y, c*y - s*x), in place, any strides.
template <class T>
__global__ void rot_kernel(Strided<T> x, Strided<T> y, T c, T s) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < x.n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const T xi = x.first[i * x.stride], yi = y.first[i * y.stride];
    x.first[i * x.stride] = c * xi + s * yi;
    y.first[i * y.stride] = c * yi - s * xi;
  }
}

template <class T>
void rot(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_rot>(c);
  const auto x = vec<T>(args.x), y = vec<T>(args.y);
  if (x.n == 0) return;
  static const int per_sm = blocks_per_multiprocessor(rot_kernel<T>);
  rot_kernel<T><<<grid_for(x.n, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(x, y, T(args.c), T(args.s));
  XY_CUDA_LAUNCHED(ctx.device, "blas::rot");
}

// ---- gemm ------------------------------------------------------------------
// Full fp32 unless the user opts in to TF32 (tf32_allowed, gemm_rows.hpp).

int blas_int(std::int64_t v) {
  if (v > INT32_MAX)
    throw Error(ErrorCode::invalid_argument,
                "blas::gemm: dimension " + std::to_string(v) + " exceeds cuBLAS's 32-bit limit");
  return int(v);
}

// Leading dimension of a row-major matrix view; with one row the stride is
// meaningless, but cuBLAS still checks ld >= columns.
int leading_dim(const TensorArg& m) {
  const std::int64_t rows = m.view.dims()[0], cols = m.view.dims()[1];
  return blas_int(rows > 1 ? m.view.strides()[0] : std::max<std::int64_t>(1, cols));
}

template <class T>
void gemm(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::blas_gemm>(c);
  const TensorArg &a = args.a, &b = args.b, &out = args.c;
  const bool ta = args.transpose_a != 0, tb = args.transpose_b != 0;
  const std::int64_t m = out.view.dims()[0], n = out.view.dims()[1];
  const std::int64_t k = ta ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return;
  const T alpha = static_cast<T>(args.alpha), beta = static_cast<T>(args.beta);
  if (k == 0) {  // c = beta*c, without reading c when beta is 0
    if (beta == T(0))
      map<T>(ctx, "blas::gemm", Zero<T>{}, out);  // not 0*c: c may hold NaN
    else
      map<T>(ctx, "blas::gemm", Scale<T>{beta}, out, out);
    return;
  }
  constexpr bool single = sizeof(T) == 4;
  constexpr cudaDataType_t type = single ? CUDA_R_32F : CUDA_R_64F;
  const cublasComputeType_t compute =
      !single ? CUBLAS_COMPUTE_64F : tf32_allowed() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the
  // same memory, with the operands swapped.
  XY_CUBLAS(cublasGemmEx(ctx.blas->handle(ctx.stream), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                         blas_int(n), blas_int(m), blas_int(k), &alpha, element_ptr<const T>(b), type, leading_dim(b),
                         element_ptr<const T>(a), type, leading_dim(a), &beta, element_ptr<T>(out), type,
                         leading_dim(out), compute, CUBLAS_GEMM_DEFAULT),
            ctx.device, "blas::gemm");
}

// f16 and bf16: storage is the raw 16 bits; products accumulate in f32
// (CUBLAS_COMPUTE_32F, so alpha and beta are float), the result is rounded
// once to the output type. Tensor cores on every GPU that has them.
template <DType D>
struct Half;
template <>
struct Half<DType::f16> {
  static constexpr cudaDataType_t type = CUDA_R_16F;
  __device__ static float to_float(std::uint16_t v) { return __half2float(__ushort_as_half(v)); }
  __device__ static std::uint16_t from_float(float v) { return __half_as_ushort(__float2half_rn(v)); }
};
template <>
struct Half<DType::bf16> {
  static constexpr cudaDataType_t type = CUDA_R_16BF;
  __device__ static float to_float(std::uint16_t v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
  __device__ static std::uint16_t from_float(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};

template <DType D>
struct HalfScale {
  float beta;
  __device__ std::uint16_t operator()(std::int64_t, std::uint16_t x) const {
    return Half<D>::from_float(beta * Half<D>::to_float(x));
  }
};

template <DType D>
void gemm_half(const OpCall& c, const Context& ctx) {
  using Bits = std::uint16_t;
  const auto args = plugin::unpack<plugin::args::blas_gemm>(c);
  const TensorArg &a = args.a, &b = args.b, &out = args.c;
  const bool ta = args.transpose_a != 0, tb = args.transpose_b != 0;
  const std::int64_t m = out.view.dims()[0], n = out.view.dims()[1];
  const std::int64_t k = ta ? a.view.dims()[0] : a.view.dims()[1];
  if (m == 0 || n == 0) return;
  const float alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);
  if (k == 0) {  // c = beta*c, without reading c when beta is 0
    if (beta == 0.0f)
      map<Bits>(ctx, "blas::gemm", Zero<Bits>{}, out);  // +0 in both formats; not 0*c: c may hold NaN
    else
      map<Bits>(ctx, "blas::gemm", HalfScale<D>{beta}, out, out);
    return;
  }
  constexpr cudaDataType_t type = Half<D>::type;
  // The same row-major identity as gemm above.
  XY_CUBLAS(cublasGemmEx(ctx.blas->handle(ctx.stream), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                         blas_int(n), blas_int(m), blas_int(k), &alpha, element_ptr<const Bits>(b), type,
                         leading_dim(b), element_ptr<const Bits>(a), type, leading_dim(a), &beta,
                         element_ptr<Bits>(out), type, leading_dim(out), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            ctx.device, "blas::gemm");
}

template <class T>
void register_typed(KernelTable& table) {
  constexpr DType d = dtype_of_v<T>;
  table.set(OpId::blas_asum, d, &asum<T>);
  table.set(OpId::blas_axpy, d, &axpy<T>);
  table.set(OpId::blas_copy, d, &copy<T>);
  table.set(OpId::blas_dot, d, &dot<T>);
  table.set(OpId::blas_nrm2, d, &nrm2<T>);
  table.set(OpId::blas_scal, d, &scal<T>);
  table.set(OpId::blas_swap, d, &swap<T>);
  table.set(OpId::blas_rot, d, &rot<T>);
  table.set(OpId::blas_iamax, d, &iamax<T, plugin::args::blas_iamax, false>);
  table.set(OpId::blas_iamin, d, &iamax<T, plugin::args::blas_iamin, true>);
  table.set(OpId::blas_gemm, d, &gemm<T>);
}

}  // namespace

void register_blas(KernelTable& table) {
  register_typed<float>(table);
  register_typed<double>(table);
  table.set(OpId::blas_gemm, DType::f16, &gemm_half<DType::f16>);
  table.set(OpId::blas_gemm, DType::bf16, &gemm_half<DType::bf16>);
}

}  // namespace xylem::cuda
