#pragma once
/// @file
/// xylem::nn: neural-network operations on any backend, forward and
/// backward.
///
/// Dtypes: f16, bf16, f32 and f64 (f16/bf16 computing in f32 inside).
/// Outputs are written, never accumulated into; they must have the shape and
/// dtype the op gives (checked: shape_mismatch / dtype_mismatch) and may be
/// views. Elementwise ops may run in place (out the same tensor as x).
/// Images are NCHW. Optional tensors (gamma, beta, bias, ...) may be empty
/// handles (Tensor{}).
/// Each op has two forms, as xylem math's: one writing into outputs the caller
/// gives, and one returning new tensors on the backend (several outputs come
/// back in a struct; gradients of parameters are then always computed).
/// Empty batches work: an output with no elements is written (valid, empty),
/// and an output that sums over nothing is 0 (conv2d with C = 0, the filter
/// or gamma/beta gradients of an empty batch). Exceptions are noted below.
///
/// Every op checks its arguments, enqueues its work on the backend's device
/// and returns without waiting (cross_entropy and its gradient also read the
/// targets to the host first). Errors are thrown before any tensor changes:
/// dtype_mismatch (an input that is not a float dtype, or tensors of
/// different dtypes), shape_mismatch (shapes that do not fit together),
/// invalid_argument (an empty handle for a required tensor, a bad axis or
/// parameter), uninitialized_read (an input never written), unsupported (the
/// device lacks the op for the dtype, with Fallback::raise), out_of_memory.
#include <cstdint>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/creation.hpp"
#include "xylem/tensor.hpp"

namespace xylem::nn {

// ---- activations -----------------------------------------------------------
// Gradients take the forward output y (sigmoid, tanh) or the forward input x
// (the others), and the incoming gradient dy.
/// y = 1 / (1 + e^-x), elementwise; y has x's shape and dtype.
void sigmoid(const Backend& b, const Tensor& x, Tensor& y);
/// y = max(x, 0), elementwise; y has x's shape and dtype.
void relu(const Backend& b, const Tensor& x, Tensor& y);
/// y = tanh(x), elementwise; y has x's shape and dtype.
void tanh(const Backend& b, const Tensor& x, Tensor& y);
/// y = x for x >= 0, negative_slope * x below; y has x's shape and dtype.
void leaky_relu(const Backend& b, const Tensor& x, Tensor& y, double negative_slope = 0.01);
/// y = x for x > 0, alpha (e^x - 1) otherwise; y has x's shape and dtype.
void elu(const Backend& b, const Tensor& x, Tensor& y, double alpha = 1.0);
/// y = x Phi(x), Phi the standard normal CDF (the exact GELU, not the tanh
/// approximation); y has x's shape and dtype.
void gelu(const Backend& b, const Tensor& x, Tensor& y);  // exact: x * Phi(x)
/// log(1 + exp(beta x)) / beta; x itself where beta x > threshold. beta must
/// be positive (invalid_argument otherwise); y has x's shape and dtype.
void softplus(const Backend& b, const Tensor& x, Tensor& y, double beta = 1.0, double threshold = 20.0);
/// y = x sigmoid(x) = x / (1 + e^-x) (SiLU, swish), elementwise; -Inf gives
/// NaN, as PyTorch's formula does. y has x's shape and dtype.
void silu(const Backend& b, const Tensor& x, Tensor& y);
/// GELU's tanh approximation, PyTorch's gelu(x, approximate="tanh"):
/// y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), elementwise; -Inf gives
/// NaN, as PyTorch's formula does. y has x's shape and dtype.
void gelu_tanh(const Backend& b, const Tensor& x, Tensor& y);

/// sigmoid(x) as a new tensor.
[[nodiscard]] Tensor sigmoid(const Backend& b, const Tensor& x);
/// relu(x) as a new tensor.
[[nodiscard]] Tensor relu(const Backend& b, const Tensor& x);
/// tanh(x) as a new tensor.
[[nodiscard]] Tensor tanh(const Backend& b, const Tensor& x);
/// leaky_relu(x) as a new tensor.
[[nodiscard]] Tensor leaky_relu(const Backend& b, const Tensor& x, double negative_slope = 0.01);
/// elu(x) as a new tensor.
[[nodiscard]] Tensor elu(const Backend& b, const Tensor& x, double alpha = 1.0);
/// gelu(x) (exact) as a new tensor.
[[nodiscard]] Tensor gelu(const Backend& b, const Tensor& x);
/// softplus(x) as a new tensor.
[[nodiscard]] Tensor softplus(const Backend& b, const Tensor& x, double beta = 1.0, double threshold = 20.0);
/// silu(x) as a new tensor.
[[nodiscard]] Tensor silu(const Backend& b, const Tensor& x);
/// gelu_tanh(x) as a new tensor.
[[nodiscard]] Tensor gelu_tanh(const Backend& b, const Tensor& x);

/// dx = dy y (1 - y), from sigmoid's output y. y, dy and dx of one shape and
/// dtype.
void sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx);
/// dx = dy where x > 0, else 0, from relu's input x. x, dy and dx of one
/// shape and dtype.
void relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);
/// dx = dy (1 - y^2), from tanh's output y. y, dy and dx of one shape and
/// dtype.
void tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy, Tensor& dx);
/// dx = dy where x > 0, else negative_slope dy, from leaky_relu's input x.
void leaky_relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double negative_slope = 0.01);
/// dx = dy where x > 0, else alpha e^x dy, from elu's input x.
void elu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double alpha = 1.0);
/// dx = dy (Phi(x) + x phi(x)), from gelu's input x (phi the standard normal
/// density).
void gelu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);
/// dx = dy sigmoid(beta x) (dy where beta x > threshold), from softplus's
/// input x; beta must be positive.
void softplus_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, double beta = 1.0,
                   double threshold = 20.0);
