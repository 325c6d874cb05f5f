#pragma once
// Training a small CNN on Fashion-MNIST: the one implementation behind
// `xylem train` and examples/fashion_mnist.cpp.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/layers.hpp"

namespace xylem::cli {

struct TrainOptions {
  std::string backend;                 // "native", "opencl:0"; empty: Backend::best()
  int epochs = 8;                      // passes over the training images
  std::int64_t batch = 64;             // images per step, over all ranks
  std::int64_t bucket_kib = 64;        // gradient bucket size when several ranks train
  std::uint64_t seed = 1;              // initial weights and shuffling
  std::int64_t limit = 0;              // the first `limit` training and test images; 0: all
  double lr = 1e-3;                    // Adam's learning rate
  std::filesystem::path data;          // the data set's directory; empty: FashionMnist's default
  std::filesystem::path curve;         // an SVG of the loss and accuracies per epoch; empty: none
  std::filesystem::path save;          // the trained weights as safetensors; empty: none
  std::filesystem::path load;          // weights to start from (safetensors, PyTorch's names); empty: seeded
  std::filesystem::path logits;        // the trained model's logits of the first test images; empty: none
  std::int64_t logit_images = 256;     // how many test images `logits` covers
  bool capture = false;                // forward and backward of a step replayed from a captured graph
};

struct EpochResult {
  int epoch = 0;                 // from 1
  double loss = 0;               // mean training loss over the epoch
  double train_accuracy = 0;     // percent, over the epoch's training batches
  double test_accuracy = 0;      // percent, the model in evaluation mode after the epoch
  double seconds = 0;            // the epoch's training time (evaluation excluded)
  double samples_per_second = 0;
};

// The help text of the options parse_train_options reads.
extern const std::string_view kTrainHelp;

// The network `xylem train` trains (also timed by xylem_bench_multi_gpu):
// its layers, for a Sequential made where it lives (layers are neither
// copied nor moved), weights drawn from `seed`.
[[nodiscard]] std::vector<std::unique_ptr<layers::Layer>> fashion_mnist_layers(const Backend& b, std::uint64_t seed);

// The options in `args`; throws xylem::Error (invalid_argument) naming a bad one.
[[nodiscard]] TrainOptions parse_train_options(std::span<const std::string_view> args);

// Trains as `options` say, reporting progress and each epoch to `out`
// (a progress bar when `terminal`); returns the epochs' results. With no
// epochs it only evaluates the test set and reports the accuracy.
std::vector<EpochResult> train_fashion_mnist(const TrainOptions& options, std::ostream& out, bool terminal);

}  // namespace xylem::cli
