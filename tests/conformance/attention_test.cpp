// xylem::nn::scaled_dot_product_attention, forward and backward, in f16,
// bf16, f32 and f64 against a naive float64 softmax(q k^T scale + mask) v
// (and its analytic gradients) on fresh random inputs: boolean and additive
// masks broadcast from smaller shapes, causal (top-left aligned, Sq != Sk),
// Sq = 1, sizes that are no multiple of a tile, head dims 32 to 256 and odd
// ones, grouped and multi-query heads, a row with every key left out,
// dropout (the same Philox counters as the reference), strided inputs;
// longer f16 and bf16 problems of the shapes CUDA runs on tensor cores.
// The backward also against central differences of the backend's own
// forward (f64); bad arguments raise typed errors and change nothing;
// empty problems give empty or zero results.
#include <limits>
#include <sstream>

#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"
#include "xylem/attention.hpp"
#include "xylem/math.hpp"
#include "xylem/plugin/math.h"

namespace conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class MaskKind { none, boolean, additive };

struct Case {
  std::int64_t B, H, Hkv, Sq, Sk, D, Dv;
  MaskKind mask = MaskKind::none;
  Dims mask_dims = {};  // broadcast to [B, H, Sq, Sk]
  bool causal = false;
  double p = 0;
  double scale = 0;  // 0: the default 1/sqrt(D)
  bool strided_q = false;
};

std::string describe(const Case& c) {
  std::ostringstream s;
  s << "B" << c.B << " H" << c.H << "/" << c.Hkv << " Sq" << c.Sq << " Sk" << c.Sk << " D" << c.D << " Dv" << c.Dv;
  if (c.mask == MaskKind::boolean) s << " bool mask " << dims_text(c.mask_dims);
  if (c.mask == MaskKind::additive) s << " additive mask " << dims_text(c.mask_dims);
  if (c.causal) s << " causal";
  if (c.p > 0) s << " dropout " << c.p;
  if (c.scale != 0) s << " scale " << c.scale;
  if (c.strided_q) s << " strided q";
  return s.str();
}

std::vector<Case> cases() {
  return {
      {1, 1, 1, 1, 1, 4, 4},
      {2, 3, 3, 37, 53, 32, 32},
      {1, 2, 2, 70, 70, 64, 64, MaskKind::none, {}, true},
      {2, 4, 2, 1, 130, 128, 128},
      {1, 2, 1, 65, 33, 40, 24, MaskKind::none, {}, true},
      {1, 1, 1, 40, 20, 8, 8, MaskKind::none, {}, true},
      {1, 1, 1, 9, 150, 256, 256},
      {2, 2, 2, 33, 47, 16, 16, MaskKind::boolean, {33, 47}},
      {2, 2, 1, 17, 70, 16, 8, MaskKind::additive, {2, 1, 17, 70}},
      {1, 2, 2, 30, 70, 16, 16, MaskKind::none, {}, false, 0.3},
      {1, 2, 2, 12, 19, 8, 8, MaskKind::boolean, {1, 2, 1, 19}, false, 0.5},
      {1, 2, 2, 25, 31, 8, 8, MaskKind::none, {}, true, 0.2, 0.3},
      {2, 2, 2, 21, 29, 12, 12, MaskKind::none, {}, false, 0, 0, true},
  };
}

// Longer problems in f16 and bf16, of the shapes CUDA's tensor-core
// attention takes (head dims multiples of 8 up to 256, no dropout): several
// key and query tiles with ragged ends, causal with Sq < Sk and Sq > Sk,
// grouped heads, both mask kinds.
std::vector<Case> long_cases() {
  return {
      {1, 2, 1, 200, 520, 64, 64},
      {1, 2, 2, 333, 333, 128, 128, MaskKind::none, {}, true},
      {1, 4, 2, 260, 200, 64, 64, MaskKind::none, {}, true},
      {1, 2, 1, 130, 400, 128, 128, MaskKind::none, {}, true},
      {1, 2, 2, 210, 300, 96, 64, MaskKind::additive, {210, 300}},
      {2, 2, 2, 129, 257, 64, 64, MaskKind::boolean, {2, 1, 129, 257}},
      {1, 1, 1, 200, 240, 256, 256, MaskKind::none, {}, true},
      {1, 2, 2, 64, 64, 32, 32, MaskKind::none, {}, false, 0, 2.5},
      // Unmasked: what CUDA hands to cuDNN's fused attention (a head
      // dimension of v unlike q's, grouped heads, ragged tiles).
      {2, 4, 1, 150, 90, 96, 64},
      {1, 2, 2, 513, 127, 128, 128},
      // Key counts of whole 128-key tiles, heads alike: where CUDA's
      // backward also goes to cuDNN (every cuDNN 9); causal with fewer keys
      // than queries.
      {1, 2, 2, 100, 256, 64, 64},
      {2, 2, 2, 256, 256, 128, 128, MaskKind::none, {}, true},
      {1, 2, 2, 200, 128, 64, 64, MaskKind::none, {}, true},
  };
}