/// dx = dy s (1 + x (1 - s)), s = sigmoid(x), from silu's input x.
void silu_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);
/// dx = dy (0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 0.044715 x^2)),
/// t = tanh(sqrt(2/pi) (x + 0.044715 x^3)), from gelu_tanh's input x.
void gelu_tanh_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx);

// The gradients return dx.
/// sigmoid_grad's dx as a new tensor.
[[nodiscard]] Tensor sigmoid_grad(const Backend& b, const Tensor& y, const Tensor& dy);
/// relu_grad's dx as a new tensor.
[[nodiscard]] Tensor relu_grad(const Backend& b, const Tensor& x, const Tensor& dy);
/// tanh_grad's dx as a new tensor.
[[nodiscard]] Tensor tanh_grad(const Backend& b, const Tensor& y, const Tensor& dy);
/// leaky_relu_grad's dx as a new tensor.
[[nodiscard]] Tensor leaky_relu_grad(const Backend& b, const Tensor& x, const Tensor& dy, double negative_slope = 0.01);
/// elu_grad's dx as a new tensor.
[[nodiscard]] Tensor elu_grad(const Backend& b, const Tensor& x, const Tensor& dy, double alpha = 1.0);
/// gelu_grad's dx as a new tensor.
[[nodiscard]] Tensor gelu_grad(const Backend& b, const Tensor& x, const Tensor& dy);
/// softplus_grad's dx as a new tensor.
[[nodiscard]] Tensor softplus_grad(const Backend& b, const Tensor& x, const Tensor& dy, double beta = 1.0,
                                   double threshold = 20.0);
/// silu_grad's dx as a new tensor.
[[nodiscard]] Tensor silu_grad(const Backend& b, const Tensor& x, const Tensor& dy);
/// gelu_tanh_grad's dx as a new tensor.
[[nodiscard]] Tensor gelu_tanh_grad(const Backend& b, const Tensor& x, const Tensor& dy);

