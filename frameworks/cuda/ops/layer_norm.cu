// nn::layer_norm and its gradients (conventions in plugin.hpp).
//
// Forward and grad_input: one block per row. A row of up to ~32K elements is
// read once into registers (16-byte loads where the row is dense and
// aligned), so the mean, the variance (two passes over the registers: the
// numerically sound form) and the output cost one read and one write of
// memory; longer rows are streamed from memory in three passes instead.
// grad_params: column sums over rows, tiled 32 columns wide, partial sums per
// row range, then a fixed-order finish (deterministic).
#include <algorithm>
#include <initializer_list>
#include <optional>

#include "block.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

// A [rows, n] view (or a rank-1 [n] one with row stride 0).
template <class T>
struct Rows {
  T* p = nullptr;
  std::int64_t rs = 0, cs = 0;
};

template <class T>
Rows<T> rows_of(const TensorArg& a) {
  if (a.data == nullptr) return {};
  if (a.view.rank() == 1) return {element_ptr<T>(a), 0, a.view.strides()[0]};
  return {element_ptr<T>(a), a.view.strides()[0], a.view.strides()[1]};
}

// Chunk c of a row: W elements, 16 bytes at once when W > 1 (the caller
// checked density and alignment).
template <int W, DType D, bool Streaming = true>
__device__ __forceinline__ void load_row_chunk(const Rows<const StorageT<D>>& r, std::int64_t row, std::int64_t c,
                                               ComputeT<D> (&v)[W]) {
  const StorageT<D>* p = r.p + row * r.rs;
  if constexpr (W == 1) {
    v[0] = Real<D>::load(p[c * r.cs]);
  } else {
    const Pack16<StorageT<D>> x = load_pack<Streaming>(p + c * W);
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = Real<D>::load(x.v[e]);
  }
}

template <int W, DType D>
__device__ __forceinline__ void store_row_chunk(const Rows<StorageT<D>>& r, std::int64_t row, std::int64_t c,
                                                const ComputeT<D> (&v)[W]) {
  StorageT<D>* p = r.p + row * r.rs;
  if constexpr (W == 1) {
    p[c * r.cs] = Real<D>::store(v[0]);
  } else {
    Pack16<StorageT<D>> y;
#pragma unroll
    for (int e = 0; e < W; ++e) y.v[e] = Real<D>::store(v[e]);
    store_pack(p + c * W, y);
  }
}

// gamma/beta style parameters: a chunk of a rank-1 view, or `absent` where
// the tensor is absent.
template <int W, DType D>
__device__ __forceinline__ void load_param(const Rows<const StorageT<D>>& r, std::int64_t c, ComputeT<D> absent,
                                           ComputeT<D> (&v)[W]) {
  if (r.p == nullptr) {
#pragma unroll
    for (int e = 0; e < W; ++e) v[e] = absent;
  } else {
    load_row_chunk<W, D, false>(r, 0, c, v);
  }
}

// Visits chunk c = threadIdx.x + k*blockDim.x of the row: from registers
// (VPT > 0, k < VPT) or, for rows too long for them (VPT == 0), every chunk
// the thread owns, loaded afresh.
template <int VPT, class F>
__device__ __forceinline__ void for_chunks(std::int64_t chunks, F&& f) {
  if constexpr (VPT > 0) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const std::int64_t c = threadIdx.x + std::int64_t(k) * blockDim.x;
      if (c < chunks) f(k, c);
    }
  } else {
    for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) f(0, c);
  }
}

template <DType D>
struct ForwardArgs {
  Rows<const StorageT<D>> x, gamma, beta;
  Rows<StorageT<D>> y;
  ComputeT<D>* mean;
  ComputeT<D>* rstd;
  std::int64_t mean_stride, rstd_stride;
  std::int64_t rows, n;
  ComputeT<D> eps;
  bool rms;  // RMS normalisation: mean 0, var = mean of squares
};

