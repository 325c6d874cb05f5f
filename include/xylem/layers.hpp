#pragma once
/// @file
/// xylem::layers: network layers built from xylem's ops, each with a forward
/// and an explicit backward.
///
/// Why an explicit backward per layer rather than a tape (autograd): each
/// layer keeps only what its own forward saved (its input, its statistics,
/// its dropout mask handle) and drops it in backward, so nothing holds a
/// graph of the whole step alive; the code path is plain calls, easy to read
/// and debug; and a training step is the same fixed sequence of ops every
/// time, which is what capture and replay need.
///
/// Gradients accumulate, as PyTorch's: backward adds into each parameter's
/// grad. zero_grad() resets them to empty handles (PyTorch's set_to_none),
/// which the next backward fills. A layer's input of the wrong shape raises
/// shape_mismatch naming the layer and the shapes, before anything changes;
/// backward before forward raises invalid_argument.
///
/// Parameters start from xylem's counter-based generator, so a seed gives the
/// same numbers on every framework.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xylem/attention.hpp"
#include "xylem/backend.hpp"
#include "xylem/creation.hpp"
#include "xylem/nn.hpp"
#include "xylem/tensor.hpp"

namespace xylem::layers {

/// A trainable tensor and its gradient.
struct Parameter {
  std::string name;  ///< "weight", "bias"; a Sequential prefixes its index: "0.weight"
  Tensor value;      ///< what the layer computes with
  Tensor grad;       ///< the accumulated gradient; empty until a backward, and after zero_grad
};

/// A tensor a layer keeps that is not trained (BatchNorm2d's running
/// statistics): saved with the parameters, never given a gradient.
struct Buffer {
  std::string name;  ///< "running_mean"; a Sequential prefixes its index
  Tensor value;      ///< the state itself
  /// Whether a weights file may lack it, loading then keeping the value it
  /// has: PyTorch's num_batches_tracked, absent from files of older writers.
  bool may_be_absent = false;
};

/// How Linear and Conv2d draw their weights. Biases always take PyTorch's
/// default, U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
enum class Init {
  kaiming_uniform,  ///< PyTorch's default: U(-b, b), b = sqrt(6 / ((1 + a^2) fan_in)), a = sqrt(5)
  xavier_uniform,   ///< U(-b, b), b = sqrt(6 / (fan_in + fan_out))
  xavier_normal     ///< N(0, 2 / (fan_in + fan_out))
};

/// The dtype and initialisation of a layer's parameters.
struct ParameterOptions {
  DType dtype = f32;                  ///< dtype of every parameter and of the inputs the layer takes
  Init init = Init::kaiming_uniform;  ///< how weights are drawn
};

/// Fills a weight of shape [out, in, ...] (Linear's [out, in], Conv2d's
/// [K, C, R, S]) as `init` says, from `gen`; fan_in = in times the receptive
/// field (the product of the trailing axes), fan_out = out times it. A weight
/// of rank below 2 raises invalid_argument.
void init_weight(const Backend& b, Tensor& weight, Init init, Generator& gen);
/// Fills a bias as PyTorch does: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
void init_bias(const Backend& b, Tensor& bias, std::int64_t fan_in, Generator& gen);

/// The base of every layer: forward, backward and the parameters.
class Layer {
 public:
  virtual ~Layer() = default;
  Layer() = default;
  Layer(const Layer&) = delete;             ///< a layer owns its parameters and saved state
  Layer& operator=(const Layer&) = delete;  ///< a layer owns its parameters and saved state

