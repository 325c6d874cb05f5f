// xylem::cast between every pair of the eight dtypes: float to integer
// truncates toward zero and saturates (NaN -> 0); to boolean is x != 0;
// narrowing to a float rounds to nearest even, once, from the source value
// (so f64 -> f16 must not round through f32); overflow gives Inf. Views,
// empty tensors, and a rejected output shape.
#include <iostream>

#include "conformance/math_common.hpp"

namespace conformance {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr DType kDTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                             DType::i32, DType::i64,  DType::u8,  DType::boolean};

// Rounds v to a binary format with `bits` of precision, smallest normal
// exponent `emin` and largest finite value `max`: nearest even, once.
double round_binary(double v, int bits, int emin, double max) {
  if (!std::isfinite(v) || v == 0) return v;
  const int e = std::max(std::ilogb(v), emin);
  const double quantum = std::ldexp(1.0, e - (bits - 1));
  const double r = std::nearbyint(v / quantum) * quantum;  // the default mode: nearest even
  return std::abs(r) > max ? std::copysign(kInf, v) : r;
}

// The lowest and highest values of an integer dtype (2^63 stands for the
// largest i64, which a double cannot hold).
std::pair<double, double> int_range(DType dtype) {
  switch (dtype) {
    case DType::i32:
      return {-0x1p31, 0x1p31 - 1};
    case DType::i64:
      return {-0x1p63, 0x1p63};
    case DType::u8:
      return {0, 255};
    default:
      return {0, 1};
  }
}

// What cast makes of the value v (exact in its source dtype) in dtype `to`.
double cast_value(double v, DType to) {
  switch (to) {
    case DType::f16:
      return round_binary(v, 11, -14, 65504.0);
    case DType::bf16:
      return round_binary(v, 8, -126, 0x1.FEp127);
    case DType::f32:
      return round_binary(v, 24, -126, std::numeric_limits<float>::max());
    case DType::f64:
      return v;
    case DType::boolean:
      return v != 0 ? 1 : 0;  // NaN != 0
    default: {
      if (std::isnan(v)) return 0;
      const auto [low, high] = int_range(to);
      return std::clamp(std::trunc(v), low, high);
    }
  }
}

bool exact_in(double v, DType dtype) {
  if (std::isnan(v)) return xylem::is_floating(dtype);
  if (xylem::is_floating(dtype)) return cast_value(v, dtype) == v;
  const auto [low, high] = int_range(dtype);
  return v == std::trunc(v) && v >= low && v <= high;
}

// Values worth casting from `from` to `to`: ties for each rounding, the
// saturation edges, NaN and infinities, subnormals, a value whose rounding
// through f32 differs from direct rounding to f16 and bf16, integers that
// floats cannot hold. Integer to integer keeps to values the target holds
// (the contract does not define narrowing integers).
std::vector<double> interesting(DType from, DType to) {
  const std::vector<double> candidates{
      kNaN, kInf, -kInf, 0.0, -0.0, 0.5, -0.5, 0.9999, -0.9999, 1, -1, 1.5, 2.5, -2.7, 3, 127.5, 255, 255.9, 256,
      300, -300, 2049, 2051, 65504, 65519, 65520, -65520, 1e5, 16777217, 3e9, -3e9, 0x1p31, -0x1p31, 0x1p31 - 1,
      0x1p40 + 1, 1e19, -1e19, 0x1p63, -0x1p63, 0x1p-14, 0x1p-24, 0x1p-25, 3 * 0x1p-25, 0x1p-126, 0x1p-130,
      1 + 0x1p-11, 1 + 3 * 0x1p-11, 1 + 0x1p-8, 1 + 3 * 0x1p-8, 1 + 0x1p-24, 1 + 3 * 0x1p-24,
      1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-9 + 0x1p-40, 0x1.FEp127, std::numeric_limits<float>::max(),
      std::numeric_limits<double>::max(), 1e300, std::numeric_limits<double>::denorm_min()};
  std::vector<double> out;
  for (double v : candidates) {
    if (!exact_in(v, from)) continue;
    if (!xylem::is_floating(from) && !xylem::is_floating(to) && to != DType::boolean && !exact_in(v, to)) continue;
    out.push_back(v);
  }
  return out;
}

