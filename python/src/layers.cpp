// The layers of xylem.layers: Linear, Conv2d, pooling, activations,
// BatchNorm2d, LayerNorm, RMSNorm, GroupNorm, Dropout, Flatten,
// MultiheadAttention (Sequential has a file of its own).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"

namespace xylem::python {
namespace {

using namespace layers;

// A layer made without bias (or LayerNorm without affine) has an empty
// parameter: Python reads it as None.
Parameter* present(Parameter& p) { return p.value.defined() ? &p : nullptr; }

void bind_linear(nb::module_& m) {
  nb::class_<Linear, Layer>(m, "Linear", "y = x weight^T + bias over the last axis: x [..., in], y [..., out].")
      .def(
          "__init__",
          [](Linear* self, std::int64_t in, std::int64_t out, bool bias, DType dtype, Init init, Generator* gen,
             std::optional<Backend> b) {
            const auto g = generator_or_default(gen);
            new (self) Linear(resolve(b), *g, in, out, bias, {dtype, init});
          },
          "in_features"_a, "out_features"_a, "bias"_a = true, nb::kw_only(), "dtype"_a = DType::f32,
          "init"_a = Init::kaiming_uniform, "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
          "weight [out, in], then bias [out], drawn from `generator` (the default one when None).")
      .def_prop_ro(
          "weight", [](Linear& l) { return &l.weight; }, nb::rv_policy::reference_internal, "[out, in].")
      .def_prop_ro(
          "bias", [](Linear& l) { return present(l.bias); }, nb::rv_policy::reference_internal,
          "[out], or None when made without bias.");
  nb::class_<Conv2d, Layer>(m, "Conv2d", "2-D convolution (cross-correlation) of x [N, in, H, W], square kernel.")
      .def(
          "__init__",
          [](Conv2d* self, std::int64_t in, std::int64_t out, int kernel, int stride, int padding, bool bias,
             DType dtype, Init init, Generator* gen, std::optional<Backend> b) {
            const auto g = generator_or_default(gen);
            new (self) Conv2d(resolve(b), *g, in, out, kernel, stride, padding, bias, {dtype, init});
          },
          "in_channels"_a, "out_channels"_a, "kernel_size"_a, "stride"_a = 1, "padding"_a = 0, "bias"_a = true,
          nb::kw_only(), "dtype"_a = DType::f32, "init"_a = Init::kaiming_uniform, "generator"_a = nb::none(),
          "backend"_a = nb::none(), release_gil(),
          "weight [out, in, k, k], then bias [out], drawn from `generator` (the default one when None).")
      .def_prop_ro(
          "weight", [](Conv2d& l) { return &l.weight; }, nb::rv_policy::reference_internal, "[out, in, k, k].")
      .def_prop_ro(
          "bias", [](Conv2d& l) { return present(l.bias); }, nb::rv_policy::reference_internal,
          "[out], or None when made without bias.");
}

void bind_elementwise(nb::module_& m) {
  nb::class_<Pool2d, Layer>(m, "Pool2d", "Max or average pooling over x [N, C, H, W]; no parameters.");
  nb::class_<MaxPool2d, Pool2d>(m, "MaxPool2d", "The maximum of each window.")
      .def(nb::init<int, int, int>(), "kernel_size"_a, "stride"_a = 0, "padding"_a = 0,
           "Square windows of kernel_size, moved by stride (0: the kernel size).");
  nb::class_<AvgPool2d, Pool2d>(m, "AvgPool2d", "The mean of each window (padding counted, as PyTorch's default).")
      .def(nb::init<int, int, int>(), "kernel_size"_a, "stride"_a = 0, "padding"_a = 0,
           "Square windows of kernel_size, moved by stride (0: the kernel size).");
  nb::class_<Activation, Layer>(m, "Activation", "An elementwise activation; any shape, no parameters.");
  nb::class_<ReLU, Activation>(m, "ReLU", "max(x, 0).").def(nb::init<>());
  nb::class_<Sigmoid, Activation>(m, "Sigmoid", "1 / (1 + e^-x).").def(nb::init<>());
  nb::class_<Tanh, Activation>(m, "Tanh", "tanh(x).").def(nb::init<>());
  nb::class_<SiLU, Activation>(m, "SiLU", "x sigmoid(x).").def(nb::init<>());
  nb::class_<GELU, Activation>(m, "GELU", "GELU: exact x Phi(x), or approximate='tanh' (PyTorch's).")
      .def(
          "__init__",
          [](GELU* self, const std::string& approximate) {
            if (approximate != "none" && approximate != "tanh")
              throw Error(ErrorCode::invalid_argument,
                          "GELU: approximate must be 'none' or 'tanh', not '" + approximate + "'");
            new (self) GELU(approximate == "tanh");
          },
          "approximate"_a = "none", "'none': x Phi(x); 'tanh': the tanh approximation.");
  nb::class_<Flatten, Layer>(m, "Flatten", "[N, ...] to [N, rest]: the trailing axes flattened into one.")
      .def(nb::init<>());
  nb::class_<Dropout, Layer>(m, "Dropout",
                             "In training, zeroes each element with probability p and scales the rest by 1/(1-p); in "
                             "evaluation, the identity. Step s's mask depends only on (seed, s).")
      .def(nb::init<double, std::uint64_t>(), "p"_a = 0.5, "seed"_a = 0, "p in [0, 1) (InvalidArgument otherwise).")
      .def_prop_rw("step", &Dropout::step, &Dropout::set_step,
                   "Training forwards so far: the next one draws this step's mask (set it to resume a run).");
}

void bind_norms(nb::module_& m) {
  nb::class_<BatchNorm2d, Layer>(m, "BatchNorm2d",
                                 "Batch normalisation of x [N, C, H, W] per channel: batch statistics in training "
                                 "(updating the running ones), running ones in evaluation.")
      .def(
          "__init__",
          [](BatchNorm2d* self, std::int64_t channels, double eps, double momentum, DType dtype,
             std::optional<Backend> b) { new (self) BatchNorm2d(resolve(b), channels, eps, momentum, dtype); },
          "num_features"_a, "eps"_a = 1e-5, "momentum"_a = 0.1, nb::kw_only(), "dtype"_a = DType::f32,
          "backend"_a = nb::none(), release_gil(), "weight ones, bias zeros, running mean 0 and variance 1, all [C].")
      .def_ro("weight", &BatchNorm2d::weight, "gamma, [C].")
      .def_ro("bias", &BatchNorm2d::bias, "beta, [C].")
      .def_ro("running_mean", &BatchNorm2d::running_mean, "[C].")
      .def_ro("running_var", &BatchNorm2d::running_var, "[C], unbiased.")
      .def_ro("num_batches_tracked", &BatchNorm2d::num_batches_tracked, "Training forwards so far (an i64 scalar).");
  nb::class_<LayerNorm, Layer>(m, "LayerNorm", "Layer normalisation over the trailing axes `normalized_shape`.")
      .def(
          "__init__",
          [](LayerNorm* self, std::vector<std::int64_t> shape, double eps, bool affine, DType dtype,
             std::optional<Backend> b) { new (self) LayerNorm(resolve(b), std::move(shape), eps, affine, dtype); },
          "normalized_shape"_a, "eps"_a = 1e-5, "elementwise_affine"_a = true, nb::kw_only(), "dtype"_a = DType::f32,
          "backend"_a = nb::none(), release_gil(), "weight ones and bias zeros of normalized_shape (when affine).")
      .def_prop_ro(
          "weight", [](LayerNorm& l) { return present(l.weight); }, nb::rv_policy::reference_internal,
          "gamma, or None without affine.")
      .def_prop_ro(
          "bias", [](LayerNorm& l) { return present(l.bias); }, nb::rv_policy::reference_internal,
          "beta, or None without affine.");
  nb::class_<RMSNorm, Layer>(m, "RMSNorm", "RMS normalisation over the trailing axes `normalized_shape`.")
      .def(
          "__init__",
          [](RMSNorm* self, std::vector<std::int64_t> shape, double eps, bool affine, DType dtype,
             std::optional<Backend> b) { new (self) RMSNorm(resolve(b), std::move(shape), eps, affine, dtype); },
          "normalized_shape"_a, "eps"_a = 1e-6, "elementwise_affine"_a = true, nb::kw_only(), "dtype"_a = DType::f32,
          "backend"_a = nb::none(), release_gil(), "weight ones of normalized_shape (when affine).")
      .def_prop_ro(
          "weight", [](RMSNorm& l) { return present(l.weight); }, nb::rv_policy::reference_internal,
          "The weight, or None without affine.");
  nb::class_<GroupNorm, Layer>(m, "GroupNorm",
                               "Group normalisation of x [N, C, ...]: the channels in num_groups groups, then a "
                               "per-channel weight and bias.")
      .def(
          "__init__",
          [](GroupNorm* self, int groups, std::int64_t channels, double eps, bool affine, DType dtype,
             std::optional<Backend> b) { new (self) GroupNorm(resolve(b), groups, channels, eps, affine, dtype); },
          "num_groups"_a, "num_channels"_a, "eps"_a = 1e-5, "affine"_a = true, nb::kw_only(), "dtype"_a = DType::f32,
          "backend"_a = nb::none(), release_gil(), "weight ones and bias zeros, [C] (when affine).")
      .def_prop_ro(
          "weight", [](GroupNorm& l) { return present(l.weight); }, nb::rv_policy::reference_internal,
          "[C], or None without affine.")
      .def_prop_ro(
          "bias", [](GroupNorm& l) { return present(l.bias); }, nb::rv_policy::reference_internal,
          "[C], or None without affine.");
}

void bind_multihead_attention(nb::module_& m) {
  nb::class_<MultiheadAttention, Layer>(
      m, "MultiheadAttention",
      "Self-attention as torch.nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)(x, x, x): "
      "x [N, L, E] -> [N, L, E].")
      .def(
          "__init__",
          [](MultiheadAttention* self, std::int64_t embed_dim, std::int64_t num_heads, bool causal, bool bias,
             DType dtype, Init init, Generator* gen, std::optional<Backend> b) {
            const auto g = generator_or_default(gen);
            new (self) MultiheadAttention(resolve(b), *g, embed_dim, num_heads, causal, bias, {dtype, init});
          },
          "embed_dim"_a, "num_heads"_a, "causal"_a = false, "bias"_a = true, nb::kw_only(), "dtype"_a = DType::f32,
          "init"_a = Init::kaiming_uniform, "generator"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
          "in_proj_weight (xavier-uniform), then out_proj.weight (`init`) from `generator`; biases 0.")
      .def_prop_ro(
          "in_proj_weight", [](MultiheadAttention& l) { return &l.in_proj_weight; },
          nb::rv_policy::reference_internal, "[3E, E]: the q, k and v projections stacked.")
      .def_prop_ro(
          "in_proj_bias", [](MultiheadAttention& l) { return present(l.in_proj_bias); },
          nb::rv_policy::reference_internal, "[3E], or None when made without bias.")
      .def_prop_ro(
          "out_proj_weight", [](MultiheadAttention& l) { return &l.out_proj_weight; },
          nb::rv_policy::reference_internal, "[E, E] (out_proj.weight).")
      .def_prop_ro(
          "out_proj_bias", [](MultiheadAttention& l) { return present(l.out_proj_bias); },
          nb::rv_policy::reference_internal, "[E] (out_proj.bias), or None when made without bias.");
}

}  // namespace

void bind_layer_kinds(nb::module_& m) {
  bind_linear(m);
  bind_elementwise(m);
  bind_norms(m);
  bind_multihead_attention(m);
}

}  // namespace xylem::python