template <DType D, int W, int VPT>
__global__ void __launch_bounds__(1024) layer_norm_rows(ForwardArgs<D> a) {
  using A = ComputeT<D>;
  constexpr int K = VPT > 0 ? VPT : 1;
  const std::int64_t chunks = a.n / W;
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    A v[K][W];
    A sum = 0;
    for_chunks<VPT>(chunks, [&](int k, std::int64_t c) {
      load_row_chunk<W, D>(a.x, row, c, v[k]);
#pragma unroll
      for (int e = 0; e < W; ++e) sum += v[k][e];
    });
    // a.rms is the same for the whole block, so block_sum's barriers stay
    // uniform. The registers are loaded above either way.
    const A mean = a.rms ? A(0) : block_sum(sum) / A(a.n);
    A sq = 0;
    for_chunks<VPT>(chunks, [&](int k, std::int64_t c) {
      if constexpr (VPT == 0) load_row_chunk<W, D>(a.x, row, c, v[k]);
#pragma unroll
      for (int e = 0; e < W; ++e) sq += (v[k][e] - mean) * (v[k][e] - mean);
    });
    const A rstd = A(1) / sqrt(block_sum(sq) / A(a.n) + a.eps);
    if (threadIdx.x == 0) {
      if (a.mean) a.mean[row * a.mean_stride] = mean;
      if (a.rstd) a.rstd[row * a.rstd_stride] = rstd;
    }
    for_chunks<VPT>(chunks, [&](int k, std::int64_t c) {
      if constexpr (VPT == 0) load_row_chunk<W, D>(a.x, row, c, v[k]);
      A g[W], b[W];
      load_param<W, D>(a.gamma, c, A(1), g);
      load_param<W, D>(a.beta, c, A(0), b);
#pragma unroll
      for (int e = 0; e < W; ++e) v[k][e] = (v[k][e] - mean) * rstd * g[e] + b[e];
      store_row_chunk<W, D>(a.y, row, c, v[k]);
    });
  }
}

template <DType D>
struct GradInputArgs {
  Rows<const StorageT<D>> x, gamma, dy;
  Rows<StorageT<D>> dx;
  const ComputeT<D>* mean;
  const ComputeT<D>* rstd;
  std::int64_t mean_stride, rstd_stride;
  std::int64_t rows, n;
  bool rms;  // RMS normalisation: no mean_j(g) term
};

// dx = rstd*(g - mean_j(g) - xh*mean_j(g*xh)), xh = (x-mean)*rstd, g = dy*gamma.
template <DType D, int W, int VPT>
__global__ void __launch_bounds__(1024) layer_norm_grad_rows(GradInputArgs<D> a) {
  using A = ComputeT<D>;
  constexpr int K = VPT > 0 ? VPT : 1;
  const std::int64_t chunks = a.n / W;
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const A mean = a.mean[row * a.mean_stride], rstd = a.rstd[row * a.rstd_stride];
    A xv[K][W], dyv[K][W];
    A sum_g = 0, sum_gxh = 0;
    for_chunks<VPT>(chunks, [&](int k, std::int64_t c) {
      load_row_chunk<W, D>(a.x, row, c, xv[k]);
      load_row_chunk<W, D>(a.dy, row, c, dyv[k]);
      A gm[W];
      load_param<W, D>(a.gamma, c, A(1), gm);
#pragma unroll
      for (int e = 0; e < W; ++e) {
        const A g = dyv[k][e] * gm[e];
        sum_g += g;
        sum_gxh += g * (xv[k][e] - mean) * rstd;
      }
    });
    block_sum2(sum_g, sum_gxh);
    const A mean_g = a.rms ? A(0) : sum_g / A(a.n), mean_gxh = sum_gxh / A(a.n);
    for_chunks<VPT>(chunks, [&](int k, std::int64_t c) {
      if constexpr (VPT == 0) {
        load_row_chunk<W, D>(a.x, row, c, xv[k]);
        load_row_chunk<W, D>(a.dy, row, c, dyv[k]);
      }
      A gm[W];
      load_param<W, D>(a.gamma, c, A(1), gm);
#pragma unroll
      for (int e = 0; e < W; ++e) {
        const A xh = (xv[k][e] - mean) * rstd;
        xv[k][e] = rstd * (dyv[k][e] * gm[e] - mean_g - xh * mean_gxh);
      }
      store_row_chunk<W, D>(a.dx, row, c, xv[k]);
    });
  }
}

