// blas::gemm on f16 and bf16 storage, accumulating in f32: every transpose
// combination, beta 0 over NaN-poisoned C, beta != 0, odd sizes. Inputs are
// multiples of 1/64 in [-2, 2], exact in both formats, so the float64
// reference sees exactly what the kernel reads; the tolerance covers f32
// accumulation and the final rounding to the storage type.
#include <bit>
#include <cstring>

#include "conformance/conformance.hpp"

namespace conformance {
namespace {

using xylem::blas::Transpose;

// Bits of a float that is exact in the target format (no rounding needed).
std::uint16_t exact_bits(float v, DType dtype) {
  const auto f = std::bit_cast<std::uint32_t>(v);
  if (dtype == DType::bf16) return static_cast<std::uint16_t>(f >> 16);
  if (v == 0.0f) return static_cast<std::uint16_t>((f >> 16) & 0x8000u);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t exponent = ((f >> 23) & 0xFFu) - 127 + 15;
  return static_cast<std::uint16_t>(sign | (exponent << 10) | ((f >> 13) & 0x3FFu));
}

class GemmHalf : public Conformance {
 protected:
  // A rows x cols matrix of exact values (or NaN bits when poisoned).
  Tensor matrix(DType dtype, std::int64_t rows, std::int64_t cols, std::vector<double>& values, bool nan = false) {
    std::uniform_int_distribution<int> k(-128, 128);
    std::vector<std::uint16_t> bits(static_cast<std::size_t>(rows * cols));
    values.resize(bits.size());
    for (std::size_t i = 0; i < bits.size(); ++i) {
      values[i] = nan ? kNaN : k(rng) / 64.0;
      bits[i] = nan ? std::uint16_t(dtype == DType::f16 ? 0x7E00u : 0x7FC0u)
                    : exact_bits(static_cast<float>(values[i]), dtype);
    }
    return Tensor::from_bytes(bits.data(), bits.size() * 2, Layout{rows, cols}, dtype);
  }

  void check(DType dtype, std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, double alpha,
             double beta) {
    std::vector<double> av, bv, cv;
    Tensor a = ta ? matrix(dtype, k, m, av) : matrix(dtype, m, k, av);
    Tensor b = tb ? matrix(dtype, n, k, bv) : matrix(dtype, k, n, bv);
    Tensor c = matrix(dtype, m, n, cv, beta == 0);
    const double unit = dtype == DType::f16 ? 0x1p-11 : 0x1p-8;  // half an ulp, relative
    std::vector<double> expect(static_cast<std::size_t>(m * n)), allowed(expect.size());
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double x = av[static_cast<std::size_t>(ta ? p * m + i : i * k + p)];
          const double y = bv[static_cast<std::size_t>(tb ? j * k + p : p * n + j)];
          sum += x * y;
          mag += std::abs(x * y);
        }
        const auto e = static_cast<std::size_t>(i * n + j);
        const double c0 = beta == 0 ? 0.0 : cv[e];
        expect[e] = alpha * sum + beta * c0;
        const double scale = std::abs(alpha) * mag + std::abs(beta * c0);
        allowed[e] = unit * std::abs(expect[e]) + 2.0 * double(k + 2) * 0x1p-24 * scale + 1e-30;
      }
    }
    xylem::blas::gemm(backend, ta ? Transpose::yes : Transpose::no, tb ? Transpose::yes : Transpose::no, alpha, a,
                      b, beta, c);
    const std::vector<double> got = c.to_doubles();
    std::size_t bad = 0;
    for (std::size_t e = 0; e < got.size(); ++e) {
      if (!(std::abs(got[e] - expect[e]) <= allowed[e]) && ++bad <= 5)
        ADD_FAILURE() << "element " << e << ": got " << got[e] << ", expected " << expect[e] << " (allowed "
                      << allowed[e] << ")";
    }
    EXPECT_EQ(bad, 0u);
  }
};

TEST_P(GemmHalf, gemm) {
  for (DType dtype : {DType::f16, DType::bf16}) {
    if (!runs(OpId::blas_gemm, dtype, [&] {
          std::vector<double> v;
          Tensor a = matrix(dtype, 2, 2, v);
          xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1, a, a, 0, a);
        })) {
      continue;
    }
    for (auto [m, n, k] : {std::array<std::int64_t, 3>{1, 1, 1}, {7, 5, 3}, {37, 53, 19}, {64, 64, 96}}) {
      for (int t = 0; t < 4; ++t) {
        for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.5, -0.5}}) {
          SCOPED_TRACE(::testing::Message() << name(dtype) << " m=" << m << " n=" << n << " k=" << k << " ta="
                                            << (t & 1) << " tb=" << (t >> 1) << " alpha=" << alpha
                                            << " beta=" << beta);
          check(dtype, m, n, k, t & 1, t & 2, alpha, beta);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, GemmHalf, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
