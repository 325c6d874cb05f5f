// Sizes int64 cannot hold, at the Tensor level, on every framework present
// (native, OpenCL; absent ones are skipped by name): a shape, a byte count
// or a view that would overflow is an invalid_argument naming the shape and
// dtype; an absurd but representable size is out_of_memory naming the real
// byte count, on the host and on the device; nothing crashes, and every
// other tensor keeps its data. (Layout-level cases: layout_test.cpp.)
#include <limits>
#include <optional>
#include <sstream>

#include "common/support.hpp"

namespace {

using xylem::Backend;
using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;
using I = std::vector<std::int64_t>;

constexpr std::int64_t k32 = std::int64_t{1} << 32;
constexpr std::int64_t k47 = std::int64_t{1} << 47;
constexpr std::int64_t k50 = std::int64_t{1} << 50;
constexpr std::int64_t k60 = std::int64_t{1} << 60;
constexpr std::int64_t k62 = std::int64_t{1} << 62;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Layout strided(I dims, I strides, std::int64_t offset) { return Layout::strided(dims, strides, offset); }

// Fails unless `fn` throws `code` with a message naming every one of `parts`.
#define XY_EXPECT_NAMED(code, parts, ...)                                                          \
  do {                                                                                             \
    const std::string xy_msg_ = XY_EXPECT_ERROR(code, __VA_ARGS__);                                \
    for (const std::string& xy_part_ : std::vector<std::string> parts)                             \
      EXPECT_TRUE(xylem_test::contains(xy_msg_, xy_part_)) << "message does not name " << xy_part_ \
                                                           << ": " << xy_msg_;                     \
  } while (0)

// ---- refused before any tensor exists: the same on every framework -------

TEST(Sizes, ShapesOverInt64AreRefused) {
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[4294967296, 4294967296]"}),
                  (void)Tensor(Layout{k32, k32}, xylem::f32));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[4611686018427387904, 3]"}),
                  (void)Tensor(Layout{k62, 3}, xylem::f32));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[9223372036854775807]"}), (void)Tensor(Layout{kMax}, xylem::u8));
}

TEST(Sizes, ByteCountsOverInt64AreRefused) {
  // 2^62 elements is a shape; 2^62 of 4 or 8 bytes is no tensor.
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[4611686018427387904]", "f32"}),
                  (void)Tensor(Layout{k62}, xylem::f32));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2305843009213693952]", "f64"}),
                  (void)Tensor(Layout{k62 / 2}, xylem::f64));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2147483648, 1073741824]", "f32"}),
                  (void)Tensor(Layout{k32 / 2, k32 / 4}, xylem::f32));
  // Representable: a handle with no memory yet.
  const Tensor most(Layout{k62}, xylem::u8);
  EXPECT_EQ(most.numel(), k62);
  EXPECT_EQ(most.version(), 0u);
  XY_EXPECT_ERROR(ErrorCode::uninitialized_read, (void)most.to_vector<std::uint8_t>());

  const double data[1] = {1.5};
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[4611686018427387904]", "f64"}),
                  (void)Tensor::from_bytes(data, sizeof data, Layout{k62}, xylem::f64));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)Tensor::from_bytes(data, sizeof data, Layout{k62}, xylem::u8));
}

TEST(Sizes, AsStridedReachIsCheckedWithoutOverflow) {
  const auto seed = xylem_test::fresh_seed();
  SCOPED_TRACE(xylem_test::seed_message(seed));
  std::mt19937_64 rng(seed);
  const auto values = xylem_test::random_vector<double>(rng, 12, 1, 2);
  const Tensor t = Tensor::from(values);
  // Backwards through the storage: elements 10, 5, 0.
  const Tensor back = t.as_strided(strided({3}, {-5}, 10));
  EXPECT_EQ(back.to_vector<double>(), (std::vector<double>{values[10], values[5], values[0]}));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[3]", "[-6]"}), (void)t.as_strided(strided({3}, {-6}, 10)));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2]", "[9223372036854775806]"}),
                  (void)t.as_strided(strided({2}, {kMax - 1}, 0)));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2]"}), (void)t.as_strided(strided({2}, {1}, kMax - 2)));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2]"}), (void)t.as_strided(strided({2}, {-1}, kMin + 1)));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2]"}), (void)t.as_strided(strided({2}, {kMin}, kMax)));
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[4294967296, 4294967296]"}),
                  (void)t.as_strided(strided({k32, k32}, {0, 0}, 0)));
  EXPECT_EQ(t.to_vector<double>(), values);
}

// ---- on each framework ----------------------------------------------------

class SizesOn : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    try {
      backend = Backend::open(GetParam());
    } catch (const xylem::Error& e) {
      GTEST_SKIP() << GetParam() << ": " << e.what();
    }
    seed = xylem_test::fresh_seed();
    std::mt19937_64 rng(seed);
    values = xylem_test::random_vector<float>(rng, 64, 0.5, 2);
    kept = Tensor::from(values);
    on_device = xylem::neg(*backend, kept);  // a tensor whose only copy is on the device
  }

  // Every failure above left the other tensors as they were, and the
  // backend still computes.
  void expect_intact() {
    SCOPED_TRACE(xylem_test::seed_message(seed));
    EXPECT_EQ(kept.to_vector<float>(), values);
    std::vector<float> negated(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) negated[i] = -values[i];
    EXPECT_EQ(on_device.to_vector<float>(), negated);
    EXPECT_EQ(xylem::neg(*backend, on_device).to_vector<float>(), values);
  }

  std::optional<Backend> backend;
  std::uint64_t seed = 0;
  std::vector<float> values;
  Tensor kept, on_device;
};

