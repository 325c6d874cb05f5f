// Layouts: dimensions, strides, offsets, views (reshape, slice, transpose,
// permute) and their errors, sizes int64 cannot hold among them; and the
// same views on tensors, which share data.
#include <array>
#include <limits>
#include <sstream>

#include "common/support.hpp"

namespace {

using xylem::ErrorCode;
using xylem::Layout;
using xylem::Tensor;

std::vector<std::int64_t> v(std::span<const std::int64_t> s) { return {s.begin(), s.end()}; }
using I = std::vector<std::int64_t>;

TEST(Layout, ContiguousDimsAndStrides) {
  Layout s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3);
  EXPECT_EQ(v(s.dims()), (I{2, 3, 4}));
  EXPECT_EQ(v(s.strides()), (I{12, 4, 1}));
  EXPECT_EQ(s.dim(0), 2);
  EXPECT_EQ(s.dim(-1), 4);
  EXPECT_EQ(s.stride(-2), 4);
  EXPECT_EQ(s.offset(), 0);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(s.extent(), 24);
  EXPECT_TRUE(s.is_contiguous());
  EXPECT_EQ(s.dims_string(), "[2, 3, 4]");
  EXPECT_EQ(s.strides_string(), "[12, 4, 1]");
  std::ostringstream os;
  os << s;
  EXPECT_EQ(os.str(), "[2, 3, 4]");
}

TEST(Layout, ScalarAndEmpty) {
  Layout scalar;
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_TRUE(scalar.is_contiguous());
  Layout empty{3, 0, 2};
  EXPECT_EQ(empty.numel(), 0);
  const std::array<std::int64_t, 2> dims{5, 6};
  Layout from_span(dims);
  EXPECT_EQ(from_span, (Layout{5, 6}));
}

TEST(Layout, Reshape) {
  Layout s{2, 3, 4};
  Layout r = s.reshape({4, 6});
  EXPECT_EQ(v(r.dims()), (I{4, 6}));
  EXPECT_EQ(v(r.strides()), (I{6, 1}));
  Layout inferred = s.reshape({-1, 2});
  EXPECT_EQ(v(inferred.dims()), (I{12, 2}));
  Layout flat = s.reshape({24});
  EXPECT_EQ(flat.rank(), 1);
  // A contiguous slice (whole rows) keeps its offset through a reshape.
  Layout rows = Layout{4, 6}.slice(0, 1, 3);
  EXPECT_TRUE(rows.is_contiguous());
  Layout rows_flat = rows.reshape({12});
  EXPECT_EQ(rows_flat.offset(), 6);
  EXPECT_EQ(rows_flat.numel(), 12);
}

TEST(Layout, Slice) {
  Layout s{2, 3, 4};
  Layout mid = s.slice(1, 1, 3);
  EXPECT_EQ(v(mid.dims()), (I{2, 2, 4}));
  EXPECT_EQ(v(mid.strides()), (I{12, 4, 1}));
  EXPECT_EQ(mid.offset(), 4);
  EXPECT_FALSE(mid.is_contiguous());
  EXPECT_EQ(mid.numel(), 16);

  Layout stepped = s.slice(2, 1, 4, 2);  // elements 1 and 3
  EXPECT_EQ(v(stepped.dims()), (I{2, 3, 2}));
  EXPECT_EQ(v(stepped.strides()), (I{12, 4, 2}));
  EXPECT_EQ(stepped.offset(), 1);
  EXPECT_EQ(stepped.extent(), 1 + 1 + 12 + 8 + 2);

  Layout odd_step = Layout{10}.slice(0, 0, 10, 3);  // 0 3 6 9
  EXPECT_EQ(odd_step.dim(0), 4);
  EXPECT_EQ(odd_step.stride(0), 3);

  Layout nested = stepped.slice(0, 1, 2);
  EXPECT_EQ(nested.offset(), 13);
  EXPECT_EQ(v(nested.dims()), (I{1, 3, 2}));
}

