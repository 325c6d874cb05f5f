// nn::attention_grad_q and nn::attention_grad_kv natively, f16/bf16/f32/f64:
// the tiles of the forward recomputed from the saved logsumexp, so the
// backward keeps no [Sq, Sk] buffer either. dq takes one task per (batch,
// head, query tile) walking the keys; dk and dv one task per (batch, kv
// head, key tile) walking every query head of its group and every query
// tile, so each output element has one writer and no atomics are needed.
// Per pair of tiles: S = scale*Q*K^T, P = exp(S - lse) and dP = dO*V^T
// (gemm), dS = P*(dP - delta); then dq += dS*K, or dv += P^T*dO and
// dk += dS^T*Q (gemm), as PyTorch's CPU flash attention backward.
#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <vector>

#include "frameworks/native/ops/attention_tile.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

namespace {

using plugin::OpCall;
using plugin::OpId;
using namespace attention;

// The kernels' tiles. The key-tile tasks of dk and dv need tiles small
// enough to spread [1, 8, 1024, 64] over 16 cores.
constexpr TileSize kGradQTile{64, 512};
constexpr TileSize kGradKvTile{256, 128};

// What both gradient kernels recompute, per pair of a query tile (rows
// [i0, i0 + nq) of (b, h): q, dout and their statistics) and a key tile
// (keys [j0, j0 + nk) of (b, hk)): the dropped-out weights in s and the
// score gradients dS in dp, rows of t.k.
template <DType Dt>
struct GradTiles {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  Problem<Dt> pr;
  TileSize t;
  Rows<const S> dout;
  const C* stats;
  std::int64_t nq = 0, nk = 0;
  std::vector<C> q_buf, dout_buf, k_buf, v_buf, s, dp, lse, delta;
  Block<C> qb{}, dob{}, kb{}, vb{};

  GradTiles(const Problem<Dt>& problem, Rows<const S> dout_rows, const C* row_stats, TileSize tile)
      : pr(problem),
        t(tile),
        dout(dout_rows),
        stats(row_stats),
        q_buf(std::size_t(t.q * pr.D)),
        dout_buf(std::size_t(t.q * pr.Dv)),
        k_buf(std::size_t(t.k * pr.D)),
        v_buf(std::size_t(t.k * pr.Dv)),
        s(std::size_t(t.q * t.k)),
        dp(std::size_t(t.q * t.k)),
        lse(std::size_t(t.q)),
        delta(std::size_t(t.q)) {}

