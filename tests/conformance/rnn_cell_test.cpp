// The recurrent cell ops (nn::lstm_cell, gru_cell and their gradients) on
// the backend under test, f32 and f64, against float64 transcriptions of
// PyTorch's LSTM and GRU cell equations written here; the gradients also
// against central differences of the backend's own forward (f64); bad
// arguments raising typed errors with nothing changed; empty batches.
#include <cmath>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "xylem/rnn.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
namespace nn = xylem::nn;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// PyTorch's LSTM cell on [N, 4H] pre-activations: the activated gates, c, h.
struct LstmRef {
  std::vector<double> gates, c, h;
};
LstmRef lstm_ref(const std::vector<double>& pre, const std::vector<double>& c_prev, std::int64_t n, std::int64_t hid) {
  LstmRef r{pre, std::vector<double>(std::size_t(n * hid)), std::vector<double>(std::size_t(n * hid))};
  for (std::int64_t row = 0; row < n; ++row)
    for (std::int64_t j = 0; j < hid; ++j) {
      const auto q = [&](int gate) { return std::size_t(row * 4 * hid + gate * hid + j); };
      const double i = sigmoid(pre[q(0)]), f = sigmoid(pre[q(1)]), g = std::tanh(pre[q(2)]), o = sigmoid(pre[q(3)]);
      const auto k = std::size_t(row * hid + j);
      r.gates[q(0)] = i, r.gates[q(1)] = f, r.gates[q(2)] = g, r.gates[q(3)] = o;
      r.c[k] = f * c_prev[k] + i * g;
      r.h[k] = o * std::tanh(r.c[k]);
    }
  return r;
}

// PyTorch's GRU cell: r, z, n and h from xg, hg [N, 3H] and h_prev.
struct GruRef {
  std::vector<double> gates, h;
};
GruRef gru_ref(const std::vector<double>& xg, const std::vector<double>& hg, const std::vector<double>& h_prev,
               std::int64_t n, std::int64_t hid) {
  GruRef r{xg, std::vector<double>(std::size_t(n * hid))};
  for (std::int64_t row = 0; row < n; ++row)
    for (std::int64_t j = 0; j < hid; ++j) {
      const auto q = [&](int gate) { return std::size_t(row * 3 * hid + gate * hid + j); };
      const auto k = std::size_t(row * hid + j);
      const double rr = sigmoid(xg[q(0)] + hg[q(0)]), z = sigmoid(xg[q(1)] + hg[q(1)]);
      const double nn = std::tanh(xg[q(2)] + rr * hg[q(2)]);
      r.gates[q(0)] = rr, r.gates[q(1)] = z, r.gates[q(2)] = nn;
      r.h[k] = (1 - z) * nn + z * h_prev[k];
    }
  return r;
}

