// nn::attention's forward on tensor cores, in FlashAttention-2's shape: a
// block per (b, h, tile of kRows query rows), kWarps warps of 16 rows each.
// The Q tile and K and V tiles of kRows rows (double-buffered up to a head
// dimension of 128) are staged in shared memory by cp.async, rows padded by
// 8 elements so that every fragment read hits 32 distinct banks. S = Q K^T
// and O += P V run on mma.sync m16n8k16 with f32 accumulators; the online
// softmax runs in f32 on the S accumulators in registers, in base 2 (the
// scale folded with log2(e)), and their layout is the A operand's of P V
// (mma_tile.cuh), so P never goes through shared memory. Head dimensions are
// padded with zeros to kD (64, 128 or 256); query or key rows past the ends
// are zeros and left out. Causal key tiles wholly above the diagonal are
// never loaded, and the per-element checks (causal, masks, the ends) run
// only on the tiles that need them.
#include "attention_mma.cuh"
#include "attention_mma.hpp"

namespace xylem::cuda {
namespace {

using namespace attn;

template <int kD>
constexpr int kStages = kD <= 128 ? 2 : 1;  // 256 double-buffered would not fit an A100's shared memory
template <int kD>
constexpr int kSharedBytes = kTile<kD> * (1 + 2 * kStages<kD>) * 2;  // Q, then K and V per stage

struct Params : Inputs {
  View4<std::uint16_t> out;
  float* lse = nullptr;
  std::int64_t l0 = 0, l1 = 0, l2 = 0;
};

template <DType D, int kD>
__global__ void __launch_bounds__(kThreads) attention_forward_tc(Params a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ __align__(16) unsigned char smem[];
  std::uint16_t* qs = reinterpret_cast<std::uint16_t*>(smem);
  std::uint16_t* kvs = qs + kTile<kD>;  // stage s: K at kvs + 2 s kTile, V one tile after
  const Scope& sc = a.scope;
  const int q_tiles = (sc.Sq + kRows - 1) / kRows;
  const int r0 = (q_tiles - 1 - int(blockIdx.x)) * kRows;  // the longest causal rows start first
  const std::int64_t b = blockIdx.z;
  const int h = int(blockIdx.y), hk = h / a.group;
  const int w = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int row0 = r0 + w * 16 + g;  // this thread's rows: row0 and row0 + 8
  const int j_end = sc.causal ? min(sc.Sk, min(sc.Sq, r0 + kRows)) : sc.Sk;
  const int n_tiles = (j_end + kRows - 1) / kRows;
  const auto stage_kv = [&](int tile) {
    std::uint16_t* ks = kvs + tile % kStages<kD> * 2 * kTile<kD>;
    stage<kD>(ks, a.k, b, hk, tile * kRows, sc.Sk, a.Dk);
    stage<kD>(ks + kTile<kD>, a.v, b, hk, tile * kRows, sc.Sk, a.Dv);
  };
  // Q's copies join the first group committed.
  stage<kD>(qs, a.q, b, h, r0, sc.Sq, a.Dk);
  if constexpr (kStages<kD> == 2) {
    stage_kv(0);
    mma::cp_async_commit();
  }

  float o[kD / 8][4] = {};  // O: rows row0 (o[.][0..1]) and row0 + 8 (o[.][2..3]), columns 8 nd + 2t, + 1
  float m[2] = {-INFINITY, -INFINITY};  // running row maxima (base 2), the same in the 4 threads of a row
  float l[2] = {0, 0};                  // this thread's part of the row sums, relative to m
  for (int tile = 0; tile < n_tiles; ++tile) {
    if constexpr (kStages<kD> == 1) {
      stage_kv(tile);
      mma::cp_async_commit();
      mma::cp_async_wait<0>();
    } else if (tile + 1 < n_tiles) {
      stage_kv(tile + 1);
      mma::cp_async_commit();
      mma::cp_async_wait<1>();
    } else {
      mma::cp_async_wait<0>();
    }
    __syncthreads();
    const std::uint16_t* ks = kvs + tile % kStages<kD> * 2 * kTile<kD>;
    const std::uint16_t* vs = ks + kTile<kD>;

    float s[kRows / 8][4] = {};  // S: key columns 8 nt + 2t, + 1 of rows row0, row0 + 8
    rows_times_rows<D, kD>(s, qs, ks, w, lane);
    const int j0 = tile * kRows;
    const bool edge = sc.edge(r0, j0);
#pragma unroll
    for (int nt = 0; nt < kRows / 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float x = s[nt][e] * a.scale_log2;
        s[nt][e] = edge ? masked<D>(sc, x, b, h, row0 + (e / 2) * 8, j0 + nt * 8 + 2 * t + e % 2) : x;
      }

#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float top = m[r];
#pragma unroll
      for (int nt = 0; nt < kRows / 8; ++nt) top = fmaxf(top, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
      top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 1));
      top = fmaxf(top, __shfl_xor_sync(0xffffffffu, top, 2));
      // A row with no key yet keeps everything 0 (exp2(-Inf - 0) = 0), never NaN.
      const float base = top == -INFINITY ? 0.0f : top;
      const float alpha = exp2f(m[r] - base);
      m[r] = top;
      float sum = 0;
#pragma unroll
      for (int nt = 0; nt < kRows / 8; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float p = exp2f(s[nt][2 * r + c] - base);
          s[nt][2 * r + c] = p;
          sum += p;
        }
      l[r] = l[r] * alpha + sum;
#pragma unroll
      for (int nd = 0; nd < kD / 8; ++nd) {
        o[nd][2 * r] *= alpha;
        o[nd][2 * r + 1] *= alpha;
      }
    }
    weights_times_tile<D, kD>(o, s, vs, lane);
    __syncthreads();  // the next iteration refills the buffers just read
  }

  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = l[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inv[r] = sum > 0 ? 1 / sum : 0.0f;
    const int i = row0 + 8 * r;
    if (t == 0 && i < sc.Sq)
      a.lse[b * a.l0 + h * a.l1 + i * a.l2] = sum > 0 ? m[r] * 0.6931471805599453f + logf(sum) : -INFINITY;
  }
  store_rows<D, kD>(a.out, o, b, h, r0, sc.Sq, a.Dv, w, g, t, inv);
#else
  (void)a;  // never launched: the host checks the kernel was built for sm_80 or later
#endif
}

