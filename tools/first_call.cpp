// `xylem first-call`: how long the first call of a few common ops takes on a
// backend, from the call to the host read that waits for its result. On
// OpenCL with an empty cache that is mostly building the op's program; with
// a warm cache (`xylem warm`), loading it.
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "xylem/xylem.hpp"

namespace xylem::cli {
namespace {

constexpr std::string_view kHelp = R"(usage: xylem first-call [--backend SPEC] [OP...]

Times the first call of each OP (default: sigmoid add sum softmax gemm), f32,
on SPEC (default: opencl:0), including the host read that waits for the
result, and prints seconds per op. Opening the backend is not counted. Run it
with empty caches to see a cold start:
  XYLEM_CACHE_DIR=$(mktemp -d) POCL_CACHE_DIR=$(mktemp -d) xylem first-call
An op timed after another that shares its program shows only its launch;
name one OP per process to time each alone.
)";

struct FirstCall {
  std::string_view name;
  // Enqueues the op on small f32 inputs and reads the result back.
  std::function<void(const Backend&)> run;
};

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 97) / 97.0f - 0.5f;
  return v;
}

const std::vector<FirstCall>& first_calls() {
  static const std::vector<FirstCall> calls = {
      {"sigmoid",
       [](const Backend& b) { (void)nn::sigmoid(b, Tensor::from(ramp(4096))).to_vector<float>(); }},
      {"add",
       [](const Backend& b) {
         (void)add(b, Tensor::from(ramp(4096)), Tensor::from(ramp(4096))).to_vector<float>();
       }},
      {"sum", [](const Backend& b) { (void)sum(b, Tensor::from(ramp(4096))).to_vector<float>(); }},
      {"softmax",
       [](const Backend& b) {
         (void)nn::softmax(b, Tensor::from(ramp(64 * 64), Layout{64, 64}), -1).to_vector<float>();
       }},
      {"gemm",
       [](const Backend& b) {
         const Tensor a = Tensor::from(ramp(64 * 64), Layout{64, 64});
         Tensor c(Layout{64, 64}, f32);
         blas::gemm(b, blas::Transpose::no, blas::Transpose::no, 1.0, a, a, 0.0, c);
         (void)c.to_vector<float>();
       }},
  };
  return calls;
}

}  // namespace

int first_call(std::span<const std::string_view> args) {
  if (wants_help(args, kHelp)) return 0;
  std::string spec = "opencl:0";
  std::vector<const FirstCall*> chosen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--backend" && i + 1 < args.size()) {
      spec = std::string(args[++i]);
      continue;
    }
    const FirstCall* found = nullptr;
    for (const FirstCall& call : first_calls())
      if (call.name == args[i]) found = &call;
    if (!found) {
      std::cerr << "xylem first-call: unknown op or argument '" << args[i] << "'\n" << kHelp;
      return 1;
    }
    chosen.push_back(found);
  }
  if (chosen.empty())
    for (const FirstCall& call : first_calls()) chosen.push_back(&call);
  const Backend backend = Backend::open(spec);
  std::cout << "first-call: backend " << backend << "\n";
  double total = 0;
  for (const FirstCall* call : chosen) {
    const auto start = std::chrono::steady_clock::now();
    call->run(backend);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    total += seconds;
    std::printf("first-call: %-8.*s %7.3f s\n", static_cast<int>(call->name.size()), call->name.data(), seconds);
  }
  std::printf("first-call: total    %7.3f s\n", total);
  return 0;
}

}  // namespace xylem::cli
