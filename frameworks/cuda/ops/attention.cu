// nn::attention and its gradients (the contract in include/xylem/op.hpp),
// memory-efficient: no [Sq, Sk] buffer. One thread per query row (per key
// row in attention_grad_kv); a block's threads share tiles of keys
// (queries) staged in shared memory, each thread keeps kChunk output
// columns in registers, and block b computes column chunk b % chunks of its
// rows (the scores over the full head dimension recomputed per chunk), so
// any head dimension runs. The softmax is online (running maximum and sum);
// the backward recomputes each weight from the row's logsumexp: dq walks the
// keys per query row, dk and dv the queries of every head of the group per
// key row, so every output element has one writer and no atomics are needed.
// Sums in the compute type (f32 for f16/bf16). f16 and bf16 run on tensor
// cores instead when the call suits them (attention_mma.hpp), the forward
// through cuDNN's fused attention first where it takes the call
// (attention_cudnn.hpp).
#include <algorithm>
#include <cmath>

#include "attention_cudnn.hpp"
#include "attention_mma.hpp"
#include "block.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

constexpr int kChunk = 32;    // output columns per thread
constexpr int kThreads = 64;  // rows per block
constexpr std::int64_t kSharedBudget = 40 * 1024;  // bytes of tiles per block (within the 48 KiB default)

// A rank-4 view with unit innermost stride: row (b, h, i) at p + b*s0 + h*s1 + i*s2.
template <class T>
struct Rows4 {
  T* p = nullptr;
  std::int64_t s0 = 0, s1 = 0, s2 = 0;
  __device__ T* row(std::int64_t b, std::int64_t h, std::int64_t i) const { return p + b * s0 + h * s1 + i * s2; }
};
template <class T>
Rows4<T> rows4(const TensorArg& t) {
  const auto s = t.view.strides();
  return {element_ptr<T>(t), s[0], s[1], s[2]};
}

template <DType D>
struct Attn {
  using S = StorageT<D>;
  using C = ComputeT<D>;
  Rows4<const S> q, k, v;
  // The mask: boolean (mb) or additive (ma), both null when absent.
  const unsigned char* mb = nullptr;
  const S* ma = nullptr;
  std::int64_t m0 = 0, m1 = 0, m2 = 0, m3 = 0;
  std::int64_t B = 0, H = 0, Hkv = 0, Sq = 0, Sk = 0, Dk = 0, Dv = 0, chunks = 1, tile = 1;
  bool causal = false;
  C scale = 1, inv_keep = 1;
  float p = 0;
  xy_u64 seed = 0, offset = 0;

  // The score of query i against key j from their dot product: scaled,
  // masked, -Inf when left out.
  __device__ C score(C dot, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) const {
    if (causal && j > i) return -INFINITY;
    C s = dot * scale;
    const std::int64_t at = b * m0 + h * m1 + i * m2 + j * m3;
    if (mb != nullptr && mb[at] == 0) return -INFINITY;
    if (ma != nullptr) s += Real<D>::load(ma[at]);
    return s;
  }
  // Dropout's factor for weight (b, h, i, j).
  __device__ C keep(std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) const {
    if (p <= 0.0f) return C(1);
    const xy_u64 counter = offset + static_cast<xy_u64>(((b * H + h) * Sq + i) * Sk + j);
    return xy_dropout_keep(seed, counter, p) ? inv_keep : C(0);
  }
};