  void load_queries(std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t n) {
    nq = n;
    qb = rows_block<Dt>(pr.q, b, h, i0, nq, pr.D, q_buf.data());
    dob = rows_block<Dt>(dout, b, h, i0, nq, pr.Dv, dout_buf.data());
    const C* row = stats + 2 * ((b * pr.H + h) * pr.Sq + i0);
    for (std::int64_t r = 0; r < nq; ++r) {
      lse[std::size_t(r)] = row[2 * r];
      delta[std::size_t(r)] = row[2 * r + 1];
    }
  }
  void load_keys(std::int64_t b, std::int64_t hk, std::int64_t j0, std::int64_t n) {
    nk = n;
    kb = rows_block<Dt>(pr.k, b, hk, j0, nk, pr.D, k_buf.data());
    vb = rows_block<Dt>(pr.v, b, hk, j0, nk, pr.Dv, v_buf.data());
  }
  // With the tiles of (b, h, i0) and (j0) loaded.
  void weights(std::int64_t b, std::int64_t h, std::int64_t i0, std::int64_t j0) {
    scores(pr, b, h, i0, nq, j0, nk, qb, kb, s.data(), t.k);
    probabilities(s.data(), t.k, nq, nk, lse.data());
    block_gemm(false, true, nq, nk, pr.Dv, C(1), dob.p, dob.ld, vb.p, vb.ld, C(0), dp.data(), t.k);
    if (pr.p <= 0) {
      score_grads(s.data(), dp.data(), t.k, nq, nk, delta.data());
      return;
    }
    // dS = P*(dropout(dP) - delta); s becomes the dropped-out weights dV needs.
    for (std::int64_t r = 0; r < nq; ++r) {
      C* p_row = s.data() + r * t.k;
      C* dp_row = dp.data() + r * t.k;
      for (std::int64_t c = 0; c < nk; ++c) {
        const C keep = pr.keep(b, h, i0 + r, j0 + c);
        dp_row[c] = p_row[c] * (dp_row[c] * keep - delta[std::size_t(r)]);
        p_row[c] *= keep;
      }
    }
  }
};

// Causal: query rows below j0 leave every key of the tile at j0 out, so
// the walk over query tiles starts at the one holding row j0.
template <DType Dt>
std::int64_t first_query_tile(const Problem<Dt>& pr, std::int64_t j0, TileSize tile) noexcept {
  return pr.causal ? j0 / tile.q * tile.q : 0;
}

// rows of acc (each `width` wide) times scale, rounded into dst's rows
// (b, h, i0 + r).
template <DType Dt>
void store_scaled(ComputeType<Dt>* acc, std::int64_t rows, std::int64_t width, ComputeType<Dt> scale,
                  const Rows<StorageType<Dt>>& dst, std::int64_t b, std::int64_t h, std::int64_t i0) {
  for (std::int64_t r = 0; r < rows; ++r) {
    ComputeType<Dt>* o = acc + r * width;
    for (std::int64_t d = 0; d < width; ++d) o[d] *= scale;
    store_row<Dt>(o, width, dst.row(b, h, i0 + r), 1);
  }
}

// What the gradient ops read: the problem, dout and the row statistics.
template <DType Dt>
struct GradInputs {
  Problem<Dt> pr;
  Rows<const StorageType<Dt>> dout;
  const ComputeType<Dt>* stats;
};
template <DType Dt, class Args>
GradInputs<Dt> grad_inputs(const Args& a) {
  return {Problem<Dt>(a), rows_of<const StorageType<Dt>>(a.dout), element_ptr<const ComputeType<Dt>>(a.stats)};
}

template <DType Dt>
void grad_q(const GradInputs<Dt>& in, const Rows<StorageType<Dt>>& dq) {
  using C = ComputeType<Dt>;
  const Problem<Dt>& pr = in.pr;
  const TileSize tile = tile_size<C>(pr.D, pr.Dv, kGradQTile);
  parallel_chunks(tile_count(pr.B * pr.H, pr.Sq, tile.q), 1, [&](std::int64_t begin, std::int64_t end) {
    const OneGemmThread one;
    GradTiles<Dt> t(pr, in.dout, in.stats, tile);
    std::vector<C> acc(std::size_t(tile.q * pr.D));
    for_tiles(pr.Sq, tile.q, begin, end, [&](std::int64_t bh, std::int64_t i0, std::int64_t nq) {
      const std::int64_t b = bh / pr.H, h = bh % pr.H, hk = pr.kv_head(h);
      t.load_queries(b, h, i0, nq);
      std::fill(acc.begin(), acc.end(), C(0));
      const std::int64_t j_end = pr.key_end(i0 + nq);
      for (std::int64_t j0 = 0; j0 < j_end; j0 += tile.k) {
        t.load_keys(b, hk, j0, std::min(tile.k, j_end - j0));
        t.weights(b, h, i0, j0);
        block_gemm(false, false, nq, pr.D, t.nk, C(1), t.dp.data(), tile.k, t.kb.p, t.kb.ld, C(1), acc.data(), pr.D);
      }
      store_scaled<Dt>(acc.data(), nq, pr.D, pr.scale, dq, b, h, i0);
    });
  });
}

// The products of one pair of tiles (loaded in t, weights computed) that
// dk and dv take: dv += P^T*dO, dk += dS^T*Q, rows of the key tile.
template <DType Dt>
void add_key_grads(const GradTiles<Dt>& t, ComputeType<Dt>* dk_acc, ComputeType<Dt>* dv_acc) {
  using C = ComputeType<Dt>;
  block_gemm(true, false, t.nk, t.pr.Dv, t.nq, C(1), t.s.data(), t.t.k, t.dob.p, t.dob.ld, C(1), dv_acc, t.pr.Dv);
  block_gemm(true, false, t.nk, t.pr.D, t.nq, C(1), t.dp.data(), t.t.k, t.qb.p, t.qb.ld, C(1), dk_acc, t.pr.D);
}

template <DType Dt>
void grad_kv(const GradInputs<Dt>& in, const Rows<StorageType<Dt>>& dk, const Rows<StorageType<Dt>>& dv) {
  using C = ComputeType<Dt>;
  const Problem<Dt>& pr = in.pr;
  const TileSize tile = tile_size<C>(pr.D, pr.Dv, kGradKvTile);
  const std::int64_t group = pr.H / pr.Hkv;
  parallel_chunks(tile_count(pr.B * pr.Hkv, pr.Sk, tile.k), 1, [&](std::int64_t begin, std::int64_t end) {
    const OneGemmThread one;
    GradTiles<Dt> t(pr, in.dout, in.stats, tile);
    std::vector<C> dk_acc(std::size_t(tile.k * pr.D)), dv_acc(std::size_t(tile.k * pr.Dv));
    for_tiles(pr.Sk, tile.k, begin, end, [&](std::int64_t bhk, std::int64_t j0, std::int64_t nk) {
      const std::int64_t b = bhk / pr.Hkv, hk = bhk % pr.Hkv;
      t.load_keys(b, hk, j0, nk);
      std::fill(dk_acc.begin(), dk_acc.end(), C(0));
      std::fill(dv_acc.begin(), dv_acc.end(), C(0));
      for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (std::int64_t i0 = first_query_tile(pr, j0, tile); i0 < pr.Sq; i0 += tile.q) {
          t.load_queries(b, h, i0, std::min(tile.q, pr.Sq - i0));
          t.weights(b, h, i0, j0);
          add_key_grads(t, dk_acc.data(), dv_acc.data());
        }
      }
      store_scaled<Dt>(dk_acc.data(), nk, pr.D, pr.scale, dk, b, hk, j0);
      store_scaled<Dt>(dv_acc.data(), nk, pr.Dv, C(1), dv, b, hk, j0);
    });
  });
}