// ---- softmax along one axis (negative counts from the end) ----------------
/// y = exp(x - max) / sum(exp(x - max)) along `axis` (negative counts from
/// the end; out of range: invalid_argument); y has x's shape and dtype. Sums
/// run in f32 (f64 for f64).
void softmax(const Backend& b, const Tensor& x, int axis, Tensor& y);
/// y = x - logsumexp(x) along `axis`, computed without overflow; as softmax
/// otherwise.
void log_softmax(const Backend& b, const Tensor& x, int axis, Tensor& y);
/// From the forward output y and dy: dx = y (dy - sum_axis(dy y)).
void softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis, Tensor& dx);
/// From log_softmax's output y and dy: dx = dy - exp(y) sum_axis(dy).
void log_softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis, Tensor& dx);
/// softmax(x) along `axis` as a new tensor.
[[nodiscard]] Tensor softmax(const Backend& b, const Tensor& x, int axis);
/// log_softmax(x) along `axis` as a new tensor.
[[nodiscard]] Tensor log_softmax(const Backend& b, const Tensor& x, int axis);
/// softmax_grad's dx as a new tensor.
[[nodiscard]] Tensor softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis);
/// log_softmax_grad's dx as a new tensor.
[[nodiscard]] Tensor log_softmax_grad(const Backend& b, const Tensor& y, const Tensor& dy, int axis);

// ---- layer normalisation over the last `normalized_rank` axes --------------
/// What layer_norm computed per normalised row, for layer_norm_grad.
///
/// Statistics (mean, rstd = 1/sqrt(var + eps), one per normalised row) are
/// f32 for f16/bf16/f32 inputs and f64 for f64; backward needs them. Rows of
/// length 0: y is empty, mean and rstd NaN (the mean and variance of no
/// values, as xylem::mean and var).
struct NormStats {
  Tensor mean;  ///< the mean of each row: x's leading (not normalised) axes
  Tensor rstd;  ///< 1/sqrt(biased variance + eps), of mean's shape
};
/// y = (x - mean) rstd gamma + beta over the last `normalized_rank` axes of x
/// (1 to x's rank, invalid_argument otherwise), the variance biased; eps must
/// not be negative. y has x's shape and dtype.
/// gamma and beta: the normalised axes' shape, x's dtype, or empty (1 and 0).
/// Returns the statistics (new tensors) for layer_norm_grad.
NormStats layer_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                     const Tensor& beta, double eps, Tensor& y);
/// dx, and (when given, non-empty) dgamma and dbeta.
///
/// With xh = (x - mean) rstd and g = dy gamma, per row:
/// dx = rstd (g - mean(g) - xh mean(g xh)); dgamma = sum over rows of dy xh,
/// dbeta = sum over rows of dy. `stats` are those layer_norm returned; dx has
/// x's shape and dtype, dgamma and dbeta the normalised axes' shape.
void layer_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                     const NormStats& stats, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);

// The returning forms. dgamma and dbeta have the normalised axes' shape (batch
// norm: [C]) and x's dtype.
/// layer_norm's returning form: y and the statistics.
struct LayerNorm {
  Tensor y;         ///< the normalised output, x's shape and dtype
  NormStats stats;  ///< for layer_norm_grad
};
/// The gradients of layer_norm and batch_norm.
///
/// dgamma and dbeta have the normalised axes' shape (batch norm: [C]) and x's
/// dtype.
struct NormGrads {
  Tensor dx;      ///< x's shape and dtype
  Tensor dgamma;  ///< computed also when the forward had no gamma
  Tensor dbeta;   ///< computed also when the forward had no beta
};
/// layer_norm into a new y: returns y and the statistics.
[[nodiscard]] LayerNorm layer_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                                   const Tensor& beta, double eps);
/// layer_norm_grad into new tensors: returns dx, dgamma and dbeta.
[[nodiscard]] NormGrads layer_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& gamma,
                                        const NormStats& stats, const Tensor& dy);

// ---- RMS normalisation over the last `normalized_rank` axes -----------------
/// y = x rstd weight over the last `normalized_rank` axes of x (1 to x's rank,
/// invalid_argument otherwise), rstd = 1/sqrt(mean(x^2) + eps) per row (no
/// mean is subtracted: PyTorch's rms_norm); eps must not be negative. y has
/// x's shape and dtype; weight: the normalised axes' shape and x's dtype, or
/// empty (1). Returns rstd, x's leading axes in the statistics dtype (see
/// NormStats; NaN for rows of length 0), for rms_norm_grad. Runs on
/// layer_norm's row kernels.
Tensor rms_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight, double eps, Tensor& y);
/// dx and (when given, non-empty) dweight, from rms_norm's rstd.
///
/// With xh = x rstd and g = dy weight, per row: dx = rstd (g - xh mean(g xh));
/// dweight = sum over rows of dy xh (written, not accumulated).
void rms_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight, const Tensor& rstd,
                   const Tensor& dy, Tensor& dx, Tensor& dweight);