// The float64 reference and its gradients, for one case's values.
struct Reference {
  std::vector<double> out, out_mag, lse, dq, dk, dv, dq_mag, dk_mag, dv_mag;
};

struct Inputs {
  std::vector<double> q, k, v, mask, dout;
};

Reference reference(const Case& c, const Inputs& in, std::uint64_t seed, std::uint64_t offset) {
  const double scale = c.scale != 0 ? c.scale : 1 / std::sqrt(double(c.D));
  const std::int64_t group = c.H / c.Hkv;
  const auto mask_at = [&](std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
    // mask_dims right-aligned against [B, H, Sq, Sk], broadcast where 1.
    const std::int64_t idx[4] = {b, h, i, j};
    const std::size_t r = c.mask_dims.size();
    std::int64_t k = 0;
    for (std::size_t a = 0; a < r; ++a) {
      const std::int64_t d = c.mask_dims[a];
      k = k * d + (d == 1 ? 0 : idx[4 - r + a]);
    }
    return in.mask[std::size_t(k)];
  };
  Reference ref;
  const auto n_out = std::size_t(c.B * c.H * c.Sq * c.Dv);
  ref.out.assign(n_out, 0);
  ref.out_mag.assign(n_out, 0);
  ref.lse.assign(std::size_t(c.B * c.H * c.Sq), -kInf);
  ref.dq.assign(std::size_t(c.B * c.H * c.Sq * c.D), 0);
  ref.dq_mag = ref.dq;
  ref.dk.assign(std::size_t(c.B * c.Hkv * c.Sk * c.D), 0);
  ref.dk_mag = ref.dk;
  ref.dv.assign(std::size_t(c.B * c.Hkv * c.Sk * c.Dv), 0);
  ref.dv_mag = ref.dv;
  std::vector<double> s(std::size_t(c.Sk)), smag(std::size_t(c.Sk)), w(std::size_t(c.Sk)), keep(std::size_t(c.Sk)),
      dp(std::size_t(c.Sk));
  for (std::int64_t b = 0; b < c.B; ++b)
    for (std::int64_t h = 0; h < c.H; ++h) {
      const std::int64_t hk = h / group;
      for (std::int64_t i = 0; i < c.Sq; ++i) {
        const double* q = &in.q[std::size_t(((b * c.H + h) * c.Sq + i) * c.D)];
        const double* dout = &in.dout[std::size_t(((b * c.H + h) * c.Sq + i) * c.Dv)];
        double top = -kInf;
        for (std::int64_t j = 0; j < c.Sk; ++j) {
          const double* k = &in.k[std::size_t(((b * c.Hkv + hk) * c.Sk + j) * c.D)];
          double dot = 0, mag = 0;
          for (std::int64_t d = 0; d < c.D; ++d) {
            dot += q[d] * k[d];
            mag += std::abs(q[d] * k[d]);
          }
          double score = dot * scale;
          smag[std::size_t(j)] = mag * std::abs(scale);
          if (c.mask == MaskKind::boolean && mask_at(b, h, i, j) == 0) score = -kInf;
          if (c.mask == MaskKind::additive) score += mask_at(b, h, i, j);
          if (c.causal && j > i) score = -kInf;
          s[std::size_t(j)] = score;
          top = std::max(top, score);
          const auto counter = offset + std::uint64_t(((b * c.H + h) * c.Sq + i) * c.Sk + j);
          keep[std::size_t(j)] = c.p > 0 ? (xy_dropout_keep(seed, counter, float(c.p)) ? 1 / (1 - c.p) : 0) : 1;
        }
        if (top == -kInf) continue;  // every key left out: out 0, lse -Inf, no gradient
        double sum = 0;
        for (std::int64_t j = 0; j < c.Sk; ++j) sum += std::exp(s[std::size_t(j)] - top);
        const double lse = top + std::log(sum);
        ref.lse[std::size_t((b * c.H + h) * c.Sq + i)] = lse;
        double delta = 0, delta_mag = 0;
        for (std::int64_t j = 0; j < c.Sk; ++j) {
          w[std::size_t(j)] = std::exp(s[std::size_t(j)] - lse);
          const double* v = &in.v[std::size_t(((b * c.Hkv + hk) * c.Sk + j) * c.Dv)];
          for (std::int64_t e = 0; e < c.Dv; ++e) {
            const auto o = std::size_t(((b * c.H + h) * c.Sq + i) * c.Dv + e);
            ref.out[o] += w[std::size_t(j)] * keep[std::size_t(j)] * v[e];
            ref.out_mag[o] += w[std::size_t(j)] * keep[std::size_t(j)] * std::abs(v[e]) * (1 + smag[std::size_t(j)]);
          }
          double d = 0;
          for (std::int64_t e = 0; e < c.Dv; ++e) d += dout[e] * v[e];
          dp[std::size_t(j)] = d * keep[std::size_t(j)];
        }
        for (std::int64_t e = 0; e < c.Dv; ++e) {
          const auto o = std::size_t(((b * c.H + h) * c.Sq + i) * c.Dv + e);
          delta += dout[e] * ref.out[o];
          delta_mag += std::abs(dout[e]) * ref.out_mag[o];
        }
        for (std::int64_t j = 0; j < c.Sk; ++j) {
          const double p = w[std::size_t(j)], ds = p * (dp[std::size_t(j)] - delta);
          const double ds_mag = p * (std::abs(dp[std::size_t(j)]) + delta_mag) * (1 + smag[std::size_t(j)]);
          const double* k = &in.k[std::size_t(((b * c.Hkv + hk) * c.Sk + j) * c.D)];
          for (std::int64_t d = 0; d < c.D; ++d) {
            const auto o = std::size_t(((b * c.H + h) * c.Sq + i) * c.D + d);
            ref.dq[o] += scale * ds * k[d];
            ref.dq_mag[o] += std::abs(scale) * ds_mag * std::abs(k[d]);
            const auto ok = std::size_t(((b * c.Hkv + hk) * c.Sk + j) * c.D + d);
            ref.dk[ok] += scale * ds * q[d];
            ref.dk_mag[ok] += std::abs(scale) * ds_mag * std::abs(q[d]);
          }
          for (std::int64_t e = 0; e < c.Dv; ++e) {
            const auto ov = std::size_t(((b * c.Hkv + hk) * c.Sk + j) * c.Dv + e);
            ref.dv[ov] += p * keep[std::size_t(j)] * dout[e];
            ref.dv_mag[ov] += p * keep[std::size_t(j)] * std::abs(dout[e]) * (1 + smag[std::size_t(j)]);
          }
        }
      }
    }
  return ref;
}

