#include "char_lm.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "commands.hpp"
#include "curve_svg.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "xylem/xylem.hpp"

namespace xylem::cli {

const std::string_view kLmHelp = R"(usage: xylem lm [options]

Trains a small decoder-only transformer (token and position embeddings,
pre-norm blocks of causal multi-head attention and a GELU MLP, an untied
head) to predict the next character of Debian's fortune cookies, with AdamW
on the cross-entropy loss. Prints the training loss and tokens/s, the
validation loss at intervals, and finally text the model writes.

options:
  --backend SPEC     native, opencl, cuda, best, or a device: opencl:0 (default: best)
  --steps N          optimizer steps (default 500)
  --seed N           weights, batches and the sampled text (default 1)
  --batch N          windows per step (default 32)
  --context N        characters per window (default 64)
  --d-model N        the model's width (default 128)
  --heads N          attention heads, dividing the width (default 4)
  --layers N         transformer blocks (default 2)
  --lr X             AdamW's learning rate (default 0.003)
  --eval-every N     steps between validation losses (default 100; 0: start and end)
  --eval-batches N   validation batches, the same windows each time (default 4)
  --sample N         characters to generate after training (default 300)
  --temperature X    of the sampling; 0 takes the most likely character (default 0.8)
  --data DIR         the corpus: text files separated by lines of "%"
                     (default /usr/share/games/fortunes, Debian's package fortunes)
  --curve FILE       write the training and validation losses as an SVG chart
)";

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Backend open_backend(const std::string& spec) {
  return spec.empty() || spec == "best" ? Backend::best() : Backend::open(spec);
}

// The loss of logits [B, T, V] against targets [B, T]: cross-entropy over
// the B*T positions, its gradient back in the logits' shape.
layers::Loss next_token_loss(const Backend& b, const Tensor& logits, const Tensor& targets) {
  const Layout& shape = logits.layout();
  const std::int64_t rows = shape.dim(0) * shape.dim(1);
  layers::Loss loss =
      layers::cross_entropy(b, logits.reshape({rows, shape.dim(2)}), targets.reshape({rows}));
  loss.grad = loss.grad.reshape({shape.dim(0), shape.dim(1), shape.dim(2)});
  return loss;
}

double validation_loss(const Backend& b, models::TransformerLM& model, const std::vector<data::TokenBatch>& batches) {
  model.train(false);
  double total = 0;
  for (const data::TokenBatch& batch : batches)
    total += cast(b, next_token_loss(b, model.forward(b, batch.inputs), batch.targets).value, f64)
                 .to_vector<double>()[0];
  model.train(true);
  return total / static_cast<double>(batches.size());
}

void write_curve(const std::filesystem::path& path, const LmResult& r) {
  CurveSeries train{"training", "#d62728", {}, {}}, validation{"validation", "#2ca02c", {}, {}};
  for (std::size_t s = 0; s < r.losses.size(); ++s) {
    train.x.push_back(static_cast<double>(s));
    train.y.push_back(r.losses[s]);
  }
  for (const auto& [step, loss] : r.validation) {
    validation.x.push_back(static_cast<double>(step));
    validation.y.push_back(loss);
  }
  write_curve_svg(path, {{"cross-entropy (nats per character) per step", {train, validation}}});
}

}  // namespace

LmOptions parse_lm_options(std::span<const std::string_view> args) {
  LmOptions o;
  auto number = [](auto name, auto text, auto low) { return option_number("lm", name, text, low); };
  const std::map<std::string_view, OptionSetter> setters{
      {"--backend", [&](auto, auto v) { o.backend = v; }},
      {"--steps", [&](auto n, auto v) { o.steps = number(n, v, std::int64_t{0}); }},
      {"--seed", [&](auto n, auto v) { o.seed = number(n, v, std::uint64_t{0}); }},
      {"--batch", [&](auto n, auto v) { o.batch = number(n, v, std::int64_t{1}); }},
      {"--context", [&](auto n, auto v) { o.context = number(n, v, std::int64_t{1}); }},
      {"--d-model", [&](auto n, auto v) { o.d_model = number(n, v, std::int64_t{1}); }},
      {"--heads", [&](auto n, auto v) { o.heads = number(n, v, std::int64_t{1}); }},
      {"--layers", [&](auto n, auto v) { o.layers = number(n, v, std::int64_t{1}); }},
      {"--lr", [&](auto n, auto v) { o.lr = number(n, v, 0.0); }},
      {"--eval-every", [&](auto n, auto v) { o.eval_every = number(n, v, std::int64_t{0}); }},
      {"--eval-batches", [&](auto n, auto v) { o.eval_batches = number(n, v, std::int64_t{1}); }},
      {"--sample", [&](auto n, auto v) { o.sample = number(n, v, std::int64_t{0}); }},
      {"--temperature", [&](auto n, auto v) { o.temperature = number(n, v, 0.0); }},
      {"--data", [&](auto, auto v) { o.data = v; }},
      {"--curve", [&](auto, auto v) { o.curve = v; }},
  };
  parse_options("lm", args, setters, {}, [](auto) {});
  return o;
}