/// rms_norm's returning form.
struct RmsNorm {
  Tensor y;     ///< the normalised output, x's shape and dtype
  Tensor rstd;  ///< for rms_norm_grad
};
/// The gradients of rms_norm.
struct RmsNormGrads {
  Tensor dx;       ///< x's shape and dtype
  Tensor dweight;  ///< the normalised axes' shape; computed also when the forward had no weight
};
/// rms_norm into a new y: returns y and rstd.
[[nodiscard]] RmsNorm rms_norm(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight,
                               double eps);
/// rms_norm_grad into new tensors.
[[nodiscard]] RmsNormGrads rms_norm_grad(const Backend& b, const Tensor& x, int normalized_rank, const Tensor& weight,
                                         const Tensor& rstd, const Tensor& dy);

// ---- group and instance normalisation over [N, C, ...] ---------------------
/// y = (x - mean) rstd weight + bias, x [N, C, ...] (rank >= 2,
/// shape_mismatch otherwise) with its C channels split into `groups`
/// consecutive groups (groups >= 1 dividing C, invalid_argument otherwise);
/// mean and the biased variance over each (sample, group): C/groups channels
/// times the spatial size; rstd = 1/sqrt(var + eps), eps not negative.
/// weight and bias: [C] of x's dtype, or empty (1 and 0), applied per
/// channel. y has x's shape and dtype. Returns the statistics, [N, groups] in
/// the statistics dtype (NaN for groups of no values), for group_norm_grad.
/// PyTorch's group_norm. Runs layer_norm's row kernels over the groups, then
/// the per-channel weight and bias as math::binary.
NormStats group_norm(const Backend& b, const Tensor& x, int groups, const Tensor& weight, const Tensor& bias,
                     double eps, Tensor& y);
/// dx, dweight and dbias (any may be an empty handle: not computed), from
/// group_norm's statistics. With xh = (x - mean) rstd and g = dy weight, per
/// (sample, group): dx = rstd (g - mean(g) - xh mean(g xh)); per channel:
/// dweight = sum over samples and space of dy xh, dbias = sum of dy.
void group_norm_grad(const Backend& b, const Tensor& x, int groups, const Tensor& weight, const NormStats& stats,
                     const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias);
/// group_norm's returning form: y and the statistics.
struct GroupNorm {
  Tensor y;         ///< the normalised output, x's shape and dtype
  NormStats stats;  ///< [N, groups], for group_norm_grad
};
/// group_norm into a new y.
[[nodiscard]] GroupNorm group_norm(const Backend& b, const Tensor& x, int groups, const Tensor& weight,
                                   const Tensor& bias, double eps);
/// group_norm_grad into new tensors (dgamma, dbeta: [C]).
[[nodiscard]] NormGrads group_norm_grad(const Backend& b, const Tensor& x, int groups, const Tensor& weight,
                                        const NormStats& stats, const Tensor& dy);
/// Instance normalisation: group_norm with one group per channel (statistics
/// [N, C]), PyTorch's instance_norm with the input's statistics.
NormStats instance_norm(const Backend& b, const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                        Tensor& y);
/// group_norm_grad with one group per channel.
void instance_norm_grad(const Backend& b, const Tensor& x, const Tensor& weight, const NormStats& stats,
                        const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias);
/// instance_norm into a new y.
[[nodiscard]] GroupNorm instance_norm(const Backend& b, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                      double eps);
/// instance_norm_grad into new tensors.
[[nodiscard]] NormGrads instance_norm_grad(const Backend& b, const Tensor& x, const Tensor& weight,
                                           const NormStats& stats, const Tensor& dy);

