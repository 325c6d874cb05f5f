// xylem::layers on each framework: every layer's backward (MultiheadAttention's
// too) against central differences of its own forward in f64, a small CNN end
// to end, the modes of BatchNorm2d and Dropout, initialisation, parameter names, losses, and bad
// shapes raising before anything changes.
#include "xylem/layers.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/on_framework.hpp"
#include "common/support.hpp"
#include "xylem/losses.hpp"

namespace {

using namespace xylem;
using namespace xylem::layers;
using xylem_test::seed_message;

// Random values of either sign with magnitude in [0.2, 1]: never zero, and
// away from relu's kink, so central differences see a smooth function.
std::vector<double> away_from_zero(std::mt19937_64& rng, std::int64_t n) {
  std::uniform_real_distribution<double> mag(0.2, 1.0);
  std::bernoulli_distribution sign(0.5);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = sign(rng) ? mag(rng) : -mag(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
}

class Layers : public xylem_test::OnFramework {
 protected:
  std::uint64_t seed = xylem_test::fresh_seed();
};

using Make = std::function<std::unique_ptr<Layer>()>;

// Checks dx and every parameter's gradient of make()'s layer at x against
// central differences of sum(dy * forward(x)), each evaluated on a fresh
// layer from make() (which must make the same layer every time).
void check_gradients(const Backend& be, const Make& make, const Layout& x_shape, std::uint64_t seed,
                     bool training = true) {
  SCOPED_TRACE(seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::vector<double> x = away_from_zero(rng, x_shape.numel());
  auto layer = make();
  layer->train(training);
  SCOPED_TRACE(layer->describe());
  const Tensor y = layer->forward(be, Tensor::from(x, x_shape));
  const std::vector<double> dy = away_from_zero(rng, y.numel());
  const std::vector<double> dx = layer->backward(be, Tensor::from(dy, y.layout())).to_doubles();

  // The objective with the input, or parameter `which`, replaced.
  auto objective = [&](const std::vector<double>& xs, int which, const std::vector<double>& value) {
    auto fresh = make();
    fresh->train(training);
    if (which >= 0) {
      Parameter* p = fresh->parameters()[std::size_t(which)];
      p->value = Tensor::from(value, p->value.layout());
    }
    return dot(dy, fresh->forward(be, Tensor::from(xs, x_shape)).to_doubles());
  };
  auto check = [&](const std::vector<double>& analytic, const std::vector<double>& at, int which,
                   const std::string& what) {
    ASSERT_EQ(analytic.size(), at.size()) << what;
    double scale = 1e-3;
    for (double g : analytic) scale = std::max(scale, std::abs(g) / double(analytic.size()));
    std::vector<std::size_t> coords(at.size());
    std::iota(coords.begin(), coords.end(), 0);
    std::shuffle(coords.begin(), coords.end(), rng);
    coords.resize(std::min<std::size_t>(coords.size(), 8));
    const double h = 1e-6;
    for (std::size_t k : coords) {
      auto plus = at, minus = at;
      plus[k] += h;
      minus[k] -= h;
      const double numeric = which < 0 ? (objective(plus, -1, {}) - objective(minus, -1, {})) / (2 * h)
                                       : (objective(x, which, plus) - objective(x, which, minus)) / (2 * h);
      EXPECT_NEAR(analytic[k], numeric, 1e-5 * std::max(std::abs(numeric), scale)) << what << "[" << k << "]";
    }
  };
  check(dx, x, -1, "dx");
  const auto params = layer->parameters();
  for (std::size_t j = 0; j < params.size(); ++j) {
    ASSERT_TRUE(params[j]->grad.defined()) << params[j]->name;
    check(params[j]->grad.to_doubles(), params[j]->value.to_doubles(), int(j), params[j]->name);
  }
}

const ParameterOptions kF64{f64, Init::kaiming_uniform};

// A Make for layer L with weights from a generator of a fixed seed: the same
// layer every call.
template <class L, class... Args>
Make seeded(const Backend& be, Args... args) {
  return [=] {
    Generator g(7);
    return std::make_unique<L>(be, g, args...);
  };
}

TEST_P(Layers, linear_gradients) {
  check_gradients(be, seeded<Linear>(be, 5, 3, true, kF64), Layout{4, 5}, seed);
  check_gradients(be, seeded<Linear>(be, 5, 3, false, kF64), Layout{2, 3, 5}, seed);
}

// Embedding's weight gradient against central differences of
// sum(dy * forward) in every weight; the padding row starts at 0 and gets
// no gradient (as PyTorch's), and a second backward accumulates.
TEST_P(Layers, embedding_gradients_and_padding) {
  SCOPED_TRACE(seed_message(seed));
  std::mt19937_64 rng(seed);
  const auto make = [&] {
    Generator g(7);
    return Embedding(be, g, 6, 4, -1, kF64);
  };
  Embedding layer = make();
  const auto w = layer.weight.value.to_doubles();
  for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(w[20 + j], 0.0) << "padding row";
  const std::vector<std::int64_t> rows{1, 5, 3, 1, 0, 1};
  const Tensor indices = Tensor::from(rows, Layout{2, 3});
  const Tensor y = layer.forward(be, indices);
  ASSERT_EQ(y.layout().dims_string(), "[2, 3, 4]");
  const auto yv = y.to_doubles();
  for (std::size_t k = 0; k < rows.size(); ++k)
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(yv[k * 4 + j], w[std::size_t(rows[k]) * 4 + j]);
  const std::vector<double> dy = away_from_zero(rng, y.numel());
  EXPECT_FALSE(layer.backward(be, Tensor::from(dy, y.layout())).defined());
  const auto grad = layer.weight.grad.to_doubles();
  const double h = 1e-6;
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (k / 4 == 5) {
      EXPECT_EQ(grad[k], 0.0) << "padding row [" << k << "]";
      continue;
    }
    auto plus = w, minus = w;
    plus[k] += h;
    minus[k] -= h;
    const auto objective = [&](const std::vector<double>& value) {
      Embedding fresh = make();
      fresh.weight.value = Tensor::from(value, fresh.weight.value.layout());
      return dot(dy, fresh.forward(be, indices).to_doubles());
    };
    EXPECT_NEAR(grad[k], (objective(plus) - objective(minus)) / (2 * h), 1e-6) << "dweight[" << k << "]";
  }
  (void)layer.forward(be, indices);
  (void)layer.backward(be, Tensor::from(dy, y.layout()));
  const auto twice = layer.weight.grad.to_doubles();
  // (The second pass adds each row into the first's sums: the same up to rounding.)
  for (std::size_t k = 0; k < grad.size(); ++k)
    EXPECT_NEAR(twice[k], 2 * grad[k], 1e-12 * std::abs(grad[k])) << "accumulated [" << k << "]";
  // Raised by the next host wait (here the read of the output).
  XY_EXPECT_ERROR(ErrorCode::index_out_of_range,
                  (void)layer.forward(be, Tensor::from(std::vector<std::int64_t>{6}, Layout{1})).to_doubles());
}

TEST_P(Layers, conv_gradients) {
  check_gradients(be, seeded<Conv2d>(be, 2, 3, 3, 2, 1, true, kF64), Layout{2, 2, 5, 5}, seed);
  check_gradients(be, seeded<Conv2d>(be, 3, 2, 2, 1, 0, false, kF64), Layout{1, 3, 4, 4}, seed);
}

TEST_P(Layers, pool_activation_flatten_gradients) {
  const Layout image{2, 3, 4, 4};
  check_gradients(
      be, [] { return std::make_unique<MaxPool2d>(2); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<AvgPool2d>(3, 2, 1); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<ReLU>(); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<Sigmoid>(); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<Tanh>(); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<Flatten>(); }, image, seed);
}

TEST_P(Layers, norm_and_dropout_gradients) {
  const Layout image{3, 2, 3, 3};
  for (bool training : {true, false})
    check_gradients(
        be, [&] { return std::make_unique<BatchNorm2d>(be, 2, 1e-5, 0.1, f64); }, image, seed, training);
  check_gradients(
      be,
      [&] {
        return std::make_unique<LayerNorm>(be, std::vector<std::int64_t>{3, 3}, 1e-5, true, f64);
      },
      image, seed);
  check_gradients(
      be, [] { return std::make_unique<Dropout>(0.3, 11); }, image, seed);
}

TEST_P(Layers, transformer_norm_and_activation_gradients) {
  const Layout image{3, 4, 3, 3};
  check_gradients(
      be, [] { return std::make_unique<SiLU>(); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<GELU>(); }, image, seed);
  check_gradients(
      be, [] { return std::make_unique<GELU>(true); }, image, seed);
  check_gradients(
      be, [&] { return std::make_unique<RMSNorm>(be, std::vector<std::int64_t>{3, 3}, 1e-6, true, f64); }, image,
      seed);
  check_gradients(
      be, [&] { return std::make_unique<GroupNorm>(be, 2, 4, 1e-5, true, f64); }, image, seed);
  check_gradients(
      be, [&] { return std::make_unique<GroupNorm>(be, 4, 4, 1e-5, false, f64); }, image, seed);
  EXPECT_EQ(GELU(true).describe(), "GELU(approximate='tanh')");
  EXPECT_EQ(GroupNorm(be, 2, 4).describe(), "GroupNorm(2, 4)");
  EXPECT_EQ(RMSNorm(be, {8}).parameters().size(), 1u);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, GroupNorm(be, 3, 4));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, RMSNorm(be, {}));
  GroupNorm gn(be, 2, 4);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)gn.forward(be, Tensor::from(std::vector<float>(6, 1.0f), Layout{2, 3})));
}