LmResult train_char_lm(const LmOptions& options, std::ostream& out, bool terminal) {
  const Backend b = open_backend(options.backend);
  const data::TextCorpus corpus(options.data);
  models::TransformerOptions shape;
  shape.vocab = corpus.vocab_size();
  shape.context = options.context;
  shape.d_model = options.d_model;
  shape.heads = options.heads;
  shape.layers = options.layers;
  shape.mlp = 4 * options.d_model;
  models::TransformerLM model(b, shape, options.seed);
  std::int64_t weights = 0;
  for (const layers::Parameter* p : model.parameters()) weights += p->value.numel();
  out << "lm: " << b.id() << " (" << b.hardware().name << "), " << corpus.documents() << " documents from "
      << corpus.directory().string() << ": " << corpus.tokens(data::TextPart::train).size() << " training and "
      << corpus.tokens(data::TextPart::validation).size() << " validation characters, vocabulary "
      << corpus.vocab_size() << "\nlm: " << model.describe() << ", " << weights << " weights\n";

  optim::AdamOptions adam = optim::AdamW::defaults();
  adam.lr = options.lr;
  optim::AdamW optimizer(model, adam);
  data::TokenSampler sampler(corpus, data::TextPart::train, options.batch, options.context, options.seed);
  data::TokenSampler held_out(corpus, data::TextPart::validation, options.batch, options.context, options.seed + 1);
  std::vector<data::TokenBatch> validation;
  for (std::int64_t k = 0; k < options.eval_batches; ++k) validation.push_back(held_out.next());

  LmResult r;
  auto evaluate = [&](std::int64_t done) {
    r.validation.emplace_back(done, validation_loss(b, model, validation));
    char line[120];
    std::snprintf(line, sizeof line, "lm: step %lld: validation loss %.4f\n", static_cast<long long>(done),
                  r.validation.back().second);
    out << line << std::flush;
  };
  evaluate(0);
  ProgressBar bar(out, terminal, "lm", 0.2, 5);
  const std::int64_t tokens_per_step = options.batch * options.context;
  const auto start = std::chrono::steady_clock::now();
  // The loss of a step is read after the next one is enqueued, so that
  // reading it does not leave the device idle.
  Tensor pending;
  auto settle = [&] {
    r.losses.push_back(cast(b, pending, f64).to_vector<double>()[0]);
    const auto done = static_cast<std::int64_t>(r.losses.size());
    r.tokens_per_second = static_cast<double>(done * tokens_per_step) / seconds_since(start);
    char text[120];
    std::snprintf(text, sizeof text, "step %lld/%lld: loss %.4f, %.0f tokens/s", static_cast<long long>(done),
                  static_cast<long long>(options.steps), r.losses.back(), r.tokens_per_second);
    bar.update(done, options.steps, text);
  };
  for (std::int64_t step = 0; step < options.steps; ++step) {
    const data::TokenBatch batch = sampler.next();
    const layers::Loss loss = next_token_loss(b, model.forward(b, batch.inputs), batch.targets);
    (void)model.backward(b, loss.grad);
    optimizer.step(b);
    optimizer.zero_grad();
    if (pending.defined()) settle();
    pending = loss.value;
    if (options.eval_every > 0 && (step + 1) % options.eval_every == 0 && step + 1 < options.steps) {
      settle();
      pending = Tensor{};
      evaluate(step + 1);
    }
  }
  if (pending.defined()) settle();
  if (options.steps > 0) evaluate(options.steps);
  if (!options.curve.empty()) write_curve(options.curve, r);
  if (options.sample > 0) {
    const std::vector<std::int64_t> ids =
        model.generate(b, corpus.encode("\n"), options.sample, options.temperature, options.seed);
    r.sample = corpus.decode(ids);
    out << "lm: sampled at temperature " << options.temperature << ":\n" << r.sample << "\n" << std::flush;
  }
  return r;
}

int lm(std::span<const std::string_view> args) {
  if (wants_help(args, kLmHelp)) return 0;
  train_char_lm(parse_lm_options(args), std::cout, ProgressBar::stdout_is_terminal());
  return 0;
}

}  // namespace xylem::cli