// ---- batch normalisation over [N, C, ...] (channels on axis 1) -------------
/// The per-channel mean and variance batch_norm used, for batch_norm_grad.
///
/// Training: normalises with the batch's statistics and updates the running
/// ones: running = (1 - momentum) running + momentum batch (the running
/// variance takes the unbiased batch variance). Inference: uses the running
/// statistics. Running statistics and gamma/beta are [C]; running_mean and
/// running_var in the statistics dtype (see NormStats). Returns the mean and
/// variance used, for backward. Training needs more than one value per
/// channel (N times the spatial size; an empty batch raises invalid_argument,
/// as PyTorch).
struct BatchNormStats {
  Tensor mean;  ///< [C], in the statistics dtype
  Tensor var;   ///< [C], the biased variance (training) or the running one
};
/// y = (x - mean) / sqrt(var + eps) gamma + beta per channel, x [N, C, ...]
/// (rank >= 2, shape_mismatch otherwise); y has x's shape and dtype.
/// training: mean and var are the batch's (biased variance), and the running
/// statistics are updated (see BatchNormStats); otherwise they are the
/// running ones, unchanged. momentum in [0, 1] and eps >= 0
/// (invalid_argument otherwise). gamma and beta: [C] of x's dtype, or empty
/// (1 and 0). Returns the statistics used (in inference, the running tensors
/// themselves).
BatchNormStats batch_norm(const Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          Tensor& running_mean, Tensor& running_var, bool training, double momentum, double eps,
                          Tensor& y);
/// The gradients of batch_norm, from the statistics it returned and the same
/// `training` and eps. With xh = (x - mean)/sqrt(var + eps) and M = N times the
/// spatial size, rstd = 1/sqrt(var + eps): dbeta = sum(dy), dgamma =
/// sum(dy xh) per channel; training: dx = gamma rstd (dy - dbeta/M -
/// xh dgamma/M), inference (the statistics constants): dx = gamma rstd dy. Any of dx, dgamma, dbeta may be an empty
/// handle (not computed).
void batch_norm_grad(const Backend& b, const Tensor& x, const Tensor& gamma, const BatchNormStats& stats,
                     bool training, double eps, const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta);
/// batch_norm's returning form: y and the statistics used.
struct BatchNorm {
  Tensor y;              ///< the normalised output, x's shape and dtype
  BatchNormStats stats;  ///< for batch_norm_grad
};
/// batch_norm into a new y: returns y and the statistics used.
[[nodiscard]] BatchNorm batch_norm(const Backend& b, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   Tensor& running_mean, Tensor& running_var, bool training, double momentum,
                                   double eps);
/// batch_norm_grad into new tensors: returns dx, dgamma and dbeta.
[[nodiscard]] NormGrads batch_norm_grad(const Backend& b, const Tensor& x, const Tensor& gamma,
                                        const BatchNormStats& stats, bool training, double eps, const Tensor& dy);