TEST_P(Layers, multihead_attention_gradients) {
  for (bool causal : {false, true})
    check_gradients(be, seeded<MultiheadAttention>(be, 8, 2, causal, true, kF64), Layout{2, 5, 8}, seed);
  check_gradients(be, seeded<MultiheadAttention>(be, 6, 3, false, false, kF64), Layout{1, 4, 6}, seed);
}

// x + f(x): dx is dy plus f's input gradient; f's parameters keep f's names.
TEST_P(Layers, residual_gradients) {
  auto pre_norm = [&] {
    Generator g(3);
    auto inner = std::make_unique<Sequential>();
    inner->emplace<LayerNorm>(be, std::vector<std::int64_t>{4}, 1e-5, true, f64);
    inner->emplace<Linear>(be, g, 4, 4, true, kF64);
    return std::make_unique<Residual>(std::move(inner));
  };
  check_gradients(be, pre_norm, Layout{2, 3, 4}, seed);
  check_gradients(
      be, [&] { return std::make_unique<Residual>(seeded<MultiheadAttention>(be, 4, 2, true, true, kF64)()); },
      Layout{2, 3, 4}, seed);
  EXPECT_EQ(pre_norm()->parameters()[2]->name, "1.weight");
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, Residual(nullptr));
  Generator g(1);
  Residual widening(std::make_unique<Linear>(be, g, 4, 5));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                  (void)widening.forward(be, Tensor::from(std::vector<float>(8, 1.0f), Layout{2, 4})));
}