  /// y = the layer applied to x; saves what backward needs.
  virtual Tensor forward(const Backend& b, const Tensor& x) = 0;
  /// dx from dy (of the last forward's output shape); adds the parameters'
  /// gradients into their grad and releases what forward saved.
  virtual Tensor backward(const Backend& b, const Tensor& dy) = 0;
  /// The shape forward gives for an input of shape x; throws shape_mismatch
  /// (naming the layer and the shapes) for an input the layer does not take.
  /// Computes on the host: Sequential checks a whole chain before running it.
  [[nodiscard]] virtual Layout output_shape(const Layout& x) const = 0;
  /// The layer's name in messages: "Linear(4, 3)".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// The trainable tensors, in a fixed order (PyTorch's).
  [[nodiscard]] virtual std::vector<Parameter*> parameters() { return {}; }
  /// The non-trained state, in a fixed order (PyTorch's).
  [[nodiscard]] virtual std::vector<Buffer*> buffers() { return {}; }
  /// Training (true, the start) or evaluation mode: BatchNorm2d and Dropout
  /// behave differently.
  virtual void train(bool on = true) { training_ = on; }
  /// Whether the layer is in training mode.
  [[nodiscard]] bool training() const noexcept { return training_; }
  /// Resets every parameter's gradient to an empty handle (none yet).
  void zero_grad();

 protected:
  /// Adds g into p's gradient (or makes g the gradient when there is none).
  static void accumulate(const Backend& b, Parameter& p, const Tensor& g);
  /// Throws invalid_argument for an empty input handle, and what
  /// output_shape throws; returns output_shape(x).
  Layout require_input(const Tensor& x) const;
  /// Throws invalid_argument unless a forward saved state for this backward
  /// (`saved`), and shape_mismatch unless dy has that forward's output shape.
  void require_backward(bool saved, const Tensor& dy, const Layout& y_shape) const;
  /// Throws shape_mismatch naming the layer, x's shape and `expected`.
  [[noreturn]] void bad_input(const Layout& x, const std::string& expected) const;

 private:
  bool training_ = true;
};

/// The four members of Layer every layer overrides (documented in Layer).
#define XYLEM_LAYER_OVERRIDES                                   \
  Tensor forward(const Backend& b, const Tensor& x) override;   \
  Tensor backward(const Backend& b, const Tensor& dy) override; \
  [[nodiscard]] std::string describe() const override;          \
  [[nodiscard]] Layout output_shape(const Layout& x) const override;

/// y = x w^T + bias over the last axis: x [..., in], y [..., out].
class Linear : public Layer {
 public:
  /// weight [out, in] and (when `with_bias`) bias [out], drawn from `gen` in
  /// that order.
  Linear(const Backend& b, Generator& gen, std::int64_t in, std::int64_t out, bool with_bias = true,
         const ParameterOptions& options = {});
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter weight;  ///< [out, in]
  Parameter bias;    ///< [out], or an empty value when made without one

 private:
  std::int64_t in_, out_;
  Tensor x_;
  Layout y_shape_;
};

/// 2-D convolution (cross-correlation) over x [N, in_ch, H, W], square kernel.
class Conv2d : public Layer {
 public:
  /// weight [out_ch, in_ch, kernel, kernel] and (when `with_bias`) bias
  /// [out_ch], drawn from `gen` in that order.
  Conv2d(const Backend& b, Generator& gen, std::int64_t in_ch, std::int64_t out_ch, int kernel, int stride = 1,
         int padding = 0, bool with_bias = true, const ParameterOptions& options = {});
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter weight;  ///< [out_ch, in_ch, kernel, kernel]
  Parameter bias;    ///< [out_ch], or an empty value when made without one

 private:
  std::int64_t in_ch_, out_ch_;
  int kernel_;
  nn::Conv2d geometry_;
  Tensor x_;
  Layout y_shape_;
};

/// Max or average pooling over x [N, C, H, W]; no parameters.
class Pool2d : public Layer {
 public:
  /// Which pooling.
  enum class Kind {
    max,     ///< the maximum of each window
    average  ///< the mean of each window
  };
  /// Square windows of `kernel`, moved by `stride` (0: the kernel), `padding`
  /// on every side.
  Pool2d(Kind kind, int kernel, int stride = 0, int padding = 0);
  XYLEM_LAYER_OVERRIDES

