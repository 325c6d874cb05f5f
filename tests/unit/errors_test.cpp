// Errors: each failure gives the right ErrorCode, a message that names the
// operation, and leaves every tensor as it was (same version, same values).
#include "common/support.hpp"

namespace {

using xylem::Backend;
using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;
using xylem::blas::Transpose;
using xylem_test::contains;

class Errors : public ::testing::TestWithParam<std::string> {
 protected:
  Backend backend = Backend::open(GetParam());
};

TEST_P(Errors, ShapeMismatch) {
  auto x = Tensor::from(std::vector<float>{1, 2, 3, 4});
  auto y = Tensor::from(std::vector<float>{5, 6, 7, 8, 9});
  const auto sx = xylem_test::snapshot(x), sy = xylem_test::snapshot(y);

  auto what = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::relu(backend, x, y));
  EXPECT_TRUE(contains(what, "relu")) << what;
  EXPECT_TRUE(contains(what, "[4]") && contains(what, "[5]")) << "the message should give both shapes: " << what;
  what = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::blas::axpy(backend, 2.0, x, y));
  EXPECT_TRUE(contains(what, "axpy")) << what;
  what = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::blas::copy(backend, x, y));
  EXPECT_TRUE(contains(what, "copy")) << what;
  what = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::blas::swap(backend, x, y));
  EXPECT_TRUE(contains(what, "swap")) << what;
  auto dy = Tensor::from(std::vector<float>{1, 1, 1});
  Tensor dx(Layout{4}, xylem::f32);
  what = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::sigmoid_grad(backend, x, dy, dx));
  EXPECT_TRUE(contains(what, "sigmoid_grad")) << what;
  EXPECT_EQ(dx.version(), 0u);

  XY_EXPECT_UNCHANGED(x, sx);
  XY_EXPECT_UNCHANGED(y, sy);
  EXPECT_EQ(x.transfers(), 0u) << "a refused op moved data";
  EXPECT_EQ(y.transfers(), 0u);
}

TEST_P(Errors, DtypeMismatch) {
  auto x = Tensor::from(std::vector<float>{1, 2, 3});
  auto y = Tensor::from(std::vector<double>{4, 5, 6});
  const auto sx = xylem_test::snapshot(x), sy = xylem_test::snapshot(y);
  auto what = XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::tanh(backend, x, y));
  EXPECT_TRUE(contains(what, "tanh")) << what;
  EXPECT_TRUE(contains(what, "f32") && contains(what, "f64")) << "the message should give both dtypes: " << what;
  what = XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::blas::axpy(backend, 1.0, x, y));
  EXPECT_TRUE(contains(what, "axpy")) << what;
  XY_EXPECT_UNCHANGED(x, sx);
  XY_EXPECT_UNCHANGED(y, sy);
}

TEST_P(Errors, UninitializedRead) {
  Tensor never(Layout{3}, xylem::f64);
  auto y = Tensor::from(std::vector<double>{1, 2, 3});
  const auto sy = xylem_test::snapshot(y);
  auto what = XY_EXPECT_ERROR(ErrorCode::uninitialized_read, xylem::nn::sigmoid(backend, never, y));
  EXPECT_TRUE(contains(what, "sigmoid")) << what;
  what = XY_EXPECT_ERROR(ErrorCode::uninitialized_read, xylem::blas::axpy(backend, 1.0, y, never));
  EXPECT_TRUE(contains(what, "axpy")) << what;
  XY_EXPECT_UNCHANGED(y, sy);
  EXPECT_EQ(never.version(), 0u);
  EXPECT_FALSE(never.is_allocated_on(backend));
}

TEST_P(Errors, OutOfMemory) {
  // 2^58 bytes as f32 (2^59 as f64): representable, never allocatable.
  Tensor huge(Layout{std::int64_t{1} << 40, std::int64_t{1} << 16}, xylem::f32);
  auto what = XY_EXPECT_ERROR(ErrorCode::out_of_memory, xylem::fill(backend, huge, 1.0));
  EXPECT_TRUE(contains(what, "fill")) << what;
  EXPECT_EQ(huge.version(), 0u);
  EXPECT_FALSE(huge.is_allocated_on(backend));

  what = XY_EXPECT_ERROR(ErrorCode::out_of_memory, (void)xylem::zeros(backend, huge.layout(), xylem::f64));
  EXPECT_TRUE(contains(what, "fill") || contains(what, "zeros")) << what;
  auto x = Tensor::from(std::vector<float>{1, -1});
  // Afterwards the backend still works.
  Tensor y(Layout{2}, xylem::f32);
  xylem::nn::relu(backend, x, y);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 0}));
}

