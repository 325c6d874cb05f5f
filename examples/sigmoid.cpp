// The Parenchyma example: the sigmoid of four numbers on the best backend
// present (CUDA, then OpenCL GPUs, then the host; XYLEM_BACKEND overrides).
#include <iostream>
#include <vector>

#include <xylem/xylem.hpp>

int main() {
  try {
    auto backend = xylem::Backend::best();
    std::vector<double> data{3.5, 12.4, 0.5, 6.5};
    auto x = xylem::Tensor::from(data);                // lives on the host until used elsewhere
    xylem::Tensor result(xylem::Layout{4}, xylem::f64);  // no memory yet
    xylem::nn::sigmoid(backend, x, result);            // moves x where needed, enqueues, returns
    std::cout << "on " << backend << ":\n" << result << "\n";
  } catch (const xylem::Error& e) {
    std::cerr << "xylem: " << e.what() << "\n";
    return 1;
  }
}
