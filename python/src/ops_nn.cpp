// xylem.nn: activations, softmax, normalisation, convolution, pooling,
// LRN, dropout, linear and losses, forward and backward, and the
// parameter and result structs they take and return.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "def_op.hpp"

namespace xylem::python {
namespace {

Tensor optional_tensor(const std::optional<Tensor>& t) { return t.value_or(Tensor{}); }
Layout dims(const std::vector<std::int64_t>& shape) { return Layout(shape); }
std::vector<std::int64_t> shape_list(const Layout& l) { return {l.dims().begin(), l.dims().end()}; }

// PyTorch's reduction names.
nn::LossReduction loss_reduction(const std::string& name) {
  if (name == "none") return nn::LossReduction::none;
  if (name == "mean") return nn::LossReduction::mean;
  if (name == "sum") return nn::LossReduction::sum;
  if (name == "batchmean") return nn::LossReduction::batchmean;
  throw Error(ErrorCode::invalid_argument,
              "nn::kl_div: reduction '" + name + "' is not one of 'none', 'mean', 'sum', 'batchmean'");
}

#define XYLEM_PY_ACTIVATIONS(X)                                            \
  X(sigmoid, "y = 1 / (1 + e^-x), elementwise.")                           \
  X(relu, "y = max(x, 0), elementwise.")                                   \
  X(tanh, "y = tanh(x), elementwise.")                                     \
  X(gelu, "y = x Phi(x), Phi the standard normal CDF (the exact GELU).")   \
  X(silu, "y = x sigmoid(x) (SiLU, swish), elementwise.")                  \
  X(gelu_tanh, "GELU's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).")

// Gradients from the forward output (y) or input (x), and dy.
#define XYLEM_PY_ACTIVATION_GRADS(X)                                 \
  X(sigmoid_grad, "y", "dx = dy y (1 - y), from sigmoid's output y.") \
  X(relu_grad, "x", "dx = dy where x > 0, else 0, from relu's input x.") \
  X(tanh_grad, "y", "dx = dy (1 - y^2), from tanh's output y.")     \
  X(gelu_grad, "x", "dx = dy (Phi(x) + x phi(x)), from gelu's input x.") \
  X(silu_grad, "x", "dx = dy s (1 + x (1 - s)), s = sigmoid(x), from silu's input x.") \
  X(gelu_tanh_grad, "x", "dx of gelu_tanh, from its input x.")

#define XYLEM_PY_SOFTMAX(X)                                                               \
  X(softmax, "y = exp(x - max) / sum(exp(x - max)) along `axis`.")                        \
  X(log_softmax, "y = x - logsumexp(x) along `axis`, without overflow.")

#define XYLEM_PY_SOFTMAX_GRADS(X)                                                         \
  X(softmax_grad, "dx = y (dy - sum_axis(dy y)), from softmax's output y.")               \
  X(log_softmax_grad, "dx = dy - exp(y) sum_axis(dy), from log_softmax's output y.")

constexpr const char* kOutDoc = " With `out` (x's shape and dtype; may be x), written there and returned.";

using UnaryNew = Tensor (*)(const Backend&, const Tensor&);
using UnaryOut = void (*)(const Backend&, const Tensor&, Tensor&);
using GradNew = Tensor (*)(const Backend&, const Tensor&, const Tensor&);
using GradOut = void (*)(const Backend&, const Tensor&, const Tensor&, Tensor&);
using AxisNew = Tensor (*)(const Backend&, const Tensor&, int);
using AxisOut = void (*)(const Backend&, const Tensor&, int, Tensor&);
using AxisGradNew = Tensor (*)(const Backend&, const Tensor&, const Tensor&, int);
using AxisGradOut = void (*)(const Backend&, const Tensor&, const Tensor&, int, Tensor&);

void bind_structs(nb::module_& m) {
  nb::class_<nn::Conv2d>(m, "Conv2d", "The geometry of a 2-D convolution (cross-correlation, as PyTorch).")
      .def(
          "__init__",
          [](nn::Conv2d* p, int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w,
             int groups) { new (p) nn::Conv2d{stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups}; },
          nb::kw_only(), "stride_h"_a = 1, "stride_w"_a = 1, "pad_h"_a = 0, "pad_w"_a = 0, "dilation_h"_a = 1,
          "dilation_w"_a = 1, "groups"_a = 1, "Strides, zero padding, dilations and channel groups.")
      .def_rw("stride_h", &nn::Conv2d::stride_h, "Vertical step between windows.")
      .def_rw("stride_w", &nn::Conv2d::stride_w, "Horizontal step between windows.")
      .def_rw("pad_h", &nn::Conv2d::pad_h, "Zero rows above and below.")
      .def_rw("pad_w", &nn::Conv2d::pad_w, "Zero columns left and right.")
      .def_rw("dilation_h", &nn::Conv2d::dilation_h, "Vertical spacing of the filter taps.")
      .def_rw("dilation_w", &nn::Conv2d::dilation_w, "Horizontal spacing of the filter taps.")
      .def_rw("groups", &nn::Conv2d::groups, "Channel groups.");
  nb::class_<nn::Pool2d>(m, "Pool2d", "The geometry of 2-D max and average pooling.")
      .def(
          "__init__",
          [](nn::Pool2d* p, int kernel_h, int kernel_w, int stride_h, int stride_w, int pad_h, int pad_w,
             bool count_include_pad) {
            new (p) nn::Pool2d{kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, count_include_pad};
          },
          nb::kw_only(), "kernel_h"_a = 2, "kernel_w"_a = 2, "stride_h"_a = 0, "stride_w"_a = 0, "pad_h"_a = 0,
          "pad_w"_a = 0, "count_include_pad"_a = true, "Window, stride (0: the window), padding.")
      .def_rw("kernel_h", &nn::Pool2d::kernel_h, "Window height.")
      .def_rw("kernel_w", &nn::Pool2d::kernel_w, "Window width.")
      .def_rw("stride_h", &nn::Pool2d::stride_h, "Vertical step; 0: kernel_h.")
      .def_rw("stride_w", &nn::Pool2d::stride_w, "Horizontal step; 0: kernel_w.")
      .def_rw("pad_h", &nn::Pool2d::pad_h, "Rows of padding above and below.")
      .def_rw("pad_w", &nn::Pool2d::pad_w, "Columns of padding left and right.")
      .def_rw("count_include_pad", &nn::Pool2d::count_include_pad, "Average pooling divides by the whole window.");
  nb::class_<nn::Lrn>(m, "Lrn", "Local response normalisation across channels (AlexNet).")
      .def(
          "__init__",
          [](nn::Lrn* p, int size, double alpha, double beta, double k) { new (p) nn::Lrn{size, alpha, beta, k}; },
          nb::kw_only(), "size"_a = 5, "alpha"_a = 1e-4, "beta"_a = 0.75, "k"_a = 2.0,
          "y = x (k + alpha/size sum over the window of x^2)^-beta.")
      .def_rw("size", &nn::Lrn::size, "Channels in the window.")
      .def_rw("alpha", &nn::Lrn::alpha, "Scale of the sum of squares.")
      .def_rw("beta", &nn::Lrn::beta, "Exponent.")
      .def_rw("k", &nn::Lrn::k, "Additive constant.");

  nb::class_<nn::NormStats>(m, "NormStats", "What layer_norm computed per row, for layer_norm_grad.")
      .def_ro("mean", &nn::NormStats::mean, "The mean of each row.")
      .def_ro("rstd", &nn::NormStats::rstd, "1/sqrt(biased variance + eps).");
  nb::class_<nn::LayerNorm>(m, "LayerNorm", "layer_norm's result: y and the statistics.")
      .def_ro("y", &nn::LayerNorm::y, "The normalised output.")
      .def_ro("stats", &nn::LayerNorm::stats, "For layer_norm_grad.");
  nb::class_<nn::NormGrads>(m, "NormGrads", "The gradients of layer_norm and batch_norm.")
      .def_ro("dx", &nn::NormGrads::dx, "x's shape and dtype.")
      .def_ro("dgamma", &nn::NormGrads::dgamma, "The normalised axes' shape.")
      .def_ro("dbeta", &nn::NormGrads::dbeta, "The normalised axes' shape.");
  nb::class_<nn::RmsNorm>(m, "RmsNorm", "rms_norm's result: y and rstd.")
      .def_ro("y", &nn::RmsNorm::y, "The normalised output.")
      .def_ro("rstd", &nn::RmsNorm::rstd, "1/sqrt(mean(x^2) + eps) per row, for rms_norm_grad.");
  nb::class_<nn::RmsNormGrads>(m, "RmsNormGrads", "The gradients of rms_norm.")
      .def_ro("dx", &nn::RmsNormGrads::dx, "x's shape and dtype.")
      .def_ro("dweight", &nn::RmsNormGrads::dweight, "The normalised axes' shape.");
  nb::class_<nn::GroupNorm>(m, "GroupNorm", "group_norm's result: y and the statistics.")
      .def_ro("y", &nn::GroupNorm::y, "The normalised output.")
      .def_ro("stats", &nn::GroupNorm::stats, "[N, groups], for group_norm_grad.");
  nb::class_<nn::BatchNormStats>(m, "BatchNormStats", "The per-channel mean and variance batch_norm used.")
      .def_ro("mean", &nn::BatchNormStats::mean, "[C], in the statistics dtype.")
      .def_ro("var", &nn::BatchNormStats::var, "[C], the biased batch variance or the running one.");
  nb::class_<nn::BatchNorm>(m, "BatchNorm", "batch_norm's result: y and the statistics used.")
      .def_ro("y", &nn::BatchNorm::y, "The normalised output.")
      .def_ro("stats", &nn::BatchNorm::stats, "For batch_norm_grad.");
  nb::class_<nn::DropoutMask>(m, "DropoutMask", "The mask of one dropout call, regenerated by dropout_grad.")
      .def_ro("p", &nn::DropoutMask::p, "The drop probability.")
      .def_ro("seed", &nn::DropoutMask::seed, "The generator's seed.")
      .def_ro("offset", &nn::DropoutMask::offset, "The first counter the call drew.");
  nb::class_<nn::Dropout>(m, "Dropout", "dropout's result: y and the mask.")
      .def_ro("y", &nn::Dropout::y, "x's shape and dtype.")
      .def_ro("mask", &nn::Dropout::mask, "For dropout_grad.");
  nb::class_<nn::LinearGrads>(m, "LinearGrads", "linear_grad's result.")
      .def_ro("dx", &nn::LinearGrads::dx, "x's shape and dtype.")
      .def_ro("dw", &nn::LinearGrads::dw, "w's shape and dtype.")
      .def_ro("dbias", &nn::LinearGrads::dbias, "[out].");
}

void bind_parametrised_activations(nb::module_& m) {
  m.def(
      "leaky_relu",
      [](const Tensor& x, double slope, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return nn::leaky_relu(resolve(b), x, slope);
        nn::leaky_relu(resolve(b), x, *out, slope);
        return *out;
      },
      "x"_a, "negative_slope"_a = 0.01, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "y = x for x >= 0, negative_slope x below.");
  m.def(
      "elu",
      [](const Tensor& x, double alpha, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return nn::elu(resolve(b), x, alpha);
        nn::elu(resolve(b), x, *out, alpha);
        return *out;
      },
      "x"_a, "alpha"_a = 1.0, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "y = x for x > 0, alpha (e^x - 1) otherwise.");
  m.def(
      "softplus",
      [](const Tensor& x, double beta, double threshold, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return nn::softplus(resolve(b), x, beta, threshold);
        nn::softplus(resolve(b), x, *out, beta, threshold);
        return *out;
      },
      "x"_a, "beta"_a = 1.0, "threshold"_a = 20.0, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(),
      release_gil(), "log(1 + exp(beta x)) / beta; x itself where beta x > threshold.");
  m.def(
      "leaky_relu_grad",
      [](const Tensor& x, const Tensor& dy, double slope, std::optional<Backend> b) {
        return nn::leaky_relu_grad(resolve(b), x, dy, slope);
      },
      "x"_a, "dy"_a, "negative_slope"_a = 0.01, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx = dy where x > 0, else negative_slope dy.");
  m.def(
      "elu_grad",
      [](const Tensor& x, const Tensor& dy, double alpha, std::optional<Backend> b) {
        return nn::elu_grad(resolve(b), x, dy, alpha);
      },
      "x"_a, "dy"_a, "alpha"_a = 1.0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx = dy where x > 0, else alpha e^x dy.");
  m.def(
      "softplus_grad",
      [](const Tensor& x, const Tensor& dy, double beta, double threshold, std::optional<Backend> b) {
        return nn::softplus_grad(resolve(b), x, dy, beta, threshold);
      },
      "x"_a, "dy"_a, "beta"_a = 1.0, "threshold"_a = 20.0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx = dy sigmoid(beta x) (dy where beta x > threshold).");
}

void bind_norms(nb::module_& m) {
  m.def(
      "layer_norm",
      [](const Tensor& x, int normalized_rank, std::optional<Tensor> gamma, std::optional<Tensor> beta, double eps,
         std::optional<Backend> b) {
        return nn::layer_norm(resolve(b), x, normalized_rank, optional_tensor(gamma), optional_tensor(beta), eps);
      },
      "x"_a, "normalized_rank"_a = 1, "gamma"_a = nb::none(), "beta"_a = nb::none(), "eps"_a = 1e-5, nb::kw_only(),
      "backend"_a = nb::none(), release_gil(),
      "y = (x - mean) rstd gamma + beta over the last `normalized_rank` axes (biased variance); gamma and beta "
      "of those axes' shape or None. Returns y and the statistics.");
  m.def(
      "layer_norm_grad",
      [](const Tensor& x, int normalized_rank, std::optional<Tensor> gamma, const nn::NormStats& stats,
         const Tensor& dy, std::optional<Backend> b) {
        return nn::layer_norm_grad(resolve(b), x, normalized_rank, optional_tensor(gamma), stats, dy);
      },
      "x"_a, "normalized_rank"_a, "gamma"_a.none(), "stats"_a, "dy"_a, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "dx, dgamma and dbeta of layer_norm, from the statistics it returned.");
  m.def(
      "batch_norm",
      [](const Tensor& x, std::optional<Tensor> gamma, std::optional<Tensor> beta, Tensor& running_mean,
         Tensor& running_var, bool training, double momentum, double eps, std::optional<Backend> b) {
        return nn::batch_norm(resolve(b), x, optional_tensor(gamma), optional_tensor(beta), running_mean,
                              running_var, training, momentum, eps);
      },
      "x"_a, "gamma"_a.none(), "beta"_a.none(), "running_mean"_a, "running_var"_a, "training"_a = true,
      "momentum"_a = 0.1, "eps"_a = 1e-5, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "Per channel of x [N, C, ...]: y = (x - mean) / sqrt(var + eps) gamma + beta. Training uses the batch's "
      "statistics and updates the running ones in place; otherwise the running ones. Returns y and the "
      "statistics used.");
  m.def(
      "batch_norm_grad",
      [](const Tensor& x, std::optional<Tensor> gamma, const nn::BatchNormStats& stats, bool training, double eps,
         const Tensor& dy, std::optional<Backend> b) {
        return nn::batch_norm_grad(resolve(b), x, optional_tensor(gamma), stats, training, eps, dy);
      },
      "x"_a, "gamma"_a.none(), "stats"_a, "training"_a, "eps"_a, "dy"_a, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "dx, dgamma and dbeta of batch_norm, from the statistics it returned.");
  m.def(
      "rms_norm",
      [](const Tensor& x, int normalized_rank, std::optional<Tensor> weight, double eps, std::optional<Backend> b) {
        return nn::rms_norm(resolve(b), x, normalized_rank, optional_tensor(weight), eps);
      },
      "x"_a, "normalized_rank"_a = 1, "weight"_a = nb::none(), "eps"_a = 1e-6, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(),
      "y = x / sqrt(mean(x^2) + eps) weight over the last `normalized_rank` axes; weight of those axes' shape or "
      "None. Returns y and rstd.");
  m.def(
      "rms_norm_grad",
      [](const Tensor& x, int normalized_rank, std::optional<Tensor> weight, const Tensor& rstd, const Tensor& dy,
         std::optional<Backend> b) {
        return nn::rms_norm_grad(resolve(b), x, normalized_rank, optional_tensor(weight), rstd, dy);
      },
      "x"_a, "normalized_rank"_a, "weight"_a.none(), "rstd"_a, "dy"_a, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "dx and dweight of rms_norm, from the rstd it returned.");
  m.def(
      "group_norm",
      [](const Tensor& x, int groups, std::optional<Tensor> weight, std::optional<Tensor> bias, double eps,
         std::optional<Backend> b) {
        return nn::group_norm(resolve(b), x, groups, optional_tensor(weight), optional_tensor(bias), eps);
      },
      "x"_a, "groups"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5, nb::kw_only(),
      "backend"_a = nb::none(), release_gil(),
      "x [N, C, ...] with its channels in `groups` groups: each (sample, group) normalised (biased variance), "
      "then weight and bias ([C] or None) per channel. Returns y and the statistics.");
  m.def(
      "group_norm_grad",
      [](const Tensor& x, int groups, std::optional<Tensor> weight, const nn::NormStats& stats, const Tensor& dy,
         std::optional<Backend> b) {
        return nn::group_norm_grad(resolve(b), x, groups, optional_tensor(weight), stats, dy);
      },
      "x"_a, "groups"_a, "weight"_a.none(), "stats"_a, "dy"_a, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "dx, dgamma (dweight) and dbeta (dbias) of group_norm, from the statistics it returned.");
  m.def(
      "instance_norm",
      [](const Tensor& x, std::optional<Tensor> weight, std::optional<Tensor> bias, double eps,
         std::optional<Backend> b) {
        return nn::instance_norm(resolve(b), x, optional_tensor(weight), optional_tensor(bias), eps);
      },
      "x"_a, "weight"_a = nb::none(), "bias"_a = nb::none(), "eps"_a = 1e-5, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "group_norm with one group per channel. Returns y and the statistics.");
  m.def(
      "instance_norm_grad",
      [](const Tensor& x, std::optional<Tensor> weight, const nn::NormStats& stats, const Tensor& dy,
         std::optional<Backend> b) {
        return nn::instance_norm_grad(resolve(b), x, optional_tensor(weight), stats, dy);
      },
      "x"_a, "weight"_a.none(), "stats"_a, "dy"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx, dgamma and dbeta of instance_norm.");
  m.def(
      "lrn",
      [](const Tensor& x, const nn::Lrn& p, std::optional<Backend> b) { return nn::lrn(resolve(b), x, p); }, "x"_a,
      "params"_a = nn::Lrn{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "Local response normalisation across channels of x [N, C, ...].");
  m.def(
      "lrn_grad",
      [](const Tensor& x, const Tensor& y, const Tensor& dy, const nn::Lrn& p, std::optional<Backend> b) {
        return nn::lrn_grad(resolve(b), x, y, dy, p);
      },
      "x"_a, "y"_a, "dy"_a, "params"_a = nn::Lrn{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx of lrn, from its input x, its output y and dy.");
}

void bind_conv_pool(nb::module_& m) {
  m.def(
      "conv2d_output_shape",
      [](const std::vector<std::int64_t>& x, const std::vector<std::int64_t>& w, const nn::Conv2d& p) {
        return shape_list(nn::conv2d_output_shape(dims(x), dims(w), p));
      },
      "x_shape"_a, "w_shape"_a, "params"_a = nn::Conv2d{}, "y's shape [N, K, P, Q] for x and w.");
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, const nn::Conv2d& p, std::optional<Backend> b) {
        return nn::conv2d(resolve(b), x, w, p);
      },
      "x"_a, "w"_a, "params"_a = nn::Conv2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "y = x (*) w, x [N, C, H, W], w [K, C/groups, R, S]: cross-correlation with zero padding.");
  m.def(
      "conv2d_grad_data",
      [](const Tensor& dy, const Tensor& w, const std::vector<std::int64_t>& x_shape, const nn::Conv2d& p,
         std::optional<Backend> b) { return nn::conv2d_grad_data(resolve(b), dy, w, dims(x_shape), p); },
      "dy"_a, "w"_a, "x_shape"_a, "params"_a = nn::Conv2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx of conv2d (of x_shape), from dy and w.");
  m.def(
      "conv2d_grad_filter",
      [](const Tensor& x, const Tensor& dy, const std::vector<std::int64_t>& w_shape, const nn::Conv2d& p,
         std::optional<Backend> b) { return nn::conv2d_grad_filter(resolve(b), x, dy, dims(w_shape), p); },
      "x"_a, "dy"_a, "w_shape"_a, "params"_a = nn::Conv2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dw of conv2d (of w_shape), from x and dy.");
  m.def(
      "pool2d_output_shape",
      [](const std::vector<std::int64_t>& x, const nn::Pool2d& p) {
        return shape_list(nn::pool2d_output_shape(dims(x), p));
      },
      "x_shape"_a, "params"_a = nn::Pool2d{}, "y's shape [N, C, P, Q] for x.");
  m.def(
      "max_pool2d",
      [](const Tensor& x, const nn::Pool2d& p, std::optional<Backend> b) { return nn::max_pool2d(resolve(b), x, p); },
      "x"_a, "params"_a = nn::Pool2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "The maximum of each window of x [N, C, H, W] (NaN propagating).");
  m.def(
      "max_pool2d_grad",
      [](const Tensor& x, const Tensor& dy, const nn::Pool2d& p, std::optional<Backend> b) {
        return nn::max_pool2d_grad(resolve(b), x, dy, p);
      },
      "x"_a, "dy"_a, "params"_a = nn::Pool2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx: each dy to the first maximum of its window, summed where windows overlap.");
  m.def(
      "avg_pool2d",
      [](const Tensor& x, const nn::Pool2d& p, std::optional<Backend> b) { return nn::avg_pool2d(resolve(b), x, p); },
      "x"_a, "params"_a = nn::Pool2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "The mean of each window of x [N, C, H, W] (see Pool2d.count_include_pad).");
  m.def(
      "avg_pool2d_grad",
      [](const Tensor& dy, const std::vector<std::int64_t>& x_shape, const nn::Pool2d& p, std::optional<Backend> b) {
        return nn::avg_pool2d_grad(resolve(b), dy, dims(x_shape), p);
      },
      "dy"_a, "x_shape"_a, "params"_a = nn::Pool2d{}, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx of avg_pool2d (of x_shape).");
}

void bind_train(nb::module_& m) {
  m.def(
      "dropout",
      [](const Tensor& x, double p, Generator* gen, std::optional<Backend> b) {
        return nn::dropout(resolve(b), x, p, *generator_or_default(gen));
      },
      "x"_a, "p"_a, nb::kw_only(), "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "y = x/(1-p) where kept, 0 where dropped (probability p in [0, 1)). Returns y and the mask.");
  m.def(
      "dropout_grad",
      [](const Tensor& dy, const nn::DropoutMask& mask, std::optional<Backend> b) {
        return nn::dropout_grad(resolve(b), dy, mask);
      },
      "dy"_a, "mask"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx = dy/(1-p) where the mask kept the element, 0 elsewhere.");
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> bias, std::optional<Backend> b) {
        return nn::linear(resolve(b), x, w, optional_tensor(bias));
      },
      "x"_a, "w"_a, "bias"_a = nb::none(), nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "y = x w^T + bias: x [..., in], w [out, in], bias [out] or None.");
  m.def(
      "linear_grad",
      [](const Tensor& x, const Tensor& w, const Tensor& dy, std::optional<Backend> b) {
        return nn::linear_grad(resolve(b), x, w, dy);
      },
      "x"_a, "w"_a, "dy"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx = dy w, dw = dy^T x, dbias = dy summed over rows.");
  m.def(
      "cross_entropy",
      [](const Tensor& x, const Tensor& target, std::int64_t ignore_index, std::optional<Backend> b) {
        return nn::cross_entropy(resolve(b), x, target, ignore_index);
      },
      "x"_a, "target"_a, nb::kw_only(), "ignore_index"_a = nn::kIgnoreIndex, "backend"_a = nb::none(), release_gil(),
      "mean_n (logsumexp(x[n]) - x[n, target[n]]) of logits x [N, C] and i64 targets [N] over the rows whose "
      "target is not ignore_index; one element.");
  m.def(
      "cross_entropy_grad",
      [](const Tensor& x, const Tensor& target, double dloss, std::int64_t ignore_index, std::optional<Backend> b) {
        return nn::cross_entropy_grad(resolve(b), x, target, dloss, ignore_index);
      },
      "x"_a, "target"_a, "dloss"_a = 1.0, nb::kw_only(), "ignore_index"_a = nn::kIgnoreIndex,
      "backend"_a = nb::none(), release_gil(),
      "dx = (softmax(x) - onehot(target)) / M times dloss, M the rows not ignored; ignored rows 0.");
  m.def(
      "kl_div",
      [](const Tensor& input, const Tensor& target, const std::string& reduction, std::optional<Backend> b) {
        return nn::kl_div(resolve(b), input, target, loss_reduction(reduction));
      },
      "input"_a, "target"_a, "reduction"_a = "mean", nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "KL divergence of log-probabilities input from probabilities target: target (log(target) - input), 0 where "
      "target is 0, reduced by 'none', 'mean', 'sum' or 'batchmean' (PyTorch's kl_div).");
  m.def(
      "kl_div_grad",
      [](const Tensor& input, const Tensor& target, const std::string& reduction, double dloss,
         std::optional<Backend> b) {
        return nn::kl_div_grad(resolve(b), input, target, loss_reduction(reduction), dloss);
      },
      "input"_a, "target"_a, "reduction"_a = "mean", "dloss"_a = 1.0, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "d(dloss kl_div)/d input = -target dloss / (the reduction's divisor).");
  m.def(
      "mse_loss",
      [](const Tensor& x, const Tensor& target, std::optional<Backend> b) {
        return nn::mse_loss(resolve(b), x, target);
      },
      "x"_a, "target"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "mean((x - target)^2), one element of x's dtype.");
  m.def(
      "mse_loss_grad",
      [](const Tensor& x, const Tensor& target, double dloss, std::optional<Backend> b) {
        return nn::mse_loss_grad(resolve(b), x, target, dloss);
      },
      "x"_a, "target"_a, "dloss"_a = 1.0, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "dx = 2 (x - target) / numel times dloss.");
}

}  // namespace

void bind_nn(nb::module_& m) {
  bind_structs(m);
#define XYLEM_PY_DEF_ACTIVATION(fn, doc)                                                             \
  def_with_out(m, #fn, static_cast<UnaryNew>(&nn::fn), static_cast<UnaryOut>(&nn::fn),                \
               std::string(doc) + kOutDoc, "x"_a);
  XYLEM_PY_ACTIVATIONS(XYLEM_PY_DEF_ACTIVATION)
#undef XYLEM_PY_DEF_ACTIVATION
#define XYLEM_PY_DEF_GRAD(fn, first, doc)                                                            \
  def_with_out(m, #fn, static_cast<GradNew>(&nn::fn), static_cast<GradOut>(&nn::fn),                  \
               std::string(doc) + kOutDoc, nb::arg(first), "dy"_a);
  XYLEM_PY_ACTIVATION_GRADS(XYLEM_PY_DEF_GRAD)
#undef XYLEM_PY_DEF_GRAD
#define XYLEM_PY_DEF_SOFTMAX(fn, doc)                                                                \
  def_with_out(m, #fn, static_cast<AxisNew>(&nn::fn), static_cast<AxisOut>(&nn::fn),                  \
               std::string(doc) + " Sums run in f32 (f64 for f64)." + kOutDoc, "x"_a, "axis"_a = -1);
  XYLEM_PY_SOFTMAX(XYLEM_PY_DEF_SOFTMAX)
#undef XYLEM_PY_DEF_SOFTMAX
#define XYLEM_PY_DEF_SOFTMAX_GRAD(fn, doc)                                                           \
  def_with_out(m, #fn, static_cast<AxisGradNew>(&nn::fn), static_cast<AxisGradOut>(&nn::fn),          \
               std::string(doc) + kOutDoc, "y"_a, "dy"_a, "axis"_a = -1);
  XYLEM_PY_SOFTMAX_GRADS(XYLEM_PY_DEF_SOFTMAX_GRAD)
#undef XYLEM_PY_DEF_SOFTMAX_GRAD
  bind_parametrised_activations(m);
  bind_norms(m);
  bind_conv_pool(m);
  bind_train(m);
  bind_attention(m);
}

}  // namespace xylem::python
