#include "fashion_mnist.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "curve_svg.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "xylem/xylem.hpp"

namespace xylem::cli {

const std::string_view kTrainHelp = R"(usage: xylem train [options]

Trains a small convolutional network on Fashion-MNIST (conv 1->32, batch
norm, relu, max pool; conv 32->64, batch norm, relu, max pool; linear to
the 10 classes) with Adam on the cross-entropy loss, printing the loss and
the training and test accuracy after each epoch.

Under `mpirun -np N` the N processes train one model data-parallel: each
takes its shard of every batch, the gradients are averaged over the
processes in buckets while the backward pass runs, and only rank 0 prints
and writes files. --batch is the global batch, split among the ranks.
Batch normalisation uses each rank's shard's statistics.

options:
  --backend SPEC   native, opencl:0, cuda:0, ... (default: the best present)
  --epochs N       passes over the training images (default 8)
  --batch N        images per step, over all ranks (default 64)
  --bucket-kib N   gradient bucket size under mpirun, in KiB (default 64)
  --seed N         initial weights and shuffling (default 1)
  --limit N        use only the first N training and test images (default: all)
  --lr X           Adam's learning rate (default 0.001)
  --data DIR       the directory of the four IDX files (default: $XYLEM_DATA_DIR,
                   else /usr/share/datasets/fashion-mnist)
  --curve FILE     write the loss and accuracy per epoch as an SVG chart
  --save FILE      write the trained weights as safetensors, named as
                   PyTorch's nn.Sequential names them ("0.weight", ...)
  --load FILE      start from these weights (safetensors, the names, shapes
                   and dtypes --save writes, as PyTorch's state_dict has
                   them); with --epochs 0 only evaluates the test set
  --logits FILE    after training, write the logits of the first test images
                   (tensor "logits", [N, 10] f32, the model in evaluation
                   mode) as safetensors, to compare with another run's
  --logit-images N how many test images --logits covers (default 256)
  --capture        run each step's forward, loss and backward as a replay of a
                   graph captured at the first step of that batch size (the
                   batch is copied into the graph's inputs); Adam's update
                   stays eager, as its bias correction changes every step.
                   One rank only.
)";

namespace {

using layers::Sequential;

data::Split first(const data::Split& split, std::int64_t limit) {
  if (limit <= 0 || limit >= split.images.shape()[0]) return split;
  return {split.images.slice(0, 0, limit), split.labels.slice(0, 0, limit)};
}

// How many rows of logits [B, C] have their largest value at the label.
std::int64_t correct(const Tensor& logits, const std::vector<std::int64_t>& labels) {
  const std::vector<float> values = logits.to_vector<float>();
  const std::size_t classes = values.size() / labels.size();
  std::int64_t hits = 0;
  for (std::size_t row = 0; row < labels.size(); ++row) {
    const float* v = values.data() + row * classes;
    std::size_t best = 0;
    for (std::size_t c = 1; c < classes; ++c)
      if (v[c] > v[best]) best = c;
    hits += static_cast<std::int64_t>(best) == labels[row];
  }
  return hits;
}

// Test accuracy in percent, the model in evaluation mode. Under
// data-parallel training each rank evaluates its block of the test images
// (every rank holds the same weights) and the hits are summed, instead of
// every rank evaluating all of them.
double evaluate(const Backend& b, Sequential& model, const data::Split& test, std::int64_t batch,
                const parallel::DataParallel* ddp) {
  const std::int64_t rows = test.images.shape()[0];
  const parallel::Shard mine = ddp ? ddp->shard(rows) : parallel::Shard{0, rows, rows};
  model.train(false);
  data::BatchLoader loader({test.images.slice(0, mine.begin, mine.end), test.labels.slice(0, mine.begin, mine.end)},
                           batch, false, 0);
  double hits = 0;
  while (std::optional<data::Batch> next = loader.next())
    hits += static_cast<double>(correct(model.forward(b, next->images), next->labels.to_vector<std::int64_t>()));
  model.train(true);
  if (ddp) hits = ddp->communicator().all_reduce(Tensor::from(std::vector<double>{hits})).get().to_vector<double>()[0];
  return 100.0 * hits / static_cast<double>(rows);
}

// A step whose loss and logits are read one step later, so that reading
// them overlaps the next step's work instead of waiting for it.
struct Pending {
  Tensor loss, logits, labels;
};

// An epoch's training loss and accuracy so far, over this rank's shards.
struct Tally {
  double loss_sum = 0;  // each batch's mean loss times its size
  std::int64_t hits = 0, seen = 0;