template <DType D, int kD>
bool launch(const Params& p, dim3 grid, const Context& ctx) {
  static std::array<std::atomic<int>, 64> known{};
  return launch_tc(&attention_forward_tc<D, kD>, known, kSharedBytes<kD>, grid, p, ctx, "nn::attention");
}

}  // namespace

bool attention_forward_mma(const plugin::OpCall& call, const Context& ctx) {
  const auto x = plugin::unpack<plugin::args::nn_attention>(call);
  const Problem n = problem_of(x.q, x.k, x.v, x.p, 256);
  if (!n.suits || !fits(x.q) || !fits(x.k) || !fits(x.v) || !fits(x.out)) return false;
  Params p;
  static_cast<Inputs&>(p) = inputs_of(x, n);
  p.out = view4<std::uint16_t>(x.out);
  p.lse = element_ptr<float>(x.lse);
  const auto ls = x.lse.view.strides();
  p.l0 = ls[0];
  p.l1 = ls[1];
  p.l2 = ls[2];
  const dim3 grid = grid_of(n.B, n.H, n.Sq);
  const auto run = [&]<DType D>() {
    if (n.width <= 64) return launch<D, 64>(p, grid, ctx);
    if (n.width <= 128) return launch<D, 128>(p, grid, ctx);
    return launch<D, 256>(p, grid, ctx);
  };
  return x.q.dtype == DType::bf16 ? run.template operator()<DType::bf16>() : run.template operator()<DType::f16>();
}

}  // namespace xylem::cuda