TEST(Layout, TransposeAndPermute) {
  Layout s{2, 3};
  Layout t = s.transpose(0, 1);
  EXPECT_EQ(v(t.dims()), (I{3, 2}));
  EXPECT_EQ(v(t.strides()), (I{1, 3}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(t.extent(), 6);
  EXPECT_EQ(t.transpose(0, 1), s);
  EXPECT_TRUE(t.same_dims(Layout{3, 2}));
  EXPECT_FALSE(t == (Layout{3, 2}));  // same dims, other strides

  Layout cube{2, 3, 4};
  const std::array<int, 3> order{2, 0, 1};
  Layout p = cube.permute(order);
  EXPECT_EQ(v(p.dims()), (I{4, 2, 3}));
  EXPECT_EQ(v(p.strides()), (I{1, 12, 4}));
  const std::array<int, 3> identity{0, 1, 2};
  EXPECT_EQ(cube.permute(identity), cube);
  EXPECT_EQ(cube.transpose(-1, 0), cube.transpose(0, 2));
}

TEST(Layout, Strided) {
  const std::array<std::int64_t, 2> dims{3, 2};
  const std::array<std::int64_t, 2> strides{1, 3};
  Layout s = Layout::strided(dims, strides, 5);
  EXPECT_EQ(v(s.dims()), (I{3, 2}));
  EXPECT_EQ(v(s.strides()), (I{1, 3}));
  EXPECT_EQ(s.offset(), 5);
  EXPECT_EQ(s.extent(), 5 + 1 + 2 + 3);
  EXPECT_FALSE(s.is_contiguous());
}

TEST(Layout, Errors) {
  Layout s{2, 3, 4};
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.dim(3));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.dim(-4));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.slice(3, 0, 1));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.slice(0, 0, 2, 0));  // step 0
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.transpose(0, 5));
  const std::array<int, 3> repeated{0, 0, 1};
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.permute(repeated));
  const std::array<int, 2> short_order{1, 0};
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.permute(short_order));
  const std::array<std::int64_t, 2> dims{2, -1};
  const std::array<std::int64_t, 2> strides{1, 1};
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Layout::strided(dims, strides, 0));
  const std::array<std::int64_t, 9> too_many{1, 1, 1, 1, 1, 1, 1, 1, 1};
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Layout(std::span<const std::int64_t>(too_many)));
}

// The code of a reshape error is the core's choice between these two; what
// matters is that it is an Error and says why.
void expect_reshape_refused(const Layout& s, std::initializer_list<std::int64_t> dims) {
  try {
    (void)s.reshape(dims);
    ADD_FAILURE() << "reshape of " << s << " (strides " << s.strides_string() << ") was accepted";
  } catch (const xylem::Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::shape_mismatch || e.code() == ErrorCode::invalid_argument)
        << xylem::name(e.code()) << ": " << e.what();
  }
}

TEST(Layout, ReshapeErrors) {
  Layout s{2, 3, 4};
  expect_reshape_refused(s, {5, 5});       // other element count
  expect_reshape_refused(s, {-1, -1});     // two inferred dims
  expect_reshape_refused(s, {-1, 5});      // not divisible
  expect_reshape_refused(s.transpose(0, 2), {24});     // not contiguous
  expect_reshape_refused(s.slice(1, 0, 3, 2), {16});    // rows 0 and 2: a gap between them
  expect_reshape_refused(s.slice(1, 0, 3, 2), {4, 4});  // merges across the gap
}

// A non-contiguous view reshapes without a copy when only dense groups of
// its dimensions are merged or split.
TEST(Layout, ReshapeOfStridedViewsWithoutCopy) {
  const Layout column = Layout::strided(std::array<std::int64_t, 2>{2, 1}, std::array<std::int64_t, 2>{3, 1}, 0);
  const Layout flat = column.reshape({2});
  EXPECT_EQ(flat.strides_string(), "[3]");

  const Layout every_other = Layout{4, 6}.slice(1, 0, 6, 2);  // dims [4, 3], strides [6, 2]
  const Layout split = every_other.reshape({2, 2, 3});
  EXPECT_EQ(split.strides_string(), "[12, 6, 2]");
  EXPECT_EQ(split.offset(), every_other.offset());
  const Layout with_ones = every_other.reshape({4, 1, 3, 1});
  EXPECT_EQ(with_ones.dims_string(), "[4, 1, 3, 1]");
  EXPECT_EQ(with_ones.strides()[0], 6);
  EXPECT_EQ(with_ones.strides()[2], 2);

  const Layout rows = Layout{6, 4}.slice(0, 1, 6, 2);  // dims [3, 4], strides [8, 1]
  EXPECT_EQ(rows.reshape({3, 2, 2}).strides_string(), "[8, 2, 1]");
}

// ---- the same views on tensors: no copy, the right elements ---------------