class Attention : public Conformance {
 protected:
  // A mask of the case's kind and dims: boolean with about a fifth left out
  // (and the first row of the broadcast mask wholly left out when it has
  // several), or additive with values in [-2, 1] and some -Inf.
  Tensor make_mask(const Case& c, DType dtype, std::vector<double>& values) {
    const std::int64_t n = product(c.mask_dims);
    std::uniform_real_distribution<double> u(0, 1);
    values.resize(std::size_t(n));
    const std::int64_t cols = c.mask_dims.back(), rows = n / cols;
    for (std::int64_t k = 0; k < n; ++k) {
      const double r = u(rng);
      if (c.mask == MaskKind::boolean) {
        values[std::size_t(k)] = (rows > 1 && k < cols) ? 0 : r < 0.2 ? 0 : 1;
      } else {
        values[std::size_t(k)] = r < 0.1 ? -kInf : round_to(dtype, -2 + 3 * u(rng));
      }
    }
    const Layout shape(std::span<const std::int64_t>(c.mask_dims.data(), c.mask_dims.size()));
    if (c.mask == MaskKind::boolean) {
      std::vector<unsigned char> bytes(values.size());
      for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = values[k] != 0;
      return Tensor::from_bytes(bytes.data(), bytes.size(), shape, DType::boolean);
    }
    return xylem::cast(Backend::open("native"), Tensor::from(values, shape), dtype);
  }

