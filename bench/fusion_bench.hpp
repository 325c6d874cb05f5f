#pragma once
// The fusion row every framework's benchmark shares: y = relu(x*a + b)*c
// over n f32 (a, b, c scalars), as one math::fused kernel, as its four
// unfused ops and as four eager calls fused automatically, on one backend, the runs alternating so both see the same
// load. GB/s counts the bytes the chain must move at least: x read once, y
// written once (8 bytes an element).
#include <xylem/xylem.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.hpp"
#include "xylem/plugin/math.h"

namespace xylem_bench {

struct FusionFigures {
  std::int64_t n = 0;
  double fused_gbps = 0, unfused_gbps = 0;
  double auto_gbps = 0;  // the chain written as eager calls, fused automatically
  [[nodiscard]] double ratio() const { return fused_gbps / unfused_gbps; }
};

inline FusionFigures bench_fusion(const xylem::Backend& be, std::int64_t n, int runs) {
  using namespace xylem;
  Generator g(5);
  const Tensor x = uniform(be, Layout{n}, f32, g, -4, 4);
  const Tensor a = full(be, Layout{}, f32, 1.5), b = full(be, Layout{}, f32, -0.25), c = full(be, Layout{}, f32, 2.0);
  Tensor y = zeros(be, Layout{n}, f32), t1 = zeros(be, Layout{n}, f32), t2 = zeros(be, Layout{n}, f32);
  FusedProgram p;
  p.output(0, p.binary(XY_BIN_MUL,
                       p.unary(XY_UN_RELU, p.binary(XY_BIN_ADD, p.binary(XY_BIN_MUL, p.input(0), p.input(1)), p.input(2))),
                       p.input(3)));
  const auto fused_chain = [&] { fused(be, p, {x, a, b, c}, {y}); };
  // The unfused chain into preallocated intermediates, as a framework
  // without fusion runs it (automatic fusion off for it).
  const bool fusion_was_on = fusion_enabled();
  const auto unfused_chain = [&] {
    set_fusion(false);
    mul(be, x, a, t1);
    add(be, t1, b, t2);
    nn::relu(be, t2, t1);
    mul(be, t1, c, y);
  };
  // The same chain as a user writes it, eager calls on temporaries, with
  // automatic fusion on: one kernel, the temporaries never stored.
  const auto auto_chain = [&] {
    set_fusion(true);
    mul(be, nn::relu(be, add(be, mul(be, x, a), b)), c, y);
  };
  for (int i = 0; i < 2; ++i) fused_chain(), unfused_chain(), auto_chain();
  be.synchronize();
  // Several chains a wait, as the copy bound beside this row is timed: one
  // wait per chain would add its launch and wait (10-20 us on a GPU) to a
  // chain of under a millisecond. Not the automatic chain: fusion would
  // merge back-to-back chains and drop the overwritten ones' work.
  constexpr int kChainsPerWait = 4;
  const auto timed = [&](const auto& chain) {
    const auto t0 = Clock::now();
    for (int k = 0; k < kChainsPerWait; ++k) chain();
    be.synchronize();
    return seconds_since(t0) / kChainsPerWait;
  };
  std::vector<double> tf, tu, ta;
  for (int i = 0; i < runs; ++i) {
    tf.push_back(timed(fused_chain));
    tu.push_back(timed(unfused_chain));
    const auto t0 = Clock::now();
    auto_chain();
    be.synchronize();
    ta.push_back(seconds_since(t0));
  }
  set_fusion(fusion_was_on);
  // A spot check, so a fast but wrong kernel cannot post a figure.
  fused_chain();
  const auto xs = x.to_vector<float>(), ys = y.to_vector<float>();
  for (std::int64_t i = 0; i < n; i += 9973) {
    const double want = std::max(double(xs[std::size_t(i)]) * 1.5 - 0.25, 0.0) * 2.0;
    if (std::abs(ys[std::size_t(i)] - want) > 1e-5 * (1 + std::abs(want)))
      throw std::runtime_error("fused chain wrong at " + std::to_string(i));
  }
  const double bytes = 8.0 * double(n);
  return {n, bytes / median(tf) * 1e-9, bytes / median(tu) * 1e-9, bytes / median(ta) * 1e-9};
}

// y = relu(x w^T + bias), a linear layer and its activation, x [m, k], w
// [n, k], in three ways on one backend, alternating: as a user writes it
// with automatic fusion on (where the framework has blas::gemm_epilogue, one
// op); as the gemm, then one fused kernel for the bias and the ReLU (what
// fusion did before gemms had epilogues); and with fusion off (gemm, add,
// relu). Milliseconds per layer, medians of `runs`.
struct EpilogueFigures {
  double auto_ms = 0, gemm_then_fused_ms = 0, unfused_ms = 0;
};

inline EpilogueFigures bench_epilogue(const xylem::Backend& be, std::int64_t m, std::int64_t n, std::int64_t k,
                                      xylem::DType dtype, int runs) {
  using namespace xylem;
  Generator g(9);
  // uniform() draws f32 and f64: other dtypes are cast from f32.
  const auto draw = [&](const Layout& shape, double low, double high) {
    const Tensor t = uniform(be, shape, dtype == f64 ? f64 : f32, g, low, high);
    return t.dtype() == dtype ? t : cast(be, t, dtype);
  };
  const Tensor x = draw(Layout{m, k}, -1, 1), w = draw(Layout{n, k}, -0.05, 0.05), bias = draw(Layout{n}, -0.5, 0.5);
  Tensor pre(Layout{m, n}, dtype), y(Layout{m, n}, dtype);
  FusedProgram p;
  p.output(0, p.unary(XY_UN_RELU, p.binary(XY_BIN_ADD, p.input(0), p.input(1))));
  const bool fusion_was_on = fusion_enabled();
  const auto automatic = [&] {
    set_fusion(true);
    nn::relu(be, nn::linear(be, x, w, bias), y);  // the pre-activation: a temporary, never stored
  };
  const auto gemm_then_fused = [&] {
    set_fusion(false);
    blas::gemm(be, blas::Transpose::no, blas::Transpose::yes, 1.0, x, w, 0.0, pre);
    fused(be, p, {pre, bias}, {y});
  };
  const auto unfused = [&] {
    set_fusion(false);
    nn::linear(be, x, w, bias, pre);
    nn::relu(be, pre, y);
  };
  constexpr int kLayersPerWait = 4;
  const auto timed = [&](const auto& layer) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kLayersPerWait; ++i) layer();
    be.synchronize();
    return seconds_since(t0) / kLayersPerWait * 1e3;
  };
  for (int i = 0; i < 2; ++i) (void)timed(automatic), (void)timed(gemm_then_fused), (void)timed(unfused);
  std::vector<double> ta, tg, tu;
  for (int i = 0; i < runs; ++i) {
    ta.push_back(timed(automatic));
    tg.push_back(timed(gemm_then_fused));
    tu.push_back(timed(unfused));
  }
  // A spot check of the automatic result against the unfused one.
  automatic();
  const std::vector<double> got = y.to_doubles();
  unfused();
  const std::vector<double> want = y.to_doubles();
  set_fusion(fusion_was_on);
  const double tol = dtype == f32 ? 1e-3 : 5e-2;
  for (std::size_t i = 0; i < got.size(); i += 7919)
    if (std::abs(got[i] - want[i]) > tol * (1 + std::abs(want[i])))
      throw std::runtime_error("linear + relu epilogue wrong at " + std::to_string(i));
  return {median(ta), median(tg), median(tu)};
}

}  // namespace xylem_bench
