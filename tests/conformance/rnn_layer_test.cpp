// layers::LSTM and layers::GRU on the backend under test against a
// step-by-step float64 transcription of PyTorch's nn.LSTM / nn.GRU written
// here (several layers, both directions, batch first, given initial
// states), f32 and f64; their backward (input, initial states, every
// parameter) against central differences of their own forward in f64; bad
// inputs raising typed errors.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"
#include "xylem/rnn.hpp"
#include "xylem/rnn_sequence.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::layers::Recurrent;
using Mode = Recurrent::Mode;

struct Config {
  Mode mode;
  std::int64_t steps, batch, input, hidden;
  int layers;
  bool bidirectional, batch_first, initial_states;
  [[nodiscard]] std::string describe() const {
    return std::string(mode == Mode::lstm ? "LSTM" : "GRU") + " T" + std::to_string(steps) + " N" +
           std::to_string(batch) + " I" + std::to_string(input) + " H" + std::to_string(hidden) + " L" +
           std::to_string(layers) + (bidirectional ? " bidirectional" : "") + (batch_first ? " batch_first" : "") +
           (initial_states ? " h0/c0" : "");
  }
  [[nodiscard]] int dirs() const { return bidirectional ? 2 : 1; }
  [[nodiscard]] Layout x_shape() const {
    return batch_first ? Layout{batch, steps, input} : Layout{steps, batch, input};
  }
  [[nodiscard]] Layout state_shape() const { return Layout{layers * dirs(), batch, hidden}; }
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct Outputs {
  std::vector<double> y, h_n, c_n;
};

// PyTorch's nn.LSTM / nn.GRU forward in float64, one step at a time, from
// the layer's parameters (in its order: per layer and direction w_ih, w_hh,
// b_ih, b_hh).
Outputs reference(const Config& cfg, const std::vector<std::vector<double>>& params, const std::vector<double>& x,
                  const std::vector<double>& h0, const std::vector<double>& c0) {
  const bool lstm = cfg.mode == Mode::lstm;
  const std::int64_t T = cfg.steps, N = cfg.batch, H = cfg.hidden, G = lstm ? 4 : 3, D = cfg.dirs();
  // The current layer's input, time first: in[t][n][i].
  std::int64_t width = cfg.input;
  std::vector<double> in(std::size_t(T * N * width));
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < width; ++i)
        in[std::size_t((t * N + n) * width + i)] =
            x[std::size_t(cfg.batch_first ? (n * T + t) * width + i : (t * N + n) * width + i)];
  Outputs out;
  for (int l = 0; l < cfg.layers; ++l) {
    std::vector<double> next(std::size_t(T * N * D * H));
    for (int d = 0; d < D; ++d) {
      const std::size_t k = std::size_t(l * D + d);
      const auto& w_ih = params[4 * k];
      const auto& w_hh = params[4 * k + 1];
      const auto& b_ih = params[4 * k + 2];
      const auto& b_hh = params[4 * k + 3];
      std::vector<double> h(h0.begin() + std::ptrdiff_t(k * N * H), h0.begin() + std::ptrdiff_t((k + 1) * N * H));
      std::vector<double> c(c0.begin() + std::ptrdiff_t(k * N * H), c0.begin() + std::ptrdiff_t((k + 1) * N * H));
      for (std::int64_t s = 0; s < T; ++s) {
        const std::int64_t t = d == 0 ? s : T - 1 - s;
        std::vector<double> h_new(h.size()), c_new(c.size());
        for (std::int64_t n = 0; n < N; ++n) {
          // xi[g*H + j] = W_ih x + b_ih, hh = W_hh h + b_hh
          std::vector<double> xi(std::size_t(G * H)), hh(std::size_t(G * H));
          for (std::int64_t r = 0; r < G * H; ++r) {
            double a = b_ih[std::size_t(r)], b = b_hh[std::size_t(r)];
            for (std::int64_t i = 0; i < width; ++i)
              a += w_ih[std::size_t(r * width + i)] * in[std::size_t((t * N + n) * width + i)];
            for (std::int64_t j = 0; j < H; ++j) b += w_hh[std::size_t(r * H + j)] * h[std::size_t(n * H + j)];
            xi[std::size_t(r)] = a;
            hh[std::size_t(r)] = b;
          }
          for (std::int64_t j = 0; j < H; ++j) {
            const auto q = [&](int gate) { return std::size_t(gate * H + j); };
            const auto e = std::size_t(n * H + j);
            if (lstm) {
              const double i = sigmoid(xi[q(0)] + hh[q(0)]), f = sigmoid(xi[q(1)] + hh[q(1)]);
              const double g = std::tanh(xi[q(2)] + hh[q(2)]), o = sigmoid(xi[q(3)] + hh[q(3)]);
              c_new[e] = f * c[e] + i * g;
              h_new[e] = o * std::tanh(c_new[e]);
            } else {
              const double r = sigmoid(xi[q(0)] + hh[q(0)]), z = sigmoid(xi[q(1)] + hh[q(1)]);
              const double nn = std::tanh(xi[q(2)] + r * hh[q(2)]);
              h_new[e] = (1 - z) * nn + z * h[e];
            }
          }
        }
        h = h_new;
        if (lstm) c = c_new;
        for (std::int64_t n = 0; n < N; ++n)
          for (std::int64_t j = 0; j < H; ++j)
            next[std::size_t((t * N + n) * D * H + d * H + j)] = h[std::size_t(n * H + j)];
      }
      out.h_n.insert(out.h_n.end(), h.begin(), h.end());
      if (lstm) out.c_n.insert(out.c_n.end(), c.begin(), c.end());
    }
    in = next;
    width = D * H;
  }
  out.y.resize(in.size());
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t j = 0; j < width; ++j)
        out.y[std::size_t(cfg.batch_first ? (n * T + t) * width + j : (t * N + n) * width + j)] =
            in[std::size_t((t * N + n) * width + j)];
  return out;
}