template <DType D>
Attn<D> attn_of(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg& mask,
                std::int64_t causal, std::int64_t seed, std::int64_t offset, double scale, double p,
                std::int64_t columns, std::int64_t tile_width) {
  using C = ComputeT<D>;
  Attn<D> a;
  a.q = rows4<const StorageT<D>>(q);
  a.k = rows4<const StorageT<D>>(k);
  a.v = rows4<const StorageT<D>>(v);
  if (mask.data != nullptr) {
    if (mask.dtype == DType::boolean) {
      a.mb = element_ptr<const unsigned char>(mask);
    } else {
      a.ma = element_ptr<const StorageT<D>>(mask);
    }
    const auto s = mask.view.strides();
    a.m0 = s[0];
    a.m1 = s[1];
    a.m2 = s[2];
    a.m3 = s[3];
  }
  const auto qd = q.view.dims(), kd = k.view.dims();
  a.B = qd[0];
  a.H = qd[1];
  a.Sq = qd[2];
  a.Dk = qd[3];
  a.Hkv = kd[1];
  a.Sk = kd[2];
  a.Dv = v.view.dims()[3];
  a.chunks = (columns + kChunk - 1) / kChunk;
  a.tile = std::clamp<std::int64_t>(kSharedBudget / (tile_width * std::int64_t(sizeof(C))), 1, 64);
  a.causal = causal != 0;
  a.scale = C(scale);
  a.inv_keep = C(1 / (1 - p));
  a.p = float(p);
  a.seed = xy_u64(seed);
  a.offset = xy_u64(offset);
  return a;
}

// Minimum of two indices; hi0: at least 0.
__device__ __forceinline__ std::int64_t lo(std::int64_t x, std::int64_t y) { return x < y ? x : y; }
__device__ __forceinline__ std::int64_t hi0(std::int64_t x) { return x > 0 ? x : 0; }

// Block blockIdx.x: (b, head, tile of kThreads rows, column chunk).
struct Place {
  std::int64_t b, head, r0, r, c0;
  bool live;
};
__device__ Place place(std::int64_t heads, std::int64_t rows, std::int64_t chunks) {
  const std::int64_t tiles = (rows + kThreads - 1) / kThreads;
  const std::int64_t g = blockIdx.x / chunks;
  Place pl;
  pl.c0 = std::int64_t(blockIdx.x % chunks) * kChunk;
  pl.b = g / (heads * tiles);
  pl.head = g / tiles % heads;
  pl.r0 = g % tiles * kThreads;
  pl.r = pl.r0 + threadIdx.x;
  pl.live = pl.r < rows;
  return pl;
}

// The block's dynamic shared memory, aligned for doubles.
template <class C>
__device__ C* shared_tiles() {
  extern __shared__ __align__(16) unsigned char tiles[];
  return reinterpret_cast<C*>(tiles);
}

// Rows [r0, r0 + n) of (b, head), columns [c0, c0 + cols), into a
// contiguous shared tile of the compute type, by the block's threads.
template <DType D>
__device__ void load_tile(ComputeT<D>* dst, const Rows4<const StorageT<D>>& src, std::int64_t b, std::int64_t head,
                          std::int64_t r0, std::int64_t n, std::int64_t c0, std::int64_t cols) {
  for (std::int64_t e = threadIdx.x; e < n * cols; e += kThreads)
    dst[e] = Real<D>::load(src.row(b, head, r0 + e / cols)[c0 + e % cols]);
}