std::unique_ptr<Sequential> tiny_cnn(const Backend& be, DType dtype) {
  Generator g(5);
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(be, g, 2, 3, 3, 1, 1, true, ParameterOptions{dtype});
  net->emplace<BatchNorm2d>(be, 3, 1e-5, 0.1, dtype);
  net->emplace<ReLU>();
  net->emplace<MaxPool2d>(2);
  net->emplace<Flatten>();
  net->emplace<Linear>(be, g, 3 * 2 * 2, 4, true, ParameterOptions{dtype});
  return net;
}

TEST_P(Layers, tiny_cnn_gradients) {
  check_gradients(
      be, [&] { return tiny_cnn(be, f64); }, Layout{3, 2, 4, 4}, seed);
}

TEST_P(Layers, sequential_names_parameters_as_pytorch) {
  auto net = tiny_cnn(be, f32);
  std::vector<std::string> names;
  for (Parameter* p : net->parameters()) names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias"}));
  std::vector<std::string> buffers;
  for (Buffer* t : net->buffers()) buffers.push_back(t->name);
  EXPECT_EQ(buffers, (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  Sequential outer;
  outer.emplace<ReLU>();
  outer.add(std::move(net));
  EXPECT_EQ(outer.parameters().front()->name, "1.0.weight");
  EXPECT_EQ(outer.buffers().back()->name, "1.1.num_batches_tracked");
}

TEST_P(Layers, gradients_accumulate_until_zero_grad) {
  Generator g(3);
  Linear lin(be, g, 4, 2, true, kF64);
  std::mt19937_64 rng(seed);
  const Tensor x = Tensor::from(away_from_zero(rng, 12), Layout{3, 4});
  const Tensor dy = Tensor::from(away_from_zero(rng, 6), Layout{3, 2});
  (void)lin.forward(be, x);
  (void)lin.backward(be, dy);
  const auto once = lin.weight.grad.to_doubles();
  (void)lin.forward(be, x);
  (void)lin.backward(be, dy);
  const auto twice = lin.weight.grad.to_doubles();
  for (std::size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-12);
  lin.zero_grad();
  EXPECT_FALSE(lin.weight.grad.defined());
  EXPECT_FALSE(lin.bias.grad.defined());
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)lin.backward(be, dy));  // forward's input was released
}