class RnnLayer : public Conformance {
 protected:
  bool runs_layers(DType dtype) {
    const auto t = [&](Dims d) { return input(dtype, ViewKind::contiguous, d).view; };
    return runs(OpId::nn_lstm_cell, dtype,
                [&] {
                  Tensor g = t({1, 4}), c = t({1, 1}), h = t({1, 1});
                  xylem::nn::lstm_cell(backend, g, t({1, 1}), c, h);
                }) &&
           runs(OpId::nn_gru_cell, dtype, [&] {
             Tensor x = t({1, 3}), h = t({1, 1});
             xylem::nn::gru_cell(backend, x, t({1, 3}), t({1, 1}), h);
           });
  }

  std::vector<double> random(std::size_t n) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> v(n);
    for (double& e : v) e = u(rng);
    return v;
  }

  template <class T>
  Tensor host(const std::vector<double>& v, const Layout& shape) {
    return Tensor::from(std::vector<T>(v.begin(), v.end()), shape);
  }

  static Recurrent make(const Config& cfg, xylem::Generator& gen, const Backend& b, DType dtype) {
    return Recurrent(b, gen, cfg.mode, cfg.input, cfg.hidden, cfg.layers, cfg.bidirectional, cfg.batch_first,
                     xylem::layers::ParameterOptions{.dtype = dtype});
  }

  template <class T>
  void forward(const Config& cfg) {
    SCOPED_TRACE(cfg.describe());
    constexpr DType dtype = xylem::dtype_of<T>::value;
    xylem::Generator gen(seed);
    Recurrent layer = make(cfg, gen, backend, dtype);
    std::vector<std::vector<double>> params;
    for (auto* p : layer.parameters()) params.push_back(p->value.to_doubles());
    // Values rounded to T, so the reference sees what the layer sees.
    const auto round = [](std::vector<double> v) {
      for (double& e : v) e = double(T(e));
      return v;
    };
    const auto x = round(random(std::size_t(cfg.x_shape().numel())));
    const std::size_t states = std::size_t(cfg.state_shape().numel());
    const bool lstm = cfg.mode == Mode::lstm;
    const auto h0 = cfg.initial_states ? round(random(states)) : std::vector<double>(states, 0.0);
    const auto c0 = cfg.initial_states && lstm ? round(random(states)) : std::vector<double>(states, 0.0);
    const Outputs want = reference(cfg, params, x, h0, c0);
    const Tensor h0_t = cfg.initial_states ? host<T>(h0, cfg.state_shape()) : Tensor{};
    const Tensor c0_t = cfg.initial_states && lstm ? host<T>(c0, cfg.state_shape()) : Tensor{};
    const auto got = layer.forward(backend, host<T>(x, cfg.x_shape()), h0_t, c0_t);
    const double tol = sizeof(T) == 4 ? 1e-4 : 1e-12;
    const auto check = [&](const Tensor& t, const std::vector<double>& expect, const char* what) {
      const auto v = t.to_doubles();
      ASSERT_EQ(v.size(), expect.size()) << what;
      std::size_t bad = 0;
      for (std::size_t k = 0; k < v.size(); ++k)
        if (!(std::abs(v[k] - expect[k]) <= tol * (std::abs(expect[k]) + 1)) && ++bad <= 5)
          ADD_FAILURE() << what << "[" << k << "]: got " << v[k] << ", expected " << expect[k];
      EXPECT_EQ(bad, 0u) << what;
    };
    const Layout y_shape = layer.output_shape(cfg.x_shape());
    EXPECT_TRUE(got.output.layout().same_dims(y_shape)) << got.output.layout().dims_string();
    EXPECT_TRUE(got.h_n.layout().same_dims(cfg.state_shape())) << got.h_n.layout().dims_string();
    check(got.output, want.y, "output");
    check(got.h_n, want.h_n, "h_n");
    if (lstm)
      check(got.c_n, want.c_n, "c_n");
    else
      EXPECT_FALSE(got.c_n.defined());
  }

  // The f32 layer's gradients (dx, dh0, dc0, every parameter's) against
  // the f64 layer's on the same values, rounded to f32: the f64 path is
  // checked by finite differences (gradients), and f32 may take another
  // path (a whole stack where the framework runs f32 stacks only).
  void f32_gradients(const Config& cfg) {
    SCOPED_TRACE(cfg.describe() + " f32");
    xylem::Generator gen(seed);
    Recurrent wide = make(cfg, gen, backend, DType::f64), narrow = make(cfg, gen, backend, DType::f32);
    const auto round = [](std::vector<double> v) {
      for (double& e : v) e = double(float(e));
      return v;
    };
    const auto wide_params = wide.parameters(), narrow_params = narrow.parameters();
    for (std::size_t k = 0; k < wide_params.size(); ++k) {
      const auto v = round(wide_params[k]->value.to_doubles());
      const Layout shape = wide_params[k]->value.layout();
      wide_params[k]->value = host<double>(v, shape);
      narrow_params[k]->value = host<float>(v, shape);
    }
    const bool lstm = cfg.mode == Mode::lstm;
    const std::size_t states = std::size_t(cfg.state_shape().numel());
    const auto x = round(random(std::size_t(cfg.x_shape().numel())));
    const auto h0 = round(random(states)), c0 = round(random(states));
    const auto wy = round(random(std::size_t(wide.output_shape(cfg.x_shape()).numel())));
    const auto wh = round(random(states)), wc = round(random(states));
    const auto run = [&]<class T>(Recurrent& layer, T) {
      (void)layer.forward(backend, host<T>(x, cfg.x_shape()), host<T>(h0, cfg.state_shape()),
                          lstm ? host<T>(c0, cfg.state_shape()) : Tensor{});
      return layer.backward(backend, host<T>(wy, layer.output_shape(cfg.x_shape())), host<T>(wh, cfg.state_shape()),
                            lstm ? host<T>(wc, cfg.state_shape()) : Tensor{});
    };
    const auto want = run(wide, 0.0);
    const auto got = run(narrow, 0.0f);
    const auto check = [&](const Tensor& t, const Tensor& expect, const std::string& what) {
      const auto v = t.to_doubles(), e = expect.to_doubles();
      ASSERT_EQ(v.size(), e.size()) << what;
      std::size_t bad = 0;
      for (std::size_t k = 0; k < v.size(); ++k)
        if (!(std::abs(v[k] - e[k]) <= 1e-4 * (std::abs(e[k]) + 1)) && ++bad <= 5)
          ADD_FAILURE() << what << "[" << k << "]: got " << v[k] << ", expected " << e[k];
      EXPECT_EQ(bad, 0u) << what;
    };
    check(got.dx, want.dx, "dx");
    check(got.dh0, want.dh0, "dh0");
    if (lstm) check(got.dc0, want.dc0, "dc0");
    for (std::size_t k = 0; k < wide_params.size(); ++k)
      check(narrow_params[k]->grad, wide_params[k]->grad, narrow_params[k]->name);
  }

  // sum(wy y) + sum(wh h_n) + sum(wc c_n) of the layer's forward (f64).
  double objective(Recurrent& layer, const Config& cfg, const std::vector<double>& x, const std::vector<double>& h0,
                   const std::vector<double>& c0, const std::vector<double>& wy, const std::vector<double>& wh,
                   const std::vector<double>& wc) {
    const bool lstm = cfg.mode == Mode::lstm;
    const auto out = layer.forward(backend, Tensor::from(x, cfg.x_shape()), Tensor::from(h0, cfg.state_shape()),
                                   lstm ? Tensor::from(c0, cfg.state_shape()) : Tensor{});
    const auto dot = [](const Tensor& t, const std::vector<double>& w) {
      const auto v = t.to_doubles();
      double s = 0;
      for (std::size_t k = 0; k < v.size(); ++k) s += v[k] * w[k];
      return s;
    };
    return dot(out.output, wy) + dot(out.h_n, wh) + (lstm ? dot(out.c_n, wc) : 0.0);
  }

  void gradients(const Config& cfg) {
    SCOPED_TRACE(cfg.describe());
    xylem::Generator gen(seed);
    Recurrent layer = make(cfg, gen, backend, DType::f64);
    const bool lstm = cfg.mode == Mode::lstm;
    const std::size_t states = std::size_t(cfg.state_shape().numel());
    auto x = random(std::size_t(cfg.x_shape().numel()));
    auto h0 = random(states), c0 = random(states);
    const auto wy = random(std::size_t(layer.output_shape(cfg.x_shape()).numel()));
    const auto wh = random(states), wc = random(states);
    const auto out = layer.forward(backend, Tensor::from(x, cfg.x_shape()), Tensor::from(h0, cfg.state_shape()),
                                   lstm ? Tensor::from(c0, cfg.state_shape()) : Tensor{});
    const auto grads =
        layer.backward(backend, Tensor::from(wy, out.output.layout()), Tensor::from(wh, cfg.state_shape()),
                       lstm ? Tensor::from(wc, cfg.state_shape()) : Tensor{});
    const double step = 1e-6;
    // Checks analytic against central differences along coordinate k of v.
    const auto expect = [&](std::vector<double>& v, std::size_t k, double analytic, const std::string& what,
                            const std::function<void()>& apply) {
      const double keep = v[k];
      v[k] = keep + step;
      apply();
      const double up = objective(layer, cfg, x, h0, c0, wy, wh, wc);
      v[k] = keep - step;
      apply();
      const double down = objective(layer, cfg, x, h0, c0, wy, wh, wc);
      v[k] = keep;
      apply();
      const double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(std::abs(numeric), 1.0)) << what << "[" << k << "]";
    };
    const auto none = [] {};
    const auto dx = grads.dx.to_doubles(), dh0 = grads.dh0.to_doubles();
    ASSERT_EQ(dx.size(), x.size());
    for (std::size_t k = 0; k < x.size(); k += 5) expect(x, k, dx[k], "dx", none);
    for (std::size_t k = 0; k < states; k += 3) expect(h0, k, dh0[k], "dh0", none);
    if (lstm) {
      const auto dc0 = grads.dc0.to_doubles();
      for (std::size_t k = 0; k < states; k += 3) expect(c0, k, dc0[k], "dc0", none);
    } else {
      EXPECT_FALSE(grads.dc0.defined());
    }
    for (auto* p : layer.parameters()) {
      ASSERT_TRUE(p->grad.defined()) << p->name;
      const auto g = p->grad.to_doubles();
      auto v = p->value.to_doubles();
      const Layout shape(p->value.layout().dims());
      const auto apply = [&] { p->value = Tensor::from(v, shape); };
      for (std::size_t k = 0; k < v.size(); k += 7) expect(v, k, g[k], p->name, apply);
    }
  }
};