TEST(TensorViews, ShareDataAndReadTheRightElements) {
  auto t = Tensor::from(xylem_test::iota_vector<float>(12), Layout{3, 4});
  EXPECT_EQ(t.layout(), (Layout{3, 4}));
  EXPECT_EQ(t.numel(), 12);
  EXPECT_EQ(t.rank(), 2);

  auto tr = t.transpose();
  EXPECT_TRUE(tr.shares_data_with(t));
  EXPECT_EQ(tr.layout().dims_string(), "[4, 3]");
  EXPECT_EQ(tr.to_vector<float>(), (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));

  auto cols = t.slice(1, 1, 4, 2);  // columns 1 and 3
  EXPECT_TRUE(cols.shares_data_with(t));
  EXPECT_EQ(cols.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11}));

  auto rows = t.slice(0, 1, 3).reshape({8});
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));

  const std::array<std::int64_t, 3> dims{2, 2, 3};
  auto r3 = t.reshape(dims);
  EXPECT_EQ(r3.rank(), 3);
  EXPECT_EQ(r3.to_vector<float>(), xylem_test::iota_vector<float>(12));

  auto other = Tensor::from(xylem_test::iota_vector<float>(12), Layout{3, 4});
  EXPECT_FALSE(other.shares_data_with(t));
}

TEST(TensorViews, ContiguousCopiesAView) {
  auto native = xylem::Backend::native();
  auto t = Tensor::from(xylem_test::iota_vector<double>(12), Layout{3, 4});
  auto c = xylem::contiguous(native, t.transpose());
  EXPECT_FALSE(c.shares_data_with(t));
  EXPECT_TRUE(c.layout().is_contiguous());
  EXPECT_EQ(c.layout().dims_string(), "[4, 3]");
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(TensorViews, Errors) {
  auto t = Tensor::from(xylem_test::iota_vector<float>(12), Layout{3, 4});
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)t.slice(2, 0, 1));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)t.transpose(0, 2));
  Tensor empty;
  EXPECT_FALSE(empty.defined());
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)empty.to_vector<float>());
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)empty.reshape({1}));
}

TEST(TensorViews, Printing) {
  auto t = Tensor::from(std::vector<double>{1.5, -2, 3.25, 4}, Layout{2, 2});
  std::ostringstream os;
  os << t;
  const auto s = os.str();
  EXPECT_NE(s.find("1.5"), std::string::npos) << s;
  EXPECT_NE(s.find("-2"), std::string::npos) << s;
  EXPECT_NE(s.find("3.25"), std::string::npos) << s;
  EXPECT_NE(s.find("shape=[2, 2]"), std::string::npos) << s;
  EXPECT_NE(s.find("strides=[2, 1]"), std::string::npos) << s;
}

// ---- sizes int64 cannot hold are refused where the shape is made ----------

constexpr std::int64_t k32 = std::int64_t{1} << 32;
constexpr std::int64_t k62 = std::int64_t{1} << 62;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Layout strided(I dims, I strides, std::int64_t offset) { return Layout::strided(dims, strides, offset); }

// Fails unless `fn` throws invalid_argument whose message names `part`.
#define XY_EXPECT_REFUSED(part, ...)                                                            \
  do {                                                                                          \
    const std::string xy_msg_ = XY_EXPECT_ERROR(ErrorCode::invalid_argument, __VA_ARGS__);      \
    EXPECT_TRUE(xylem_test::contains(xy_msg_, part)) << "message does not name " << (part) << ": " << xy_msg_; \
  } while (0)

TEST(ShapeSizes, ElementCountsOverInt64AreRefused) {
  XY_EXPECT_REFUSED("[4294967296, 4294967296]", (void)Layout({k32, k32}));
  XY_EXPECT_REFUSED("[4611686018427387904, 3]", (void)Layout({k62, 3}));
  XY_EXPECT_REFUSED("[9223372036854775807]", (void)Layout({kMax}));
  XY_EXPECT_REFUSED("[2, 9223372036854775807]", (void)Layout({2, kMax}));
  XY_EXPECT_REFUSED("[4611686018427387905]", (void)Layout({k62 + 1}));
  XY_EXPECT_REFUSED("[65536, 65536, 65536, 65536]", (void)Layout({1 << 16, 1 << 16, 1 << 16, 1 << 16}));
  // A zero dimension does not hide absurd others (NumPy's rule).
  XY_EXPECT_REFUSED("[0, 4611686018427387904, 4]", (void)Layout({0, k62, 4}));
  XY_EXPECT_REFUSED("[4294967296, 4294967296]", (void)strided({k32, k32}, {1, 1}, 0));
}

TEST(ShapeSizes, ElementCountsAtTheLimitAreShapes) {
  const Layout big{k62};
  EXPECT_EQ(big.numel(), k62);
  EXPECT_EQ(big.extent(), k62);
  EXPECT_EQ(big.lowest(), 0);
  const Layout split{k32, k62 / k32};
  EXPECT_EQ(split.numel(), k62);
  EXPECT_EQ(v(split.strides()), (I{k62 / k32, 1}));
  const Layout empty{0, k62};
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(v(empty.strides()), (I{k62, 1}));
  const Layout ones{1, 1, 1, 1, 1, 1, 1, k62};
  EXPECT_EQ(ones.numel(), k62);
  EXPECT_TRUE(ones.is_contiguous());
}