 private:
  Kind kind_;
  nn::Pool2d geometry_;
  Tensor x_;
  Layout y_shape_;
};

/// Max pooling: Pool2d of Kind::max.
class MaxPool2d : public Pool2d {
 public:
  /// Square windows of `kernel`, moved by `stride` (0: the kernel).
  explicit MaxPool2d(int kernel, int stride = 0, int padding = 0) : Pool2d(Kind::max, kernel, stride, padding) {}
};
/// Average pooling (padding counted in the window, as PyTorch's default).
class AvgPool2d : public Pool2d {
 public:
  /// Square windows of `kernel`, moved by `stride` (0: the kernel).
  explicit AvgPool2d(int kernel, int stride = 0, int padding = 0) : Pool2d(Kind::average, kernel, stride, padding) {}
};

/// An elementwise activation: relu, sigmoid, tanh, silu or gelu; any shape.
class Activation : public Layer {
 public:
  /// Which function.
  enum class Kind {
    relu,       ///< max(x, 0)
    sigmoid,    ///< 1 / (1 + e^-x)
    tanh,       ///< tanh(x)
    silu,       ///< x sigmoid(x)
    gelu,       ///< x Phi(x), the exact GELU
    gelu_tanh,  ///< GELU's tanh approximation (nn::gelu_tanh)
  };
  /// The activation `kind`.
  explicit Activation(Kind kind) : kind_(kind) {}
  XYLEM_LAYER_OVERRIDES

 private:
  Kind kind_;
  Tensor saved_;  // relu, sigmoid and tanh keep their output, the others their input
};
/// max(x, 0).
class ReLU : public Activation {
 public:
  ReLU() : Activation(Kind::relu) {}  ///< the relu activation
};
/// 1 / (1 + e^-x).
class Sigmoid : public Activation {
 public:
  Sigmoid() : Activation(Kind::sigmoid) {}  ///< the sigmoid activation
};
/// tanh(x).
class Tanh : public Activation {
 public:
  Tanh() : Activation(Kind::tanh) {}  ///< the tanh activation
};
/// x sigmoid(x) (PyTorch's SiLU).
class SiLU : public Activation {
 public:
  SiLU() : Activation(Kind::silu) {}  ///< the silu activation
};
/// GELU: exact (x Phi(x)), or with `tanh_approximation` PyTorch's
/// GELU(approximate="tanh").
class GELU : public Activation {
 public:
  /// The exact GELU, or its tanh approximation.
  explicit GELU(bool tanh_approximation = false) : Activation(tanh_approximation ? Kind::gelu_tanh : Kind::gelu) {}
};

/// Batch normalisation over x [N, C, H, W] per channel. Training normalises
/// with the batch's statistics and updates the running ones
/// (running = (1 - momentum) running + momentum batch, the variance unbiased);
/// evaluation normalises with the running ones. Each training forward counts
/// one in num_batches_tracked, as PyTorch's does, so that its state_dict has
/// the same keys.
class BatchNorm2d : public Layer {
 public:
  /// weight (gamma) ones and bias (beta) zeros, [C]; running mean zeros and
  /// running variance ones, [C] in the statistics dtype (f64 for f64, else
  /// f32).
  BatchNorm2d(const Backend& b, std::int64_t channels, double eps = 1e-5, double momentum = 0.1, DType dtype = f32);
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  [[nodiscard]] std::vector<Buffer*> buffers() override;
  Parameter weight;     ///< gamma, [C]
  Parameter bias;       ///< beta, [C]
  Buffer running_mean;  ///< [C]
  Buffer running_var;   ///< [C]
  /// The training forwards so far: an i64 scalar (rank 0), kept on the host
  /// (each count replaces the handle), so counting never waits on a device.
  Buffer num_batches_tracked;
  /// Counts one more training batch in num_batches_tracked, as a training
  /// forward does; for a forward replayed from a captured graph, which runs
  /// the ops but not this host-side count. Reads the tensor only when it
  /// was replaced from outside (weights loaded), so a training forward
  /// reads nothing and can be captured.
  void count_batch();