std::vector<double> concat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<double> plus(std::vector<double> a, const std::vector<double>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

class RnnCell : public Conformance {
 protected:
  // Tolerance of an element computed by a short chain of elementwise math.
  template <class T>
  static auto near(const std::vector<double>& expect) {
    return [&expect](std::size_t k) { return 16 * Tol<T>::elem * (std::abs(expect[k]) + 1); };
  }

  bool runs_cells(DType dtype) {
    const auto t = [&](Dims d) { return input(dtype, ViewKind::contiguous, d).view; };
    return runs(OpId::nn_lstm_cell, dtype,
                [&] {
                  Tensor g = t({1, 4}), c = t({1, 1}), h = t({1, 1});
                  nn::lstm_cell(backend, g, t({1, 1}), c, h);
                }) &&
           runs(OpId::nn_lstm_cell_grad, dtype,
                [&] {
                  Tensor dg = t({1, 4}), dc = t({1, 1});
                  nn::lstm_cell_grad(backend, t({1, 4}), t({1, 1}), t({1, 1}), t({1, 1}), t({1, 1}), t({1, 1}), dg,
                                     dc);
                }) &&
           runs(OpId::nn_gru_cell, dtype,
                [&] {
                  Tensor x = t({1, 3}), h = t({1, 1});
                  nn::gru_cell(backend, x, t({1, 3}), t({1, 1}), h);
                }) &&
           runs(OpId::nn_gru_cell_grad, dtype, [&] {
             Tensor dx = t({1, 3}), dh = t({1, 3}), dp = t({1, 1});
             nn::gru_cell_grad(backend, t({1, 3}), t({1, 3}), t({1, 1}), t({1, 1}), t({1, 1}), dx, dh, dp);
           });
  }

  template <class T>
  void lstm_forward(std::int64_t n, std::int64_t hid) {
    Arg gates = input<T>(ViewKind::contiguous, {n, 4 * hid}, -3, 3);
    Arg c_prev = input<T>(ViewKind::contiguous, {n, hid});
    Arg c = output<T>(ViewKind::contiguous, {n, hid}), h = output<T>(ViewKind::contiguous, {n, hid});
    const LstmRef r = lstm_ref(gates.values(), c_prev.values(), n, hid);
    nn::lstm_cell(backend, gates.view, c_prev.view, c.view, h.view);
    const std::string what = "lstm_cell " + std::to_string(n) + "x" + std::to_string(hid);
    expect_result<T>(gates, r.gates, near<T>(r.gates), what + " gates");
    expect_result<T>(c, r.c, near<T>(r.c), what + " c");
    expect_result<T>(h, r.h, near<T>(r.h), what + " h");
  }

  template <class T>
  void gru_forward(std::int64_t n, std::int64_t hid) {
    Arg xg = input<T>(ViewKind::contiguous, {n, 3 * hid}, -3, 3);
    Arg hg = input<T>(ViewKind::contiguous, {n, 3 * hid}, -3, 3);
    Arg h_prev = input<T>(ViewKind::contiguous, {n, hid});
    Arg h = output<T>(ViewKind::contiguous, {n, hid});
    const GruRef r = gru_ref(xg.values(), hg.values(), h_prev.values(), n, hid);
    nn::gru_cell(backend, xg.view, hg.view, h_prev.view, h.view);
    const std::string what = "gru_cell " + std::to_string(n) + "x" + std::to_string(hid);
    expect_result<T>(xg, r.gates, near<T>(r.gates), what + " gates");
    expect_result<T>(h, r.h, near<T>(r.h), what + " h");
  }
};

TEST_P(RnnCell, lstm_cell) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if (!runs_cells(xylem::dtype_of<T>::value)) return;
    lstm_forward<T>(1, 1);
    lstm_forward<T>(3, 7);
    lstm_forward<T>(17, 129);
    lstm_forward<T>(5, 48);  // whole vectors of units (OpenCL on a CPU: the _v kernels)
  });
}

TEST_P(RnnCell, gru_cell) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if (!runs_cells(xylem::dtype_of<T>::value)) return;
    gru_forward<T>(1, 1);
    gru_forward<T>(3, 7);
    gru_forward<T>(17, 129);
    gru_forward<T>(5, 48);
  });
}