TEST_P(Layers, batch_norm_training_and_evaluation) {
  BatchNorm2d bn(be, 2, 1e-5, 0.1, f64);
  std::mt19937_64 rng(seed);
  const std::vector<double> x = away_from_zero(rng, 2 * 2 * 3);  // [2, 2, 3, 1]
  const Tensor xt = Tensor::from(x, Layout{2, 2, 3, 1});
  (void)bn.forward(be, xt);
  const auto mean = bn.running_mean.value.to_doubles(), var = bn.running_var.value.to_doubles();
  for (int c = 0; c < 2; ++c) {
    std::vector<double> v;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) v.push_back(x[std::size_t(n * 6 + c * 3 + i)]);
    const double m = std::accumulate(v.begin(), v.end(), 0.0) / 6;
    double ss = 0;
    for (double e : v) ss += (e - m) * (e - m);
    EXPECT_NEAR(mean[std::size_t(c)], 0.1 * m, 1e-12);
    EXPECT_NEAR(var[std::size_t(c)], 0.9 + 0.1 * ss / 5, 1e-12);  // unbiased
  }
  bn.train(false);
  const auto before = xylem_test::snapshot(bn.running_mean.value);
  const auto y = bn.forward(be, xt).to_doubles();
  XY_EXPECT_UNCHANGED(bn.running_mean.value, before);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t c = (i / 3) % 2;
    EXPECT_NEAR(y[i], (x[i] - mean[c]) / std::sqrt(var[c] + 1e-5), 1e-12);
  }
}

TEST_P(Layers, dropout_training_evaluation_and_steps) {
  const Tensor x = ones(be, Layout{64, 64}, f32);
  Dropout drop(0.25, 99);
  const auto a = drop.forward(be, x).to_doubles();
  const auto b = drop.forward(be, x).to_doubles();
  EXPECT_EQ(drop.step(), 2u);
  std::size_t zeros = 0;
  for (double e : a) {
    if (e == 0)
      ++zeros;
    else
      EXPECT_NEAR(e, 1 / 0.75, 1e-6);
  }
  EXPECT_NEAR(double(zeros) / double(a.size()), 0.25, 0.03);
  EXPECT_NE(a, b);  // each step draws its own mask
  drop.set_step(0);
  EXPECT_EQ(drop.forward(be, x).to_doubles(),
            a);  // and a step redraws the same one
  drop.train(false);
  const Tensor y = drop.forward(be, x);
  EXPECT_TRUE(y.shares_data_with(x));
  EXPECT_EQ(drop.step(), 1u);  // evaluation draws nothing
}

TEST_P(Layers, initialisation_statistics) {
  Generator g(seed);
  SCOPED_TRACE(seed_message(seed));
  Linear lin(be, g, 400, 300);
  const double bound = std::sqrt(6.0 / (6.0 * 400));  // a = sqrt(5): 1/sqrt(fan_in)
  const double f32_bound = bound * (1 + 1e-6);        // the bounds rounded to f32 may lie just outside
  auto w = lin.weight.value.to_doubles();
  double m = 0, v = 0;
  for (double e : w) m += e / double(w.size());
  for (double e : w) v += (e - m) * (e - m) / double(w.size());
  EXPECT_LE(*std::max_element(w.begin(), w.end()), f32_bound);
  EXPECT_GE(*std::min_element(w.begin(), w.end()), -f32_bound);
  EXPECT_NEAR(m, 0, 0.01 * bound);
  EXPECT_NEAR(v, bound * bound / 3, 0.02 * bound * bound / 3);
  for (double e : lin.bias.value.to_doubles()) EXPECT_LE(std::abs(e), f32_bound);

  // fan_in 32 * 9, fan_out 64 * 9; 18432 draws put the sample variance within
  // 1% (one sigma).
  Conv2d conv(be, g, 32, 64, 3, 1, 0, true, {f32, Init::xavier_normal});
  w = conv.weight.value.to_doubles();
  v = 0;
  for (double e : w) v += e * e / double(w.size());
  const double xavier_var = 2.0 / (288 + 576);
  EXPECT_NEAR(v, xavier_var, 0.05 * xavier_var);
  Linear xu(be, g, 100, 50, true, {f32, Init::xavier_uniform});
  w = xu.weight.value.to_doubles();
  EXPECT_LE(*std::max_element(w.begin(), w.end()), std::sqrt(6.0 / 150) * (1 + 1e-6));
  EXPECT_GT(*std::max_element(w.begin(), w.end()), 0.95 * std::sqrt(6.0 / 150));
}

