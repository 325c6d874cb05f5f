// nn::attention's gradients on tensor cores, as two kernels like the
// general ones (attention.cu), so every output element has one writer and
// no atomics are needed. Both recompute the weights from the row's
// logsumexp: with x the scaled score (base 2), P = exp2(x - lse log2(e)),
// dP = dout v and dS = P (dP - delta).
//   grad_q: a block per (b, h, kRows query rows); Q and dout staged once,
//     then per key tile S = Q K^T, dP = dout V^T and dq += dS K.
//   grad_kv: a block per (b, kv head, kRows key rows); K and V staged once,
//     then per query tile of every head of the group S^T = K Q^T,
//     dP^T = V dout^T, dv += P^T dout and dk += dS^T Q.
// Each warp owns 16 rows of its block's tile; the products run on mma.sync
// m16n8k16 with f32 accumulators, and the weights go from the accumulators
// of one product to the A operand of the next in registers (mma_tile.cuh).
// A row whose every key was left out (lse = -Inf) gets weight 0: its lse is
// taken as +Inf, and exp2(x - Inf) is 0 for every x but +Inf, which no
// score is.
#include "attention_mma.cuh"
#include "attention_mma.hpp"

namespace xylem::cuda {
namespace attn {

// (Of external linkage: nvcc would call row_stats unused in the pass for
// the older architectures, where the kernels' bodies are empty.)
struct GradParams : Inputs {
  View4<const std::uint16_t> dout;
  View4<std::uint16_t> dq, dk, dv;
  const float* stats = nullptr;  // [B, H, Sq, 2] contiguous: (lse, delta) per row