// lstm_cell_grad against central differences of lstm_cell on the backend:
// the objective sum(dc c + (dy + dh) h), its derivative along the
// pre-activations and c_prev.
TEST_P(RnnCell, lstm_cell_grad) {
  if (!runs_cells(DType::f64)) return;
  for (const std::int64_t hid : {5, 16}) {  // 16: whole vectors of units (OpenCL on a CPU)
    const std::int64_t n = 3;
    const Layout state{n, hid}, wide{n, 4 * hid};
    Arg pre = input<double>(ViewKind::contiguous, {n, 4 * hid}, -2, 2);
    Arg c_prev = input<double>(ViewKind::contiguous, {n, hid});
    Arg dy = input<double>(ViewKind::contiguous, {n, hid}), dh = input<double>(ViewKind::contiguous, {n, hid});
    Arg dc = input<double>(ViewKind::contiguous, {n, hid});
    const auto pre0 = pre.values(), c_prev0 = c_prev.values();
    // Forward on the backend, then the gradient of its saved gates.
    Tensor c(state, DType::f64), h(state, DType::f64);
    nn::lstm_cell(backend, pre.view, c_prev.view, c, h);
    Arg dgates = output<double>(ViewKind::contiguous, {n, 4 * hid});
    Arg dc_prev = output<double>(ViewKind::contiguous, {n, hid});
    nn::lstm_cell_grad(backend, pre.view, c_prev.view, c, dy.view, dh.view, dc.view, dgates.view, dc_prev.view);
    const auto weights = concat(dc.values(), plus(dy.values(), dh.values()));
    const auto run = [&](const Tensor& gates_in, const Tensor& c_in) {
      Tensor g = xylem::contiguous(backend, gates_in), cc(state, DType::f64), hh(state, DType::f64);
      nn::lstm_cell(backend, g, c_in, cc, hh);
      return concat(cc.to_doubles(), hh.to_doubles());
    };
    const auto c_prev_t = Tensor::from(c_prev0, state);
    const auto pre_t = Tensor::from(pre0, wide);
    const ForwardF64 along_gates = [&](const Tensor& x) { return Tensor::from(run(x, c_prev_t)); };
    const ForwardF64 along_c = [&](const Tensor& x) { return Tensor::from(run(pre_t, x)); };
    const auto dg = dgates.view.to_doubles(), dcp = dc_prev.view.to_doubles();
    expect_gradient(dg, pre0, wide, weights, along_gates, some_coordinates(rng, pre0.size(), 12), mean_abs(dg),
                    "lstm_cell_grad dgates");
    expect_gradient(dcp, c_prev0, state, weights, along_c, some_coordinates(rng, c_prev0.size(), 8), mean_abs(dcp),
                    "lstm_cell_grad dc_prev");
  }
}

// gru_cell_grad against central differences of gru_cell: the objective
// sum((dy + dh) h) along xg, hg and h_prev (through z h_prev alone, which
// is all h_prev does inside the op).
TEST_P(RnnCell, gru_cell_grad) {
  if (!runs_cells(DType::f64)) return;
  for (const std::int64_t hid : {5, 16}) {  // 16: whole vectors of units (OpenCL on a CPU)
    const std::int64_t n = 3;
    const Layout state{n, hid}, wide{n, 3 * hid};
    Arg xg = input<double>(ViewKind::contiguous, {n, 3 * hid}, -2, 2);
    Arg hg = input<double>(ViewKind::contiguous, {n, 3 * hid}, -2, 2);
    Arg h_prev = input<double>(ViewKind::contiguous, {n, hid});
    Arg dy = input<double>(ViewKind::contiguous, {n, hid}), dh = input<double>(ViewKind::contiguous, {n, hid});
    const auto xg0 = xg.values(), hg0 = hg.values(), hp0 = h_prev.values();
    Tensor h(state, DType::f64);
    nn::gru_cell(backend, xg.view, hg.view, h_prev.view, h);
    Arg dxg = output<double>(ViewKind::contiguous, {n, 3 * hid});
    Arg dhg = output<double>(ViewKind::contiguous, {n, 3 * hid});
    Arg dhp = output<double>(ViewKind::contiguous, {n, hid});
    nn::gru_cell_grad(backend, xg.view, hg.view, h_prev.view, dy.view, dh.view, dxg.view, dhg.view, dhp.view);
    const auto weights = plus(dy.values(), dh.values());
    const Tensor xg_t = Tensor::from(xg0, wide), hg_t = Tensor::from(hg0, wide), hp_t = Tensor::from(hp0, state);
    const auto run = [&](const Tensor& x, const Tensor& r, const Tensor& p) {
      Tensor xx = xylem::contiguous(backend, x), out(state, DType::f64);
      nn::gru_cell(backend, xx, r, p, out);
      return out;
    };
    const auto a = dxg.view.to_doubles(), b = dhg.view.to_doubles(), c = dhp.view.to_doubles();
    expect_gradient(a, xg0, wide, weights, [&](const Tensor& x) { return run(x, hg_t, hp_t); },
                    some_coordinates(rng, xg0.size(), 12), mean_abs(a), "gru_cell_grad dxg");
    expect_gradient(b, hg0, wide, weights, [&](const Tensor& x) { return run(xg_t, x, hp_t); },
                    some_coordinates(rng, hg0.size(), 12), mean_abs(b), "gru_cell_grad dhg");
    expect_gradient(c, hp0, state, weights, [&](const Tensor& x) { return run(xg_t, hg_t, x); },
                    some_coordinates(rng, hp0.size(), 8), mean_abs(c), "gru_cell_grad dh_prev");
  }
}