template <DType Dt>
void attention_grad_q_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_q>(call);
  grad_q(grad_inputs<Dt>(a), rows_of<StorageType<Dt>>(a.dq));
}

template <DType Dt>
void attention_grad_kv_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_kv>(call);
  grad_kv(grad_inputs<Dt>(a), rows_of<StorageType<Dt>>(a.dk), rows_of<StorageType<Dt>>(a.dv));
}

// The threads oneTBB runs our tasks on (XYLEM_NATIVE_THREADS caps them
// through a global_control, which the arena's own count does not show).
std::int64_t cores() {
  return std::int64_t(std::min<std::size_t>(
      std::size_t(tbb::this_task_arena::max_concurrency()),
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
}

// nn::attention_grad (no mask, no dropout): the three gradients in one
// pass over the pairs of tiles where there are enough (batch, kv head)
// tasks for the cores: each task owns its heads' dq, dk and dv, so the
// scores, probabilities and dS of a pair are computed once (5 gemms a
// pair, against 3 + 4 for the dq and dk/dv ops apart). With fewer heads
// than cores the ops' finer tasks win: they run instead, on the same
// statistics. A task's dq accumulator holds its group's rows, so the
// tasks running at once (no more than the tasks) hold at most dq's size.
// The two paths group dq's sum over keys differently, so its last bits
// may change with the thread count (dk and dv do not).
template <DType Dt>
void attention_grad_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad>(call);
  const Problem<Dt> pr(a.q, a.k, a.v, plugin::TensorArg{}, a.causal, 0, 0, a.scale, 0);
  std::vector<C> stats(std::size_t(2 * pr.B * pr.H * pr.Sq));
  row_stats<Dt>(rows_of<const S>(a.out), rows_of<const S>(a.dout), element_ptr<const C>(a.lse), pr.B, pr.H, pr.Sq,
                pr.Dv, stats.data());
  const GradInputs<Dt> in{pr, rows_of<const S>(a.dout), stats.data()};
  const Rows<S> dq = rows_of<S>(a.dq), dk = rows_of<S>(a.dk), dv = rows_of<S>(a.dv);
  if (pr.B * pr.Hkv < cores()) {
    grad_q(in, dq);
    grad_kv(in, dk, dv);
    return;
  }
  const TileSize tile = tile_size<C>(pr.D, pr.Dv, kGradKvTile);
  const std::int64_t group = pr.H / pr.Hkv;
  parallel_chunks(pr.B * pr.Hkv, 1, [&](std::int64_t begin, std::int64_t end) {
    const OneGemmThread one;
    GradTiles<Dt> t(pr, in.dout, in.stats, tile);
    std::vector<C> dk_acc(std::size_t(tile.k * pr.D)), dv_acc(std::size_t(tile.k * pr.Dv)),
        dq_acc(std::size_t(group * pr.Sq * pr.D));
    for (std::int64_t bhk = begin; bhk < end; ++bhk) {
      const std::int64_t b = bhk / pr.Hkv, hk = bhk % pr.Hkv;
      std::fill(dq_acc.begin(), dq_acc.end(), C(0));
      for (std::int64_t j0 = 0; j0 < pr.Sk; j0 += tile.k) {
        const std::int64_t nk = std::min(tile.k, pr.Sk - j0);
        t.load_keys(b, hk, j0, nk);
        std::fill(dk_acc.begin(), dk_acc.end(), C(0));
        std::fill(dv_acc.begin(), dv_acc.end(), C(0));
        for (std::int64_t g = 0; g < group; ++g) {
          const std::int64_t h = hk * group + g;
          for (std::int64_t i0 = first_query_tile(pr, j0, tile); i0 < pr.Sq; i0 += tile.q) {
            t.load_queries(b, h, i0, std::min(tile.q, pr.Sq - i0));
            t.weights(b, h, i0, j0);
            add_key_grads(t, dk_acc.data(), dv_acc.data());
            block_gemm(false, false, t.nq, pr.D, nk, C(1), t.dp.data(), tile.k, t.kb.p, t.kb.ld, C(1),
                       dq_acc.data() + (g * pr.Sq + i0) * pr.D, pr.D);
          }
        }
        store_scaled<Dt>(dk_acc.data(), nk, pr.D, pr.scale, dk, b, hk, j0);
        store_scaled<Dt>(dv_acc.data(), nk, pr.Dv, C(1), dv, b, hk, j0);
      }
      for (std::int64_t g = 0; g < group; ++g)
        store_scaled<Dt>(dq_acc.data() + g * pr.Sq * pr.D, pr.Sq, pr.D, pr.scale, dq, b, hk * group + g, 0);
    }
  });
}

}  // namespace

void register_attention_grad(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType Dt = decltype(dtype)::value;
    table.set(OpId::nn_attention_grad_q, Dt, &attention_grad_q_kernel<Dt>);
    table.set(OpId::nn_attention_grad_kv, Dt, &attention_grad_kv_kernel<Dt>);
    table.set(OpId::nn_attention_grad, Dt, &attention_grad_kernel<Dt>);
  });
}

}  // namespace xylem::native