  void run_case(const Case& c, DType dtype) {
    SCOPED_TRACE(describe(c));
    const Dims qd{c.B, c.H, c.Sq, c.D}, kd{c.B, c.Hkv, c.Sk, c.D}, vd{c.B, c.Hkv, c.Sk, c.Dv},
        od{c.B, c.H, c.Sq, c.Dv};
    auto q = input(dtype, c.strided_q ? ViewKind::strided : ViewKind::contiguous, qd);
    auto k = input(dtype, ViewKind::contiguous, kd);
    auto v = input(dtype, ViewKind::contiguous, vd);
    auto dout = input(dtype, ViewKind::contiguous, od);
    Inputs in{q.values(), k.values(), v.values(), {}, dout.values()};
    xylem::nn::Attention options;
    if (c.mask != MaskKind::none) options.mask = make_mask(c, dtype, in.mask);
    options.causal = c.causal;
    if (c.scale != 0) options.scale = c.scale;
    options.dropout_p = c.p;
    xylem::Generator gen(seed);
    (void)gen.advance(seed % 1000);
    options.generator = &gen;
    const auto fwd = xylem::nn::scaled_dot_product_attention_forward(backend, q.view, k.view, v.view, options);
    EXPECT_EQ(fwd.dropout.offset, c.p > 0 ? seed % 1000 : 0);
    const Reference ref = reference(c, in, fwd.dropout.seed, fwd.dropout.offset);
    const auto grads = xylem::nn::scaled_dot_product_attention_grad(backend, q.view, k.view, v.view, fwd, dout.view,
                                                                    options);
    const bool half = dtype == DType::f16 || dtype == DType::bf16;
    const std::int64_t terms = c.Sk + c.Sq + c.D + c.Dv;
    const double rel = 32 * acc(dtype, terms) + (half ? 4 * tol(dtype).elem : 0);
    const auto check = [&](const Tensor& got, const std::vector<double>& want, const std::vector<double>& mag,
                           const char* what) {
      const auto g = got.to_doubles();
      ASSERT_EQ(g.size(), want.size()) << what;
      std::size_t bad = 0;
      for (std::size_t e = 0; e < g.size(); ++e) {
        const double allowed = tol(dtype).elem * std::abs(want[e]) + rel * mag[e] + floor_of(dtype);
        if (!(std::abs(g[e] - want[e]) <= allowed) && ++bad <= 5)
          ADD_FAILURE() << what << "[" << e << "]: got " << g[e] << ", expected " << want[e] << " (allowed "
                        << allowed << ")";
      }
      EXPECT_EQ(bad, 0u) << what;
    };
    check(fwd.out, ref.out, ref.out_mag, "out");
    {
      const auto lse = fwd.lse.to_doubles();
      ASSERT_EQ(lse.size(), ref.lse.size());
      std::size_t bad = 0;
      for (std::size_t e = 0; e < lse.size(); ++e) {
        const bool ok = ref.lse[e] == -kInf ? lse[e] == -kInf
                                             : std::abs(lse[e] - ref.lse[e]) <= rel * (1 + std::abs(ref.lse[e]) * 4);
        if (!ok && ++bad <= 5) ADD_FAILURE() << "lse[" << e << "]: got " << lse[e] << ", expected " << ref.lse[e];
      }
      EXPECT_EQ(bad, 0u) << "lse";
    }
    check(grads.dq, ref.dq, ref.dq_mag, "dq");
    check(grads.dk, ref.dk, ref.dk_mag, "dk");
    check(grads.dv, ref.dv, ref.dv_mag, "dv");
  }

  bool runs_attention(DType dtype) {
    for (OpId op : {OpId::nn_attention, OpId::nn_attention_grad_rows, OpId::nn_attention_grad_q,
                    OpId::nn_attention_grad_kv}) {
      if (!backend.supports(op, dtype)) {
        return runs(op, dtype, [&] {
          auto q = input(dtype, ViewKind::contiguous, {1, 1, 2, 4});
          const auto fwd = xylem::nn::scaled_dot_product_attention_forward(backend, q.view, q.view, q.view);
          (void)xylem::nn::scaled_dot_product_attention_grad(backend, q.view, q.view, q.view, fwd, q.view);
        });
      }
    }
    return true;
  }
};

TEST_P(Attention, against_reference) {
  for_each_float_dtype([&](DType dtype) {
    if (!runs_attention(dtype)) return;
    for (const Case& c : cases()) run_case(c, dtype);
  });
}