 private:
  std::int64_t channels_;
  double eps_, momentum_;
  std::int64_t counted_ = 0;  // num_batches_tracked's value, while it is the handle made here
  Tensor count_made_;         // that handle
  Tensor x_;
  nn::BatchNormStats stats_;
  bool trained_ = true;  // the mode of the forward backward differentiates
};

/// Layer normalisation over the trailing axes `shape` of x.
class LayerNorm : public Layer {
 public:
  /// weight ones and bias zeros of `shape` (when `affine`).
  LayerNorm(const Backend& b, std::vector<std::int64_t> shape, double eps = 1e-5, bool affine = true,
            DType dtype = f32);
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter weight;  ///< gamma, of the normalised shape (empty value without affine)
  Parameter bias;    ///< beta, of the normalised shape (empty value without affine)

 private:
  std::vector<std::int64_t> shape_;
  double eps_;
  Tensor x_;
  nn::NormStats stats_;
};

/// RMS normalisation over the trailing axes `shape` of x (PyTorch's RMSNorm):
/// y = x / sqrt(mean(x^2) + eps) weight (nn::rms_norm).
class RMSNorm : public Layer {
 public:
  /// weight ones of `shape` (when `affine`). PyTorch's default eps is the
  /// dtype's machine epsilon; give it explicitly to match.
  RMSNorm(const Backend& b, std::vector<std::int64_t> shape, double eps = 1e-6, bool affine = true, DType dtype = f32);
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter weight;  ///< of the normalised shape (empty value without affine)

 private:
  std::vector<std::int64_t> shape_;
  double eps_;
  Tensor x_;
  Tensor rstd_;
};

/// Group normalisation of x [N, C, ...] (PyTorch's GroupNorm): the channels
/// in `groups` groups, each (sample, group) normalised over its channels and
/// positions, then a per-channel weight and bias (nn::group_norm).
class GroupNorm : public Layer {
 public:
  /// weight ones and bias zeros, [channels] (when `affine`); groups must
  /// divide channels (invalid_argument otherwise).
  GroupNorm(const Backend& b, int groups, std::int64_t channels, double eps = 1e-5, bool affine = true,
            DType dtype = f32);
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter weight;  ///< [C] (empty value without affine)
  Parameter bias;    ///< [C] (empty value without affine)

 private:
  int groups_;
  std::int64_t channels_;
  double eps_;
  Tensor x_;
  nn::NormStats stats_;
};

/// Dropout: in training, zeroes each element with probability p and scales
/// the rest by 1/(1-p); in evaluation, the identity.
///
/// The mask of training step s is drawn from `seed`'s stream starting at
/// counter s * 2^40, so it depends only on (seed, step), never on the sizes
/// of earlier batches: a run restored at a step draws the masks it would have
/// drawn. Inputs of more than 2^40 elements raise invalid_argument; the
/// counters wrap after 2^24 steps.
class Dropout : public Layer {
 public:
  /// p in [0, 1) (invalid_argument otherwise).
  Dropout(double p, std::uint64_t seed);
  XYLEM_LAYER_OVERRIDES
  /// Training forwards so far: the next one draws step()'s mask.
  [[nodiscard]] std::uint64_t step() const noexcept { return step_; }
  /// Sets the step (to resume a run).
  void set_step(std::uint64_t step) noexcept { step_ = step; }

 private:
  double p_;
  std::uint64_t seed_;
  std::uint64_t step_ = 0;
  nn::DropoutMask mask_;
  bool masked_ = false;  // whether the last forward dropped (training) or passed through
  Layout y_shape_;
  bool saved_ = false;
};

/// [N, ...] to [N, rest]: the trailing axes flattened into one.
class Flatten : public Layer {
 public:
  XYLEM_LAYER_OVERRIDES

 private:
  Layout x_shape_, y_shape_;
  bool saved_ = false;
};

/// A lookup table: x (i32 or i64 indices, any dims) to the rows of weight
/// [num_embeddings, dim] they name, y [..., dim] (nn::embedding). An index
/// outside [0, num_embeddings) raises index_out_of_range. backward adds
/// into weight's gradient and returns an empty handle: indices have none.
class Embedding : public Layer {
 public:
  /// weight drawn from N(0, 1) (PyTorch's default) in options.dtype; the
  /// row padding_idx (in [-num_embeddings, num_embeddings)) starts at 0 and
  /// gets no gradient.
  Embedding(const Backend& b, Generator& gen, std::int64_t num_embeddings, std::int64_t dim,
            std::optional<std::int64_t> padding_idx = std::nullopt, const ParameterOptions& options = {});
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter weight;  ///< [num_embeddings, dim]

