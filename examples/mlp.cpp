// Trains a small multilayer perceptron on generated data with xylem's ops,
// on every backend present (or those named on the command line), and checks
// that each reaches the same loss.
//
//   xylem_example_mlp                 every framework with hardware
//   xylem_example_mlp native cuda:0   these backends
//
// The data and the initial weights come from xylem's counter-based
// generator, which draws the same numbers on every backend, so the runs
// differ only by rounding. A teacher network labels the points; the
// student (16 -> 64 -> relu -> 4) learns them by full-batch SGD on the
// cross-entropy loss.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <xylem/xylem.hpp>

namespace {

using xylem::Backend;
using xylem::Layout;
using xylem::Tensor;
namespace nn = xylem::nn;

constexpr std::int64_t kSamples = 1024, kInputs = 16, kHidden = 64, kClasses = 4;
constexpr int kSteps = 200;
constexpr double kLearningRate = 0.5;

struct Layer {
  Tensor w, b;    // [out, in], [out]
  Tensor dw, db;  // gradients, same shapes
};

Layer make_layer(const Backend& be, xylem::Generator& gen, std::int64_t in, std::int64_t out) {
  const double bound = 1.0 / std::sqrt(double(in));  // PyTorch's default initialisation range
  return {xylem::uniform(be, Layout{out, in}, xylem::f32, gen, -bound, bound),
          xylem::uniform(be, Layout{out}, xylem::f32, gen, -bound, bound), Tensor(Layout{out, in}, xylem::f32),
          Tensor(Layout{out}, xylem::f32)};
}

// p -= lr * dp, through blas::axpy on the flattened parameter.
void sgd(const Backend& be, Tensor& p, const Tensor& dp) {
  Tensor flat = p.reshape({p.numel()});
  xylem::blas::axpy(be, -kLearningRate, dp.reshape({dp.numel()}), flat);
}

float value(const Tensor& scalar) { return scalar.to_vector<float>().at(0); }

// Returns the loss after each 50 steps (the last one is the final loss).
std::vector<float> train(const Backend& be) {
  xylem::Generator gen(2024);
  // Inputs, and the teacher's labels: argmax of a random linear map.
  const Tensor x = xylem::uniform(be, Layout{kSamples, kInputs}, xylem::f32, gen, -2, 2);
  const Tensor teacher = xylem::uniform(be, Layout{kClasses, kInputs}, xylem::f32, gen, -1, 1);
  Tensor teacher_logits(Layout{kSamples, kClasses}, xylem::f32);
  nn::linear(be, x, teacher, Tensor{}, teacher_logits);
  const Tensor labels = xylem::argmax(be, teacher_logits, {{1}});

  Layer l1 = make_layer(be, gen, kInputs, kHidden);
  Layer l2 = make_layer(be, gen, kHidden, kClasses);
  Tensor h(Layout{kSamples, kHidden}, xylem::f32), a(h.layout(), xylem::f32);
  Tensor logits(Layout{kSamples, kClasses}, xylem::f32), dlogits(logits.layout(), xylem::f32);
  Tensor da(h.layout(), xylem::f32), dh(h.layout(), xylem::f32), none;

  std::vector<float> losses;
  for (int step = 1; step <= kSteps; ++step) {
    // Forward.
    nn::linear(be, x, l1.w, l1.b, h);
    nn::relu(be, h, a);
    nn::linear(be, a, l2.w, l2.b, logits);
    const Tensor loss = nn::cross_entropy(be, logits, labels);
    // Backward.
    nn::cross_entropy_grad(be, logits, labels, dlogits);
    nn::linear_grad(be, a, l2.w, dlogits, da, l2.dw, l2.db);
    nn::relu_grad(be, h, da, dh);
    nn::linear_grad(be, x, l1.w, dh, none, l1.dw, l1.db);
    // Update.
    for (Layer* l : {&l1, &l2}) {
      sgd(be, l->w, l->dw);
      sgd(be, l->b, l->db);
    }
    if (step == 1 || step % 50 == 0) losses.push_back(value(loss));  // reading waits for this step only
  }
  return losses;
}

std::vector<std::string> every_backend() {
  std::vector<std::string> specs;
  for (const auto& f : Backend::frameworks())
    for (std::size_t i = 0; f.available && i < f.hardware.size(); ++i) specs.push_back(f.name + ":" + std::to_string(i));
  return specs;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> specs(argv + 1, argv + argc);
  if (specs.empty()) specs = every_backend();
  std::vector<float> reference;
  std::string reference_name;
  bool ok = true;
  for (const auto& spec : specs) {
    try {
      const Backend be = Backend::open(spec);
      const std::vector<float> losses = train(be);
      std::printf("%-10s loss: ", be.id().c_str());
      for (float l : losses) std::printf("%.5f ", double(l));
      const float first = losses.front(), last = losses.back();
      const bool learned = last < 0.5f * first;
      std::printf("%s\n", learned ? "" : "(did not learn)");
      ok = ok && learned;
      if (reference.empty()) {
        reference = losses;
        reference_name = be.id();
      } else if (std::fabs(last - reference.back()) > 1e-3f * std::max(1.0f, reference.back())) {
        std::printf("  final loss differs from %s's %.6f\n", reference_name.c_str(), double(reference.back()));
        ok = false;
      }
    } catch (const xylem::Error& e) {
      std::printf("%-10s %s\n", spec.c_str(), e.what());
      ok = false;
    }
  }
  std::printf(ok ? "same loss on every backend\n" : "FAILED\n");
  return ok ? 0 : 1;
}