const Config kConfigs[] = {
    {Mode::lstm, 5, 3, 4, 6, 1, false, false, false},
    {Mode::lstm, 4, 2, 3, 5, 2, true, false, true},
    {Mode::lstm, 3, 4, 5, 3, 2, true, true, true},
    {Mode::lstm, 1, 1, 1, 1, 1, false, true, false},
    {Mode::gru, 5, 3, 4, 6, 1, false, false, false},
    {Mode::gru, 4, 2, 3, 5, 2, true, false, true},
    {Mode::gru, 3, 4, 5, 3, 2, true, true, true},
    {Mode::gru, 2, 2, 3, 4, 3, false, true, true},
};

TEST_P(RnnLayer, forward_matches_reference) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if (!runs_layers(xylem::dtype_of<T>::value)) return;
    for (const Config& cfg : kConfigs) forward<T>(cfg);
  });
}

TEST_P(RnnLayer, backward_matches_finite_differences) {
  if (!runs_layers(DType::f64)) return;
  gradients({Mode::lstm, 3, 2, 3, 2, 2, true, false, true});
  gradients({Mode::lstm, 2, 2, 2, 3, 1, false, true, true});
  gradients({Mode::gru, 3, 2, 3, 2, 2, true, true, true});
  gradients({Mode::gru, 2, 1, 2, 3, 1, false, false, true});
}