TEST(ShapeSizes, StridesAndOffsetsNearOverflow) {
  // The last reachable element at INT64_MAX - 1: extent INT64_MAX still fits.
  const Layout edge = strided({2}, {kMax - 1}, 0);
  EXPECT_EQ(edge.extent(), kMax);
  EXPECT_EQ(strided({2}, {1}, kMax - 2).extent(), kMax);
  XY_EXPECT_REFUSED("strides [9223372036854775807]", (void)strided({2}, {kMax}, 0));  // extent past INT64_MAX
  XY_EXPECT_REFUSED("offset 9223372036854775806", (void)strided({2}, {1}, kMax - 1));
  XY_EXPECT_REFUSED("[3]", (void)strided({3}, {k62}, 0));            // 2 * 2^62
  XY_EXPECT_REFUSED("[3, 3]", (void)strided({3, 3}, {k62 / 2, k62 / 2}, 0));  // each fits, the sum does not
  XY_EXPECT_REFUSED("[2]", (void)strided({2}, {kMin}, 0));          // a span of 2^63
  XY_EXPECT_REFUSED("[2, 2]", (void)strided({2, 2}, {k62, -k62}, 0));  // from -2^62 to 2^62
  XY_EXPECT_REFUSED("[2]", (void)strided({2}, {-1}, kMin));        // below INT64_MIN
  // Negative strides: the lowest element is tracked as well as the extent.
  const Layout reversed = strided({4, 3}, {-3, -1}, 11);
  EXPECT_EQ(reversed.lowest(), 0);
  EXPECT_EQ(reversed.extent(), 12);
  const Layout low = strided({2}, {-k62}, k62);
  EXPECT_EQ(low.lowest(), 0);
  EXPECT_EQ(low.extent(), k62 + 1);
  // A stride is never applied along a dimension of size 0 or 1: any value goes.
  const Layout unused = strided({1, 0}, {kMax, kMin}, 0);
  EXPECT_EQ(unused.numel(), 0);
  EXPECT_EQ(strided({1, 5}, {kMin, 1}, 0).extent(), 5);
  // An empty view is still checked along its other dimensions.
  XY_EXPECT_REFUSED("[0, 3]", (void)strided({0, 3}, {1, kMax}, 0));
}

TEST(ShapeSizes, SliceWithExtremeBounds) {
  const Layout s{10};
  EXPECT_EQ(s.slice(0, kMin, kMax), s);
  EXPECT_EQ(s.slice(0, kMax, kMin).numel(), 0);
  EXPECT_EQ(s.slice(0, kMin, kMin).numel(), 0);
  EXPECT_EQ(s.slice(0, kMax, kMax).numel(), 0);
  const Layout one = s.slice(0, 3, kMax, kMax);  // ceil(7 / INT64_MAX) = 1: no overflow in the rounding
  EXPECT_EQ(one.dim(0), 1);
  EXPECT_EQ(one.offset(), 3);
  const Layout tail = s.slice(0, -3, kMax, 2);  // 7, 9
  EXPECT_EQ(tail.dim(0), 2);
  EXPECT_EQ(tail.stride(0), 2);
  EXPECT_EQ(tail.offset(), 7);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)s.slice(0, 0, 10, kMin));

  // A view whose stride times the step, or begin times the stride, would
  // overflow where no element needs it.
  const Layout wide = strided({3}, {k62 / 2}, 0);
  EXPECT_EQ(wide.slice(0, 0, 3, kMax).dim(0), 1);
  EXPECT_EQ(wide.slice(0, 0, 3, 2).stride(0), k62);
  EXPECT_EQ(wide.slice(0, 2, 3).offset(), k62);
  const Layout none = wide.slice(0, 3, kMax);
  EXPECT_EQ(none.numel(), 0);
  EXPECT_EQ(none.offset(), 0);
  const Layout reversed = strided({4}, {-2}, 6).slice(0, 1, 4, 2);  // elements 4 and 0
  EXPECT_EQ(reversed.dim(0), 2);
  EXPECT_EQ(reversed.stride(0), -4);
  EXPECT_EQ(reversed.offset(), 4);
  EXPECT_EQ(reversed.lowest(), 0);
  EXPECT_EQ(reversed.extent(), 5);
}