template <DType D>
__global__ void __launch_bounds__(kThreads) attention_forward(Attn<D> a, Rows4<StorageT<D>> out, ComputeT<D>* lse,
                                                              std::int64_t l0, std::int64_t l1, std::int64_t l2) {
  using C = ComputeT<D>;
  C* kt = shared_tiles<C>();
  C* vt = kt + a.tile * a.Dk;
  const Place pl = place(a.H, a.Sq, a.chunks);
  const std::int64_t b = pl.b, h = pl.head, i = pl.r, hk = h / (a.H / a.Hkv);
  const std::int64_t nc = lo(std::int64_t(kChunk), a.Dv - pl.c0);
  C acc[kChunk];
#pragma unroll
  for (int c = 0; c < kChunk; ++c) acc[c] = 0;
  C m = -INFINITY, l = 0;
  const StorageT<D>* qr = a.q.row(b, h, pl.live ? i : pl.r0);
  const std::int64_t j_end = a.causal ? lo(a.Sk, lo(a.Sq, pl.r0 + kThreads)) : a.Sk;
  for (std::int64_t j0 = 0; j0 < j_end; j0 += a.tile) {
    const std::int64_t nk = lo(a.tile, j_end - j0);
    __syncthreads();
    load_tile<D>(kt, a.k, b, hk, j0, nk, 0, a.Dk);
    load_tile<D>(vt, a.v, b, hk, j0, nk, pl.c0, nc);
    __syncthreads();
    if (!pl.live) continue;
    for (std::int64_t jj = 0; jj < nk; ++jj) {
      const std::int64_t j = j0 + jj;
      C dot = 0;
      for (std::int64_t d = 0; d < a.Dk; ++d) dot += Real<D>::load(qr[d]) * kt[jj * a.Dk + d];
      const C s = a.score(dot, b, h, i, j);
      if (s == C(-INFINITY)) continue;
      if (s > m) {
        const C shrink = exp(m - s);
        l *= shrink;
#pragma unroll
        for (int c = 0; c < kChunk; ++c) acc[c] *= shrink;
        m = s;
      }
      const C w = exp(s - m);
      l += w;
      const C wd = w * a.keep(b, h, i, j);
#pragma unroll
      for (int c = 0; c < kChunk; ++c)
        if (c < nc) acc[c] += wd * vt[jj * nc + c];
    }
  }
  if (!pl.live) return;
  StorageT<D>* o = out.row(b, h, i) + pl.c0;
#pragma unroll
  for (int c = 0; c < kChunk; ++c)
    if (c < nc) o[c] = Real<D>::store(l > 0 ? acc[c] / l : C(0));
  if (pl.c0 == 0) lse[b * l0 + h * l1 + i * l2] = l > 0 ? m + log(l) : C(-INFINITY);
}

// stats[row] = (lse, sum over Dv of dout*out); lse and stats contiguous.
template <DType D>
__global__ void attention_grad_rows(Rows4<const StorageT<D>> out, Rows4<const StorageT<D>> dout,
                                    const ComputeT<D>* lse, ComputeT<D>* stats, std::int64_t H, std::int64_t Sq,
                                    std::int64_t Dv, std::int64_t rows) {
  using C = ComputeT<D>;
  const std::int64_t row = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const std::int64_t b = row / (H * Sq), h = row / Sq % H, i = row % Sq;
  const StorageT<D>* o = out.row(b, h, i);
  const StorageT<D>* d = dout.row(b, h, i);
  C delta = 0;
  for (std::int64_t e = 0; e < Dv; ++e) delta += Real<D>::load(o[e]) * Real<D>::load(d[e]);
  stats[2 * row] = lse[row];
  stats[2 * row + 1] = delta;
}

