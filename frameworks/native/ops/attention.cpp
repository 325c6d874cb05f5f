// nn::attention (forward) and nn::attention_grad_rows natively, f16/bf16/f32/f64.
// One task per (batch, head, tile of query rows), run in parallel by oneTBB;
// each walks the keys in tiles with an online softmax (the running maximum
// and sum of each row, the output rescaled when the maximum grows), as
// PyTorch's CPU flash attention does: per key tile, the scores are one gemm,
// the softmax step one vector pass over them, and the output takes the
// weights times V as a second gemm (attention_tile.hpp). Memory stays
// O(tile * (D + Dv + keys of a tile)) per task.
#include <cmath>
#include <limits>
#include <vector>

#include "frameworks/native/ops/attention_tile.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

namespace {

using plugin::OpCall;
using plugin::OpId;
using namespace attention;

// The forward's tile: PyTorch's (64 query rows over 512 keys) where the
// gemm allows it.
constexpr TileSize kForwardTile{64, 512};

template <DType Dt>
void attention_kernel(const OpCall& call) {
  using C = ComputeType<Dt>;
  using S = StorageType<Dt>;
  constexpr C inf = std::numeric_limits<C>::infinity();
  const auto a = plugin::unpack<plugin::args::nn_attention>(call);
  const Problem<Dt> pr(a);
  const TileSize t = tile_size<C>(pr.D, pr.Dv, kForwardTile);
  const Rows<S> out = rows_of<S>(a.out);
  const auto ls = a.lse.view.strides();
  C* lse = element_ptr<C>(a.lse);
  parallel_chunks(tile_count(pr.B * pr.H, pr.Sq, t.q), 1, [&](std::int64_t begin, std::int64_t end) {
    const OneGemmThread one;
    std::vector<C> qt(std::size_t(t.q * pr.D)), kt(std::size_t(t.k * pr.D)), vt(std::size_t(t.k * pr.Dv)),
        s(std::size_t(t.q * t.k)), acc(std::size_t(t.q * pr.Dv)), m(std::size_t(t.q)), l(std::size_t(t.q));
    for_tiles(pr.Sq, t.q, begin, end, [&](std::int64_t bh, std::int64_t i0, std::int64_t nq) {
      const std::int64_t b = bh / pr.H, h = bh % pr.H, hk = pr.kv_head(h);
      const auto qb = rows_block<Dt>(pr.q, b, h, i0, nq, pr.D, qt.data());
      std::fill(m.begin(), m.end(), -inf);
      std::fill(l.begin(), l.end(), C(0));
      std::fill(acc.begin(), acc.end(), C(0));
      const std::int64_t j_end = pr.key_end(i0 + nq);
      for (std::int64_t j0 = 0; j0 < j_end; j0 += t.k) {
        const std::int64_t nk = std::min(t.k, j_end - j0);
        scores(pr, b, h, i0, nq, j0, nk, qb, rows_block<Dt>(pr.k, b, hk, j0, nk, pr.D, kt.data()), s.data(), t.k);
        online_softmax(s.data(), t.k, nq, nk, m.data(), l.data(), acc.data(), pr.Dv, pr.Dv);
        // The sums above count every weight; dropout thins only what V sees.
        if (pr.p > 0) drop(pr, b, h, i0, nq, j0, nk, s.data(), t.k);
        const auto vb = rows_block<Dt>(pr.v, b, hk, j0, nk, pr.Dv, vt.data());
        block_gemm(false, false, nq, pr.Dv, nk, C(1), s.data(), t.k, vb.p, vb.ld, C(1), acc.data(), pr.Dv);
      }
      for (std::int64_t r = 0; r < nq; ++r) {
        const C sum = l[std::size_t(r)];
        C* o = acc.data() + r * pr.Dv;
        if (sum > C(0)) {
          for (std::int64_t e = 0; e < pr.Dv; ++e) o[e] /= sum;
        }
        store_row<Dt>(o, pr.Dv, out.row(b, h, i0 + r), 1);
        lse[b * ls[0] + h * ls[1] + (i0 + r) * ls[2]] = sum > C(0) ? m[std::size_t(r)] + std::log(sum) : -inf;
      }
    });
  });
}

template <DType Dt>
void attention_grad_rows_kernel(const OpCall& call) {
  using S = StorageType<Dt>;
  const auto a = plugin::unpack<plugin::args::nn_attention_grad_rows>(call);
  const auto dims = a.out.view.dims();
  row_stats<Dt>(rows_of<const S>(a.out), rows_of<const S>(a.dout), element_ptr<const ComputeType<Dt>>(a.lse), dims[0],
                dims[1], dims[2], dims[3], element_ptr<ComputeType<Dt>>(a.stats));
}

}  // namespace

void register_attention(KernelTable& table) {
  for_float_dtypes([&](auto dtype) {
    constexpr DType Dt = decltype(dtype)::value;
    table.set(OpId::nn_attention, Dt, &attention_kernel<Dt>);
    table.set(OpId::nn_attention_grad_rows, Dt, &attention_grad_rows_kernel<Dt>);
  });
}

}  // namespace xylem::native
