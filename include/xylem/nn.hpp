#pragma once
// xylem::nn: neural-network operations on any backend, forward and
// backward.
//
// Dtypes: f16, bf16, f32 and f64 (f16/bf16 computing in f32 inside).
// Outputs are written, never accumulated into; they must have the shape and
// dtype the op gives (checked: shape_mismatch / dtype_mismatch) and may be
// views. Elementwise ops may run in place (out the same tensor as x).
// Images are NCHW. Optional tensors (gamma, beta, bias, ...) may be empty
// handles (Tensor{}).
// Each op has two forms, as xylem math's: one writing into outputs the caller
// gives, and one returning new tensors on the backend (several outputs come
// back in a struct; gradients of parameters are then always computed).
// Empty batches work: an output with no elements is written (valid, empty),
// and an output that sums over nothing is 0 (conv2d with C = 0, the filter
// or gamma/beta gradients of an empty batch). Exceptions are noted below.
#include <cstdint>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/creation.hpp"
#include "xylem/tensor.hpp"

namespace xylem::nn {

// ---- activations -----------------------------------------------------------
// Gradients take the forward output y (sigmoid, tanh) or the forward input x
// (the others), and the incoming gradient dy.
void sigmoid(const Backend& b, const Tensor& x, Tensor& y);
void relu(const Backend& b, const Tensor& x, Tensor& y);
void tanh(const Backend& b, const Tensor& x, Tensor& y);
void leaky_relu(const Backend& b, const Tensor& x, Tensor& y, double negative_slope = 0.01);
void elu(const Backend& b, const Tensor& x, Tensor& y, double alpha = 1.0);
void gelu(const Backend& b, const Tensor& x, Tensor& y);  // exact: x * Phi(x)
// log(1 + exp(beta x)) / beta; x itself where beta x > threshold.
void softplus(const Backend& b, const Tensor& x, Tensor& y, double beta = 1.0, double threshold = 20.0);

[[nodiscard]] Tensor sigmoid(const Backend& b, const Tensor& x);
[[nodiscard]] Tensor relu(const Backend& b, const Tensor& x);
[[nodiscard]] Tensor tanh(const Backend& b, const Tensor& x);
[[nodiscard]] Tensor leaky_relu(const Backend& b, const Tensor& x, double negative_slope = 0.01);
[[nodiscard]] Tensor elu(const Backend& b, const Tensor& x, double alpha = 1.0);
[[nodiscard]] Tensor gelu(const Backend& b, const Tensor& x);
[[nodiscard]] Tensor softplus(const Backend& b, const Tensor& x, double beta = 1.0, double threshold = 20.0);

void sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx);
void relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);
void tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx);
void leaky_relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double negative_slope = 0.01);
void elu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double alpha = 1.0);
void gelu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);
void softplus_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double beta = 1.0,
                   double threshold = 20.0);

// The gradients return dx.
[[nodiscard]] Tensor sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy);
[[nodiscard]] Tensor relu_grad(const Backend& b, const Tensor& x, const Tensor& dy);
[[nodiscard]] Tensor tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy);
[[nodiscard]] Tensor leaky_relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, double negative_slope = 0.01);
[[nodiscard]] Tensor elu_grad(const Backend& b, const Tensor& x, const Tensor& dy, double alpha = 1.0);
[[nodiscard]] Tensor gelu_grad(const Backend& b, const Tensor& x, const Tensor& dy);
[[nodiscard]] Tensor softplus_grad(const Backend& b, const Tensor& x, const Tensor& dy, double beta = 1.0,
                                   double threshold = 20.0);

// ---- softmax along one axis (negative counts from the end) ----------------
void softmax(const Backend& b, const Tensor& x, int axis, Tensor& y);
void log_softmax(const Backend& b, const Tensor& x, int axis, Tensor& y);
// From the forward output y and dy.
void softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis, Tensor& dx);
void log_softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis, Tensor& dx);
[[nodiscard]] Tensor softmax(const Backend& b, const Tensor& x, int axis);
[[nodiscard]] Tensor log_softmax(const Backend& b, const Tensor& x, int axis);
[[nodiscard]] Tensor softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis);
[[nodiscard]] Tensor log_softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis);