// ---- convolution (cross-correlation, as PyTorch and cuDNN) -----------------
/// The geometry of a 2-D convolution (cross-correlation, as PyTorch and cuDNN).
///
/// x [N, C, H, W], w [K, C/groups, R, S], y [N, K, P, Q] with
/// P = (H + 2 pad_h - dilation_h (R - 1) - 1) / stride_h + 1 (Q likewise).
/// R and S must be at least 1; sizes past int64 (huge padding or dilation)
/// raise invalid_argument naming the shapes. Strides and dilations must be at
/// least 1, padding not negative, and groups must divide C and K
/// (invalid_argument otherwise).
struct Conv2d {
  int stride_h = 1,    ///< vertical step between windows
      stride_w = 1;    ///< horizontal step between windows
  int pad_h = 0,       ///< zero rows added above and below
      pad_w = 0;       ///< zero columns added left and right
  int dilation_h = 1,  ///< vertical spacing of the filter taps
      dilation_w = 1;  ///< horizontal spacing of the filter taps
  int groups = 1;      ///< channel groups: input and output channels split into this many
};
/// y's shape [N, K, P, Q] for x and w (see Conv2d); throws shape_mismatch or
/// invalid_argument where they do not fit. Computes on the host.
[[nodiscard]] Layout conv2d_output_shape(const Layout& x, const Layout& w, const Conv2d& p);
/// y = x (*) w: y[n, k, p, q] = sum over c, r, s of
/// x[n, c, p stride_h + r dilation_h - pad_h, q stride_w + s dilation_w - pad_w]
/// w[k, c', r, s], c running over k's group of C/groups channels and c' its
/// place in the group; padding is zeros. x, w and y of one dtype.
void conv2d(const Backend& b, const Tensor& x, const Tensor& w, Tensor& y, const Conv2d& p = {});
/// dx, the gradient of conv2d's output with respect to x, from dy and w;
/// written, not accumulated.
void conv2d_grad_data(const Backend& b, const Tensor& dy, const Tensor& w, Tensor& dx, const Conv2d& p = {});
/// dw, the gradient of conv2d's output with respect to w, from x and dy;
/// written, not accumulated.
void conv2d_grad_filter(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dw, const Conv2d& p = {});
// The returning forms. dy does not fix the shape of x (strides round down)
// nor of w, so the gradients take it.
/// conv2d into a new y of conv2d_output_shape.
[[nodiscard]] Tensor conv2d(const Backend& b, const Tensor& x, const Tensor& w, const Conv2d& p = {});
/// conv2d_grad_data into a new dx of `x_shape` (dy does not fix the shape of
/// x: strides round down).
[[nodiscard]] Tensor conv2d_grad_data(const Backend& b, const Tensor& dy, const Tensor& w, const Layout& x_shape,
                                      const Conv2d& p = {});
/// conv2d_grad_filter into a new dw of `w_shape` (dy does not fix it).
[[nodiscard]] Tensor conv2d_grad_filter(const Backend& b, const Tensor& x, const Tensor& dy, const Layout& w_shape,
                                        const Conv2d& p = {});

// ---- pooling ----------------------------------------------------------------
/// The geometry of 2-D max and average pooling over x [N, C, H, W].
///
/// Windows of kernel_h x kernel_w, moved by stride (0: the kernel size);
/// padding never wins a max. Average pooling divides by the whole window
/// (count_include_pad) or by its real elements. Windows, strides, H and W
/// must be at least 1 (every window holds a real element); N and C may be 0.
/// A geometry that breaks these raises invalid_argument.
struct Pool2d {
  int kernel_h = 2,             ///< window height
      kernel_w = 2;             ///< window width
  int stride_h = 0,             ///< vertical step; 0: kernel_h
      stride_w = 0;             ///< horizontal step; 0: kernel_w
  int pad_h = 0,                ///< rows of padding above and below
      pad_w = 0;                ///< columns of padding left and right
  bool count_include_pad = true;  ///< average pooling: divide by the whole window, padding included
};
/// y's shape [N, C, P, Q] for x and p; throws invalid_argument where they do
/// not fit. Computes on the host.
[[nodiscard]] Layout pool2d_output_shape(const Layout& x, const Pool2d& p);
/// y = the maximum of each window of x (NaN propagating); y of
/// pool2d_output_shape and x's dtype.
void max_pool2d(const Backend& b, const Tensor& x, Tensor& y, const Pool2d& p);
/// dx: each dy goes to the first maximum of its window in x (row-major; a NaN
/// is the maximum), summed where windows overlap.
void max_pool2d_grad(const Backend& b, const Tensor& x, const Tensor& dy, Tensor& dx, const Pool2d& p);
/// y = the mean of each window of x (see Pool2d::count_include_pad).
void avg_pool2d(const Backend& b, const Tensor& x, Tensor& y, const Pool2d& p);
/// dx: each dy divided as avg_pool2d divides and added to every real element
/// of its window (summed where windows overlap); dx's shape is x's.
void avg_pool2d_grad(const Backend& b, const Tensor& dy, Tensor& dx, const Pool2d& p);
/// max_pool2d into a new y.
[[nodiscard]] Tensor max_pool2d(const Backend& b, const Tensor& x, const Pool2d& p);
/// max_pool2d_grad into a new dx of x's shape.
[[nodiscard]] Tensor max_pool2d_grad(const Backend& b, const Tensor& x, const Tensor& dy, const Pool2d& p);
/// avg_pool2d into a new y.
[[nodiscard]] Tensor avg_pool2d(const Backend& b, const Tensor& x, const Pool2d& p);
/// avg_pool2d_grad into a new dx of `x_shape`.
/// x's shape: dy does not fix it (strides round down).
[[nodiscard]] Tensor avg_pool2d_grad(const Backend& b, const Tensor& dy, const Layout& x_shape, const Pool2d& p);