  // lse (base 2; +Inf for a row without keys, so its weights are 0) and
  // delta of query row i of (b, h); rows past Sq give (+Inf, 0).
  __device__ float2 row_stats(std::int64_t b, int h, int i) const {
    if (i >= scope.Sq) return make_float2(INFINITY, 0.0f);
    const float2 s = reinterpret_cast<const float2*>(stats)[(b * H + h) * scope.Sq + i];
    return make_float2(s.x == -INFINITY ? INFINITY : s.x * kLog2e, s.y);
  }
};

}  // namespace attn

namespace {

using namespace attn;

constexpr int kGradWidth = 128;  // widest head dimension here (two accumulators of it per thread in grad_kv)
template <int kD>
constexpr int kGradShared = 4 * kTile<kD> * 2 + 2 * kRows * int(sizeof(float));  // four tiles, then (lse, delta) per row of one

template <DType D, int kD>
__global__ void __launch_bounds__(kThreads) attention_grad_q_tc(GradParams a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char smem[];
  std::uint16_t* qs = reinterpret_cast<std::uint16_t*>(smem);
  std::uint16_t* dos = qs + kTile<kD>;
  std::uint16_t* ks = dos + kTile<kD>;
  std::uint16_t* vs = ks + kTile<kD>;
  const Scope& sc = a.scope;
  const int q_tiles = (sc.Sq + kRows - 1) / kRows;
  const int r0 = (q_tiles - 1 - int(blockIdx.x)) * kRows;  // the longest causal rows start first
  const std::int64_t b = blockIdx.z;
  const int h = int(blockIdx.y), hk = h / a.group;
  const int w = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int row0 = r0 + w * 16 + g;  // this thread's rows: row0 and row0 + 8
  const int j_end = sc.causal ? min(sc.Sk, min(sc.Sq, r0 + kRows)) : sc.Sk;
  const float2 st[2] = {a.row_stats(b, h, row0), a.row_stats(b, h, row0 + 8)};
  // Q's and dout's copies join the first group committed.
  stage<kD>(qs, a.q, b, h, r0, sc.Sq, a.Dk);
  stage<kD>(dos, a.dout, b, h, r0, sc.Sq, a.Dv);

  float dq[kD / 8][4] = {};
  for (int j0 = 0; j0 < j_end; j0 += kRows) {
    stage<kD>(ks, a.k, b, hk, j0, sc.Sk, a.Dk);
    stage<kD>(vs, a.v, b, hk, j0, sc.Sk, a.Dv);
    mma::cp_async_commit();
    mma::cp_async_wait<0>();
    __syncthreads();
    float s[kRows / 8][4] = {}, dp[kRows / 8][4] = {};
    rows_times_rows<D, kD>(s, qs, ks, w, lane);
    rows_times_rows<D, kD>(dp, dos, vs, w, lane);
    const bool edge = sc.edge(r0, j0);
#pragma unroll
    for (int nt = 0; nt < kRows / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nt][e] * a.scale_log2;
        if (edge) x = masked<D>(sc, x, b, h, row0 + (e / 2) * 8, j0 + nt * 8 + 2 * t + e % 2);
        const float2 r = st[e / 2];
        s[nt][e] = exp2f(x - r.x) * (dp[nt][e] - r.y);  // dS
      }
    weights_times_tile<D, kD>(dq, s, ks, lane);
    __syncthreads();  // the next iteration refills the tiles just read
  }
  const float mul[2] = {a.scale, a.scale};
  store_rows<D, kD>(a.dq, dq, b, h, r0, sc.Sq, a.Dk, w, g, t, mul);
#else
  (void)a;  // never launched: the host checks the kernel was built for sm_80 or later
#endif
}

template <DType D, int kD>
__global__ void __launch_bounds__(kThreads) attention_grad_kv_tc(GradParams a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char smem[];
  std::uint16_t* ks = reinterpret_cast<std::uint16_t*>(smem);
  std::uint16_t* vs = ks + kTile<kD>;
  std::uint16_t* qs = vs + kTile<kD>;
  std::uint16_t* dos = qs + kTile<kD>;
  float2* sts = reinterpret_cast<float2*>(dos + kTile<kD>);  // (lse base 2, delta) of the query tile's rows
  const Scope& sc = a.scope;
  const int j0 = int(blockIdx.x) * kRows;
  const std::int64_t b = blockIdx.z;
  const int hk = int(blockIdx.y);
  const int w = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int key0 = j0 + w * 16 + g;  // this thread's keys: key0 and key0 + 8
  const int i_begin = sc.causal ? j0 : 0;  // queries above j0 leave every key of the block out
  // K's and V's copies join the first group committed; with no query tile
  // none is, so none is started (the block must not end with copies in flight).
  if (i_begin < sc.Sq) {
    stage<kD>(ks, a.k, b, hk, j0, sc.Sk, a.Dk);
    stage<kD>(vs, a.v, b, hk, j0, sc.Sk, a.Dv);
  }

  float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
  for (int h = hk * a.group; h < (hk + 1) * a.group; ++h) {
    for (int i0 = i_begin; i0 < sc.Sq; i0 += kRows) {
      stage<kD>(qs, a.q, b, h, i0, sc.Sq, a.Dk);
      stage<kD>(dos, a.dout, b, h, i0, sc.Sq, a.Dv);
      if (threadIdx.x < kRows) sts[threadIdx.x] = a.row_stats(b, h, i0 + int(threadIdx.x));
      mma::cp_async_commit();
      mma::cp_async_wait<0>();
      __syncthreads();
      float p[kRows / 8][4] = {}, ds[kRows / 8][4] = {};  // transposed: key rows, query columns
      rows_times_rows<D, kD>(p, ks, qs, w, lane);
      rows_times_rows<D, kD>(ds, vs, dos, w, lane);
      const bool edge = sc.edge(i0, j0);
#pragma unroll
      for (int nt = 0; nt < kRows / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int ii = nt * 8 + 2 * t + e % 2;
          float x = p[nt][e] * a.scale_log2;
          if (edge) x = masked<D>(sc, x, b, h, i0 + ii, key0 + (e / 2) * 8);
          const float2 r = sts[ii];
          p[nt][e] = exp2f(x - r.x);
          ds[nt][e] = p[nt][e] * (ds[nt][e] - r.y);
        }
      weights_times_tile<D, kD>(dv, p, dos, lane);
      weights_times_tile<D, kD>(dk, ds, qs, lane);
      __syncthreads();  // the next iteration refills the tiles just read
    }
  }
  const float scaled[2] = {a.scale, a.scale}, plain[2] = {1.0f, 1.0f};
  store_rows<D, kD>(a.dk, dk, b, hk, j0, sc.Sk, a.Dk, w, g, t, scaled);
  store_rows<D, kD>(a.dv, dv, b, hk, j0, sc.Sk, a.Dv, w, g, t, plain);
#else
  (void)a;  // never launched: the host checks the kernel was built for sm_80 or later
#endif
}

// The parameters both gradients take, or false when the call does not
// suit the kernels (see attention_mma.hpp; head dimensions up to 128 here).
template <class X>
bool grad_params(const X& x, const Problem& n, GradParams& p) {
  if (!n.suits || !fits(x.q) || !fits(x.k) || !fits(x.v) || !fits(x.dout) ||
      reinterpret_cast<std::uintptr_t>(element_ptr<const float>(x.stats)) % 8 != 0)  // read as float2
    return false;
  static_cast<Inputs&>(p) = inputs_of(x, n);
  p.dout = view4<const std::uint16_t>(x.dout);
  p.stats = element_ptr<const float>(x.stats);
  return true;
}

template <DType D, int kD>
bool launch_q(const GradParams& p, dim3 grid, const Context& ctx) {
  static std::array<std::atomic<int>, 64> known{};
  return launch_tc(&attention_grad_q_tc<D, kD>, known, kGradShared<kD>, grid, p, ctx, "nn::attention_grad_q");
}

template <DType D, int kD>
bool launch_kv(const GradParams& p, dim3 grid, const Context& ctx) {
  static std::array<std::atomic<int>, 64> known{};
  return launch_tc(&attention_grad_kv_tc<D, kD>, known, kGradShared<kD>, grid, p, ctx, "nn::attention_grad_kv");
}

}  // namespace