// ---- layer normalisation over the last `normalized_rank` axes --------------
// Statistics (mean, rstd = 1/sqrt(var + eps), one per normalised row) are
// f32 for f16/bf16/f32 inputs and f64 for f64; backward needs them. Rows of
// length 0: y is empty, mean and rstd NaN (the mean and variance of no
// values, as xylem::mean and var).
struct NormStats {
  Tensor mean;
  Tensor rstd;
};
// gamma and beta: the normalised axes' shape, x's dtype, or empty (1 and 0).
NormStats layer_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                     const Tensor& beta, double eps, Tensor& y);
// dx, and (when given, non-empty) dgamma and dbeta.
void layer_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                     const NormStats& stats, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

// The returning forms. dgamma and dbeta have the normalised axes' shape (batch
// norm: [C]) and x's dtype.
struct LayerNorm {
  Tensor y;
  NormStats stats;
};
struct NormGrads {
  Tensor dx;
  Tensor dgamma;
  Tensor dbeta;
};
[[nodiscard]] LayerNorm layer_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                                   const Tensor& beta, double eps);
[[nodiscard]] NormGrads layer_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                                        const NormStats& stats, const Tensor& dy);

// ---- batch normalisation over [N, C, ...] (channels on axis 1) -------------
// Training: normalises with the batch's statistics and updates the running
// ones: running = (1 - momentum) running + momentum batch (the running
// variance takes the unbiased batch variance). Inference: uses the running
// statistics. Running statistics and gamma/beta are [C]; running_mean and
// running_var in the statistics dtype (see NormStats). Returns the mean and
// variance used, for backward. Training needs more than one value per
// channel (N times the spatial size; an empty batch raises invalid_argument,
// as PyTorch).
struct BatchNormStats {
  Tensor mean;
  Tensor var;
};
BatchNormStats batch_norm(const Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                          Tensor& y);
void batch_norm_grad(const Backend& b, const Tensor& x, const Tensor& gamma, const BatchNormStats& stats,
                     bool training, double eps, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);
struct BatchNorm {
  Tensor y;
  BatchNormStats stats;
};
[[nodiscard]] BatchNorm batch_norm(const Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   Tensor& running_mean, Tensor& running_var, bool training, double momentum,
                                   double eps);
[[nodiscard]] NormGrads batch_norm_grad(const Backend& b, const Tensor& x, const Tensor& gamma,
                                        const BatchNormStats& stats, bool training, double eps, const Tensor& dy);

// ---- convolution (cross-correlation, as PyTorch and cuDNN) -----------------
// x [N, C, H, W], w [K, C/groups, R, S], y [N, K, P, Q] with
// P = (H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h + 1 (Q likewise).
// R and S must be at least 1; sizes past int64 (huge padding or dilation)
// raise invalid_argument naming the shapes.
struct Conv2d {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
};
[[nodiscard]] Layout conv2d_output_shape(const Layout& x, const Layout& w, const Conv2d& p);
void conv2d(const Backend& b, const Tensor& x, const Tensor& w, Tensor& y, const Conv2d& p = {});
void conv2d_grad_data(const Backend& b, const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2d& p = {});
void conv2d_grad_filter(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dw, const Conv2d& p = {});
// The returning forms. dy does not fix the shape of x (strides round down)
// nor of w, so the gradients take it.
[[nodiscard]] Tensor conv2d(const Backend& b, const Tensor& x, const Tensor& w, const Conv2d& p = {});
[[nodiscard]] Tensor conv2d_grad_data(const Backend& b, const Tensor& dy, const Tensor& w, const Layout& x_shape,
                                      const Conv2d& p = {});
[[nodiscard]] Tensor conv2d_grad_filter(const Backend& b, const Tensor& x, const Tensor& dy, const Layout& w_shape,
                                        const Conv2d& p = {});