// ---- local response normalisation across channels (AlexNet) ---------------
/// The parameters of local response normalisation across channels (AlexNet).
///
/// y = x * (k + alpha/size * sum over the window of x^2)^-beta; x [N, C, ...].
/// The window of channel c is channels [c - (size-1)/2, c + size/2].
struct Lrn {
  int size = 5;  ///< channels in the window (>= 1, invalid_argument otherwise)
  double alpha = 1e-4,  ///< scale of the sum of squares
      beta = 0.75,      ///< exponent
      k = 2.0;          ///< additive constant
};
/// y = x (k + alpha/size sum over the window of x^2)^-beta; x [N, C, ...]
/// (rank >= 2, shape_mismatch otherwise), y of x's shape and dtype.
void lrn(const Backend& b, const Tensor& x, Tensor& y, const Lrn& p = {});
/// dx from lrn's input x, its output y and dy.
void lrn_grad(const Backend& b, const Tensor& x, const Tensor& y, const Tensor& dy, Tensor& dx, const Lrn& p = {});
/// lrn into a new y.
[[nodiscard]] Tensor lrn(const Backend& b, const Tensor& x, const Lrn& p = {});
/// lrn_grad into a new dx.
[[nodiscard]] Tensor lrn_grad(const Backend& b, const Tensor& x, const Tensor& y, const Tensor& dy, const Lrn& p = {});

// ---- dropout ------------------------------------------------------------------
/// The mask of one dropout call, regenerated by dropout_grad.
///
/// Zeroes each element with probability p and scales the rest by 1/(1-p).
/// The mask is drawn from `gen` (counter-based: the same on every backend) and
/// is not stored: the returned handle regenerates it for backward.
struct DropoutMask {
  double p = 0;              ///< the drop probability
  std::uint64_t seed = 0;    ///< the Generator's seed
  std::uint64_t offset = 0;  ///< the first counter the call drew
};
/// y = x/(1-p) where kept, 0 where dropped (each element dropped with
/// probability p, in [0, 1): invalid_argument otherwise); y has x's shape
/// and dtype. Advances `gen` by x's element count.
DropoutMask dropout(const Backend& b, const Tensor& x, Tensor& y, double p, Generator& gen);
/// dx = dy/(1-p) where the mask kept the element, 0 elsewhere.
void dropout_grad(const Backend& b, const Tensor& dy, Tensor& dx, const DropoutMask& mask);
/// dropout's returning form: y and the mask.
struct Dropout {
  Tensor y;          ///< x's shape and dtype
  DropoutMask mask;  ///< for dropout_grad
};
/// dropout into a new y: returns y and the mask.
[[nodiscard]] Dropout dropout(const Backend& b, const Tensor& x, double p, Generator& gen);
/// dropout_grad into a new dx.
[[nodiscard]] Tensor dropout_grad(const Backend& b, const Tensor& dy, const DropoutMask& mask);

// ---- linear layer: y = x w^T + bias ------------------------------------------
/// y = x w^T + bias.
/// x [..., in], w [out, in], bias [out] or empty, y [..., out]; one dtype
/// (shape_mismatch, dtype_mismatch otherwise). Runs as blas::gemm.
void linear(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& y);
/// Gradients; any of dx, dw, dbias may be an empty handle (not computed).
/// dx = dy w, dw = dy^T x (x and dy taken as matrices [rows, in] and
/// [rows, out]), dbias = dy summed over rows.
void linear_grad(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                 Tensor& dbias);
/// linear_grad's returning form.
struct LinearGrads {
  Tensor dx;     ///< x's shape and dtype
  Tensor dw;     ///< w's shape and dtype
  Tensor dbias;  ///< [out], also when the forward had no bias
};
/// linear into a new y [..., out].
[[nodiscard]] Tensor linear(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& bias);
/// linear_grad into new tensors: returns dx, dw and dbias.
[[nodiscard]] LinearGrads linear_grad(const Backend& b, const Tensor& x, const Tensor& w, const Tensor& dy);