bool attention_grad_q_mma(const plugin::OpCall& call, const Context& ctx) {
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_q>(call);
  const Problem n = problem_of(x.q, x.k, x.v, x.p, kGradWidth);
  GradParams p;
  if (!grad_params(x, n, p) || !fits(x.dq)) return false;
  p.dq = view4<std::uint16_t>(x.dq);
  const dim3 grid = grid_of(n.B, n.H, n.Sq);
  const auto run = [&]<DType D>() {
    return n.width <= 64 ? launch_q<D, 64>(p, grid, ctx) : launch_q<D, 128>(p, grid, ctx);
  };
  return x.q.dtype == DType::bf16 ? run.template operator()<DType::bf16>() : run.template operator()<DType::f16>();
}

bool attention_grad_kv_mma(const plugin::OpCall& call, const Context& ctx) {
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_kv>(call);
  const Problem n = problem_of(x.q, x.k, x.v, x.p, kGradWidth);
  GradParams p;
  if (!grad_params(x, n, p) || !fits(x.dk) || !fits(x.dv)) return false;
  p.dk = view4<std::uint16_t>(x.dk);
  p.dv = view4<std::uint16_t>(x.dv);
  const dim3 grid = grid_of(n.B, n.Hkv, n.Sk);
  const auto run = [&]<DType D>() {
    return n.width <= 64 ? launch_kv<D, 64>(p, grid, ctx) : launch_kv<D, 128>(p, grid, ctx);
  };
  return x.q.dtype == DType::bf16 ? run.template operator()<DType::bf16>() : run.template operator()<DType::f16>();
}

}  // namespace xylem::cuda
