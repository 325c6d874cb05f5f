#pragma once
/// @file
/// xylem::models: reference networks built from xylem::layers, with the
/// input and batch of the public benchmarks that time them
/// (soumith/convnet-benchmarks). Layers are numbered as PyTorch's
/// nn.Sequential numbers them ("0.weight"), in one flat Sequential (no
/// features/classifier split), so the parameters line up one to one with
/// the same network written as a flat nn.Sequential.
///
/// Parameters take ParameterOptions' dtype; for f16 and bf16, which the
/// generator does not draw, weights are drawn in f32 and rounded (PyTorch's
/// model.to(dtype) after its f32 initialisation).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/layers.hpp"
#include "xylem/layout.hpp"

namespace xylem::models {

/// AlexNet as in "One weird trick" (torchvision's alexnet without its
/// adaptive pooling, so it takes 3x224x224 only): five convolutions
/// (64 k11 s4 p2, 192 k5 p2, 384, 256, 256 k3 p1) with three 3/2 max
/// pools, then dropout, 9216->4096, dropout, 4096->4096, 4096->1000.
/// 61,100,840 parameters. Weights are drawn from `seed`'s stream; the
/// dropouts take seeds derived from it.
layers::Sequential alexnet(const Backend& b, const layers::ParameterOptions& options = {}, std::uint64_t seed = 0);

/// Overfeat "fast" as the convnet benchmarks define it (3x231x231): 96 k11
/// s4, pool 2, 256 k5, pool 2, 512, 1024, 1024 k3 p1, pool 2, then
/// 36864->3072->4096->1000, no dropout. 145,920,872 parameters.
layers::Sequential overfeat_fast(const Backend& b, const layers::ParameterOptions& options = {},
                                 std::uint64_t seed = 0);

/// VGG-A (torchvision's vgg11 without its adaptive pooling, 3x224x224):
/// 3x3 convolutions of 64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M
/// (M: 2/2 max pool), then 25088->4096->4096->1000 with relu and dropout.
/// 132,863,336 parameters.
layers::Sequential vgg_a(const Backend& b, const layers::ParameterOptions& options = {}, std::uint64_t seed = 0);

/// The shape of a TransformerLM.
struct TransformerOptions {
  std::int64_t vocab = 256;    ///< token ids in [0, vocab)
  std::int64_t context = 64;   ///< the longest input: the learned positions
  std::int64_t d_model = 128;  ///< the width of the residual stream
  std::int64_t heads = 4;      ///< attention heads; divides d_model
  std::int64_t layers = 2;     ///< transformer blocks
  std::int64_t mlp = 512;      ///< the MLP's hidden width (4 d_model, as GPT-2)
  DType dtype = f32;           ///< of every parameter (f32 or f64)
};

/// A decoder-only (GPT-style) transformer language model: token and learned
/// position embeddings summed, `layers` pre-norm blocks (x += attn(ln(x)),
/// causal multi-head attention; x += fc2(gelu(fc1(ln(x))))), a final
/// LayerNorm and an untied linear head to the vocabulary. Input i64 or i32
/// token ids [B, T] with T <= context; output logits [B, T, vocab].
///
/// Parameter names: "tok_emb.weight", "pos_emb.weight", then block i's
/// "blocks.i.0.0.weight" (the attention's LayerNorm), "blocks.i.0.1.*" (the
/// attention), "blocks.i.1.0.*" (the MLP's LayerNorm), "blocks.i.1.1.*" and
/// "blocks.i.1.3.*" (the MLP's two Linear layers), then "ln_f.*" and
/// "head.*". Weights are drawn from `seed`'s stream in that order, as each
/// layer draws them (embeddings N(0, 1), Linear PyTorch's default).
class TransformerLM : public layers::Layer {
 public:
  /// Sizes below 1, or heads not dividing d_model, raise invalid_argument.
  TransformerLM(const Backend& b, const TransformerOptions& options, std::uint64_t seed);
  /// Logits [B, T, vocab] of tokens [B, T]; saves what backward needs.
  Tensor forward(const Backend& b, const Tensor& tokens) override;
  /// From d logits: adds every parameter's gradient; returns an empty handle
  /// (token ids have no gradient).
  Tensor backward(const Backend& b, const Tensor& dlogits) override;
  /// [B, T, vocab] for [B, T] with 1 <= T <= context.
  [[nodiscard]] Layout output_shape(const Layout& tokens) const override;
  /// "TransformerLM(vocab 96, context 64, d_model 128, heads 4, layers 2)".
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::vector<layers::Parameter*> parameters() override;
  void train(bool on = true) override;
  /// The shape it was made with.
  [[nodiscard]] const TransformerOptions& options() const noexcept { return options_; }

  /// Continues `prompt` (token ids, at least one) by `count` tokens, each
  /// drawn from softmax(logits / temperature) of the last `context` tokens
  /// (temperature 0: the most likely), with uniform numbers from `seed`'s
  /// stream. Runs forwards in evaluation mode and leaves the mode as it was.
  [[nodiscard]] std::vector<std::int64_t> generate(const Backend& b, std::vector<std::int64_t> prompt,
                                                   std::int64_t count, double temperature, std::uint64_t seed);

 private:
  // Held by pointer so that they are made in the order their weights are
  // drawn in.
  TransformerOptions options_;
  std::unique_ptr<layers::Embedding> tok_emb_, pos_emb_;
  std::vector<std::unique_ptr<layers::Sequential>> blocks_;
  std::unique_ptr<layers::LayerNorm> ln_f_;
  std::unique_ptr<layers::Linear> head_;
  Tensor positions_;  // 0, 1, ..., context - 1 (i64, on the host)
  Layout y_shape_;
  bool saved_ = false;
};

/// A reference network and the input its public benchmark times it on.
struct Reference {
  std::string_view name;  ///< "alexnet", "overfeat_fast", "vgg_a"
  layers::Sequential (*make)(const Backend&, const layers::ParameterOptions&, std::uint64_t);  ///< builds it
  std::int64_t channels;  ///< of one input image
  std::int64_t height;    ///< of one input image
  std::int64_t width;     ///< of one input image
  std::int64_t batch;     ///< the benchmark's batch: 128, 128, 64

  /// [batch, channels, height, width].
  [[nodiscard]] Layout input(std::int64_t n) const { return Layout{n, channels, height, width}; }
};

/// AlexNet, Overfeat fast and VGG-A, in that order.
[[nodiscard]] std::span<const Reference> references() noexcept;

}  // namespace xylem::models
