// Sequential: layers in order, their parameters named by index as PyTorch's
// nn.Sequential names them (the keys a saved model uses).
#include <string>

#include "xylem/layers.hpp"

namespace xylem::layers {

Sequential::Sequential(std::vector<std::unique_ptr<Layer>> layers) {
  for (auto& layer : layers) add(std::move(layer));
}

Sequential& Sequential::add(std::unique_ptr<Layer> layer) {
  if (!layer) throw Error(ErrorCode::invalid_argument, "Sequential::add: a null layer");
  const std::string prefix = std::to_string(layers_.size()) + ".";
  for (Parameter* p : layer->parameters()) p->name = prefix + p->name;
  for (Buffer* t : layer->buffers()) t->name = prefix + t->name;
  layer->train(training());
  layers_.push_back(std::move(layer));
  return *this;
}

std::string Sequential::describe() const {
  std::string s = "Sequential(";
  for (std::size_t i = 0; i < layers_.size(); ++i) s += (i ? ", " : "") + layers_[i]->describe();
  return s + ")";
}

Layout Sequential::output_shape(const Layout& x) const {
  Layout h = x;
  for (const auto& layer : layers_) h = layer->output_shape(h);
  return h;
}

// The whole chain's shapes are checked first, so a bad shape deep in the
// chain raises before any layer ran (no running statistics moved).
Tensor Sequential::forward(const Backend& b, const Tensor& x) {
  require_input(x);
  Tensor h = x;
  for (auto& layer : layers_) h = layer->forward(b, h);
  return h;
}

Tensor Sequential::backward(const Backend& b, const Tensor& dy) {
  Tensor g = dy;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) g = (*it)->backward(b, g);
  return g;
}

std::vector<Parameter*> Sequential::parameters() {
  std::vector<Parameter*> all;
  for (auto& layer : layers_)
    for (Parameter* p : layer->parameters()) all.push_back(p);
  return all;
}

std::vector<Buffer*> Sequential::buffers() {
  std::vector<Buffer*> all;
  for (auto& layer : layers_)
    for (Buffer* t : layer->buffers()) all.push_back(t);
  return all;
}

void Sequential::train(bool on) {
  Layer::train(on);
  for (auto& layer : layers_) layer->train(on);
}

}  // namespace xylem::layers