// ---- launch configuration -------------------------------------------------

// Whether every [rows, n] view can take 16-byte chunks: dense rows, aligned
// starts, n a multiple of the vector width.
template <class T>
bool vectorizable(std::int64_t rows, std::int64_t n, std::initializer_list<const TensorArg*> row_views,
                  std::initializer_list<const TensorArg*> params) {
  constexpr std::int64_t V = 16 / sizeof(T);
  if (n % V != 0) return false;
  for (const TensorArg* t : row_views) {
    if (!aligned16(element_ptr<const T>(*t))) return false;
    if (n > 1 && t->view.strides()[1] != 1) return false;
    if (rows > 1 && (t->view.strides()[0] * std::int64_t(sizeof(T))) % 16 != 0) return false;
  }
  for (const TensorArg* t : params) {
    if (t->data == nullptr) continue;
    if (!aligned16(element_ptr<const T>(*t)) || (n > 1 && t->view.strides()[0] != 1)) return false;
  }
  return true;
}

// Chunks per thread held in registers (0: stream) and threads per block.
// Blocks of at most 512 threads while the row fits that way, else up to
// 1024; `arrays` rows of W values per thread must stay within ~32 registers.
struct RowConfig {
  int vpt;
  int threads;
};

// (f64 values take register pairs and their arithmetic more temporaries:
// half the bytes, measured free of spills with ptxas -v.)
constexpr bool fits_registers(int vpt, int w, int acc_bytes, int arrays) {
  return vpt * w * acc_bytes * arrays <= (acc_bytes == 8 ? 64 : 128) || vpt == 1;
}

RowConfig row_config(std::int64_t chunks, int w, int acc_bytes, int arrays) {
  auto threads_for = [&](int vpt) { return int(std::max<std::int64_t>(32, (chunks + vpt - 1) / vpt + 31) / 32 * 32); };
  for (int cap : {512, 1024})
    for (int vpt = 1; vpt <= 8 && fits_registers(vpt, w, acc_bytes, arrays); vpt *= 2)
      if (chunks <= std::int64_t(cap) * vpt) return {vpt, threads_for(vpt)};
  return {0, 1024};
}

int row_grid(std::int64_t rows) { return int(std::min<std::int64_t>(rows, INT32_MAX)); }

// Launches Launcher<D, W, VPT> for the VPT row_config chose; VPTs over the
// register budget are never chosen, so they are not instantiated.
template <template <DType, int, int> class Launcher, DType D, int W, int Arrays, class Args>
void launch_rows(const Context& ctx, std::string_view what, const Args& a) {
  constexpr int acc = int(sizeof(ComputeT<D>));
  const RowConfig cfg = row_config(a.n / W, W, acc, Arrays);
  const dim3 grid(row_grid(a.rows)), block(cfg.threads);
  auto run = [&]<int VPT>() {
    if constexpr (VPT == 0 || fits_registers(VPT, W, acc, Arrays)) Launcher<D, W, VPT>::run(grid, block, ctx.stream, a);
  };
  switch (cfg.vpt) {
    case 1: run.template operator()<1>(); break;
    case 2: run.template operator()<2>(); break;
    case 4: run.template operator()<4>(); break;
    case 8: run.template operator()<8>(); break;
    default: run.template operator()<0>(); break;
  }
  XY_CUDA_LAUNCHED(ctx.device, what);
}

template <DType D, int W, int VPT>
struct ForwardLauncher {
  static void run(dim3 g, dim3 b, cudaStream_t s, const ForwardArgs<D>& a) {
    layer_norm_rows<D, W, VPT><<<g, b, 0, s>>>(a);
  }
};
template <DType D, int W, int VPT>
struct GradLauncher {
  static void run(dim3 g, dim3 b, cudaStream_t s, const GradInputArgs<D>& a) {
    layer_norm_grad_rows<D, W, VPT><<<g, b, 0, s>>>(a);
  }
};