template <DType D>
__global__ void __launch_bounds__(kThreads) attention_grad_q(Attn<D> a, Rows4<const StorageT<D>> dout,
                                                             const ComputeT<D>* stats, Rows4<StorageT<D>> dq) {
  using C = ComputeT<D>;
  C* kt = shared_tiles<C>();
  C* vt = kt + a.tile * a.Dk;
  const Place pl = place(a.H, a.Sq, a.chunks);
  const std::int64_t b = pl.b, h = pl.head, i = pl.r, hk = h / (a.H / a.Hkv);
  const std::int64_t nc = lo(std::int64_t(kChunk), a.Dk - pl.c0);
  C acc[kChunk];
#pragma unroll
  for (int c = 0; c < kChunk; ++c) acc[c] = 0;
  const std::int64_t row = (b * a.H + h) * a.Sq + (pl.live ? i : pl.r0);
  const C lse = stats[2 * row], delta = stats[2 * row + 1];
  const StorageT<D>* qr = a.q.row(b, h, pl.live ? i : pl.r0);
  const StorageT<D>* dor = dout.row(b, h, pl.live ? i : pl.r0);
  const std::int64_t j_end = a.causal ? lo(a.Sk, lo(a.Sq, pl.r0 + kThreads)) : a.Sk;
  for (std::int64_t j0 = 0; j0 < j_end; j0 += a.tile) {
    const std::int64_t nk = lo(a.tile, j_end - j0);
    __syncthreads();
    load_tile<D>(kt, a.k, b, hk, j0, nk, 0, a.Dk);
    load_tile<D>(vt, a.v, b, hk, j0, nk, 0, a.Dv);
    __syncthreads();
    if (!pl.live || lse == C(-INFINITY)) continue;
    for (std::int64_t jj = 0; jj < nk; ++jj) {
      const std::int64_t j = j0 + jj;
      C dot = 0;
      for (std::int64_t d = 0; d < a.Dk; ++d) dot += Real<D>::load(qr[d]) * kt[jj * a.Dk + d];
      const C s = a.score(dot, b, h, i, j);
      if (s == C(-INFINITY)) continue;
      C dp = 0;
      for (std::int64_t e = 0; e < a.Dv; ++e) dp += Real<D>::load(dor[e]) * vt[jj * a.Dv + e];
      const C ds = exp(s - lse) * (dp * a.keep(b, h, i, j) - delta);
#pragma unroll
      for (int c = 0; c < kChunk; ++c)
        if (c < nc) acc[c] += ds * kt[jj * a.Dk + pl.c0 + c];
    }
  }
  if (!pl.live) return;
  StorageT<D>* o = dq.row(b, h, i) + pl.c0;
#pragma unroll
  for (int c = 0; c < kChunk; ++c)
    if (c < nc) o[c] = Real<D>::store(acc[c] * a.scale);
}

template <DType D>
__global__ void __launch_bounds__(kThreads) attention_grad_kv(Attn<D> a, Rows4<const StorageT<D>> dout,
                                                              const ComputeT<D>* stats, Rows4<StorageT<D>> dk,
                                                              Rows4<StorageT<D>> dv) {
  using C = ComputeT<D>;
  C* qt = shared_tiles<C>();
  C* dot_t = qt + a.tile * a.Dk;
  C* st = dot_t + a.tile * a.Dv;
  const Place pl = place(a.Hkv, a.Sk, a.chunks);
  const std::int64_t b = pl.b, hk = pl.head, j = pl.r, group = a.H / a.Hkv;
  const std::int64_t nck = hi0(lo(std::int64_t(kChunk), a.Dk - pl.c0));
  const std::int64_t ncv = hi0(lo(std::int64_t(kChunk), a.Dv - pl.c0));
  C dk_acc[kChunk], dv_acc[kChunk];
#pragma unroll
  for (int c = 0; c < kChunk; ++c) dk_acc[c] = dv_acc[c] = 0;
  const StorageT<D>* kr = a.k.row(b, hk, pl.live ? j : pl.r0);
  const StorageT<D>* vr = a.v.row(b, hk, pl.live ? j : pl.r0);
  const std::int64_t i_begin = a.causal ? pl.r0 : 0;  // rows above r0 leave the block's keys out
  for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
    for (std::int64_t i0 = i_begin; i0 < a.Sq; i0 += a.tile) {
      const std::int64_t nq = lo(a.tile, a.Sq - i0);
      __syncthreads();
      load_tile<D>(qt, a.q, b, h, i0, nq, 0, a.Dk);
      load_tile<D>(dot_t, dout, b, h, i0, nq, 0, a.Dv);
      for (std::int64_t e = threadIdx.x; e < 2 * nq; e += kThreads) st[e] = stats[2 * ((b * a.H + h) * a.Sq + i0) + e];
      __syncthreads();
      if (!pl.live) continue;
      for (std::int64_t ii = 0; ii < nq; ++ii) {
        const std::int64_t i = i0 + ii;
        const C lse = st[2 * ii], delta = st[2 * ii + 1];
        if (lse == C(-INFINITY)) continue;
        C dot = 0;
        for (std::int64_t d = 0; d < a.Dk; ++d) dot += qt[ii * a.Dk + d] * Real<D>::load(kr[d]);
        const C s = a.score(dot, b, h, i, j);
        if (s == C(-INFINITY)) continue;
        C dp = 0;
        for (std::int64_t e = 0; e < a.Dv; ++e) dp += dot_t[ii * a.Dv + e] * Real<D>::load(vr[e]);
        const C w = exp(s - lse), keep = a.keep(b, h, i, j);
        const C ds = w * (dp * keep - delta), wd = w * keep;
#pragma unroll
        for (int c = 0; c < kChunk; ++c) {
          if (c < ncv) dv_acc[c] += wd * dot_t[ii * a.Dv + pl.c0 + c];
          if (c < nck) dk_acc[c] += ds * qt[ii * a.Dk + pl.c0 + c];
        }
      }
    }
  }
  if (!pl.live) return;
  StorageT<D>* ok = dk.row(b, hk, j) + pl.c0;
  StorageT<D>* ov = dv.row(b, hk, j) + pl.c0;