// The whole-stack op's checks, on every framework: a bad argument raises
// before anything runs and leaves the outputs as they were.
TEST_P(RnnLayer, stack_op_rejects_bad_arguments) {
  const xylem::nn::RnnStack stack{.lstm = true, .hidden = 3, .layers = 1, .bidirectional = false};
  const Tensor x = Tensor::from(std::vector<float>(2 * 2 * 4, 0.5f), Layout{2, 2, 4});
  const Tensor states = Tensor::from(std::vector<float>(2 * 2 * 3, 0.25f), Layout{2, 1, 2, 3});
  const Tensor w_short = Tensor::from(std::vector<float>(std::size_t(stack.weight_count(4) - 1), 0.1f),
                                      Layout{stack.weight_count(4) - 1});
  Tensor y = Tensor::from(std::vector<float>(2 * 2 * 3, 7.0f), Layout{2, 2, 3});
  Tensor states_out = Tensor::from(std::vector<float>(2 * 2 * 3, 7.0f), Layout{2, 1, 2, 3});
  Tensor reserve = Tensor::from(std::vector<std::uint8_t>(16, 0), Layout{16});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                  xylem::nn::rnn_sequence(backend, x, states, w_short, stack, y, states_out, reserve));
  const Tensor w_f64 = Tensor::from(std::vector<double>(std::size_t(stack.weight_count(4)), 0.1),
                                    Layout{stack.weight_count(4)});
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  xylem::nn::rnn_sequence(backend, x, states, w_f64, stack, y, states_out, reserve));
  for (double v : y.to_doubles()) EXPECT_EQ(v, 7.0);
  for (double v : states_out.to_doubles()) EXPECT_EQ(v, 7.0);
}

