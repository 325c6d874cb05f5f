// nn::attention_grad_q and nn::attention_grad_kv natively, f16/bf16/f32/f64:
// the tiles of the forward recomputed from the saved logsumexp, so the
// backward keeps no [Sq, Sk] buffer either. dq takes one task per (batch,
// head, query tile) walking the keys; dk and dv one task per (batch, kv
// head, key tile) walking every query head of its group and every query
// tile, so each output element has one writer and no atomics are needed.
// Per pair of tiles: S = scale*Q*K^T, P = exp(S - lse) and dP = dO*V^T
// (gemm), dS = P*(dP - delta); then dq += dS*K, or dv += P^T*dO and
// dk += dS^T*Q (gemm), as PyTorch's CPU flash attention backward.
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

  template <class Args>
  GradTiles(const Args& a, TileSize tile)
      : pr(a),
        t(tile),
        dout(rows_of<const S>(a.dout)),
        stats(element_ptr<const C>(a.stats)),
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

// rows of acc (each `width` wide) times scale, rounded into dst's rows
// (b, h, i0 + r).
template <DType Dt>
void store_scaled(std::vector<ComputeType<Dt>>& acc, std::int64_t rows, std::int64_t width, ComputeType<Dt> scale,
                  const Rows<StorageType<Dt>>& dst, std::int64_t b, std::int64_t h, std::int64_t i0) {
  for (std::int64_t r = 0; r < rows; ++r) {
    ComputeType<Dt>* o = acc.data() + r * width;
    for (std::int64_t d = 0; d < width; ++d) o[d] *= scale;
    store_row<Dt>(o, width, dst.row(b, h, i0 + r), 1);
  }
}

template <DType Dt>
void attention_grad_q_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_q>(call);
  const Rows<S> dq = rows_of<S>(a.dq);
  const Problem<Dt> pr(a);
  const TileSize tile = tile_size<C>(pr.D, pr.Dv, kGradQTile);
  parallel_chunks(tile_count(pr.B * pr.H, pr.Sq, tile.q), 1, [&](std::int64_t begin, std::int64_t end) {
    const OneGemmThread one;
    GradTiles<Dt> t(a, tile);
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
      store_scaled<Dt>(acc, nq, pr.D, pr.scale, dq, b, h, i0);
    });
  });
}

template <DType Dt>
void attention_grad_kv_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_kv>(call);
  const Rows<S> dk = rows_of<S>(a.dk), dv = rows_of<S>(a.dv);
  const Problem<Dt> pr(a);
  const TileSize tile = tile_size<C>(pr.D, pr.Dv, kGradKvTile);
  const std::int64_t group = pr.H / pr.Hkv;
  parallel_chunks(tile_count(pr.B * pr.Hkv, pr.Sk, tile.k), 1, [&](std::int64_t begin, std::int64_t end) {
    const OneGemmThread one;
    GradTiles<Dt> t(a, tile);
    std::vector<C> dk_acc(std::size_t(tile.k * pr.D)), dv_acc(std::size_t(tile.k * pr.Dv));
    for_tiles(pr.Sk, tile.k, begin, end, [&](std::int64_t bhk, std::int64_t j0, std::int64_t nk) {
      const std::int64_t b = bhk / pr.Hkv, hk = bhk % pr.Hkv;
      t.load_keys(b, hk, j0, nk);
      std::fill(dk_acc.begin(), dk_acc.end(), C(0));
      std::fill(dv_acc.begin(), dv_acc.end(), C(0));
      // Causal: query rows below j0 leave every key of the tile out.
      const std::int64_t i_begin = pr.causal ? j0 / tile.q * tile.q : 0;
      for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
        for (std::int64_t i0 = i_begin; i0 < pr.Sq; i0 += tile.q) {
          const std::int64_t nq = std::min(tile.q, pr.Sq - i0);
          t.load_queries(b, h, i0, nq);
          t.weights(b, h, i0, j0);
          block_gemm(true, false, nk, pr.Dv, nq, C(1), t.s.data(), tile.k, t.dob.p, t.dob.ld, C(1), dv_acc.data(),
                     pr.Dv);
          block_gemm(true, false, nk, pr.D, nq, C(1), t.dp.data(), tile.k, t.qb.p, t.qb.ld, C(1), dk_acc.data(),
                     pr.D);
        }
      }
      store_scaled<Dt>(dk_acc, nk, pr.D, pr.scale, dk, b, hk, j0);
      store_scaled<Dt>(dv_acc, nk, pr.Dv, C(1), dv, b, hk, j0);
    });
  });
}

}  // namespace

void register_attention_grad(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType Dt = decltype(dtype)::value;
    table.set(OpId::nn_attention_grad_q, Dt, &attention_grad_q_kernel<Dt>);
    table.set(OpId::nn_attention_grad_kv, Dt, &attention_grad_kv_kernel<Dt>);
  });
}

}  // namespace xylem::native