 private:
  std::int64_t num_, dim_;
  std::optional<std::int64_t> padding_;
  Tensor x_;
  Layout y_shape_;
};

/// Layers applied in order; backward runs them in reverse. Parameters and
/// buffers are named with the layer's index, as PyTorch's nn.Sequential
/// names them ("0.weight", "2.1.bias"): the keys of a saved model.
class Sequential : public Layer {
 public:
  Sequential() = default;
  /// The layers, in order.
  explicit Sequential(std::vector<std::unique_ptr<Layer>> layers);
  /// Appends a layer; its parameters and buffers take the prefix "index.".
  Sequential& add(std::unique_ptr<Layer> layer);
  /// Makes an L from `args`, appends it and returns it.
  template <class L, class... Args>
  L& emplace(Args&&... args) {
    auto layer = std::make_unique<L>(std::forward<Args>(args)...);
    L& ref = *layer;
    add(std::move(layer));
    return ref;
  }
  /// The i-th layer.
  [[nodiscard]] Layer& operator[](std::size_t i) const { return *layers_.at(i); }
  /// The number of layers.
  [[nodiscard]] std::size_t size() const noexcept { return layers_.size(); }
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  [[nodiscard]] std::vector<Buffer*> buffers() override;
  void train(bool on = true) override;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
};

/// y = x + f(x), a residual connection around the layer f (whose output
/// has its input's shape); backward adds f's input gradient to dy. The
/// parameters and buffers are f's, under f's names.
class Residual : public Layer {
 public:
  /// Around `inner` (not null: invalid_argument).
  explicit Residual(std::unique_ptr<Layer> inner);
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  [[nodiscard]] std::vector<Buffer*> buffers() override;
  void train(bool on = true) override;
  /// The layer inside.
  [[nodiscard]] Layer& inner() const noexcept { return *inner_; }

 private:
  std::unique_ptr<Layer> inner_;
};

/// Multi-head self-attention with the weights and semantics of PyTorch's
/// nn.MultiheadAttention(embed_dim, num_heads, batch_first=True) called as
/// mha(x, x, x, need_weights=False): x [N, L, E] -> y [N, L, E]. q, k and v are
/// x in_proj_weight^T + in_proj_bias split in three along the last axis, each
/// seen as [N, heads, L, E/heads]; y = out_proj(scaled_dot_product_attention).
/// Without attention dropout.
class MultiheadAttention : public Layer {
 public:
  /// embed_dim a multiple of num_heads (invalid_argument otherwise); causal:
  /// each position attends only to itself and earlier ones. in_proj_weight
  /// drawn xavier-uniform from `gen`, then out_proj.weight as
  /// `options.init` says; the biases 0, as PyTorch.
  MultiheadAttention(const Backend& b, Generator& gen, std::int64_t embed_dim, std::int64_t num_heads,
                     bool causal = false, bool with_bias = true, const ParameterOptions& options = {});
  XYLEM_LAYER_OVERRIDES
  [[nodiscard]] std::vector<Parameter*> parameters() override;
  Parameter in_proj_weight;   ///< [3E, E]: the q, k and v projections stacked
  Parameter in_proj_bias;     ///< [3E], or an empty value when made without biases
  Parameter out_proj_weight;  ///< [E, E], named "out_proj.weight"
  Parameter out_proj_bias;    ///< [E] named "out_proj.bias", or an empty value

 private:
  std::int64_t embed_, heads_;
  bool causal_;
  Tensor x_, q_, k_, v_, attention_;  // saved by forward: input, heads, attention output [N, L, E]
  nn::AttentionForward saved_;
  Layout y_shape_;
};

#undef XYLEM_LAYER_OVERRIDES

}  // namespace xylem::layers
