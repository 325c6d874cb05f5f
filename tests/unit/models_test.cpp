// xylem::models on native: parameter counts equal PyTorch's for the same
// networks, PyTorch's names, the output of one forward (batch 1), and the
// benchmark inputs.
#include "xylem/models.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "xylem/xylem.hpp"

namespace {

using namespace xylem;

std::int64_t count(layers::Sequential& net) {
  std::int64_t n = 0;
  for (const layers::Parameter* p : net.parameters()) n += p->value.numel();
  return n;
}

// Batch 1 forward in evaluation mode: a finite [1, 1000] output.
void expect_forward(layers::Sequential& net, const models::Reference& ref) {
  const Backend be = Backend::native();
  Generator gen(7);
  const Tensor x = uniform(be, ref.input(1), f32, gen, -1, 1);
  net.train(false);
  const Tensor y = net.forward(be, x);
  EXPECT_EQ(y.layout().dims_string(), Layout({1, 1000}).dims_string());
  for (float v : y.to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
}

TEST(Models, AlexNet) {
  layers::Sequential net = models::alexnet(Backend::native());
  EXPECT_EQ(count(net), 61'100'840);  // torchvision's alexnet
  const auto params = net.parameters();
  ASSERT_EQ(params.size(), 16u);
  EXPECT_EQ(params[0]->name, "0.weight");
  EXPECT_EQ(params[1]->name, "0.bias");
  EXPECT_EQ(params[2]->name, "3.weight");
  EXPECT_EQ(params.back()->name, "20.bias");
  expect_forward(net, models::references()[0]);
}

TEST(Models, OverfeatFast) {
  layers::Sequential net = models::overfeat_fast(Backend::native());
  EXPECT_EQ(count(net), 145'920'872);  // the same network in PyTorch (scripts' torch_convnets.py)
  EXPECT_EQ(net.parameters().back()->name, "18.bias");
  expect_forward(net, models::references()[1]);
}

// VGG's forward is 8 GFLOP a image: only its shapes are checked.
TEST(Models, VggA) {
  layers::Sequential net = models::vgg_a(Backend::native());
  EXPECT_EQ(count(net), 132'863'336);  // torchvision's vgg11
  EXPECT_EQ(net.parameters()[2]->name, "3.weight");
  EXPECT_EQ(net.parameters().back()->name, "28.bias");
  EXPECT_EQ(net.output_shape(models::references()[2].input(2)).dims_string(), Layout({2, 1000}).dims_string());
  // Not waited for: the 132M parameters' initialisation is usually still
  // queued when the program ends, which must then exit cleanly (the native
  // device drains its queue at exit; before it did, this aborted).
}

TEST(Models, References) {
  const auto refs = models::references();
  ASSERT_EQ(refs.size(), 3u);
  EXPECT_EQ(refs[0].name, "alexnet");
  EXPECT_EQ(refs[0].input(128).dims_string(), Layout({128, 3, 224, 224}).dims_string());
  EXPECT_EQ(refs[1].name, "overfeat_fast");
  EXPECT_EQ(refs[1].height, 231);
  EXPECT_EQ(refs[2].name, "vgg_a");
  EXPECT_EQ(refs[2].batch, 64);
}

// Last in the file: a linear layer at batch 8 (oneDNN's gemm, on builds
// with oneDNN) and a convolution left queued when the program ends. oneDNN
// destroys its generated code at exit; the native device's exit handler
// must have waited for the queue before (this crashed in dnnl_sgemm).
TEST(Models, ExitWithOneDnnWorkQueued) {
  const Backend b = Backend::native();
  Generator gen(3);
  // Sizes that leave work queued at the end yet take seconds, not the 90
  // that Linear(25088, 4096) and forty calls took in the Debug + ASan step.
  layers::Linear linear(b, gen, 4096, 1024);
  layers::Conv2d conv(b, gen, 16, 32, 3, 1, 1);
  b.synchronize();
  for (int i = 0; i < 16; ++i) {
    (void)linear.forward(b, uniform(b, Layout{8, 4096}, f32, gen, -1, 1));
    (void)conv.forward(b, uniform(b, Layout{8, 16, 32, 32}, f32, gen, -1, 1));
  }
}

}  // namespace