  void add(const Pending& step) {
    const std::vector<std::int64_t> labels = step.labels.to_vector<std::int64_t>();
    const auto n = static_cast<std::int64_t>(labels.size());
    loss_sum += static_cast<double>(step.loss.to_vector<float>()[0]) * static_cast<double>(n);
    hits += correct(step.logits, labels);
    seen += n;
  }
  // Every rank's tally summed into each (collective).
  void combine(const dist::Communicator& world) {
    if (world.size() == 1) return;
    const Tensor sums = Tensor::from(
        std::vector<double>{loss_sum, static_cast<double>(hits), static_cast<double>(seen)});
    const std::vector<double> all = world.all_reduce(sums).get().to_vector<double>();
    loss_sum = all[0];
    hits = static_cast<std::int64_t>(all[1]);
    seen = static_cast<std::int64_t>(all[2]);
  }
  [[nodiscard]] double loss() const { return loss_sum / static_cast<double>(seen); }
  [[nodiscard]] double accuracy() const { return 100.0 * static_cast<double>(hits) / static_cast<double>(seen); }
};

// A training step's forward, loss and backward captured once per batch
// size (the last batch of an epoch may be smaller) and replayed: the batch
// is copied into the graph's input tensors, and the graph writes the same
// gradient tensors every time, which the parameters are pointed at before
// the optimizer's step.
class CapturedSteps {
 public:
  CapturedSteps(const Backend& b, Sequential& model) : b_(b), model_(model) {}

  // Runs the step on `images` and `labels`; returns the loss and logits of
  // this step (copies, so that the next replay does not overwrite them).
  std::pair<Tensor, Tensor> run(const Tensor& images, const Tensor& labels) {
    const std::int64_t rows = images.shape()[0];
    auto found = steps_.find(rows);
    if (found == steps_.end()) {
      Step s;
      s.images = contiguous(b_, images);
      s.labels = contiguous(b_, labels);
      model_.zero_grad();  // the backward then writes fresh gradients instead of adding
      s.graph = capture(b_, [&] {
        s.logits = model_.forward(b_, s.images);
        const layers::Loss loss = layers::cross_entropy(b_, s.logits, s.labels);
        s.loss = loss.value;
        model_.backward(b_, loss.grad);
      });
      for (layers::Parameter* p : model_.parameters()) s.grads.push_back(p->grad);
      found = steps_.emplace(rows, std::move(s)).first;
    } else {
      Step& s = found->second;
      cast(b_, images, s.images);  // a copy into the captured inputs
      cast(b_, labels, s.labels);
      (void)s.graph.replay();
      const auto params = model_.parameters();
      for (std::size_t i = 0; i < params.size(); ++i) params[i]->grad = s.grads[i];
      // What a training forward counts on the host, which a replay skips.
      for (std::size_t i = 0; i < model_.size(); ++i)
        if (auto* norm = dynamic_cast<layers::BatchNorm2d*>(&model_[i])) norm->count_batch();
    }
    return {contiguous(b_, found->second.loss), contiguous(b_, found->second.logits)};
  }