// ---- losses (mean over the batch) ------------------------------------------
/// The target value cross_entropy skips by default (PyTorch's ignore_index).
inline constexpr std::int64_t kIgnoreIndex = -100;
/// Cross-entropy of logits x [N, C] against class indices target [N] (i64):
/// the mean over the rows whose target is not ignore_index of
/// logsumexp(x[n]) - x[n, target[n]] (PyTorch's cross_entropy; ignore_index
/// may also be a class in [0, C)). Any other target outside [0, C) raises
/// invalid_argument (the targets are read to the host for this check; not
/// inside xylem::capture, which refuses host reads: there such a target gives
/// NaN, and the rows that count are counted on the device). The
/// loss is a one-element tensor of x's dtype: NaN for an empty batch (N = 0)
/// or one whose every target is ignored, as PyTorch's mean over nothing.
[[nodiscard]] Tensor cross_entropy(const Backend& b, const Tensor& x, const Tensor& target,
                                   std::int64_t ignore_index = kIgnoreIndex);
/// dx = (softmax(x) - onehot(target)) / M, times the loss's gradient (1 by
/// default), M the rows not ignored; ignored rows get 0. dx has x's shape
/// and dtype; targets are checked as cross_entropy does.
/// @{
void cross_entropy_grad(const Backend& b, const Tensor& x, const Tensor& target, Tensor& dx, double dloss = 1.0,
                        std::int64_t ignore_index = kIgnoreIndex);
[[nodiscard]] Tensor cross_entropy_grad(const Backend& b, const Tensor& x, const Tensor& target, double dloss = 1.0,
                                        std::int64_t ignore_index = kIgnoreIndex);
/// @}
/// How a loss reduces its elementwise values (PyTorch's `reduction`).
enum class LossReduction {
  none,       ///< the elementwise values, the input's shape
  mean,       ///< their mean (NaN over no elements)
  sum,        ///< their sum
  batchmean,  ///< their sum divided by the size of axis 0 (the number of elements for a scalar)
};
/// Kullback-Leibler divergence of log-probabilities `input` from
/// probabilities `target` (PyTorch's kl_div, log_target false): elementwise
/// target (log(target) - input), 0 where target is 0, reduced as `r` says
/// (none: the input's shape; else one element). input and target of one
/// shape and float dtype. One math::binary pass, then the reduction.
[[nodiscard]] Tensor kl_div(const Backend& b, const Tensor& input, const Tensor& target,
                            LossReduction r = LossReduction::mean);
/// The gradient with respect to input of dloss times kl_div(input, target,
/// r) (for none: of dloss times the sum of its values): dx = -target dloss /
/// (the divisor of r). dx has input's shape and dtype.
/// @{
void kl_div_grad(const Backend& b, const Tensor& input, const Tensor& target, Tensor& dx,
                 LossReduction r = LossReduction::mean, double dloss = 1.0);
[[nodiscard]] Tensor kl_div_grad(const Backend& b, const Tensor& input, const Tensor& target,
                                 LossReduction r = LossReduction::mean, double dloss = 1.0);
/// @}
/// mean((x - target)^2), one element of x's dtype; x and target of one shape
/// and dtype.
[[nodiscard]] Tensor mse_loss(const Backend& b, const Tensor& x, const Tensor& target);
/// dx = 2 (x - target) / numel, times dloss; dx has x's shape and dtype.
/// @{
void mse_loss_grad(const Backend& b, const Tensor& x, const Tensor& target, Tensor& dx, double dloss = 1.0);
[[nodiscard]] Tensor mse_loss_grad(const Backend& b, const Tensor& x, const Tensor& target, double dloss = 1.0);
/// @}

}  // namespace xylem::nn
