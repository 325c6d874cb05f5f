// xylem: inspect the frameworks on this machine, run the demo, warm the
// kernel cache, train on Fashion-MNIST, train a character language model,
// tune the ops with choices.
#include <iostream>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "xylem/error.hpp"

namespace {

constexpr std::string_view kUsage = R"(usage: xylem <command> [options]

Runs tensor computations on the host CPU, OpenCL devices and NVIDIA GPUs.

commands:
  info        list frameworks (present, or absent with the reason) and their hardware
  demo        run the sigmoid example on the best backend and on native, timing each step
  warm        build every OpenCL kernel program ahead of time into the cache
  train       train a small CNN on Fashion-MNIST, printing the accuracy per epoch
  lm          train a small transformer on Debian's fortunes, then let it write
  first-call  time the first call of common ops (a cold start with empty caches)
  tune        measure the ops' choices (kernel tiles, algorithms) and cache the fastest

options:
  -h, --help   show help (also after a command: xylem demo --help)

environment:
  XYLEM_BACKEND       override the best backend: native, opencl:0, cuda:1, ...
  XYLEM_PLUGIN_PATH   colon-separated directories searched for plugins first
  XYLEM_CACHE_DIR     where compiled kernels and tuned choices are cached (default: ~/.cache/xylem)
  XYLEM_TUNE          1: measure the choices of each new shape class on first use
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 1 : 0;
  }
  const std::string_view command = args[0];
  const std::span<const std::string_view> rest(args.data() + 1, args.size() - 1);
  try {
    if (command == "info") return xylem::cli::info(rest);
    if (command == "demo") return xylem::cli::demo(rest);
    if (command == "warm") return xylem::cli::warm(rest);
    if (command == "train") return xylem::cli::train(rest);
    if (command == "lm") return xylem::cli::lm(rest);
    if (command == "first-call") return xylem::cli::first_call(rest);
    if (command == "tune") return xylem::cli::tune(rest);
  } catch (const xylem::Error& e) {
    std::cerr << "xylem " << command << ": " << e.what() << "\n";
    return 2;
  }
  std::cerr << "xylem: unknown command '" << command << "'\n\n" << kUsage;
  return 1;
}
