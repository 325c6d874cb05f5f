// The batch loader: every sample once per epoch, the same order for the same
// seed and another for another seed or epoch, drop_last, splits smaller than
// a batch, bad arguments, and errors on the loader's thread reaching the
// caller.
#include <algorithm>
#include <numeric>
#include <set>

#include "common/support.hpp"
#include "xylem/loader.hpp"

namespace {

using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;
using xylem::data::Batch;
using xylem::data::BatchLoader;
using xylem::data::Split;

// n samples of two f32 features each, both equal to the sample's index, and
// labels equal to it too: a batch names the rows it holds.
Split numbered(std::int64_t n) {
  std::vector<float> images(static_cast<std::size_t>(2 * n));
  for (std::size_t k = 0; k < images.size(); ++k) images[k] = static_cast<float>(k / 2);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(n));
  std::iota(labels.begin(), labels.end(), std::int64_t{0});
  return {Tensor::from(images, Layout{n, 1, 2}), Tensor::from(labels)};
}

// One epoch's labels in order, each batch's images checked against them.
std::vector<std::int64_t> epoch(BatchLoader& loader, std::vector<std::int64_t>* sizes = nullptr) {
  std::vector<std::int64_t> seen;
  while (std::optional<Batch> batch = loader.next()) {
    const auto labels = batch->labels.to_vector<std::int64_t>();
    const auto images = batch->images.to_vector<float>();
    EXPECT_EQ(batch->images.layout(), (Layout{static_cast<std::int64_t>(labels.size()), 1, 2}));
    for (std::size_t k = 0; k < labels.size(); ++k) {
      EXPECT_EQ(images[2 * k], static_cast<float>(labels[k]));
      EXPECT_EQ(images[2 * k + 1], static_cast<float>(labels[k]));
    }
    if (sizes) sizes->push_back(static_cast<std::int64_t>(labels.size()));
    seen.insert(seen.end(), labels.begin(), labels.end());
  }
  return seen;
}

std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(Loader, EverySampleOncePerEpoch) {
  BatchLoader loader(numbered(103), 10, true, 7);
  EXPECT_EQ(loader.samples(), 103);
  EXPECT_EQ(loader.batches_per_epoch(), 11);
  std::vector<std::int64_t> all(103);
  std::iota(all.begin(), all.end(), std::int64_t{0});
  for (int e = 0; e < 3; ++e) {
    std::vector<std::int64_t> sizes;
    const auto seen = epoch(loader, &sizes);
    EXPECT_EQ(sorted(seen), all) << "epoch " << e;
    EXPECT_EQ(sizes.size(), 11u);
    EXPECT_EQ(sizes.back(), 3);
  }
}

TEST(Loader, OrderFollowsTheSeed) {
  BatchLoader a(numbered(50), 8, true, 42), b(numbered(50), 8, true, 42), c(numbered(50), 8, true, 43);
  const auto a0 = epoch(a), b0 = epoch(b), c0 = epoch(c);
  EXPECT_EQ(a0, b0);
  EXPECT_NE(a0, c0);
  const auto a1 = epoch(a);
  EXPECT_NE(a0, a1) << "each epoch is shuffled anew";
  EXPECT_EQ(a0, xylem::data::shuffled_order(50, 42, 0));
  EXPECT_EQ(a1, xylem::data::shuffled_order(50, 42, 1));
}

TEST(Loader, ShuffledOrderIsPinned) {
  // The same on every machine (a Python transcription of splitmix64 and
  // Fisher-Yates gives these too): a saved run replays only if they never change.
  EXPECT_EQ(xylem::data::shuffled_order(8, 1, 0), (std::vector<std::int64_t>{0, 5, 2, 7, 3, 4, 1, 6}));
}

TEST(Loader, UnshuffledKeepsTheOrder) {
  BatchLoader loader(numbered(9), 4, false, 0);
  std::vector<std::int64_t> in_order(9);
  std::iota(in_order.begin(), in_order.end(), std::int64_t{0});
  EXPECT_EQ(epoch(loader), in_order);
  EXPECT_EQ(epoch(loader), in_order);
}

TEST(Loader, DropLast) {
  BatchLoader loader(numbered(103), 10, true, 7, true);
  EXPECT_EQ(loader.batches_per_epoch(), 10);
  std::vector<std::int64_t> sizes;
  const auto seen = epoch(loader, &sizes);
  EXPECT_EQ(sizes, std::vector<std::int64_t>(10, 10));
  EXPECT_EQ(std::set<std::int64_t>(seen.begin(), seen.end()).size(), 100u);
}

TEST(Loader, SplitSmallerThanABatch) {
  BatchLoader loader(numbered(3), 64, true, 1);
  std::vector<std::int64_t> sizes;
  EXPECT_EQ(sorted(epoch(loader, &sizes)), (std::vector<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(sizes, std::vector<std::int64_t>{3});
  const std::string message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, BatchLoader(numbered(3), 64, true, 1, true));
  EXPECT_TRUE(xylem_test::contains(message, "no whole batch")) << message;
}

TEST(Loader, BadArguments) {
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, BatchLoader(numbered(4), 0, true, 1));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, BatchLoader(Split{}, 2, true, 1));
  Split mismatched = numbered(4);
  mismatched.labels = Tensor::from(std::vector<std::int64_t>{0, 1, 2});
  const std::string message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, BatchLoader(mismatched, 2, true, 1));
  EXPECT_TRUE(xylem_test::contains(message, "4 images but 3 labels")) << message;
}

TEST(Loader, ErrorOnTheThreadReachesTheCaller) {
  int prepared = 0;
  BatchLoader loader(numbered(20), 4, false, 0, false, [&](Batch&) {
    if (++prepared == 3) throw xylem::Error(ErrorCode::io, "third batch unreadable");
  });
  EXPECT_TRUE(loader.next().has_value());
  EXPECT_TRUE(loader.next().has_value());
  for (int call = 0; call < 2; ++call) {
    const std::string message = XY_EXPECT_ERROR(ErrorCode::io, (void)loader.next());
    EXPECT_TRUE(xylem_test::contains(message, "third batch unreadable")) << message;
  }
}

TEST(Loader, PrepareRunsOnEachBatch) {
  BatchLoader loader(numbered(6), 4, false, 0, false, [](Batch& batch) { batch.labels = batch.labels.slice(0, 0, 1); });
  EXPECT_EQ(loader.next()->labels.to_vector<std::int64_t>(), std::vector<std::int64_t>{0});
  EXPECT_EQ(loader.next()->labels.to_vector<std::int64_t>(), std::vector<std::int64_t>{4});
}

TEST(Loader, StopsMidEpoch) {
  // The destructor joins the thread while it waits on a full queue.
  for (int k = 0; k < 20; ++k) {
    BatchLoader loader(numbered(100), 3, true, static_cast<std::uint64_t>(k));
    if (k % 2) (void)loader.next();
  }
}

}  // namespace