class Cast : public MathConformance {
 protected:
  // Random values of `from` that `to` can take (see interesting()).
  std::vector<double> random_values(DType from, DType to, std::size_t n) {
    std::vector<double> out;
    const bool ints = !xylem::is_floating(from) && !xylem::is_floating(to) && to != DType::boolean;
    const auto [low, high] = ints ? int_range(to) : std::pair<double, double>{-300, 300};
    std::uniform_real_distribution<double> dist(std::max(low, -300.0), std::min(high, 300.0));
    while (out.size() < n) {
      const double v = xylem::is_floating(from) ? cast_value(dist(rng), from) : std::trunc(dist(rng));
      if (from == DType::boolean) {
        out.push_back(v > 0 ? 1 : 0);
      } else if (exact_in(v, from)) {
        out.push_back(v);
      }
    }
    return out;
  }

  void check(DType from, DType to, ViewKind in, ViewKind out, const Dims& dims, const std::vector<double>& values) {
    auto x = host_input(from, in, dims, values);
    std::vector<double> e(values.size());
    for (std::size_t k = 0; k < e.size(); ++k) e[k] = cast_value(values[k], to);
    // Integer and boolean results: twice, over two poisons, so that every
    // element must be written.
    const std::vector<double> poisons = xylem::is_floating(to)   ? std::vector<double>{kNaN}
                                        : to == DType::boolean ? std::vector<double>{0, 1}
                                                               : std::vector<double>{3, 5};
    for (double poison : poisons) {
      auto y = poisoned(to, out, dims, poison);
      xylem::cast(backend, x.view, y.view);
      expect_result(y, e, [](std::size_t) { return 0.0; }, "cast");
      if (to == DType::i64 && out == ViewKind::contiguous) {  // exactly, beyond what doubles hold
        const auto got = y.base.to_vector<std::int64_t>();
        for (std::size_t k = 0; k < e.size(); ++k) {
          const std::int64_t want = e[k] >= 0x1p63 ? std::numeric_limits<std::int64_t>::max()
                                                   : static_cast<std::int64_t>(e[k]);
          EXPECT_EQ(got[k], want) << "cast element " << k << " of " << values[k];
        }
      }
    }
  }
};

TEST_P(Cast, every_pair) {
  for (DType from : kDTypes) {
    for (DType to : kDTypes) {
      SCOPED_TRACE(std::string(xylem::name(from)) + " -> " + std::string(xylem::name(to)));
      // A cast to the same dtype is a copy.
      const bool supported = from == to ? backend.supports(OpId::core_copy_view, from)
                                        : backend.supports(OpId::math_cast, from) && backend.supports(OpId::math_cast, to);
      if (!supported) {
        std::cout << "[ UNSUPPORTED ] " << target.spec() << ": cast from " << xylem::name(from) << " to "
                  << xylem::name(to) << "\n";
        auto x = host_input(from, ViewKind::contiguous, {2}, {0, 1});
        XY_EXPECT_ERROR(xylem::ErrorCode::unsupported, (void)xylem::cast(backend, x.view, to));
        continue;
      }
      auto values = interesting(from, to);
      const auto random = random_values(from, to, 1000);
      values.insert(values.end(), random.begin(), random.end());
      {
        SCOPED_TRACE("contiguous");
        check(from, to, ViewKind::contiguous, ViewKind::contiguous, {std::int64_t(values.size())}, values);
      }
      {
        SCOPED_TRACE("transposed -> padded [7, 5]");
        check(from, to, ViewKind::transposed, ViewKind::padded, {7, 5}, random_values(from, to, 35));
      }
      {
        SCOPED_TRACE("strided -> strided [3, 0, 4] (empty)");
        check(from, to, ViewKind::strided, ViewKind::strided, {3, 0, 4}, {});
      }
      {
        SCOPED_TRACE("a new tensor");
        auto x = host_input(from, ViewKind::strided, {2, 3}, random_values(from, to, 6));
        Tensor y = xylem::cast(backend, x.view, to);
        EXPECT_EQ(y.dtype(), to);
        EXPECT_EQ(y.layout().dims_string(), "[2, 3]");
        const auto v = x.values();
        std::vector<double> e(v.size());
        for (std::size_t k = 0; k < e.size(); ++k) e[k] = cast_value(v[k], to);
        EXPECT_EQ(y.to_doubles(), e);
      }
    }
  }
}

TEST_P(Cast, rejects_bad_arguments) {
  auto x = input(DType::f32, ViewKind::contiguous, {3, 4});
  auto y = poisoned(DType::f16, ViewKind::contiguous, {4, 3});
  expect_rejected(xylem::ErrorCode::shape_mismatch, "cast", {"[3, 4]", "[4, 3]"}, {x.base, y.base},
                  [&] { xylem::cast(backend, x.view, y.view); });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Cast, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
