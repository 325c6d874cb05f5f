// Embedding: rows of a table at integer indices (nn::embedding), the
// gradient scattered back into the rows (nn::embedding_backward).
#include <string>

#include "xylem/index.hpp"
#include "xylem/layers.hpp"

namespace xylem::layers {

Embedding::Embedding(const Backend& b, Generator& gen, std::int64_t num_embeddings, std::int64_t dim,
                     std::optional<std::int64_t> padding_idx, const ParameterOptions& options)
    : num_(num_embeddings), dim_(dim), padding_(padding_idx) {
  if (num_embeddings < 0 || dim < 0)
    throw Error(ErrorCode::invalid_argument, "Embedding(" + std::to_string(num_embeddings) + ", " +
                                                 std::to_string(dim) + "): negative size");
  if (padding_ && (*padding_ < -num_ || *padding_ >= num_))
    throw Error(ErrorCode::invalid_argument, describe() + ": padding_idx " + std::to_string(*padding_) +
                                                 " is outside [-" + std::to_string(num_) + ", " +
                                                 std::to_string(num_) + ")");
  if (padding_ && *padding_ < 0) padding_ = *padding_ + num_;
  weight = {"weight", normal(b, Layout{num_embeddings, dim}, options.dtype, gen), {}};
  if (padding_) {
    Tensor row = weight.value.slice(0, *padding_, *padding_ + 1);
    fill(b, row, 0.0);
  }
}

std::string Embedding::describe() const {
  return "Embedding(" + std::to_string(num_) + ", " + std::to_string(dim_) +
         (padding_ ? ", padding_idx=" + std::to_string(*padding_) : "") + ")";
}

std::vector<Parameter*> Embedding::parameters() { return {&weight}; }

Layout Embedding::output_shape(const Layout& x) const {
  if (x.rank() >= kMaxRank) bad_input(x, "indices of rank below " + std::to_string(kMaxRank));
  std::vector<std::int64_t> dims(x.dims().begin(), x.dims().end());
  dims.push_back(dim_);
  return Layout(std::span<const std::int64_t>(dims));
}

Tensor Embedding::forward(const Backend& b, const Tensor& x) {
  const Layout y_shape = require_input(x);
  Tensor y = nn::embedding(b, weight.value, x);
  x_ = x;
  y_shape_ = y_shape;
  return y;
}

Tensor Embedding::backward(const Backend& b, const Tensor& dy) {
  require_backward(x_.defined(), dy, y_shape_);
  if (weight.grad.defined()) {
    nn::embedding_backward_into(b, dy, x_, weight.grad, padding_);
  } else {
    weight.grad = nn::embedding_backward(b, dy, x_, num_, padding_);
  }
  x_ = Tensor{};
  return Tensor{};
}

}  // namespace xylem::layers