template <DType D>
void layer_norm(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_layer_norm>(c);
  const TensorArg &x = args.x, &y = args.y;
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (rows == 0) return;
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const ForwardArgs<D> a{rows_of<const S>(x), rows_of<const S>(args.gamma), rows_of<const S>(args.beta),
                         rows_of<S>(y), optional_ptr<A>(args.mean), optional_ptr<A>(args.rstd),
                         stride_of(args.mean, 0), stride_of(args.rstd, 0), rows, n, A(args.eps),
                         args.rms != 0};
  constexpr int V = 16 / sizeof(S);
  if (vectorizable<S>(rows, n, {&x, &y}, {&args.gamma, &args.beta}))
    launch_rows<ForwardLauncher, D, V, 1>(ctx, "nn::layer_norm", a);
  else
    launch_rows<ForwardLauncher, D, 1, 1>(ctx, "nn::layer_norm", a);
}

template <DType D>
void layer_norm_grad_input(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_layer_norm_grad_input>(c);
  const TensorArg &x = args.x, &dy = args.dy, &dx = args.dx;
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (rows == 0) return;
  using S = StorageT<D>;
  using A = ComputeT<D>;
  const GradInputArgs<D> a{rows_of<const S>(x), rows_of<const S>(args.gamma), rows_of<const S>(dy),
                           rows_of<S>(dx), element_ptr<const A>(args.mean), element_ptr<const A>(args.rstd),
                           stride_of(args.mean, 0), stride_of(args.rstd, 0), rows, n, args.rms != 0};
  constexpr int V = 16 / sizeof(S);
  if (vectorizable<S>(rows, n, {&x, &dy, &dx}, {&args.gamma}))
    launch_rows<GradLauncher, D, V, 2>(ctx, "nn::layer_norm_grad_input", a);
  else
    launch_rows<GradLauncher, D, 1, 2>(ctx, "nn::layer_norm_grad_input", a);
}

// ---- grad_params: column sums ------------------------------------------------
constexpr int kColTile = 32;  // columns per block: one warp-wide row of loads
constexpr int kRowLanes = 8;  // warps per block, each on its own rows

template <DType D>
struct ParamArgs {
  Rows<const StorageT<D>> x, dy;
  const ComputeT<D>* mean;
  const ComputeT<D>* rstd;
  std::int64_t mean_stride, rstd_stride;
  std::int64_t rows, n, rows_per_part;
  ComputeT<D>* partial;  // [parts, 2, n] when there are several parts
  StorageT<D>* dgamma;   // final outputs (one part): may be null
  StorageT<D>* dbeta;
  std::int64_t dgamma_stride, dbeta_stride;
};

template <DType D>
__global__ void __launch_bounds__(kColTile * kRowLanes) layer_norm_param_sums(ParamArgs<D> a) {
  using A = ComputeT<D>;
  __shared__ A tile[2][kRowLanes][kColTile + 1];
  const std::int64_t col = std::int64_t(blockIdx.x) * kColTile + threadIdx.x;
  const std::int64_t first = std::int64_t(blockIdx.y) * a.rows_per_part;
  const std::int64_t last = std::min(a.rows, first + a.rows_per_part);
  A dg = 0, db = 0;
  if (col < a.n) {
    for (std::int64_t r = first + threadIdx.y; r < last; r += kRowLanes) {
      const A d = Real<D>::load(a.dy.p[r * a.dy.rs + col * a.dy.cs]);
      const A xh =
          (Real<D>::load(a.x.p[r * a.x.rs + col * a.x.cs]) - a.mean[r * a.mean_stride]) * a.rstd[r * a.rstd_stride];
      dg += d * xh;
      db += d;
    }
  }
  tile[0][threadIdx.y][threadIdx.x] = dg;
  tile[1][threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y != 0 || col >= a.n) return;
  for (int l = 1; l < kRowLanes; ++l) dg += tile[0][l][threadIdx.x], db += tile[1][l][threadIdx.x];
  if (gridDim.y == 1) {
    if (a.dgamma) a.dgamma[col * a.dgamma_stride] = Real<D>::store(dg);
    if (a.dbeta) a.dbeta[col * a.dbeta_stride] = Real<D>::store(db);
  } else {
    a.partial[(std::int64_t(blockIdx.y) * 2) * a.n + col] = dg;
    a.partial[(std::int64_t(blockIdx.y) * 2 + 1) * a.n + col] = db;
  }
}