// Where the framework runs whole stacks (CUDA with cuDNN, native f32 with
// oneDNN) the layers take nn::rnn_sequence; XYLEM_CUDA_CUDNN_RNN=0 and
// XYLEM_NATIVE_ONEDNN_RNN=0 keep them per step (=1 forces native's on,
// which by default runs only where oneDNN has AVX-512). Both paths against the
// float64 reference, forward and backward (dx, dh0, dc0, dW), with batches
// that split into ranges unevenly on the host (13 rows, 11).
TEST_P(RnnLayer, stack_and_per_step_paths) {
  if (!backend.supports(OpId::nn_rnn_sequence, DType::f32) || !runs_layers(DType::f32))
    GTEST_SKIP() << "this framework runs recurrent layers per step only";
  const Tensor x = Tensor::from(std::vector<float>(2 * 3 * 5, 0.5f), Layout{2, 3, 5});
  try {
    xylem_test::ScopedEnv cuda("XYLEM_CUDA_CUDNN_RNN", "1"), native("XYLEM_NATIVE_ONEDNN_RNN", "1");
    EXPECT_GT(xylem::nn::rnn_sequence_reserve(backend, x, {.lstm = true, .hidden = 7}), 0);
  } catch (const xylem::Error& e) {
    ASSERT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    GTEST_SKIP() << e.what();
  }
  for (const char* setting : {"1", "0"}) {
    xylem_test::ScopedEnv cuda("XYLEM_CUDA_CUDNN_RNN", setting), native("XYLEM_NATIVE_ONEDNN_RNN", setting);
    SCOPED_TRACE(std::string("whole stacks ") + (setting[0] == '1' ? "on" : "off"));
    for_each_dtype([&](auto t) {
      using T = decltype(t);
      for (const Config& cfg : kConfigs) forward<T>(cfg);
      forward<T>({Mode::lstm, 6, 5, 9, 13, 2, true, false, true});
      forward<T>({Mode::gru, 1, 1, 2, 11, 2, true, true, true});
    });
    gradients({Mode::lstm, 3, 2, 3, 5, 2, true, false, true});
    gradients({Mode::lstm, 1, 1, 2, 3, 1, false, true, true});
    gradients({Mode::gru, 3, 2, 3, 5, 2, true, true, true});
    gradients({Mode::gru, 1, 1, 2, 3, 1, false, false, true});
    for (const Config& cfg : {Config{Mode::lstm, 4, 7, 3, 5, 2, true, false, true},
                              Config{Mode::gru, 3, 13, 4, 6, 2, true, true, true},
                              Config{Mode::lstm, 1, 1, 2, 3, 1, false, false, true},
                              Config{Mode::gru, 5, 5, 3, 4, 1, false, false, true}})
      f32_gradients(cfg);
  }
}