TEST_P(Attention, half_long) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    if (!runs_attention(dtype)) continue;
    for (const Case& c : long_cases()) run_case(c, dtype);
  }
}

// The backward against central differences of the backend's forward (f64),
// dropout included (each evaluation draws the same mask from a fresh generator).
TEST_P(Attention, finite_differences) {
  if (!runs_attention(DType::f64)) return;
  const Case fd_cases[] = {{1, 2, 1, 5, 7, 6, 4, MaskKind::none, {}, true},
                           {1, 2, 2, 4, 6, 5, 3, MaskKind::additive, {4, 6}, false, 0.25}};
  for (const Case& c : fd_cases) {
    SCOPED_TRACE(describe(c));
    const Layout qs{c.B, c.H, c.Sq, c.D}, ks{c.B, c.Hkv, c.Sk, c.D}, vs{c.B, c.Hkv, c.Sk, c.Dv},
        os{c.B, c.H, c.Sq, c.Dv};
    const auto q = xylem_test::random_vector<double>(rng, qs.numel(), -1, 1);
    const auto k = xylem_test::random_vector<double>(rng, ks.numel(), -1, 1);
    const auto v = xylem_test::random_vector<double>(rng, vs.numel(), -1, 1);
    const auto dy = xylem_test::random_vector<double>(rng, os.numel(), -1, 1);
    std::vector<double> mask_values;
    xylem::nn::Attention options;
    options.causal = c.causal;
    options.dropout_p = c.p;
    if (c.mask != MaskKind::none) options.mask = make_mask(c, DType::f64, mask_values);
    const auto forward = [&](const Tensor& qt, const Tensor& kt, const Tensor& vt) {
      xylem::Generator gen(seed);
      xylem::nn::Attention o = options;
      o.generator = &gen;
      return xylem::nn::scaled_dot_product_attention_forward(backend, qt, kt, vt, o);
    };
    const Tensor qt = Tensor::from(q, qs), kt = Tensor::from(k, ks), vt = Tensor::from(v, vs);
    const auto fwd = forward(qt, kt, vt);
    const auto g = xylem::nn::scaled_dot_product_attention_grad(backend, qt, kt, vt, fwd, Tensor::from(dy, os), options);
    expect_gradient(g.dq.to_doubles(), q, qs, dy, [&](const Tensor& x) { return forward(x, kt, vt).out; },
                    some_coordinates(rng, q.size()), mean_abs(g.dq.to_doubles()), "dq");
    expect_gradient(g.dk.to_doubles(), k, ks, dy, [&](const Tensor& x) { return forward(qt, x, vt).out; },
                    some_coordinates(rng, k.size()), mean_abs(g.dk.to_doubles()), "dk");
    expect_gradient(g.dv.to_doubles(), v, vs, dy, [&](const Tensor& x) { return forward(qt, kt, x).out; },
                    some_coordinates(rng, v.size()), mean_abs(g.dv.to_doubles()), "dv");
  }
}

// The dropout mask depends on the generator alone: this backend and native
// drop the same weights.
TEST_P(Attention, same_dropout_as_native) {
  if (!backend.supports(OpId::nn_attention, xylem::f32)) return;  // reported by against_reference
  const Backend native = Backend::open("native");
  const Layout shape{1, 2, 9, 16};
  const Tensor q = Tensor::from(xylem_test::random_vector<float>(rng, std::int64_t{288}, -1, 1), shape);
  const Tensor v = Tensor::from(xylem_test::random_vector<float>(rng, std::int64_t{288}, 0.5, 1.5), shape);
  xylem::Generator g1(seed), g2(seed);
  xylem::nn::Attention o1, o2;
  o1.dropout_p = o2.dropout_p = 0.4;
  o1.generator = &g1;
  o2.generator = &g2;
  const auto a = xylem::nn::scaled_dot_product_attention(backend, q, q, v, o1).to_vector<float>();
  const auto b = xylem::nn::scaled_dot_product_attention(native, q, q, v, o2).to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t e = 0; e < a.size(); ++e) EXPECT_NEAR(a[e], b[e], 1e-4 * (1 + std::abs(b[e]))) << e;
}