TEST_P(Layers, same_seed_same_parameters_on_every_framework) {
  const auto mine = tiny_cnn(be, f32), again = tiny_cnn(be, f32), native = tiny_cnn(Backend::native(), f32);
  const auto pm = mine->parameters(), pa = again->parameters(), pn = native->parameters();
  ASSERT_EQ(pm.size(), pn.size());
  for (std::size_t i = 0; i < pm.size(); ++i) {
    const auto m = pm[i]->value.to_doubles(), n = pn[i]->value.to_doubles();
    EXPECT_EQ(m, pa[i]->value.to_doubles()) << pm[i]->name;
    ASSERT_EQ(m.size(), n.size());
    for (std::size_t k = 0; k < m.size(); ++k) EXPECT_NEAR(m[k], n[k], 1e-7) << pm[i]->name << "[" << k << "]";
  }
}

TEST_P(Layers, bad_shapes_raise_and_change_nothing) {
  auto net = tiny_cnn(be, f32);
  std::vector<xylem_test::Snapshot> before;
  for (Parameter* p : net->parameters()) before.push_back(xylem_test::snapshot(p->value));
  for (Buffer* t : net->buffers()) before.push_back(xylem_test::snapshot(t->value));
  Generator g(1);
  // Right for the convolutions, wrong for the Linear at the end (5x5 pools to
  // 2x2 too, so 6x6 is needed).
  const Tensor x = uniform(be, Layout{2, 2, 6, 6}, f32, g, -1, 1);
  const std::string message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)net->forward(be, x));
  EXPECT_TRUE(xylem_test::contains(message, "Linear(12, 4)")) << message;
  EXPECT_TRUE(xylem_test::contains(message, "[2, 27]")) << message;
  std::size_t i = 0;
  for (Parameter* p : net->parameters()) XY_EXPECT_UNCHANGED(p->value, before[i++]);
  for (Buffer* t : net->buffers()) XY_EXPECT_UNCHANGED(t->value, before[i++]);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)(*net)[0].forward(be, uniform(be, Layout{2, 3, 4, 4}, f32, g)));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)(*net)[1].forward(be, uniform(be, Layout{2, 3}, f32, g)));
  Conv2d unpadded(be, g, 2, 3, 3);  // a 2x2 image is smaller than its kernel
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)unpadded.forward(be, uniform(be, Layout{1, 2, 2, 2}, f32, g)));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, Conv2d(be, g, 2, 3, 3, 0));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, MaxPool2d(0));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, LayerNorm(be, {}));

  // dy of the wrong shape: nothing accumulated.
  const Tensor ok = uniform(be, Layout{2, 2, 4, 4}, f32, g);
  (void)net->forward(be, ok);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)net->backward(be, uniform(be, Layout{2, 5}, f32, g)));
  for (Parameter* p : net->parameters()) EXPECT_FALSE(p->grad.defined()) << p->name;
}

TEST_P(Layers, cross_entropy_with_label_smoothing) {
  SCOPED_TRACE(seed_message(seed));
  std::mt19937_64 rng(seed);
  const std::int64_t n = 3, c = 4;
  const std::vector<double> x = away_from_zero(rng, n * c);
  const std::vector<std::int64_t> t{2, 0, 3};
  const Tensor target = Tensor::from(t);
  const double s = 0.1;
  const Loss loss = cross_entropy(be, Tensor::from(x, Layout{n, c}), target, s);
  const auto grad = loss.grad.to_doubles();
  double expected = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    double mx = -1e300, z = 0;
    for (std::int64_t k = 0; k < c; ++k) mx = std::max(mx, x[std::size_t(r * c + k)]);
    for (std::int64_t k = 0; k < c; ++k) z += std::exp(x[std::size_t(r * c + k)] - mx);
    for (std::int64_t k = 0; k < c; ++k) {
      const double logp = x[std::size_t(r * c + k)] - mx - std::log(z);
      const double q = (k == t[std::size_t(r)] ? 1 - s : 0) + s / double(c);
      expected -= q * logp / double(n);
      EXPECT_NEAR(grad[std::size_t(r * c + k)], (std::exp(logp) - q) / double(n), 1e-12);
    }
  }
  EXPECT_NEAR(loss.value.to_doubles().at(0), expected, 1e-12);
  const Loss plain = cross_entropy(be, Tensor::from(x, Layout{n, c}), target);
  EXPECT_LT(plain.value.to_doubles().at(0), expected + 1);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)cross_entropy(be, Tensor::from(x, Layout{n, c}), target, 1.5));

  const Loss m = mse(be, Tensor::from(std::vector<double>{1, 2}), Tensor::from(std::vector<double>{0, 4}));
  EXPECT_NEAR(m.value.to_doubles().at(0), (1 + 4) / 2.0, 1e-12);
  EXPECT_EQ(m.grad.to_doubles(), (std::vector<double>{1, -2}));
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Layers, ::testing::Values("native", "opencl"),
                         [](const auto& p) { return p.param; });

}  // namespace
