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

// A layer and its activation in three ways on one backend, alternating:
// as a user writes it with automatic fusion on (where the framework has the
// head's epilogue op, one op); as the head, then one fused kernel for the
// bias and the ReLU; and with fusion off (head, add, relu). Milliseconds per
// layer, medians of `runs`.
struct EpilogueFigures {
  double auto_ms = 0, gemm_then_fused_ms = 0, unfused_ms = 0;
};

// The three ways of one layer: `automatic` and `unfused` write y, `split`
// writes the head's result into pre, then y; tol: the spot check's.
template <class Automatic, class Split, class Unfused>
EpilogueFigures time_epilogue(const xylem::Backend& be, const Automatic& automatic, const Split& split,
                              const Unfused& unfused, const xylem::Tensor& y, double tol, int runs,
                              const char* what) {
  using namespace xylem;
  const bool fusion_was_on = fusion_enabled();
  const auto with_fusion = [&](bool on, const auto& layer) {
    return [&, on] {
      set_fusion(on);
      layer();
    };
  };
  const auto a = with_fusion(true, automatic), g = with_fusion(false, split), u = with_fusion(false, unfused);
  constexpr int kLayersPerWait = 4;
  const auto timed = [&](const auto& layer) {
    const auto t0 = Clock::now();
    for (int i = 0; i < kLayersPerWait; ++i) layer();
    be.synchronize();
    return seconds_since(t0) / kLayersPerWait * 1e3;
  };
  for (int i = 0; i < 2; ++i) (void)timed(a), (void)timed(g), (void)timed(u);
  std::vector<double> ta, tg, tu;
  for (int i = 0; i < runs; ++i) {
    ta.push_back(timed(a));
    tg.push_back(timed(g));
    tu.push_back(timed(u));
  }
  // A spot check of the automatic result against the unfused one.
  a();
  const std::vector<double> got = y.to_doubles();
  u();
  const std::vector<double> want = y.to_doubles();
  set_fusion(fusion_was_on);
  for (std::size_t i = 0; i < got.size(); i += 7919)
    if (std::abs(got[i] - want[i]) > tol * (1 + std::abs(want[i])))
      throw std::runtime_error(std::string(what) + " epilogue wrong at " + std::to_string(i));
  return {median(ta), median(tg), median(tu)};
}

// uniform() draws f32 and f64: other dtypes are cast from f32.
inline xylem::Tensor draw(const xylem::Backend& be, xylem::Generator& g, const xylem::Layout& shape,
                          xylem::DType dtype, double low, double high) {
  const xylem::Tensor t = xylem::uniform(be, shape, dtype == xylem::f64 ? xylem::f64 : xylem::f32, g, low, high);
  return t.dtype() == dtype ? t : xylem::cast(be, t, dtype);
}

// y = relu(x w^T + bias), a linear layer, x [m, k], w [n, k]: the head's
// epilogue is blas::gemm_epilogue.
inline EpilogueFigures bench_epilogue(const xylem::Backend& be, std::int64_t m, std::int64_t n, std::int64_t k,
                                      xylem::DType dtype, int runs) {
  using namespace xylem;
  Generator g(9);
  const Tensor x = draw(be, g, Layout{m, k}, dtype, -1, 1), w = draw(be, g, Layout{n, k}, dtype, -0.05, 0.05),
               bias = draw(be, g, Layout{n}, dtype, -0.5, 0.5);
  Tensor pre(Layout{m, n}, dtype), y(Layout{m, n}, dtype);
  FusedProgram p;
  p.output(0, p.unary(XY_UN_RELU, p.binary(XY_BIN_ADD, p.input(0), p.input(1))));
  return time_epilogue(
      be, [&] { nn::relu(be, nn::linear(be, x, w, bias), y); },  // the pre-activation: a temporary, never stored
      [&] {
        blas::gemm(be, blas::Transpose::no, blas::Transpose::yes, 1.0, x, w, 0.0, pre);
        fused(be, p, {pre, bias}, {y});
      },
      [&] {
        nn::linear(be, x, w, bias, pre);
        nn::relu(be, pre, y);
      },
      y, dtype == f32 ? 1e-3 : 5e-2, runs, "linear + relu");
}