#pragma unroll
  for (int c = 0; c < kChunk; ++c) {
    if (c < nck) ok[c] = Real<D>::store(dk_acc[c] * a.scale);
    if (c < ncv) ov[c] = Real<D>::store(dv_acc[c]);
  }
}

std::int64_t blocks_of(std::int64_t B, std::int64_t heads, std::int64_t rows, std::int64_t chunks) {
  return B * heads * ((rows + kThreads - 1) / kThreads) * chunks;
}

template <DType D>
void forward(const OpCall& call, const Context& ctx) {
  using C = ComputeT<D>;
  if constexpr (D == DType::f16 || D == DType::bf16) {
    if (attention_forward_cudnn(call, ctx) || attention_forward_mma(call, ctx)) return;
  }
  const auto x = plugin::unpack<plugin::args::nn_attention>(call);
  const std::int64_t dv = x.v.view.dims()[3];
  const auto a = attn_of<D>(x.q, x.k, x.v, x.mask, x.causal, x.seed, x.offset, x.scale, x.p, dv,
                            x.q.view.dims()[3] + kChunk);
  const auto ls = x.lse.view.strides();
  const std::size_t shared = std::size_t(a.tile * (a.Dk + kChunk)) * sizeof(C);
  attention_forward<D><<<unsigned(blocks_of(a.B, a.H, a.Sq, a.chunks)), kThreads, shared, ctx.stream>>>(
      a, rows4<StorageT<D>>(x.out), element_ptr<C>(x.lse), ls[0], ls[1], ls[2]);
  XY_CUDA_LAUNCHED(ctx.device, "nn::attention");
}

template <DType D>
void grad_rows(const OpCall& call, const Context& ctx) {
  using C = ComputeT<D>;
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_rows>(call);
  const auto d = x.out.view.dims();
  const std::int64_t rows = d[0] * d[1] * d[2];
  constexpr int threads = 256;
  attention_grad_rows<D><<<unsigned((rows + threads - 1) / threads), threads, 0, ctx.stream>>>(
      rows4<const StorageT<D>>(x.out), rows4<const StorageT<D>>(x.dout), element_ptr<const C>(x.lse),
      element_ptr<C>(x.stats), d[1], d[2], d[3], rows);
  XY_CUDA_LAUNCHED(ctx.device, "nn::attention_grad_rows");
}

template <DType D>
void grad_q(const OpCall& call, const Context& ctx) {
  using C = ComputeT<D>;
  if constexpr (D == DType::f16 || D == DType::bf16) {
    if (attention_grad_q_mma(call, ctx)) return;
  }
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_q>(call);
  const std::int64_t dk = x.q.view.dims()[3], dv = x.v.view.dims()[3];
  const auto a = attn_of<D>(x.q, x.k, x.v, x.mask, x.causal, x.seed, x.offset, x.scale, x.p, dk, dk + dv);
  const std::size_t shared = std::size_t(a.tile * (a.Dk + a.Dv)) * sizeof(C);
  attention_grad_q<D><<<unsigned(blocks_of(a.B, a.H, a.Sq, a.chunks)), kThreads, shared, ctx.stream>>>(
      a, rows4<const StorageT<D>>(x.dout), element_ptr<const C>(x.stats), rows4<StorageT<D>>(x.dq));
  XY_CUDA_LAUNCHED(ctx.device, "nn::attention_grad_q");
}