TEST(ShapeSizes, ReshapeOverflowAndZeroDims) {
  const Layout s{4};
  XY_EXPECT_REFUSED("4294967296", (void)s.reshape({k32, k32}));
  XY_EXPECT_REFUSED("4611686018427387904", (void)s.reshape({k62, 4}));
  XY_EXPECT_REFUSED("9223372036854775807", (void)s.reshape({kMax, kMax}));
  expect_reshape_refused(s, {-1, kMax});
  expect_reshape_refused(s, {kMax, -1});

  const Layout empty{0, 4};
  EXPECT_EQ(empty.reshape({-1, 2}).dims_string(), "[0, 2]");
  EXPECT_EQ(empty.reshape({4, 0, 5}).numel(), 0);
  expect_reshape_refused(empty, {0, -1});  // any value fits: ambiguous
  XY_EXPECT_REFUSED("[0, 4611686018427387904, 4]", (void)empty.reshape({0, k62, 4}));
  // An empty view near the top of int64: it addresses nothing, but the
  // result's strides over its non-zero dimensions must still fit beside the
  // offset (a layout fuzzer finding: reshape returned such views unchecked).
  const Layout high_empty = strided({0, 4}, {4, 1}, kMax - 8);
  XY_EXPECT_REFUSED("reaches element indices", (void)high_empty.reshape({9, 7, 3, 0}));
  EXPECT_EQ(high_empty.reshape({2, 0}).offset(), kMax - 8);

  const Layout big{k62};
  EXPECT_EQ(big.reshape({k32, -1}).dims_string(), "[4294967296, 1073741824]");
  expect_reshape_refused(big, {-1, 3});

  // A strided view with size-1 dimensions around a huge stride: the stride
  // of a size-1 dimension is never applied, and computing it must not
  // overflow (UBSan watches).
  const Layout column = strided({2}, {k62}, 0);
  const Layout lifted = column.reshape({1, 2, 1});
  EXPECT_EQ(lifted.stride(1), k62);
  EXPECT_EQ(lifted.extent(), k62 + 1);
  const Layout pair = strided({2, 2}, {k62 / 2, k62 / 4}, 0);  // dense: 2^60 * 2 == 2^61
  EXPECT_EQ(pair.reshape({4}).stride(0), k62 / 4);
  EXPECT_EQ(pair.reshape({4}).extent(), pair.extent());
  expect_reshape_refused(strided({2, 2}, {k62 / 2, k62 / 8}, 0), {4});  // a gap: 2^59 * 2 != 2^61
  const Layout dense = strided({2, 2}, {k62 / 2, k62 / 4}, 0).slice(1, 0, 1);
  EXPECT_EQ(dense.reshape({1, 2}).stride(1), k62 / 2);
}

TEST(ShapeSizes, TransposeAndPermuteKeepTheChecks) {
  const Layout edge = strided({2, 3, 4}, {k62 / 4, -(k62 / 8), 1}, k62 / 2);
  const Layout t = edge.transpose(0, 2);
  const std::array<int, 3> order{1, 2, 0};
  const Layout p = edge.permute(order);
  for (const Layout& view : {t, p}) {
    EXPECT_EQ(view.numel(), edge.numel());
    EXPECT_EQ(view.extent(), edge.extent());
    EXPECT_EQ(view.lowest(), edge.lowest());
  }
  // Views of the reordered shapes stay checked.
  EXPECT_EQ(t.slice(2, 1, 2).offset(), k62 / 2 + k62 / 4);
  expect_reshape_refused(t, {24});
  EXPECT_EQ(p.slice(0, kMin, kMax).extent(), edge.extent());
}

// Long dimensions print their first and last three elements, from the
// right places of a view.
TEST(TensorViews, PrintingElidesLongDimensions) {
  auto t = Tensor::from(xylem_test::iota_vector<double>(20 * 30), Layout{20, 30}).transpose();  // [30, 20]
  std::ostringstream os;
  os << t;
  // Row c of the transpose is column c of the iota: c, 30 + c, 60 + c, ...
  const auto row = [](std::ostringstream& out, int c) {
    out << '[' << c << ", " << 30 + c << ", " << 60 + c << ", ..., " << 17 * 30 + c << ", " << 18 * 30 + c << ", "
        << 19 * 30 + c << ']';
  };
  std::ostringstream want;
  want << '[';
  for (int c : {0, 1, 2, -1, 27, 28, 29}) {
    if (c == -1) {
      want << "..., ";
      continue;
    }
    row(want, c);
    want << (c == 29 ? "" : ", ");
  }
  want << "] shape=[30, 20], strides=[1, 30]";
  const std::string expected = want.str();
  EXPECT_EQ(os.str(), expected);
}

}  // namespace