TEST_P(RnnLayer, parameter_names_and_shapes) {
  if (!runs_layers(DType::f32)) return;
  xylem::Generator gen(seed);
  xylem::layers::LSTM lstm(backend, gen, 10, 20, 2, true);
  const auto params = lstm.parameters();
  ASSERT_EQ(params.size(), 16u);
  EXPECT_EQ(params[0]->name, "weight_ih_l0");
  EXPECT_EQ(params[3]->name, "bias_hh_l0");
  EXPECT_EQ(params[4]->name, "weight_ih_l0_reverse");
  EXPECT_EQ(params[8]->name, "weight_ih_l1");
  EXPECT_TRUE(params[0]->value.layout().same_dims(Layout{80, 10}));
  EXPECT_TRUE(params[8]->value.layout().same_dims(Layout{80, 40}));
  EXPECT_TRUE(params[9]->value.layout().same_dims(Layout{80, 20}));
  xylem::layers::GRU gru(backend, gen, 10, 20);
  ASSERT_EQ(gru.parameters().size(), 4u);
  EXPECT_TRUE(gru.parameters()[1]->value.layout().same_dims(Layout{60, 20}));
  // PyTorch's bound 1/sqrt(H).
  for (double v : gru.parameters()[0]->value.to_doubles()) EXPECT_LE(std::abs(v), 1 / std::sqrt(20.0));
}

