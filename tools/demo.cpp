// `xylem demo`: the Parenchyma README example, on the best backend and on
// native, with the time of each step.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <string>

#include "commands.hpp"
#include "xylem/xylem.hpp"

namespace xylem::cli {
namespace {

constexpr std::string_view kHelp = R"(usage: xylem demo [--backend SPEC]

Computes sigmoid([3.5, 12.4, 0.5, 6.5]) on the best backend (or SPEC: native,
opencl:0, cuda:0, ...) and on native, printing the result and how long each
step took: choosing the backend, wrapping host data, declaring the output,
enqueuing sigmoid (returns before the work is done), and reading back.
)";

class StepTimer {
 public:
  template <class F>
  auto step(const char* what, F&& fn) {
    const auto start = std::chrono::steady_clock::now();
    auto result = fn();
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    std::cout << "  " << std::left << std::setw(40) << what << std::right << std::setw(10) << std::fixed
              << std::setprecision(1) << took.count() << " us\n";
    return result;
  }
};

void run_example(const std::string& label, const std::function<Backend()>& choose) {
  std::cout << label << "\n";
  StepTimer timer;
  Backend backend = timer.step("choose backend", choose);
  std::cout << "  backend: " << backend << "\n";
  std::vector<double> data{3.5, 12.4, 0.5, 6.5};
  Tensor x = timer.step("Tensor::from (host data)", [&] { return Tensor::from(data); });
  Tensor result = timer.step("Tensor(Layout{4}, f64): no memory yet", [] { return Tensor(Layout{4}, f64); });
  timer.step("nn::sigmoid: sync x, enqueue, return", [&] {
    nn::sigmoid(backend, x, result);
    return 0;
  });
  auto values = timer.step("read back (waits for the result)", [&] { return result.to_vector<double>(); });
  (void)values;
  std::cout << "  " << result << "\n";
  std::cout << "  transfers of x: " << x.transfers() << ", of result: " << result.transfers() << "\n";
}

}  // namespace

int demo(std::span<const std::string_view> args) {
  if (wants_help(args, kHelp)) return 0;
  std::string spec;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--backend" && i + 1 < args.size()) {
      spec = std::string(args[++i]);
    } else {
      std::cerr << "xylem demo: unexpected argument '" << args[i] << "'\n" << kHelp;
      return 1;
    }
  }
  run_example(spec.empty() ? "best backend" : "backend " + spec,
              [&] { return spec.empty() ? Backend::best() : Backend::open(spec); });
  run_example("native", [] { return Backend::native(); });
  return 0;
}

}  // namespace xylem::cli
