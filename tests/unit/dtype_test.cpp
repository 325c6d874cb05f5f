// Element types: the table's names, sizes and traits; C++ types mapping to
// dtypes; tensors of each host type keep their dtype and values.
#include <complex>
#include <limits>
#include <sstream>

#include "common/support.hpp"

namespace {

using xylem::DType;
using xylem::ErrorCode;
using xylem::Tensor;

TEST(DType, Table) {
  struct Row {
    DType t;
    const char* name;
    std::size_t size;
    bool floating;
  };
  const Row rows[] = {
      {DType::f16, "f16", 2, true},  {DType::bf16, "bf16", 2, true}, {DType::f32, "f32", 4, true},
      {DType::f64, "f64", 8, true},  {DType::i32, "i32", 4, false},  {DType::i64, "i64", 8, false},
      {DType::u8, "u8", 1, false},   {DType::boolean, "bool", 1, false}, {DType::c64, "c64", 8, false},
      {DType::c128, "c128", 16, false},
  };
  EXPECT_EQ(std::size(rows), xylem::kDTypeCount);
  for (const auto& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_EQ(xylem::name(r.t), r.name);
    EXPECT_EQ(xylem::size_of(r.t), r.size);
    EXPECT_EQ(xylem::is_floating(r.t), r.floating);
    EXPECT_EQ(xylem::is_complex(r.t), r.t == DType::c64 || r.t == DType::c128);
  }
  static_assert(xylem::complex_of(xylem::f32) == xylem::c64 && xylem::complex_of(xylem::f64) == xylem::c128);
  static_assert(xylem::real_of(xylem::c64) == xylem::f32 && xylem::real_of(xylem::c128) == xylem::f64);
  // Constant expressions, as kernels use them.
  static_assert(xylem::size_of(xylem::f64) == 8);
  static_assert(xylem::name(xylem::boolean) == "bool");
  static_assert(xylem::is_floating(xylem::bf16));
}

TEST(DType, CxxTypes) {
  static_assert(xylem::dtype_of_v<float> == DType::f32);
  static_assert(xylem::dtype_of_v<double> == DType::f64);
  static_assert(xylem::dtype_of_v<std::int32_t> == DType::i32);
  static_assert(xylem::dtype_of_v<std::int64_t> == DType::i64);
  static_assert(xylem::dtype_of_v<std::uint8_t> == DType::u8);
  static_assert(xylem::dtype_of_v<bool> == DType::boolean);
  static_assert(xylem::dtype_of_v<std::complex<float>> == DType::c64);
  static_assert(xylem::dtype_of_v<std::complex<double>> == DType::c128);
  EXPECT_EQ(xylem::f32, DType::f32);
  EXPECT_EQ(xylem::boolean, DType::boolean);
}

template <class T>
void round_trip(std::vector<T> values) {
  SCOPED_TRACE(std::string(xylem::name(xylem::dtype_of_v<T>)));
  auto t = Tensor::from(values);
  EXPECT_EQ(t.dtype(), xylem::dtype_of_v<T>);
  EXPECT_EQ(t.numel(), static_cast<std::int64_t>(values.size()));
  EXPECT_EQ(t.version(), 1u);
  EXPECT_EQ(t.template to_vector<T>(), values);
  auto d = t.to_doubles();
  ASSERT_EQ(d.size(), values.size());
  for (std::size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], static_cast<double>(values[i])) << i;
}

TEST(DType, TensorsKeepTypeAndValues) {
  round_trip<float>({1.5f, -2.25f, std::numeric_limits<float>::max()});
  round_trip<double>({1e-300, -3.0, 0.1});
  round_trip<std::int32_t>({-7, 0, std::numeric_limits<std::int32_t>::max()});
  round_trip<std::int64_t>({-(std::int64_t{1} << 40), 3});
  round_trip<std::uint8_t>({0, 1, 255});
}

TEST(DType, BoolTensor) {
  const bool data[] = {true, false, true};
  auto t = Tensor::from(std::span<const bool>(data));
  EXPECT_EQ(t.dtype(), DType::boolean);
  EXPECT_EQ(t.to_doubles(), (std::vector<double>{1, 0, 1}));
}

// Complex tensors: values, the (real, imaginary) doubles, views, printing.
template <class T>
void complex_round_trip() {
  using C = std::complex<T>;
  SCOPED_TRACE(std::string(xylem::name(xylem::dtype_of_v<C>)));
  const std::vector<C> values = {{1.5, -2.25}, {-0.0, 3}, {std::numeric_limits<T>::max(), T(1e-30)}, {0, 0}};
  auto t = Tensor::from(values, xylem::Layout{2, 2});
  EXPECT_EQ(t.dtype(), xylem::dtype_of_v<C>);
  EXPECT_EQ(t.template to_vector<C>(), values);
  const auto d = t.to_doubles();
  ASSERT_EQ(d.size(), 2 * values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(d[2 * i], static_cast<double>(values[i].real())) << i;
    EXPECT_EQ(d[2 * i + 1], static_cast<double>(values[i].imag())) << i;
  }
  // A strided view gathers whole elements (copy_view of their size).
  EXPECT_EQ(t.transpose().template to_vector<C>(), (std::vector<C>{values[0], values[2], values[1], values[3]}));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)t.template to_vector<T>());
  std::ostringstream os;
  os << t.slice(0, 0, 1);
  EXPECT_EQ(os.str(), "[[1.5-2.25j, -0+3j]] shape=[1, 2], strides=[2, 1]");
}

TEST(DType, ComplexTensors) {
  complex_round_trip<float>();
  complex_round_trip<double>();
}

TEST(DType, FromBytes) {
  const std::int32_t data[] = {1, 2, 3, 4, 5, 6};
  auto t = Tensor::from_bytes(data, sizeof data, xylem::Layout{2, 3}, DType::i32);
  EXPECT_EQ(t.layout(), (xylem::Layout{2, 3}));
  EXPECT_EQ(t.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
  // The byte count must match shape and dtype (which of the two codes is the
  // core's choice).
  try {
    (void)Tensor::from_bytes(data, sizeof data, xylem::Layout{2, 2}, DType::i32);
    ADD_FAILURE() << "24 bytes accepted for a 2x2 i32 tensor";
  } catch (const xylem::Error& e) {
    EXPECT_TRUE(e.code() == ErrorCode::shape_mismatch || e.code() == ErrorCode::invalid_argument) << e.what();
  }
}

TEST(DType, ReadAsTheWrongTypeIsAnError) {
  auto t = Tensor::from(std::vector<float>{1, 2, 3});
  const auto what = XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)t.to_vector<double>());
  EXPECT_NE(what.find("f32"), std::string::npos) << what;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)t.read<std::int32_t>());
}

TEST(DType, ErrorCodeNames) {
  EXPECT_EQ(xylem::name(ErrorCode::shape_mismatch), "shape_mismatch");
  EXPECT_EQ(xylem::name(ErrorCode::plugin_unavailable), "plugin_unavailable");
  EXPECT_EQ(xylem::name(ErrorCode::uninitialized_read), "uninitialized_read");
  xylem::Error e(ErrorCode::io, "disk full");
  EXPECT_EQ(e.code(), ErrorCode::io);
  EXPECT_NE(std::string(e.what()).find("disk full"), std::string::npos);
}

}  // namespace