// y = relu(conv2d(x, w) + bias), nn::Conv2d's way (the bias added in place),
// x [batch, c, side, side], w [c, c, 3, 3], padding 1: the head's epilogue
// is nn::conv2d_epilogue.
inline EpilogueFigures bench_conv_epilogue(const xylem::Backend& be, std::int64_t batch, std::int64_t c,
                                           std::int64_t side, xylem::DType dtype, int runs) {
  using namespace xylem;
  Generator g(11);
  const Tensor x = draw(be, g, Layout{batch, c, side, side}, dtype, -1, 1),
               w = draw(be, g, Layout{c, c, 3, 3}, dtype, -0.05, 0.05),
               bias = draw(be, g, Layout{1, c, 1, 1}, dtype, -0.5, 0.5);
  Tensor pre(Layout{batch, c, side, side}, dtype), y(Layout{batch, c, side, side}, dtype);
  nn::Conv2d geometry;
  geometry.pad_h = geometry.pad_w = 1;
  FusedProgram p;
  p.output(0, p.unary(XY_UN_RELU, p.binary(XY_BIN_ADD, p.input(0), p.input(1))));
  return time_epilogue(
      be,
      [&] {
        Tensor t = nn::conv2d(be, x, w, geometry);
        add(be, t, bias, t);
        nn::relu(be, t, y);
      },
      [&] {
        nn::conv2d(be, x, w, pre, geometry);
        fused(be, p, {pre, bias}, {y});
      },
      [&] {
        nn::conv2d(be, x, w, pre, geometry);
        add(be, pre, bias, pre);
        nn::relu(be, pre, y);
      },
      y, dtype == f32 ? 1e-3 : 5e-2, runs, "conv2d + bias + relu");
}

// y = tanh(softmax(x) * m), x [rows, cols] along the rows, m a row scale
// [cols]: the head's epilogue is nn::softmax_epilogue (one pass over x).
inline EpilogueFigures bench_softmax_epilogue(const xylem::Backend& be, std::int64_t rows, std::int64_t cols,
                                              xylem::DType dtype, int runs) {
  using namespace xylem;
  Generator g(13);
  const Tensor x = draw(be, g, Layout{rows, cols}, dtype, -4, 4), m = draw(be, g, Layout{cols}, dtype, 0.5, 1.5);
  Tensor pre(Layout{rows, cols}, dtype), y(Layout{rows, cols}, dtype);
  FusedProgram p;
  p.output(0, p.unary(XY_UN_TANH, p.binary(XY_BIN_MUL, p.input(0), p.input(1))));
  return time_epilogue(
      be, [&] { nn::tanh(be, mul(be, nn::softmax(be, x, -1), m), y); },
      [&] {
        nn::softmax(be, x, -1, pre);
        fused(be, p, {pre, m}, {y});
      },
      [&] {
        nn::softmax(be, x, -1, pre);
        mul(be, pre, m, pre);
        nn::tanh(be, pre, y);
      },
      y, dtype == f32 ? 1e-5 : 5e-2, runs, "tanh(softmax * m)");
}

// y = tanh(mean(x, rows) * m), x [rows, cols] reduced along its rows, m a
// scale per row: the head's epilogue is math::reduce_epilogue. The tail
// reads rows values where the head reads rows * cols, so what fusing it
// can save is the tail's own launch and pass over a small result.
inline EpilogueFigures bench_reduce_epilogue(const xylem::Backend& be, std::int64_t rows, std::int64_t cols,
                                             xylem::DType dtype, int runs) {
  using namespace xylem;
  Generator g(17);
  const Tensor x = draw(be, g, Layout{rows, cols}, dtype, -1, 1), m = draw(be, g, Layout{rows}, dtype, 0.5, 1.5);
  Tensor pre(Layout{rows}, dtype), y(Layout{rows}, dtype);
  const Reduction along_rows{{1}};
  FusedProgram p;
  p.output(0, p.unary(XY_UN_TANH, p.binary(XY_BIN_MUL, p.input(0), p.input(1))));
  return time_epilogue(
      be, [&] { nn::tanh(be, mul(be, mean(be, x, along_rows), m), y); },
      [&] {
        mean(be, x, along_rows, pre);
        fused(be, p, {pre, m}, {y});
      },
      [&] {
        mean(be, x, along_rows, pre);
        mul(be, pre, m, pre);
        nn::tanh(be, pre, y);
      },
      y, dtype == f32 ? 1e-5 : 5e-2, runs, "tanh(mean * m)");
}

}  // namespace xylem_bench
