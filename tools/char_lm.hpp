#pragma once
// Training a character-level transformer language model on a text corpus
// (Debian's fortunes by default): the implementation behind `xylem lm`.
#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xylem::cli {

struct LmOptions {
  std::string backend;            // "native", "opencl", "cuda:0", "best"; empty: Backend::best()
  std::int64_t steps = 500;       // optimizer steps
  std::uint64_t seed = 1;         // weights, batches and the sampled text
  std::int64_t batch = 32;        // windows per step
  std::int64_t context = 64;      // tokens per window
  std::int64_t d_model = 128;     // the model's width
  std::int64_t heads = 4;         // attention heads
  std::int64_t layers = 2;        // transformer blocks
  double lr = 3e-3;               // AdamW's learning rate
  std::int64_t eval_every = 100;  // steps between validation losses; 0: at the start and the end only
  std::int64_t eval_batches = 4;  // validation batches (the same windows every time)
  std::int64_t sample = 300;      // characters generated after training; 0: none
  double temperature = 0.8;       // of the sampling; 0: the most likely character
  std::filesystem::path data;     // the corpus directory; empty: /usr/share/games/fortunes
  std::filesystem::path curve;    // an SVG of the training and validation losses; empty: none
};

struct LmResult {
  std::vector<double> losses;                                // the training loss of each step, before its update
  std::vector<std::pair<std::int64_t, double>> validation;   // (steps done, validation loss)
  double tokens_per_second = 0;                              // training tokens over the training time
  std::string sample;                                        // the generated text
};

// The help text of the options parse_lm_options reads.
extern const std::string_view kLmHelp;

// The options in `args`; throws xylem::Error (invalid_argument) naming a bad one.
[[nodiscard]] LmOptions parse_lm_options(std::span<const std::string_view> args);

// Trains as `options` say, reporting progress, validation losses and the
// sampled text to `out` (a progress bar when `terminal`).
LmResult train_char_lm(const LmOptions& options, std::ostream& out, bool terminal);

}  // namespace xylem::cli