TEST_P(Errors, EmptyHandle) {
  Tensor empty;
  auto y = Tensor::from(std::vector<float>{1});
  const auto sy = xylem_test::snapshot(y);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::relu(backend, empty, y));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::fill(backend, empty, 1.0));
  XY_EXPECT_UNCHANGED(y, sy);
}

INSTANTIATE_TEST_SUITE_P(Backends, Errors, ::testing::Values("native", "mirror:0"),
                         [](const auto& p) {
                           return p.param == "native" ? std::string("native") : std::string("mirror");
                         });

TEST(ErrorsNative, GemmShapes) {
  auto native = Backend::native();
  auto a = Tensor::from(xylem_test::iota_vector<double>(6), Layout{2, 3});
  auto b = Tensor::from(xylem_test::iota_vector<double>(8), Layout{4, 2});
  auto c = Tensor::from(xylem_test::iota_vector<double>(4), Layout{2, 2});
  const auto sa = xylem_test::snapshot(a), sb = xylem_test::snapshot(b), sc = xylem_test::snapshot(c);
  // inner dimensions 3 and 4 differ
  auto what = XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                              xylem::blas::gemm(native, Transpose::no, Transpose::no, 1, a, b, 0, c));
  EXPECT_TRUE(contains(what, "gemm")) << what;
  // op(a) is 3x2, b is 4x2: inner dimensions 2 and 4 differ
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::blas::gemm(native, Transpose::yes, Transpose::no, 1, a, b, 1, c));
  auto a_f32 = Tensor::from(xylem_test::iota_vector<float>(6), Layout{3, 2});
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::blas::gemm(native, Transpose::no, Transpose::no, 1, a_f32, a, 0, c));
  XY_EXPECT_UNCHANGED(a, sa);
  XY_EXPECT_UNCHANGED(b, sb);
  XY_EXPECT_UNCHANGED(c, sc);
}

TEST(ErrorsNative, ReductionResult) {
  auto native = Backend::native();
  auto x = Tensor::from(std::vector<float>{1, 2});
  auto wrong_type = Tensor::from(std::vector<double>{9});
  const auto sr = xylem_test::snapshot(wrong_type);
  auto what = XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::blas::asum(native, x, wrong_type));
  EXPECT_TRUE(contains(what, "asum")) << what;
  auto wrong_size = Tensor::from(std::vector<float>{9, 9});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::blas::nrm2(native, x, wrong_size));
  auto y3 = Tensor::from(std::vector<float>{1, 2, 3});
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::blas::dot(native, x, y3));
  XY_EXPECT_UNCHANGED(wrong_type, sr);
}

TEST(ErrorsPlugins, BadPlugin) {
  auto what = XY_EXPECT_ERROR(ErrorCode::plugin_unavailable, (void)Backend::open("badversion:0"));
  EXPECT_TRUE(contains(what, "API version")) << what;
  what = XY_EXPECT_ERROR(ErrorCode::plugin_unavailable, (void)Backend::open("nosymbol"));
  EXPECT_TRUE(contains(what, "xylem_plugin_entry")) << what;
}

TEST(ErrorsPlugins, UnsupportedOpRaises) {
  auto mirror = xylem_test::mirror();
  auto a = Tensor::from(xylem_test::iota_vector<float>(4), Layout{2, 2});
  auto c = Tensor::from(xylem_test::iota_vector<float>(4), Layout{2, 2});
  const auto sa = xylem_test::snapshot(a), sc = xylem_test::snapshot(c);
  auto what = XY_EXPECT_ERROR(ErrorCode::unsupported,
                              xylem::blas::gemm(mirror, Transpose::no, Transpose::no, 1, a, a, 1, c));
  EXPECT_TRUE(contains(what, "gemm")) << what;
  EXPECT_TRUE(contains(what, "mirror")) << what;
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)xylem::blas::asum(mirror, a.reshape({4})));
  XY_EXPECT_UNCHANGED(a, sa);
  XY_EXPECT_UNCHANGED(c, sc);
  EXPECT_FALSE(a.is_allocated_on(mirror)) << "an unsupported op moved its input";
}

TEST(ErrorsPlugins, FallbackToNative) {
  xylem::BackendConfig config;
  config.framework = "mirror";
  config.device = 0;
  config.fallback = xylem::Fallback::native;
  Backend mirror(config);
  auto a = Tensor::from(std::vector<double>{1, 2, 3, 4}, Layout{2, 2});
  Tensor c(Layout{2, 2}, xylem::f64);
  xylem::fill(mirror, c, 1);  // runs on mirror
  EXPECT_TRUE(c.is_current_on(mirror));
  xylem::blas::gemm(mirror, Transpose::no, Transpose::no, 1, a, a, 1, c);  // falls back, syncing c
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{8, 11, 16, 23}));
  EXPECT_DOUBLE_EQ(xylem::blas::asum(mirror, a.reshape({4})).get(), 10.0);
}

}  // namespace
