// TransformerLM: a GPT-style decoder from the layers. The residual stream
// is [B, T, d_model]; each block is two Residual layers, so the gradient of
// every sum reaches both of its inputs.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "xylem/math.hpp"
#include "xylem/models.hpp"

namespace xylem::models {

namespace {

void check(const TransformerOptions& o) {
  const std::int64_t sizes[] = {o.vocab, o.context, o.d_model, o.heads, o.layers, o.mlp};
  if (!std::all_of(std::begin(sizes), std::end(sizes), [](std::int64_t v) { return v >= 1; }) ||
      o.d_model % o.heads != 0 || (o.dtype != f32 && o.dtype != f64))
    throw Error(ErrorCode::invalid_argument,
                "TransformerLM: vocab " + std::to_string(o.vocab) + ", context " + std::to_string(o.context) +
                    ", d_model " + std::to_string(o.d_model) + ", heads " + std::to_string(o.heads) + ", layers " +
                    std::to_string(o.layers) + ", mlp " + std::to_string(o.mlp) + ", " + std::string(name(o.dtype)) +
                    ": every size must be at least 1, heads must divide d_model, the dtype f32 or f64");
}

void prefix(layers::Layer& layer, const std::string& name) {
  for (layers::Parameter* p : layer.parameters()) p->name = name + p->name;
}

}  // namespace

TransformerLM::TransformerLM(const Backend& b, const TransformerOptions& options, std::uint64_t seed)
    : options_(options) {
  check(options);
  Generator gen(seed);
  const layers::ParameterOptions params{options.dtype, layers::Init::kaiming_uniform};
  const std::int64_t d = options.d_model;
  tok_emb_ = std::make_unique<layers::Embedding>(b, gen, options.vocab, d, std::nullopt, params);
  pos_emb_ = std::make_unique<layers::Embedding>(b, gen, options.context, d, std::nullopt, params);
  prefix(*tok_emb_, "tok_emb.");
  prefix(*pos_emb_, "pos_emb.");
  for (std::int64_t i = 0; i < options.layers; ++i) {
    auto attention = std::make_unique<layers::Sequential>();
    attention->emplace<layers::LayerNorm>(b, std::vector<std::int64_t>{d}, 1e-5, true, options.dtype);
    attention->emplace<layers::MultiheadAttention>(b, gen, d, options.heads, true, true, params);
    auto mlp = std::make_unique<layers::Sequential>();
    mlp->emplace<layers::LayerNorm>(b, std::vector<std::int64_t>{d}, 1e-5, true, options.dtype);
    mlp->emplace<layers::Linear>(b, gen, d, options.mlp, true, params);
    mlp->emplace<layers::GELU>();
    mlp->emplace<layers::Linear>(b, gen, options.mlp, d, true, params);
    auto block = std::make_unique<layers::Sequential>();
    block->emplace<layers::Residual>(std::move(attention));
    block->emplace<layers::Residual>(std::move(mlp));
    prefix(*block, "blocks." + std::to_string(i) + ".");
    blocks_.push_back(std::move(block));
  }
  ln_f_ = std::make_unique<layers::LayerNorm>(b, std::vector<std::int64_t>{d}, 1e-5, true, options.dtype);
  head_ = std::make_unique<layers::Linear>(b, gen, d, options.vocab, true, params);
  prefix(*ln_f_, "ln_f.");
  prefix(*head_, "head.");
  std::vector<std::int64_t> positions(static_cast<std::size_t>(options.context));
  for (std::size_t t = 0; t < positions.size(); ++t) positions[t] = static_cast<std::int64_t>(t);
  positions_ = Tensor::from(positions, Layout{options.context});
}

std::string TransformerLM::describe() const {
  return "TransformerLM(vocab " + std::to_string(options_.vocab) + ", context " + std::to_string(options_.context) +
         ", d_model " + std::to_string(options_.d_model) + ", heads " + std::to_string(options_.heads) +
         ", layers " + std::to_string(options_.layers) + ")";
}

Layout TransformerLM::output_shape(const Layout& tokens) const {
  if (tokens.rank() != 2 || tokens.dim(1) < 1 || tokens.dim(1) > options_.context)
    bad_input(tokens, "[B, T] with 1 <= T <= " + std::to_string(options_.context));
  return Layout{tokens.dim(0), tokens.dim(1), options_.vocab};
}

std::vector<layers::Parameter*> TransformerLM::parameters() {
  std::vector<layers::Parameter*> all;
  auto take = [&](layers::Layer& layer) {
    for (layers::Parameter* p : layer.parameters()) all.push_back(p);
  };
  take(*tok_emb_);
  take(*pos_emb_);
  for (auto& block : blocks_) take(*block);
  take(*ln_f_);
  take(*head_);
  return all;
}

void TransformerLM::train(bool on) {
  Layer::train(on);
  for (layers::Layer* layer : {static_cast<layers::Layer*>(tok_emb_.get()), static_cast<layers::Layer*>(pos_emb_.get()),
                               static_cast<layers::Layer*>(ln_f_.get()), static_cast<layers::Layer*>(head_.get())})
    layer->train(on);
  for (auto& block : blocks_) block->train(on);
}

Tensor TransformerLM::forward(const Backend& b, const Tensor& tokens) {
  const Layout y_shape = require_input(tokens);
  const std::int64_t t = tokens.layout().dim(1);
  // [B, T, d] + [T, d]: the positions broadcast over the batch.
  Tensor h = add(b, tok_emb_->forward(b, tokens), pos_emb_->forward(b, positions_.slice(0, 0, t)));
  for (auto& block : blocks_) h = block->forward(b, h);
  Tensor logits = head_->forward(b, ln_f_->forward(b, h));
  y_shape_ = y_shape;
  saved_ = true;
  return logits;
}

Tensor TransformerLM::backward(const Backend& b, const Tensor& dlogits) {
  require_backward(saved_, dlogits, y_shape_);
  Tensor dh = ln_f_->backward(b, head_->backward(b, dlogits));
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) dh = (*it)->backward(b, dh);
  (void)tok_emb_->backward(b, dh);
  (void)pos_emb_->backward(b, sum(b, dh, {{0}}));  // each position's rows, summed over the batch
  saved_ = false;
  return Tensor{};
}