TEST_P(RnnLayer, bad_inputs) {
  if (!runs_layers(DType::f32)) return;
  xylem::Generator gen(seed);
  xylem::layers::LSTM lstm(backend, gen, 4, 3, 2);
  xylem::layers::GRU gru(backend, gen, 4, 3);
  const auto t = [&](Dims d) { return input<float>(ViewKind::contiguous, d).view; };
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)lstm.forward(backend, t({5, 2, 3})));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)lstm.forward(backend, t({5, 4})));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  (void)lstm.forward(backend, input<double>(ViewKind::contiguous, {5, 2, 4}).view));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)lstm.forward(backend, t({5, 2, 4}), t({1, 2, 3}), Tensor{}));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)lstm.forward(backend, t({5, 2, 4}), t({2, 2, 3}), t({2, 3, 3})));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)gru.forward(backend, t({5, 2, 4}), Tensor{}, t({1, 2, 3})));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)gru.backward(backend, t({5, 2, 3})));
  const auto w = xylem_test::snapshot(lstm.parameters()[0]->value);
  (void)lstm.forward(backend, t({5, 2, 4}));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)lstm.backward(backend, t({5, 2, 4})));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)lstm.backward(backend, t({5, 2, 3}), t({1, 2, 3}), Tensor{}));
  EXPECT_FALSE(lstm.parameters()[0]->grad.defined());
  XY_EXPECT_UNCHANGED(lstm.parameters()[0]->value, w);
}

// No steps: the final states are the initial ones and their gradients pass
// straight through; no batch: empty results. Parameters get zero gradients.
TEST_P(RnnLayer, empty_sequences_and_batches) {
  if (!runs_layers(DType::f64)) return;
  xylem::Generator gen(seed);
  for (const Mode mode : {Mode::lstm, Mode::gru}) {
    Recurrent layer(backend, gen, mode, 4, 3, 2, true, false, xylem::layers::ParameterOptions{.dtype = DType::f64});
    const bool lstm = mode == Mode::lstm;
    Arg h0 = input<double>(ViewKind::contiguous, {4, 2, 3}), c0 = input<double>(ViewKind::contiguous, {4, 2, 3});
    const auto out = layer.forward(backend, input<double>(ViewKind::contiguous, {0, 2, 4}).view, h0.view,
                                   lstm ? c0.view : Tensor{});
    EXPECT_TRUE(out.output.layout().same_dims(Layout{0, 2, 6}));
    EXPECT_EQ(out.h_n.to_doubles(), h0.values());
    if (lstm) {
      EXPECT_EQ(out.c_n.to_doubles(), c0.values());
    }
    Arg dh = input<double>(ViewKind::contiguous, {4, 2, 3}), dc = input<double>(ViewKind::contiguous, {4, 2, 3});
    const auto grads = layer.backward(backend, Tensor(Layout{0, 2, 6}, DType::f64), dh.view, lstm ? dc.view : Tensor{});
    EXPECT_TRUE(grads.dx.layout().same_dims(Layout{0, 2, 4}));
    EXPECT_EQ(grads.dh0.to_doubles(), dh.values());
    if (lstm) {
      EXPECT_EQ(grads.dc0.to_doubles(), dc.values());
    }
    for (auto* p : layer.parameters())
      for (double g : p->grad.to_doubles()) EXPECT_EQ(g, 0.0) << p->name;

    const auto none = layer.forward(backend, input<double>(ViewKind::contiguous, {3, 0, 4}).view, Tensor{}, Tensor{});
    EXPECT_TRUE(none.output.layout().same_dims(Layout{3, 0, 6}));
    EXPECT_TRUE(none.h_n.layout().same_dims(Layout{4, 0, 3}));
    const auto back = layer.backward(backend, Tensor(Layout{3, 0, 6}, DType::f64));
    EXPECT_TRUE(back.layout().same_dims(Layout{3, 0, 4}));
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, RnnLayer, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