template <DType D>
void grad_kv(const OpCall& call, const Context& ctx) {
  using C = ComputeT<D>;
  if constexpr (D == DType::f16 || D == DType::bf16) {
    if (attention_grad_kv_mma(call, ctx)) return;
  }
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_kv>(call);
  const std::int64_t dk = x.q.view.dims()[3], dv = x.v.view.dims()[3];
  const auto a =
      attn_of<D>(x.q, x.k, x.v, x.mask, x.causal, x.seed, x.offset, x.scale, x.p, dk > dv ? dk : dv, dk + dv + 2);
  const std::size_t shared = std::size_t(a.tile * (a.Dk + a.Dv + 2)) * sizeof(C);
  attention_grad_kv<D><<<unsigned(blocks_of(a.B, a.Hkv, a.Sk, a.chunks)), kThreads, shared, ctx.stream>>>(
      a, rows4<const StorageT<D>>(x.dout), element_ptr<const C>(x.stats), rows4<StorageT<D>>(x.dk),
      rows4<StorageT<D>>(x.dv));
  XY_CUDA_LAUNCHED(ctx.device, "nn::attention_grad_kv");
}

// The three gradients in one call: cuDNN's fused backward where it takes
// the call, else the three kernels above with the row statistics in a
// temporary.
template <DType D>
void grad_fused(const OpCall& call, const Context& ctx) {
  if (attention_grad_cudnn(call, ctx)) return;
  const auto x = plugin::unpack<plugin::args::nn_attention_grad>(call);
  const auto od = x.out.view.dims();
  TempBuffer stats_memory = ctx.temp(std::size_t(od[0] * od[1] * od[2] * 2) * sizeof(float));
  const TensorArg stats{stats_memory.get(), Layout{od[0], od[1], od[2], 2}, DType::f32};
  grad_rows<D>(plugin::pack(plugin::args::nn_attention_grad_rows<TensorArg>{
                   .out = x.out, .dout = x.dout, .lse = x.lse, .stats = stats}),
               ctx);
  const auto inputs = [&](auto args) {
    args.q = x.q;
    args.k = x.k;
    args.v = x.v;
    args.dout = x.dout;
    args.stats = stats;
    args.causal = x.causal;
    args.scale = x.scale;
    return args;
  };
  auto q = inputs(plugin::args::nn_attention_grad_q<TensorArg>{});
  q.dq = x.dq;
  grad_q<D>(plugin::pack(q), ctx);
  auto kv = inputs(plugin::args::nn_attention_grad_kv<TensorArg>{});
  kv.dk = x.dk;
  kv.dv = x.dv;
  grad_kv<D>(plugin::pack(kv), ctx);
}

}  // namespace

void register_attention(KernelTable& table) {
  for_each_real([&]<DType D>() {
    table.set(OpId::nn_attention, D, &forward<D>);
    table.set(OpId::nn_attention_grad_rows, D, &grad_rows<D>);
    table.set(OpId::nn_attention_grad_q, D, &grad_q<D>);
    table.set(OpId::nn_attention_grad_kv, D, &grad_kv<D>);
  });
  // Only where cuDNN may take it: f32 and f64 keep the three ops.
  table.set(OpId::nn_attention_grad, DType::f16, &grad_fused<DType::f16>);
  table.set(OpId::nn_attention_grad, DType::bf16, &grad_fused<DType::bf16>);
}

}  // namespace xylem::cuda