// ---- pooling ----------------------------------------------------------------
// Windows of kernel_h x kernel_w, moved by stride (0: the kernel size);
// padding never wins a max. Average pooling divides by the whole window
// (count_include_pad) or by its real elements. Windows, strides, H and W
// must be at least 1 (every window holds a real element); N and C may be 0.
struct Pool2d {
  int kernel_h = 2, kernel_w = 2;
  int stride_h = 0, stride_w = 0;
  int pad_h = 0, pad_w = 0;
  bool count_include_pad = true;
};
[[nodiscard]] Layout pool2d_output_shape(const Layout& x, const Pool2d& p);
void max_pool2d(const Backend& b, const Tensor& x, Tensor& y, const Pool2d& p);
void max_pool2d_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, const Pool2d& p);
void avg_pool2d(const Backend& b, const Tensor& x, Tensor& y, const Pool2d& p);
void avg_pool2d_grad(const Backend& b, const Tensor& dy, Tensor& dx, const Pool2d& p);
[[nodiscard]] Tensor max_pool2d(const Backend& b, const Tensor& x, const Pool2d& p);
[[nodiscard]] Tensor max_pool2d_grad(const Backend& b, const Tensor& x, const Tensor& dy, const Pool2d& p);
[[nodiscard]] Tensor avg_pool2d(const Backend& b, const Tensor& x, const Pool2d& p);
// x's shape: dy does not fix it (strides round down).
[[nodiscard]] Tensor avg_pool2d_grad(const Backend& b, const Tensor& dy, const Layout& x_shape, const Pool2d& p);

// ---- local response normalisation across channels (AlexNet) ---------------
// y = x * (k + alpha/size * sum over the window of x^2)^-beta; x [N, C, ...].
struct Lrn {
  int size = 5;
  double alpha = 1e-4, beta = 0.75, k = 2.0;
};
void lrn(const Backend& b, const Tensor& x, Tensor& y, const Lrn& p = {});
void lrn_grad(const Backend& b, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, const Lrn& p = {});
[[nodiscard]] Tensor lrn(const Backend& b, const Tensor& x, const Lrn& p = {});
[[nodiscard]] Tensor lrn_grad(const Backend& b, const Tensor& x, const Tensor& y, const Tensor& dy, const Lrn& p = {});

// ---- dropout ------------------------------------------------------------------
// Zeroes each element with probability p and scales the rest by 1/(1-p).
// The mask is drawn from `gen` (counter-based: the same on every backend) and
// is not stored: the returned handle regenerates it for backward.
struct DropoutMask {
  double p = 0;
  std::uint64_t seed = 0;
  std::uint64_t offset = 0;
};
DropoutMask dropout(const Backend& b, const Tensor& x, Tensor& y, double p, Generator& gen);
void dropout_grad(const Backend& b, const Tensor& dy, Tensor& dx, const DropoutMask& mask);
struct Dropout {
  Tensor y;
  DropoutMask mask;
};
[[nodiscard]] Dropout dropout(const Backend& b, const Tensor& x, double p, Generator& gen);
[[nodiscard]] Tensor dropout_grad(const Backend& b, const Tensor& dy, const DropoutMask& mask);

// ---- linear layer: y = x w^T + bias ------------------------------------------
// x [..., in], w [out, in], bias [out] or empty, y [..., out].
void linear(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y);
// Gradients; any of dx, dw, dbias may be an empty handle (not computed).
void linear_grad(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                 Tensor& dbias);
struct LinearGrads {
  Tensor dx;
  Tensor dw;
  Tensor dbias;  // [out], also when the forward had no bias
};
[[nodiscard]] Tensor linear(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& bias);
[[nodiscard]] LinearGrads linear_grad(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& dy);

// ---- losses (mean over the batch) ------------------------------------------
// Cross-entropy of logits x [N, C] against class indices target [N] (i64):
// mean_n (logsumexp(x[n]) - x[n, target[n]]). A target outside [0, C) raises
// invalid_argument (the targets are read to the host for this check). The
// loss is a one-element tensor of x's dtype: NaN for an empty batch (N = 0),
// as PyTorch's mean over nothing.
[[nodiscard]] Tensor cross_entropy(const Backend& b, const Tensor& x, const Tensor& target);
// dx = (softmax(x) - onehot(target)) / N, times the loss's gradient (1 by default).
void cross_entropy_grad(const Backend& b, const Tensor& x, const Tensor& target, Tensor& dx, double dloss = 1.0);
[[nodiscard]] Tensor cross_entropy_grad(const Backend& b, const Tensor& x, const Tensor& target, double dloss = 1.0);
// mean((x - target)^2), one element.
[[nodiscard]] Tensor mse_loss(const Backend& b, const Tensor& x, const Tensor& target);
// dx = 2 (x - target) / numel, times dloss.
void mse_loss_grad(const Backend& b, const Tensor& x, const Tensor& target, Tensor& dx, double dloss = 1.0);
[[nodiscard]] Tensor mse_loss_grad(const Backend& b, const Tensor& x, const Tensor& target, double dloss = 1.0);

}  // namespace xylem::nn
