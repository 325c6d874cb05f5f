// Weights by name on each framework: BatchNorm2d's num_batches_tracked,
// state_dict and load_state_dict (names, shapes and dtypes checked, nothing
// changed on a refusal), a save and load round trip, and a file PyTorch
// wrote (tests/data/torch_tiny, made by its make_fixture.py) giving
// PyTorch's logits.
#include "xylem/weights.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "common/on_framework.hpp"
#include "common/support.hpp"
#include "unit/files.hpp"

namespace {

using namespace xylem;
using namespace xylem::layers;

const std::filesystem::path kTorchTiny = std::filesystem::path(XYLEM_TEST_DATA_DIR) / "torch_tiny";

class Weights : public xylem_test::OnFramework {};

// make_fixture.py's network: conv 1->4 3x3 pad 1, batch norm, relu, max
// pool, flatten, linear 64->3.
std::unique_ptr<Sequential> tiny(const Backend& b, std::uint64_t seed) {
  Generator gen(seed);
  auto net = std::make_unique<Sequential>();
  net->emplace<Conv2d>(b, gen, 1, 4, 3, 1, 1);
  net->emplace<BatchNorm2d>(b, 4);
  net->emplace<ReLU>();
  net->emplace<MaxPool2d>(2);
  net->emplace<Flatten>();
  net->emplace<Linear>(b, gen, 4 * 4 * 4, 3);
  return net;
}

std::int64_t tracked(BatchNorm2d& bn) { return bn.num_batches_tracked.value.to_vector<std::int64_t>().at(0); }

TEST_P(Weights, NumBatchesTrackedCountsTrainingForwardsOnly) {
  BatchNorm2d bn(be, 2);
  EXPECT_EQ(bn.num_batches_tracked.name, "num_batches_tracked");
  EXPECT_EQ(bn.num_batches_tracked.value.rank(), 0);
  EXPECT_EQ(bn.num_batches_tracked.value.dtype(), i64);
  EXPECT_EQ(tracked(bn), 0);
  const Tensor x = full(be, {2, 2, 3, 3}, f32, 0.5);
  (void)bn.forward(be, x);
  (void)bn.forward(be, x);
  EXPECT_EQ(tracked(bn), 2);
  bn.train(false);
  (void)bn.forward(be, x);
  EXPECT_EQ(tracked(bn), 2);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)bn.forward(be, full(be, {2, 3, 3, 3}, f32, 0.5)));
  EXPECT_EQ(tracked(bn), 2);
}

TEST_P(Weights, StateDictHasPyTorchsKeys) {
  auto net = tiny(be, 1);
  std::vector<std::string> keys;
  for (const auto& [name, t] : state_dict(*net)) keys.push_back(name);
  EXPECT_EQ(keys, (std::vector<std::string>{"0.bias", "0.weight", "1.bias", "1.num_batches_tracked",
                                            "1.running_mean", "1.running_var", "1.weight", "5.bias", "5.weight"}));
}

TEST_P(Weights, RefusalsNameTheTensorAndChangeNothing) {
  auto net = tiny(be, 1);
  const std::map<std::string, Tensor> good = state_dict(*tiny(be, 2));
  std::vector<xylem_test::Snapshot> before;
  const std::map<std::string, Tensor> mine = state_dict(*net);
  for (const auto& [name, t] : mine) before.push_back(xylem_test::snapshot(t));
  auto refused = [&](ErrorCode code, std::map<std::string, Tensor> tensors, const std::string& named) {
    const std::string message = XY_EXPECT_ERROR(code, load_state_dict(*net, tensors));
    EXPECT_TRUE(xylem_test::contains(message, "'" + named + "'")) << message;
    std::size_t i = 0;
    for (const auto& [name, t] : state_dict(*net)) {
      EXPECT_TRUE(t.shares_data_with(mine.at(name))) << name << " was replaced";
      XY_EXPECT_UNCHANGED(t, before[i++]);
    }
  };
  auto with = [&](const std::string& name, const Tensor& t) {
    auto m = good;
    m[name] = t;
    return m;
  };
  auto without = [&](const std::string& name) {
    auto m = good;
    m.erase(name);
    return m;
  };
  refused(ErrorCode::invalid_argument, with("7.weight", zeros(be, {3}, f32)), "7.weight");
  refused(ErrorCode::invalid_argument, without("5.weight"), "5.weight");
  refused(ErrorCode::invalid_argument, without("1.running_var"), "1.running_var");
  refused(ErrorCode::invalid_argument, with("0.bias", Tensor{}), "0.bias");
  refused(ErrorCode::shape_mismatch, with("5.weight", zeros(be, {64, 3}, f32)), "5.weight");
  refused(ErrorCode::shape_mismatch, with("1.num_batches_tracked", Tensor::from<std::int64_t>({3})),
          "1.num_batches_tracked");
  refused(ErrorCode::dtype_mismatch, with("1.weight", zeros(be, {4}, f64)), "1.weight");
  refused(ErrorCode::dtype_mismatch, with("1.num_batches_tracked", zeros(be, Layout{}, f32)), "1.num_batches_tracked");
}

TEST_P(Weights, AFileWithoutNumBatchesTrackedLoads) {
  auto net = tiny(be, 1);
  auto tensors = state_dict(*tiny(be, 2));
  tensors.erase("1.num_batches_tracked");
  load_state_dict(*net, tensors);
  EXPECT_EQ(tracked(dynamic_cast<BatchNorm2d&>((*net)[1])), 0);
  EXPECT_TRUE(state_dict(*net).at("5.weight").shares_data_with(tensors.at("5.weight")));
}

TEST_P(Weights, SaveAndLoadGiveTheSameLogits) {
  xylem_test::TempDir dir;
  auto a = tiny(be, 3), b = tiny(be, 4);
  Generator gen(5);
  const Tensor x = uniform(be, {2, 1, 8, 8}, f32, gen, -1, 1);
  (void)a->forward(be, x);  // moves the running statistics and the count
  a->train(false);
  b->train(false);
  save_weights(dir / "w.safetensors", *a);
  load_weights(dir / "w.safetensors", *b);
  EXPECT_EQ(tracked(dynamic_cast<BatchNorm2d&>((*b)[1])), 1);
  EXPECT_EQ(a->forward(be, x).to_vector<float>(), b->forward(be, x).to_vector<float>());
  XY_EXPECT_ERROR(ErrorCode::io, load_weights(dir / "absent.safetensors", *b));
}

TEST_P(Weights, PyTorchsFileGivesPyTorchsLogits) {
  auto net = tiny(be, 1);
  load_weights(kTorchTiny / "weights.safetensors", *net);
  EXPECT_GT(tracked(dynamic_cast<BatchNorm2d&>((*net)[1])), 0);
  net->train(false);
  const auto io = load_safetensors(kTorchTiny / "io.safetensors");
  const std::vector<float> got = net->forward(be, io.at("input")).to_vector<float>();
  const std::vector<float> want = io.at("logits").to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_NEAR(got[k], want[k], 1e-5 + 1e-4 * std::abs(want[k])) << "logit " << k;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Weights, ::testing::Values("native", "opencl"),
                         [](const auto& p) { return p.param; });

}  // namespace