template <DType D>
__global__ void layer_norm_param_finish(ParamArgs<D> a, int parts) {
  using A = ComputeT<D>;
  for (std::int64_t col = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; col < a.n;
       col += std::int64_t(gridDim.x) * blockDim.x) {
    A dg = 0, db = 0;
    for (int p = 0; p < parts; ++p) dg += a.partial[(p * 2) * a.n + col], db += a.partial[(p * 2 + 1) * a.n + col];
    if (a.dgamma) a.dgamma[col * a.dgamma_stride] = Real<D>::store(dg);
    if (a.dbeta) a.dbeta[col * a.dbeta_stride] = Real<D>::store(db);
  }
}

template <DType D>
void layer_norm_grad_params(const OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::nn_layer_norm_grad_params>(c);
  const TensorArg &x = args.x, &dy = args.dy;
  const std::int64_t rows = x.view.dims()[0], n = x.view.dims()[1];
  if (n == 0 || (args.dgamma.data == nullptr && args.dbeta.data == nullptr)) return;
  using S = StorageT<D>;
  using A = ComputeT<D>;
  ParamArgs<D> a{};
  a.x = rows_of<const S>(x);
  a.dy = rows_of<const S>(dy);
  a.mean = element_ptr<const A>(args.mean);
  a.rstd = element_ptr<const A>(args.rstd);
  a.mean_stride = stride_of(args.mean, 0);
  a.rstd_stride = stride_of(args.rstd, 0);
  a.rows = rows;
  a.n = n;
  a.dgamma = optional_ptr<S>(args.dgamma);
  a.dbeta = optional_ptr<S>(args.dbeta);
  a.dgamma_stride = stride_of(args.dgamma, 0);
  a.dbeta_stride = stride_of(args.dbeta, 0);
  // Enough blocks for ~4 per multiprocessor, each with at least 64 rows.
  const std::int64_t col_tiles = (n + kColTile - 1) / kColTile;
  const std::int64_t wanted = std::max<std::int64_t>(1, 4 * ctx.multiprocessors / col_tiles);
  const std::int64_t parts = std::clamp<std::int64_t>(std::min(wanted, rows / 64), 1, 65535);
  a.rows_per_part = std::max<std::int64_t>(1, (rows + parts - 1) / parts);
  const int used_parts = int(std::max<std::int64_t>(1, (rows + a.rows_per_part - 1) / a.rows_per_part));
  std::optional<TempBuffer> partial;
  if (used_parts > 1) {
    partial.emplace(ctx.temp(std::size_t(used_parts) * 2 * std::size_t(n) * sizeof(A)));
    a.partial = partial->as<A>();
  }
  layer_norm_param_sums<D><<<dim3(unsigned(col_tiles), unsigned(used_parts)), dim3(kColTile, kRowLanes), 0,
                             ctx.stream>>>(a);
  XY_CUDA_LAUNCHED(ctx.device, "nn::layer_norm_grad_params");
  if (used_parts > 1) {
    const int grid = int(std::min<std::int64_t>((n + 255) / 256, 4 * ctx.multiprocessors));
    layer_norm_param_finish<D><<<grid, 256, 0, ctx.stream>>>(a, used_parts);
    XY_CUDA_LAUNCHED(ctx.device, "nn::layer_norm_grad_params");
  }
}

template <DType D>
void register_dtype(KernelTable& table) {
    table.set(OpId::nn_layer_norm, D, &layer_norm<D>);
  table.set(OpId::nn_layer_norm_grad_input, D, &layer_norm_grad_input<D>);
  table.set(OpId::nn_layer_norm_grad_params, D, &layer_norm_grad_params<D>);
}

}  // namespace

void register_layer_norm(KernelTable& table) {
  register_dtype<DType::f16>(table);
  register_dtype<DType::bf16>(table);
  register_dtype<DType::f32>(table);
  register_dtype<DType::f64>(table);
}

}  // namespace xylem::cuda
