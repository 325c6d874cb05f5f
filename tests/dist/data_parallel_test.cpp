// DataParallel under `mpirun -np N`: a few SGD steps on a slice of
// Fashion-MNIST, the weights compared across ranks after every step, and at
// the end against the same steps taken by one process on the whole global
// batches (which every rank also computes, alone, as the reference).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "xylem/creation.hpp"
#include "xylem/data.hpp"
#include "xylem/data_parallel.hpp"
#include "xylem/dist.hpp"
#include "xylem/layers.hpp"
#include "xylem/losses.hpp"
#include "xylem/math.hpp"
#include "xylem/optim.hpp"

namespace {

using namespace xylem;

// No BatchNorm: its batch statistics are each shard's own, so only a
// model without it matches one process step for step.
std::vector<std::unique_ptr<layers::Layer>> small_cnn(const Backend& b, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<std::unique_ptr<layers::Layer>> l;
  l.push_back(std::make_unique<layers::Conv2d>(b, gen, 1, 4, 3, 1, 1));
  l.push_back(std::make_unique<layers::ReLU>());
  l.push_back(std::make_unique<layers::MaxPool2d>(2));
  l.push_back(std::make_unique<layers::Conv2d>(b, gen, 4, 8, 3, 1, 1));
  l.push_back(std::make_unique<layers::ReLU>());
  l.push_back(std::make_unique<layers::MaxPool2d>(2));
  l.push_back(std::make_unique<layers::Flatten>());
  l.push_back(std::make_unique<layers::Linear>(b, gen, 8 * 7 * 7, 10));
  return l;
}

TEST(DataParallel, MatchesOneProcessAndStaysInSync) {
  std::optional<data::FashionMnist> dataset;
  try {
    dataset.emplace();
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  const Backend b = Backend::native();
  const dist::Communicator world = dist::Communicator::world();
  const data::Split train = dataset->train();

  // Rank r starts from other weights: the wrapper must broadcast rank 0's.
  layers::Sequential model(small_cnn(b, 7 + static_cast<std::uint64_t>(world.rank())));
  layers::Sequential reference(small_cnn(b, 7));
  parallel::DataParallelOptions options;
  options.bucket_bytes = 4096;  // several buckets, reduced while backward runs
  parallel::DataParallel ddp(model, world, options);
  ASSERT_GT(ddp.buckets().size(), 2U);
  EXPECT_TRUE(ddp.in_sync());

  optim::SgdOptions sgd;
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  optim::SGD optimizer(model, sgd), reference_optimizer(reference, sgd);

  // 33 rows: unequal shards over two ranks, which must weigh by their rows.
  constexpr std::int64_t kBatch = 33;
  constexpr int kSteps = 6;
  for (int step = 0; step < kSteps; ++step) {
    const Tensor images = train.images.slice(0, step * kBatch, (step + 1) * kBatch);
    const Tensor labels = train.labels.slice(0, step * kBatch, (step + 1) * kBatch);

    const parallel::Shard rows = ddp.shard(kBatch);
    const Tensor logits = model.forward(b, ddp.shard(images, rows));
    const layers::Loss loss = layers::cross_entropy(b, logits, ddp.shard(labels, rows));
    ddp.backward(b, loss.grad, rows);
    optimizer.step(b);
    optimizer.zero_grad();
    EXPECT_TRUE(ddp.in_sync()) << "after step " << step;

    const layers::Loss alone = layers::cross_entropy(b, reference.forward(b, images), labels);
    reference.backward(b, alone.grad);
    reference_optimizer.step(b);
    reference_optimizer.zero_grad();
  }

  const auto ours = model.parameters();
  const auto theirs = reference.parameters();
  ASSERT_EQ(ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const std::vector<float> a = ours[i]->value.to_vector<float>();
    const std::vector<float> r = theirs[i]->value.to_vector<float>();
    ASSERT_EQ(a.size(), r.size());
    double worst = 0;
    for (std::size_t k = 0; k < a.size(); ++k)
      worst = std::max(worst, std::abs(double(a[k]) - double(r[k])) / (1e-3 + std::abs(double(r[k]))));
    EXPECT_LT(worst, 5e-5) << ours[i]->name << " on rank " << world.rank();
  }
}


// With BatchNorm each rank's running statistics come from its own shard;
// each backward broadcasts rank 0's (one bucket), so the buffers stay
// identical on every rank. On a device (OpenCL here, a GPU elsewhere) the
// host-kept num_batches_tracked is left out of each step's bucket, and
// must still agree.
class DataParallelBatchNorm : public ::testing::TestWithParam<const char*> {};

TEST_P(DataParallelBatchNorm, BuffersStayInSync) {
  std::optional<Backend> device;
  try {
    device.emplace(Backend::open(GetParam()));
  } catch (const Error& e) {
    GTEST_SKIP() << GetParam() << ": " << e.what();
  }
  const Backend& b = *device;
  const dist::Communicator world = dist::Communicator::world();
  Generator gen(11);
  std::vector<std::unique_ptr<layers::Layer>> l;
  l.push_back(std::make_unique<layers::Conv2d>(b, gen, 1, 4, 3, 1, 1));
  l.push_back(std::make_unique<layers::BatchNorm2d>(b, 4));
  l.push_back(std::make_unique<layers::ReLU>());
  l.push_back(std::make_unique<layers::Flatten>());
  l.push_back(std::make_unique<layers::Linear>(b, gen, 4 * 6 * 6, 3));
  layers::Sequential model(std::move(l));
  parallel::DataParallel ddp(model, world);
  optim::SGD optimizer(model, {.lr = 0.05, .momentum = 0.9});
  // Each rank its own random images: the shards' statistics differ.
  Generator data(100 + static_cast<std::uint64_t>(world.rank()));
  constexpr std::int64_t kRows = 5;
  const parallel::Shard rows{kRows * world.rank(), kRows * (world.rank() + 1), kRows * world.size()};
  const std::vector<std::int64_t> classes{0, 1, 2, 1, 0};
  for (int step = 0; step < 4; ++step) {
    const Tensor x = uniform(b, Layout{kRows, 1, 6, 6}, f32, data, -1, 1);
    const layers::Loss loss = layers::cross_entropy(b, model.forward(b, x), Tensor::from(classes));
    ddp.backward(b, loss.grad, rows);
    optimizer.step(b);
    optimizer.zero_grad();
    EXPECT_TRUE(ddp.in_sync()) << "after step " << step;
  }
  ddp.synchronize();
  auto* bn = dynamic_cast<layers::BatchNorm2d*>(&model[1]);
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->num_batches_tracked.value.to_vector<std::int64_t>(), std::vector<std::int64_t>{4});
  // The running mean is rank 0's: every rank's equals the smallest and the largest over the ranks.
  const Tensor mean = bn->running_mean.value;
  const Tensor low = cast(b, mean, mean.dtype()), high = cast(b, mean, mean.dtype());
  (void)world.all_reduce(low, dist::ReduceOp::min);
  (void)world.all_reduce(high, dist::ReduceOp::max);
  EXPECT_EQ(low.to_vector<float>(), mean.to_vector<float>());
  EXPECT_EQ(high.to_vector<float>(), mean.to_vector<float>());
}

INSTANTIATE_TEST_SUITE_P(Backends, DataParallelBatchNorm, ::testing::Values("native", "opencl"));

}  // namespace