// Wrong shapes, dtypes and views raise before anything is written; empty
// batches run.
TEST_P(RnnCell, bad_arguments_change_nothing) {
  if (!runs_cells(DType::f32)) return;
  const auto t = [&](Dims d) { return input<float>(ViewKind::contiguous, d).view; };
  Tensor gates = t({2, 12}), c_prev = t({2, 3}), c = t({2, 3}), h = t({2, 3});
  const auto g0 = xylem_test::snapshot(gates), c0 = xylem_test::snapshot(c), h0 = xylem_test::snapshot(h);
  Tensor narrow = t({2, 8});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, nn::lstm_cell(backend, narrow, c_prev, c, h));
  Tensor c_wrong = t({3, 3});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, nn::lstm_cell(backend, gates, c_prev, c_wrong, h));
  Tensor h64 = input<double>(ViewKind::contiguous, {2, 3}).view;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, nn::lstm_cell(backend, gates, c_prev, c, h64));
  Tensor strided = input<float>(ViewKind::strided, {2, 3}).view;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, nn::lstm_cell(backend, gates, strided, c, h));
  Tensor rank1 = t({6});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, nn::lstm_cell(backend, gates, rank1, c, h));
  Tensor halves = input(DType::f16, ViewKind::contiguous, {2, 3}).view;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, nn::lstm_cell(backend, gates, halves, c, h));
  Tensor none;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, nn::lstm_cell(backend, gates, c_prev, none, h));
  XY_EXPECT_UNCHANGED(gates, g0);
  XY_EXPECT_UNCHANGED(c, c0);
  XY_EXPECT_UNCHANGED(h, h0);

  Tensor xg = t({2, 9}), hg = t({2, 9}), dxg = t({2, 9}), dhg = t({2, 9}), dhp = t({2, 3});
  const auto xg0 = xylem_test::snapshot(xg), dxg0 = xylem_test::snapshot(dxg);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, nn::gru_cell(backend, xg, gates, c_prev, h));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                  nn::gru_cell_grad(backend, xg, hg, c_prev, c_wrong, c_prev, dxg, dhg, dhp));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                  nn::lstm_cell_grad(backend, gates, c_prev, c, c_prev, c_prev, c_prev, dxg, dhp));
  XY_EXPECT_UNCHANGED(xg, xg0);
  XY_EXPECT_UNCHANGED(dxg, dxg0);
  XY_EXPECT_UNCHANGED(h, h0);

  // Empty batches and zero-width states: valid, nothing to do.
  for (const Dims& d : {Dims{0, 3}, Dims{2, 0}}) {
    Tensor eg = t({d[0], 4 * d[1]}), ec = t(d), eh = t(d), ep = t(d);
    nn::lstm_cell(backend, eg, ep, ec, eh);
    Tensor ex = t({d[0], 3 * d[1]}), er = t({d[0], 3 * d[1]});
    nn::gru_cell(backend, ex, er, ep, eh);
    EXPECT_EQ(eh.numel(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, RnnCell, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