std::vector<std::int64_t> TransformerLM::generate(const Backend& b, std::vector<std::int64_t> prompt,
                                                  std::int64_t count, double temperature, std::uint64_t seed) {
  if (prompt.empty() || count < 0 || !(temperature >= 0))
    throw Error(ErrorCode::invalid_argument, describe() + ": generate needs a prompt of at least one token, a count "
                                                          "of at least 0 and a temperature of at least 0");
  Generator gen(seed);
  const std::vector<double> u = uniform(Backend::native(), Layout{count}, f64, gen).to_vector<double>();
  const bool was_training = training();
  train(false);
  for (std::int64_t k = 0; k < count; ++k) {
    const std::int64_t t = std::min<std::int64_t>(static_cast<std::int64_t>(prompt.size()), options_.context);
    const std::vector<std::int64_t> window(prompt.end() - t, prompt.end());
    const Tensor logits = forward(b, Tensor::from(window, Layout{1, t}));
    const std::vector<double> last = cast(b, logits.slice(1, t - 1, t), f64).to_vector<double>();
    saved_ = false;
    const auto best = std::max_element(last.begin(), last.end());
    std::int64_t next = best - last.begin();
    if (temperature > 0) {
      // Inverse transform sampling of softmax(last / temperature).
      std::vector<double> weights(last.size());
      double total = 0;
      for (std::size_t v = 0; v < last.size(); ++v) total += weights[v] = std::exp((last[v] - *best) / temperature);
      double target = u[static_cast<std::size_t>(k)] * total;
      for (std::size_t v = 0; v < weights.size(); ++v) {
        next = static_cast<std::int64_t>(v);
        if ((target -= weights[v]) < 0) break;
      }
    }
    prompt.push_back(next);
  }
  train(was_training);
  return std::vector<std::int64_t>(prompt.end() - count, prompt.end());
}

}  // namespace xylem::models