// Absurd but representable: the device says out_of_memory with the byte
// count asked for (no wrap), before any driver sees a size it cannot hold.
TEST_P(SizesOn, AbsurdAllocationsAreOutOfMemoryWithTheRealByteCount) {
  struct Case {
    Layout shape;
    xylem::DType dtype;
    const char* bytes;
  };
  const Case cases[] = {
      {Layout{k47}, xylem::f64, "1125899906842624"},               // 2^50 bytes
      {Layout{k50, 4}, xylem::f32, "18014398509481984"},           // 2^54
      {Layout{k60}, xylem::f32, "4611686018427387904"},            // 2^62
      {Layout{k62 / 2 - 1}, xylem::f32, "9223372036854775804"},    // the most below 2^63
      {Layout{k62 - 1}, xylem::u8, "4611686018427387903"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape.dims_string());
    Tensor huge(c.shape, c.dtype);
    XY_EXPECT_NAMED(ErrorCode::out_of_memory, ({std::string(c.bytes) + " bytes"}),
                    xylem::fill(*backend, huge, 1.0));
    EXPECT_EQ(huge.version(), 0u);
    EXPECT_FALSE(huge.is_allocated_on(*backend));
  }
  XY_EXPECT_NAMED(ErrorCode::out_of_memory, ({"1125899906842624 bytes"}),
                  (void)xylem::zeros(*backend, Layout{k32, 1 << 15}, xylem::f64));
  expect_intact();
}

// A broadcast view may be far larger than its storage: valid, but too
// large to read back or to give an output.
TEST_P(SizesOn, HugeBroadcastViewsFailTyped) {
  const Tensor one = Tensor::from(std::vector<float>{values[0]});
  const Tensor wide = one.as_strided(strided({k50}, {0}, 0));
  EXPECT_EQ(wide.numel(), k50);
  XY_EXPECT_NAMED(ErrorCode::out_of_memory, ({"[1125899906842624]", "4503599627370496 bytes"}),
                  (void)wide.to_vector<float>());
  XY_EXPECT_NAMED(ErrorCode::out_of_memory, ({"4503599627370496 bytes"}), (void)xylem::neg(*backend, wide));
  const Tensor widest = one.as_strided(strided({k62 / 2}, {0}, 0));  // 2^63 bytes read back
  XY_EXPECT_NAMED(ErrorCode::invalid_argument, ({"[2305843009213693952]", "f32"}), (void)widest.to_vector<float>());
  // Small views of it are fine, here and on the device.
  const Tensor few = wide.slice(0, k50 - 3, kMax);
  EXPECT_EQ(few.to_vector<float>(), (std::vector<float>(3, values[0])));
  EXPECT_EQ(xylem::neg(*backend, few).to_vector<float>(), (std::vector<float>(3, -values[0])));
  EXPECT_EQ(one.to_vector<float>(), std::vector<float>{values[0]});
  expect_intact();
}

// Slices with bounds at the ends of int64, read on the host and computed on
// the device.
TEST_P(SizesOn, ExtremeSlicesReadTheRightElements) {
  const Tensor x = kept.reshape({8, 8});
  const Tensor all = x.slice(0, kMin, kMax);
  EXPECT_EQ(all.to_vector<float>(), values);
  EXPECT_EQ(x.slice(1, kMax, kMin).numel(), 0);
  EXPECT_TRUE(x.slice(0, kMax, kMax).to_vector<float>().empty());
  const Tensor last_column = x.slice(1, -1, kMax, kMax);  // one element per row
  std::vector<float> expected;
  for (int r = 0; r < 8; ++r) expected.push_back(values[std::size_t(r * 8 + 7)]);
  EXPECT_EQ(last_column.to_vector<float>(), expected);
  std::vector<float> negated;
  for (float e : expected) negated.push_back(-e);
  EXPECT_EQ(xylem::neg(*backend, last_column).to_vector<float>(), negated);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)x.slice(0, 0, 8, kMin));
  expect_intact();
}

// Printing reads only the elements it shows: a view far larger than any
// memory prints at once.
TEST_P(SizesOn, PrintingAHugeViewReadsOnlyWhatItShows) {
  const Tensor one = Tensor::from(std::vector<float>{1.5f});
  const Tensor wide = one.as_strided(strided({k50, 2}, {0, 0}, 0));
  std::ostringstream os;
  os << wide;
  EXPECT_EQ(os.str(), "[[1.5, 1.5], [1.5, 1.5], [1.5, 1.5], ..., [1.5, 1.5], [1.5, 1.5], [1.5, 1.5]] "
                      "shape=[1125899906842624, 2], strides=[0, 0]");
  expect_intact();
}

std::string label(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

INSTANTIATE_TEST_SUITE_P(Frameworks, SizesOn, ::testing::Values("native", "opencl"), label);

}  // namespace
