// xylem::nn's returning forms (Tensor relu(b, x), ...): each gives a new
// tensor of the op's shape and dtype holding exactly what the writing form
// writes (that one is checked against references in the other files), and
// raises what the writing form raises.
#include "conformance/conformance.hpp"
#include "conformance/nn_common.hpp"
#include "xylem/nn.hpp"

namespace conformance {
namespace {

namespace nn = xylem::nn;

class NnReturning : public Conformance {
 protected:
  // Random f32 values in [low, high] on the host.
  Tensor random(const Dims& dims, double low = -1, double high = 1) {
    return Tensor::from(xylem_test::random_vector<float>(rng, product(dims), low, high), shape_of(dims));
  }
  static Tensor like(const Tensor& t) { return Tensor(Layout(t.shape()), t.dtype()); }
  // Whether the backend runs op in f32; otherwise checks that the returning
  // form `call` raises unsupported (the op's own tests report it).
  bool runs_f32(OpId op, const std::function<void()>& call) { return runs(op, xylem::f32, call); }
};

// Same dims, same dtype, the same values bit for bit.
void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(got.defined());
  EXPECT_EQ(got.layout().dims_string(), want.layout().dims_string());
  EXPECT_EQ(got.dtype(), want.dtype());
  EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
}

TEST_P(NnReturning, activations) {
  const Tensor x = random({3, 5, 7}, -3, 3);
  const Tensor dy = random({3, 5, 7});
  const auto check = [&](const std::string& what, const Tensor& returned, auto&& write) {
    Tensor out = like(x);
    write(out);
    expect_same(returned, out, what);
  };
  check("sigmoid", nn::sigmoid(backend, x), [&](Tensor& y) { nn::sigmoid(backend, x, y); });
  check("relu", nn::relu(backend, x), [&](Tensor& y) { nn::relu(backend, x, y); });
  check("tanh", nn::tanh(backend, x), [&](Tensor& y) { nn::tanh(backend, x, y); });
  check("gelu", nn::gelu(backend, x), [&](Tensor& y) { nn::gelu(backend, x, y); });
  check("leaky_relu", nn::leaky_relu(backend, x, 0.2), [&](Tensor& y) { nn::leaky_relu(backend, x, y, 0.2); });
  check("elu", nn::elu(backend, x, 0.5), [&](Tensor& y) { nn::elu(backend, x, y, 0.5); });
  check("softplus", nn::softplus(backend, x, 2, 10), [&](Tensor& y) { nn::softplus(backend, x, y, 2, 10); });
  check("sigmoid_grad", nn::sigmoid_grad(backend, x, dy), [&](Tensor& d) { nn::sigmoid_grad(backend, x, dy, d); });
  check("relu_grad", nn::relu_grad(backend, x, dy), [&](Tensor& d) { nn::relu_grad(backend, x, dy, d); });
  check("tanh_grad", nn::tanh_grad(backend, x, dy), [&](Tensor& d) { nn::tanh_grad(backend, x, dy, d); });
  check("gelu_grad", nn::gelu_grad(backend, x, dy), [&](Tensor& d) { nn::gelu_grad(backend, x, dy, d); });
  check("leaky_relu_grad", nn::leaky_relu_grad(backend, x, dy, 0.2),
        [&](Tensor& d) { nn::leaky_relu_grad(backend, x, dy, d, 0.2); });
  check("elu_grad", nn::elu_grad(backend, x, dy, 0.5), [&](Tensor& d) { nn::elu_grad(backend, x, dy, d, 0.5); });
  check("softplus_grad", nn::softplus_grad(backend, x, dy, 2, 10),
        [&](Tensor& d) { nn::softplus_grad(backend, x, dy, d, 2, 10); });
}

TEST_P(NnReturning, softmax) {
  const Tensor x = random({4, 6, 5});
  const Tensor dy = random({4, 6, 5});
  if (!runs_f32(OpId::nn_softmax, [&] { (void)nn::softmax(backend, x, 1); })) return;
  for (int axis : {1, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Tensor y = like(x), ly = like(x), dx = like(x), ldx = like(x);
    nn::softmax(backend, x, axis, y);
    nn::log_softmax(backend, x, axis, ly);
    nn::softmax_grad(backend, y, dy, axis, dx);
    nn::log_softmax_grad(backend, ly, dy, axis, ldx);
    expect_same(nn::softmax(backend, x, axis), y, "softmax");
    expect_same(nn::log_softmax(backend, x, axis), ly, "log_softmax");
    expect_same(nn::softmax_grad(backend, y, dy, axis), dx, "softmax_grad");
    expect_same(nn::log_softmax_grad(backend, ly, dy, axis), ldx, "log_softmax_grad");
  }
}

TEST_P(NnReturning, layer_norm) {
  const Tensor x = random({5, 3, 4});
  const Tensor gamma = random({3, 4}), beta = random({3, 4});
  const Tensor dy = random({5, 3, 4});
  if (!runs_f32(OpId::nn_layer_norm, [&] { (void)nn::layer_norm(backend, x, 2, gamma, beta, 1e-5); })) return;
  Tensor y = like(x);
  const nn::NormStats stats = nn::layer_norm(backend, x, 2, gamma, beta, 1e-5, y);
  const nn::LayerNorm returned = nn::layer_norm(backend, x, 2, gamma, beta, 1e-5);
  expect_same(returned.y, y, "y");
  EXPECT_EQ(returned.stats.mean.to_vector<float>(), stats.mean.to_vector<float>());
  EXPECT_EQ(returned.stats.rstd.to_vector<float>(), stats.rstd.to_vector<float>());

  Tensor dx = like(x), dgamma = like(gamma), dbeta = like(beta);
  nn::layer_norm_grad(backend, x, 2, gamma, stats, dy, dx, dgamma, dbeta);
  const nn::NormGrads grads = nn::layer_norm_grad(backend, x, 2, gamma, stats, dy);
  expect_same(grads.dx, dx, "dx");
  expect_same(grads.dgamma, dgamma, "dgamma");
  expect_same(grads.dbeta, dbeta, "dbeta");
}

TEST_P(NnReturning, batch_norm) {
  const Tensor x = random({4, 3, 5});
  const Tensor gamma = random({3}), beta = random({3});
  const Tensor dy = random({4, 3, 5});
  // Each form updates running statistics of its own, from the same start.
  const auto mean0 = xylem_test::random_vector<float>(rng, 3);
  const auto var0 = xylem_test::random_vector<float>(rng, 3, 0.5, 2);
  Tensor mean_a = Tensor::from(mean0), var_a = Tensor::from(var0);
  Tensor mean_b = Tensor::from(mean0), var_b = Tensor::from(var0);
  if (!runs_f32(OpId::nn_batch_norm_stats,
                [&] { (void)nn::batch_norm(backend, x, gamma, beta, mean_b, var_b, true, 0.1, 1e-5); }))
    return;
  Tensor y = like(x);
  const nn::BatchNormStats stats = nn::batch_norm(backend, x, gamma, beta, mean_a, var_a, true, 0.1, 1e-5, y);
  const nn::BatchNorm returned = nn::batch_norm(backend, x, gamma, beta, mean_b, var_b, true, 0.1, 1e-5);
  expect_same(returned.y, y, "y");
  expect_same(mean_b, mean_a, "running mean");
  expect_same(var_b, var_a, "running var");

  Tensor dx = like(x), dgamma = like(gamma), dbeta = like(beta);
  nn::batch_norm_grad(backend, x, gamma, stats, true, 1e-5, dy, dx, dgamma, dbeta);
  const nn::NormGrads grads = nn::batch_norm_grad(backend, x, gamma, stats, true, 1e-5, dy);
  expect_same(grads.dx, dx, "dx");
  expect_same(grads.dgamma, dgamma, "dgamma");
  expect_same(grads.dbeta, dbeta, "dbeta");
}

TEST_P(NnReturning, conv2d) {
  const nn::Conv2d p{.stride_h = 2, .stride_w = 1, .pad_h = 1, .pad_w = 0, .dilation_h = 1, .dilation_w = 2};
  const Tensor x = random({2, 3, 8, 7});
  const Tensor w = random({4, 3, 3, 2});
  const Layout y_shape = nn::conv2d_output_shape(x.layout(), w.layout(), p);
  if (!runs_f32(OpId::nn_conv2d, [&] { (void)nn::conv2d(backend, x, w, p); })) return;
  Tensor y(y_shape, xylem::f32);
  nn::conv2d(backend, x, w, y, p);
  expect_same(nn::conv2d(backend, x, w, p), y, "conv2d");

  const Tensor dy = Tensor::from(xylem_test::random_vector<float>(rng, y_shape.numel()), y_shape);
  Tensor dx = like(x), dw = like(w);
  nn::conv2d_grad_data(backend, dy, w, dx, p);
  nn::conv2d_grad_filter(backend, x, dy, dw, p);
  expect_same(nn::conv2d_grad_data(backend, dy, w, x.layout(), p), dx, "conv2d_grad_data");
  expect_same(nn::conv2d_grad_filter(backend, x, dy, w.layout(), p), dw, "conv2d_grad_filter");
}

TEST_P(NnReturning, pooling) {
  const nn::Pool2d p{.kernel_h = 3, .kernel_w = 2, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 0};
  const Tensor x = random({2, 3, 9, 6});
  const Layout y_shape = nn::pool2d_output_shape(x.layout(), p);
  const Tensor dy = Tensor::from(xylem_test::random_vector<float>(rng, y_shape.numel()), y_shape);
  if (!runs_f32(OpId::nn_max_pool2d, [&] { (void)nn::max_pool2d(backend, x, p); })) return;
  Tensor max_y(y_shape, xylem::f32), avg_y(y_shape, xylem::f32), max_dx = like(x), avg_dx = like(x);
  nn::max_pool2d(backend, x, max_y, p);
  nn::avg_pool2d(backend, x, avg_y, p);
  nn::max_pool2d_grad(backend, x, dy, max_dx, p);
  nn::avg_pool2d_grad(backend, dy, avg_dx, p);
  expect_same(nn::max_pool2d(backend, x, p), max_y, "max_pool2d");
  expect_same(nn::avg_pool2d(backend, x, p), avg_y, "avg_pool2d");
  expect_same(nn::max_pool2d_grad(backend, x, dy, p), max_dx, "max_pool2d_grad");
  expect_same(nn::avg_pool2d_grad(backend, dy, x.layout(), p), avg_dx, "avg_pool2d_grad");
}

TEST_P(NnReturning, lrn) {
  const nn::Lrn p{.size = 3};
  const Tensor x = random({2, 5, 4, 3});
  const Tensor dy = random({2, 5, 4, 3});
  if (!runs_f32(OpId::nn_lrn, [&] { (void)nn::lrn(backend, x, p); })) return;
  Tensor y = like(x), dx = like(x);
  nn::lrn(backend, x, y, p);
  nn::lrn_grad(backend, x, y, dy, dx, p);
  expect_same(nn::lrn(backend, x, p), y, "lrn");
  expect_same(nn::lrn_grad(backend, x, y, dy, p), dx, "lrn_grad");
}

TEST_P(NnReturning, dropout) {
  const Tensor x = random({6, 50});
  xylem::Generator gen_a(seed), gen_b(seed);
  if (!runs_f32(OpId::nn_dropout, [&] {
        xylem::Generator gen(seed);
        (void)nn::dropout(backend, x, 0.3, gen);
      }))
    return;
  Tensor y = like(x);
  const nn::DropoutMask mask = nn::dropout(backend, x, y, 0.3, gen_a);
  const nn::Dropout returned = nn::dropout(backend, x, 0.3, gen_b);
  expect_same(returned.y, y, "y");
  EXPECT_EQ(returned.mask.seed, mask.seed);
  EXPECT_EQ(returned.mask.offset, mask.offset);
  EXPECT_EQ(returned.mask.p, mask.p);
  Tensor dx = like(x);
  nn::dropout_grad(backend, x, dx, mask);
  expect_same(nn::dropout_grad(backend, x, mask), dx, "dropout_grad");
}

TEST_P(NnReturning, linear_and_losses) {
  const Tensor x = random({2, 3, 5});
  const Tensor w = random({4, 5}), bias = random({4});
  if (!runs_f32(OpId::blas_gemm, [&] { (void)nn::linear(backend, x, w, bias); })) return;
  Tensor y(Layout{2, 3, 4}, xylem::f32);
  nn::linear(backend, x, w, bias, y);
  expect_same(nn::linear(backend, x, w, bias), y, "linear");

  const Tensor dy = random({2, 3, 4});
  Tensor dx = like(x), dw = like(w), dbias = like(bias);
  nn::linear_grad(backend, x, w, dy, dx, dw, dbias);
  const nn::LinearGrads grads = nn::linear_grad(backend, x, w, dy);
  expect_same(grads.dx, dx, "dx");
  expect_same(grads.dw, dw, "dw");
  expect_same(grads.dbias, dbias, "dbias");

  const Tensor logits = random({6, 4});
  const Tensor classes = Tensor::from(std::vector<std::int64_t>{0, 3, 1, 2, 2, 0});
  if (!runs_f32(OpId::nn_cross_entropy_grad, [&] { (void)nn::cross_entropy_grad(backend, logits, classes); })) return;
  Tensor dlogits = like(logits);
  nn::cross_entropy_grad(backend, logits, classes, dlogits, 0.5);
  expect_same(nn::cross_entropy_grad(backend, logits, classes, 0.5), dlogits, "cross_entropy_grad");

  const Tensor other = random({6, 4});
  Tensor dmse = like(logits);
  nn::mse_loss_grad(backend, logits, other, dmse, 2);
  expect_same(nn::mse_loss_grad(backend, logits, other, 2), dmse, "mse_loss_grad");
}

TEST_P(NnReturning, errors) {
  // The returning forms raise what the writing forms raise, and an empty
  // handle names its argument.
  const auto what = XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, (void)nn::relu(backend, Tensor{}));
  EXPECT_TRUE(xylem_test::contains(what, "nn::relu")) << what;
  const Tensor ints = Tensor::from(std::vector<std::int32_t>(6, 1), Layout{2, 3});
  XY_EXPECT_ERROR(xylem::ErrorCode::dtype_mismatch, (void)nn::softmax(backend, ints, 1));
  XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, (void)nn::softmax(backend, random({2, 3}), 2));
  XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch, (void)nn::conv2d(backend, random({2, 3}), random({1, 3, 1, 1})));
  XY_EXPECT_ERROR(xylem::ErrorCode::shape_mismatch,
                  (void)nn::conv2d_grad_data(backend, random({1, 1, 2, 2}), random({1, 1, 1, 1}), Layout{1, 1, 5, 5}));
}

INSTANTIATE_TEST_SUITE_P(Frameworks, NnReturning, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