TEST_P(Attention, empty) {
  if (!backend.supports(OpId::nn_attention, xylem::f32)) return;
  const auto zeros = [](const Layout& l) { return Tensor::from(std::vector<float>(std::size_t(l.numel()), 0.5f), l); };
  {  // no batch
    const Tensor q = zeros(Layout{0, 2, 3, 4});
    const auto fwd = xylem::nn::scaled_dot_product_attention_forward(backend, q, q, q);
    EXPECT_EQ(fwd.out.numel(), 0);
    const auto g = xylem::nn::scaled_dot_product_attention_grad(backend, q, q, q, fwd, fwd.out);
    EXPECT_EQ(g.dq.numel(), 0);
    EXPECT_EQ(g.dq.to_doubles().size(), 0u);
  }
  {  // no keys: out 0, lse -Inf, gradients 0
    const Tensor q = zeros(Layout{1, 2, 3, 4}), k = zeros(Layout{1, 2, 0, 4});
    const auto fwd = xylem::nn::scaled_dot_product_attention_forward(backend, q, k, k);
    for (double e : fwd.out.to_doubles()) EXPECT_EQ(e, 0);
    for (double e : fwd.lse.to_doubles()) EXPECT_EQ(e, -kInf);
    const auto g = xylem::nn::scaled_dot_product_attention_grad(backend, q, k, k, fwd, fwd.out);
    for (double e : g.dq.to_doubles()) EXPECT_EQ(e, 0);
    EXPECT_EQ(g.dk.numel(), 0);
  }
  {  // no queries: dk, dv 0
    const Tensor q = zeros(Layout{1, 2, 0, 4}), k = zeros(Layout{1, 2, 5, 4});
    const auto fwd = xylem::nn::scaled_dot_product_attention_forward(backend, q, k, k);
    const auto g = xylem::nn::scaled_dot_product_attention_grad(backend, q, k, k, fwd, fwd.out);
    for (double e : g.dk.to_doubles()) EXPECT_EQ(e, 0);
    for (double e : g.dv.to_doubles()) EXPECT_EQ(e, 0);
  }
}

TEST_P(Attention, errors) {
  using xylem::ErrorCode;
  const auto t = [&](const Layout& l) {
    return Tensor::from(xylem_test::random_vector<float>(rng, l.numel(), -1, 1), l);
  };
  const Tensor q = t(Layout{2, 4, 5, 8}), k = t(Layout{2, 2, 6, 8}), v = t(Layout{2, 2, 6, 3});
  const auto sq = xylem_test::snapshot(q), sk = xylem_test::snapshot(k), sv = xylem_test::snapshot(v);
  const auto sdpa = [&](const Tensor& a, const Tensor& b, const Tensor& c, const xylem::nn::Attention& o) {
    (void)xylem::nn::scaled_dot_product_attention(backend, a, b, c, o);
  };
  const xylem::nn::Attention plain;
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sdpa(q, t(Layout{2, 3, 6, 8}), t(Layout{2, 3, 6, 3}), plain));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sdpa(q, t(Layout{2, 2, 6, 7}), v, plain));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sdpa(q, k, t(Layout{2, 2, 7, 3}), plain));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sdpa(q, t(Layout{1, 2, 6, 8}), v, plain));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sdpa(t(Layout{4, 5, 8}), k, v, plain));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  sdpa(q, Tensor::from(std::vector<double>(96, 1.0), Layout{2, 2, 6, 4}), v, plain));
  xylem::nn::Attention bad_mask;
  bad_mask.mask = t(Layout{5, 7});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sdpa(q, k, v, bad_mask));
  bad_mask.mask = Tensor::from(std::vector<std::int32_t>(30, 1), Layout{5, 6});
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, sdpa(q, k, v, bad_mask));
  bad_mask.mask = t(Layout{5, 6});
  bad_mask.causal = true;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, sdpa(q, k, v, bad_mask));
  xylem::nn::Attention drop;
  drop.dropout_p = 0.5;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, sdpa(q, k, v, drop));  // no generator
  xylem::Generator gen(3);
  drop.generator = &gen;
  drop.dropout_p = 1;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, sdpa(q, k, v, drop));
  if (backend.supports(OpId::nn_attention, xylem::f32)) {  // a forward to take the gradient of
    const auto fwd = xylem::nn::scaled_dot_product_attention_forward(backend, q, k, v);
    XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                    (void)xylem::nn::scaled_dot_product_attention_grad(backend, q, k, v, fwd, t(Layout{2, 4, 5, 4})));
  }
  XY_EXPECT_UNCHANGED(q, sq);
  XY_EXPECT_UNCHANGED(k, sk);
  XY_EXPECT_UNCHANGED(v, sv);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Attention, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