 private:
  struct Step {
    Graph graph;
    Tensor images, labels, logits, loss;
    std::vector<Tensor> grads;  // in model_.parameters() order
  };
  Backend b_;
  Sequential& model_;
  std::map<std::int64_t, Step> steps_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void write_curve(const std::filesystem::path& path, const std::vector<EpochResult>& results) {
  CurveSeries loss{"training loss", "#d62728", {}, {}}, train{"training", "#1f77b4", {}, {}},
      test{"test", "#2ca02c", {}, {}};
  for (const auto& r : results) {
    for (CurveSeries* s : {&loss, &train, &test}) s->x.push_back(r.epoch);
    loss.y.push_back(r.loss);
    train.y.push_back(r.train_accuracy);
    test.y.push_back(r.test_accuracy);
  }
  write_curve_svg(path, {{"loss per epoch", {loss}}, {"accuracy (%) per epoch", {train, test}}});
}

// The logits of the first `count` test images, the model in evaluation mode.
void save_logits(const std::filesystem::path& path, const Backend& b, Sequential& model, const data::Split& test,
                 std::int64_t count) {
  model.train(false);
  const Tensor logits = model.forward(b, first(test, count).images);
  model.train(true);
  save_safetensors(path, {{"logits", logits}});
}

}  // namespace

std::vector<std::unique_ptr<layers::Layer>> fashion_mnist_layers(const Backend& b, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<std::unique_ptr<layers::Layer>> l;
  l.push_back(std::make_unique<layers::Conv2d>(b, gen, 1, 32, 3, 1, 1));
  l.push_back(std::make_unique<layers::BatchNorm2d>(b, 32));
  l.push_back(std::make_unique<layers::ReLU>());
  l.push_back(std::make_unique<layers::MaxPool2d>(2));
  l.push_back(std::make_unique<layers::Conv2d>(b, gen, 32, 64, 3, 1, 1));
  l.push_back(std::make_unique<layers::BatchNorm2d>(b, 64));
  l.push_back(std::make_unique<layers::ReLU>());
  l.push_back(std::make_unique<layers::MaxPool2d>(2));
  l.push_back(std::make_unique<layers::Flatten>());
  l.push_back(std::make_unique<layers::Linear>(b, gen, 64 * 7 * 7, 10));
  return l;
}

TrainOptions parse_train_options(std::span<const std::string_view> args) {
  TrainOptions o;
  auto number = [](auto name, auto text, auto low) { return option_number("train", name, text, low); };
  const std::map<std::string_view, OptionSetter> setters{
      {"--backend", [&](auto, auto v) { o.backend = v; }},
      {"--epochs", [&](auto n, auto v) { o.epochs = number(n, v, 0); }},
      {"--batch", [&](auto n, auto v) { o.batch = number(n, v, std::int64_t{1}); }},
      {"--bucket-kib", [&](auto n, auto v) { o.bucket_kib = number(n, v, std::int64_t{1}); }},
      {"--seed", [&](auto n, auto v) { o.seed = number(n, v, std::uint64_t{0}); }},
      {"--limit", [&](auto n, auto v) { o.limit = number(n, v, std::int64_t{1}); }},
      {"--lr", [&](auto n, auto v) { o.lr = number(n, v, 0.0); }},
      {"--data", [&](auto, auto v) { o.data = v; }},
      {"--curve", [&](auto, auto v) { o.curve = v; }},
      {"--save", [&](auto, auto v) { o.save = v; }},
      {"--load", [&](auto, auto v) { o.load = v; }},
      {"--logits", [&](auto, auto v) { o.logits = v; }},
      {"--logit-images", [&](auto n, auto v) { o.logit_images = number(n, v, std::int64_t{1}); }},
  };
  parse_options("train", args, setters, {"--capture"}, [&](auto) { o.capture = true; });
  return o;
}

std::vector<EpochResult> train_fashion_mnist(const TrainOptions& options, std::ostream& out_of_rank_0,
                                             bool terminal) {
  const dist::Communicator world = dist::Communicator::world();
  const bool lead = world.rank() == 0;
  std::ostream silent(nullptr);  // a stream with no buffer writes nothing
  std::ostream& out = lead ? out_of_rank_0 : silent;
  const Backend b = options.backend.empty() ? Backend::best() : Backend::open(options.backend);
  const data::FashionMnist dataset(options.data);
  const data::Split train_split = first(dataset.train(), options.limit);
  const data::Split test_split = first(dataset.test(), options.limit);
  out << "train: " << b.id() << " (" << b.hardware().name << "), " << train_split.images.shape()[0]
      << " training and " << test_split.images.shape()[0] << " test images from " << dataset.directory().string()
      << "\n";
  if (world.size() > 1)
    out << "train: " << world.size() << " ranks over " << world.transport() << ", global batch " << options.batch
        << "\n";

  Sequential model(fashion_mnist_layers(b, options.seed));
  if (!options.load.empty()) {
    layers::load_weights(options.load, model);
    out << "train: weights loaded from " << options.load.string() << "\n";
  }
  // One rank trains the model itself; several wrap it (which also starts
  // every rank from rank 0's weights).
  std::optional<parallel::DataParallel> ddp;
  if (world.size() > 1) {
    parallel::DataParallelOptions dp;
    dp.bucket_bytes = static_cast<std::size_t>(options.bucket_kib) << 10;
    ddp.emplace(model, world, dp);
  }
  if (options.capture && ddp)
    throw Error(ErrorCode::invalid_argument,
                "train: --capture runs one rank only (a captured graph cannot hold the gradients' all-reduce)");
  std::optional<CapturedSteps> captured;
  if (options.capture) captured.emplace(b, model);
  optim::AdamOptions adam;
  adam.lr = options.lr;
  optim::Adam optimizer(model, adam);
  data::BatchLoader loader(train_split, options.batch, true, options.seed);
  ProgressBar bar(out, terminal && lead, "train", 0.2, 30);
  std::vector<EpochResult> results;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    Tally tally;
    std::int64_t step = 0, global_seen = 0;
    std::optional<Pending> pending;
    // Reads the pending step's results and shows them.
    auto settle = [&] {
      tally.add(*pending);
      pending.reset();
      char text[160];
      std::snprintf(text, sizeof text, "epoch %d/%d step %lld/%lld: loss %.4f, accuracy %.2f%%, %.0f samples/s", epoch,
                    options.epochs, static_cast<long long>(step), static_cast<long long>(loader.batches_per_epoch()),
                    tally.loss(), tally.accuracy(), static_cast<double>(global_seen) / seconds_since(start));
      bar.update(step, loader.batches_per_epoch(), text);
    };
    while (std::optional<data::Batch> batch = loader.next()) {
      const std::int64_t rows = batch->images.shape()[0];
      Tensor images = batch->images, labels = batch->labels;
      std::optional<parallel::Shard> shard;
      if (ddp) {
        shard = ddp->shard(rows);
        images = ddp->shard(images, *shard);
        labels = ddp->shard(labels, *shard);
      }
      if (captured) {
        const auto [loss, logits] = captured->run(images, labels);
        optimizer.step(b);  // the graph overwrites the gradients: no zero_grad
        if (pending) settle();
        ++step;
        global_seen += rows;
        pending = Pending{loss, logits, labels};
        continue;
      }
      const Tensor logits = model.forward(b, images);
      const layers::Loss loss = layers::cross_entropy(b, logits, labels);
      if (ddp)
        ddp->backward(b, loss.grad, *shard);
      else
        model.backward(b, loss.grad);
      optimizer.step(b);
      optimizer.zero_grad();
      if (pending) settle();
      ++step;
      global_seen += rows;
      pending = Pending{loss.value, logits, labels};
    }
    settle();
    EpochResult r;
    r.epoch = epoch;
    r.seconds = seconds_since(start);
    tally.combine(world);
    r.loss = tally.loss();
    r.train_accuracy = tally.accuracy();
    r.samples_per_second = static_cast<double>(global_seen) / r.seconds;
    r.test_accuracy = evaluate(b, model, test_split, options.batch, ddp ? &*ddp : nullptr);
    char line[200];
    std::snprintf(line, sizeof line,
                  "epoch %d/%d: loss %.4f, training accuracy %.2f%%, test accuracy %.2f%%, %.1f s, %.0f samples/s\n",
                  epoch, options.epochs, r.loss, r.train_accuracy, r.test_accuracy, r.seconds, r.samples_per_second);
    out << line << std::flush;
    results.push_back(r);
    if (lead && !options.curve.empty()) write_curve(options.curve, results);
  }
  if (options.epochs == 0) {
    char line[80];
    std::snprintf(line, sizeof line, "test accuracy %.2f%%\n", evaluate(b, model, test_split, options.batch, ddp ? &*ddp : nullptr));
    out << line << std::flush;
  }
  if (lead && !options.logits.empty()) {
    save_logits(options.logits, b, model, dataset.test(), options.logit_images);
    out << "train: logits of the first " << std::min(options.logit_images, dataset.test().images.shape()[0])
        << " test images saved to " << options.logits.string() << "\n";
  }
  if (lead && !options.save.empty()) {
    layers::save_weights(options.save, model);
    out << "train: weights saved to " << options.save.string() << "\n";
  }
  return results;
}

int train(std::span<const std::string_view> args) {
  if (wants_help(args, kTrainHelp)) return 0;
  train_fashion_mnist(parse_train_options(args), std::cout, ProgressBar::stdout_is_terminal());
  return 0;
}

}  // namespace xylem::cli
