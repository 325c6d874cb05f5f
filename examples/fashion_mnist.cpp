// Trains a small convolutional network on Fashion-MNIST and prints the test
// accuracy after each epoch: the same program as `xylem train` (see
// tools/fashion_mnist.cpp for the model and the training loop).
//
//   xylem_example_fashion_mnist --epochs 8 --curve curve.svg --save weights.safetensors
//   xylem_example_fashion_mnist --backend opencl:0 --limit 2048 --epochs 1
#include <iostream>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "xylem/error.hpp"

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  try {
    return xylem::cli::train(args);
  } catch (const xylem::Error& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 2;
  }
}
