// The conformance harness for any float dtype: host rounding to f16/bf16
// (written here, apart from the library's, so the tests do not trust the code
// they test), inputs and poisoned outputs from host bytes, and the element
// check every test uses.
#include <bit>
#include <cstring>
#include <sstream>

#include "conformance/conformance.hpp"

namespace conformance {
namespace {

std::uint16_t half_bits(float value) {
  const auto f = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t magnitude = f & 0x7FFFFFFFu;
  if (magnitude > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above round to Inf
  if (magnitude < 0x38800000u) {                        // below 2^-14: subnormal, multiples of 2^-24
    const float scaled = std::bit_cast<float>(magnitude) * 0x1p24f;  // exact
    return static_cast<std::uint16_t>(sign | static_cast<std::uint16_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t rounded = magnitude + 0x0FFFu + ((magnitude >> 13) & 1u);  // nearest even
  return static_cast<std::uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
}

double half_value(std::uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 31) return mantissa ? kNaN : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

std::uint16_t bf16_bits(float value) {
  const auto f = std::bit_cast<std::uint32_t>(value);
  if ((f & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);
  return static_cast<std::uint16_t>((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

double bf16_value(std::uint16_t b) { return std::bit_cast<float>(std::uint32_t(b) << 16); }

}  // namespace

DTol tol(DType dtype) {
  constexpr double f32_eps = std::numeric_limits<float>::epsilon();
  switch (dtype) {
    case DType::f16:
      return {2e-3, Tol<float>::reduce, f32_eps};
    case DType::bf16:
      return {1e-2, Tol<float>::reduce, f32_eps};
    case DType::f64:
      return {Tol<double>::elem, Tol<double>::reduce, Tol<double>::eps};
    default:
      return {Tol<float>::elem, Tol<float>::reduce, f32_eps};
  }
}

double round_to(DType dtype, double value) {
  switch (dtype) {
    case DType::f16:
      return half_value(half_bits(static_cast<float>(value)));
    case DType::bf16:
      return bf16_value(bf16_bits(static_cast<float>(value)));
    case DType::f32:
      return static_cast<float>(value);
    default:
      return value;
  }
}

std::vector<unsigned char> encode(DType dtype, const std::vector<double>& exact_values) {
  std::vector<unsigned char> bytes(exact_values.size() * xylem::size_of(dtype));
  for (std::size_t k = 0; k < exact_values.size(); ++k) {
    unsigned char* p = bytes.data() + k * xylem::size_of(dtype);
    const double v = exact_values[k];
    switch (dtype) {
      case DType::f16: {
        const std::uint16_t h = half_bits(static_cast<float>(v));
        std::memcpy(p, &h, 2);
        break;
      }
      case DType::bf16: {
        const std::uint16_t b = bf16_bits(static_cast<float>(v));
        std::memcpy(p, &b, 2);
        break;
      }
      case DType::f32: {
        const auto f = static_cast<float>(v);
        std::memcpy(p, &f, 4);
        break;
      }
      case DType::f64:
        std::memcpy(p, &v, 8);
        break;
      default:
        ADD_FAILURE() << "encode: " << xylem::name(dtype) << " is not a float dtype";
        return bytes;
    }
  }
  return bytes;
}

Arg Conformance::input(DType dtype, ViewKind layout, const Dims& dims, double low, double high,
                       const std::vector<double>* logical) {
  const Layout shape = detail::base_shape(layout, dims);
  Arg a;
  a.base_values = xylem_test::random_vector<double>(rng, shape.numel(), low, high);
  a.pos = positions(detail::view_shape(layout, dims));
  if (logical) {
    for (std::size_t k = 0; k < a.pos.size(); ++k) a.base_values[static_cast<std::size_t>(a.pos[k])] = (*logical)[k];
  }
  for (auto& v : a.base_values) v = round_to(dtype, v);
  const auto bytes = encode(dtype, a.base_values);
  a.base = Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype);
  a.view = detail::view_of(a.base, layout, dims);
  return a;
}

Arg Conformance::output(DType dtype, ViewKind layout, const Dims& dims) {
  const Layout shape = detail::base_shape(layout, dims);
  Arg a;
  a.base_values.assign(static_cast<std::size_t>(shape.numel()), kNaN);
  const auto bytes = encode(dtype, a.base_values);
  a.base = Tensor::from_bytes(bytes.data(), bytes.size(), shape, dtype);
  a.view = detail::view_of(a.base, layout, dims);
  a.pos = positions(a.view.layout());
  return a;
}

void Conformance::expect_result(const Arg& arg, const std::vector<double>& expect,
                                const std::function<double(std::size_t)>& allowed, const std::string& what) {
  const auto got = arg.base.to_doubles();
  ASSERT_EQ(got.size(), arg.base_values.size()) << what;
  ASSERT_EQ(expect.size(), arg.pos.size()) << what;
  std::vector<char> in_view(got.size(), 0);
  std::ostringstream report;
  std::size_t bad = 0;
  for (std::size_t k = 0; k < arg.pos.size(); ++k) {
    const auto p = static_cast<std::size_t>(arg.pos[k]);
    in_view[p] = 1;
    const double g = got[p];
    const double err = std::abs(g - expect[k]);
    const bool ok = std::isnan(expect[k])   ? std::isnan(g)
                    : std::isinf(expect[k]) ? g == expect[k]
                                            : std::isfinite(g) && err <= allowed(k);
    if (!ok && ++bad <= 5) {
      report << "\n  element " << k << ": got " << g << ", expected " << expect[k] << " (error " << err
             << ", allowed " << allowed(k) << ")";
    }
  }
  for (std::size_t p = 0; p < got.size(); ++p) {
    if (in_view[p]) continue;
    const double before = arg.base_values[p];
    const bool same = std::isnan(before) ? std::isnan(got[p]) : got[p] == before;
    if (!same && ++bad <= 5) {
      report << "\n  storage element " << p << " outside the view changed: " << before << " -> " << got[p];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " wrong element(s) of " << got.size() << report.str();
}

}  // namespace conformance
