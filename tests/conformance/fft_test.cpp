// xylem::fft on every framework: fft/ifft, rfft/irfft and their 2-D forms
// in c64/c128 (f32/f64 on the real side) against a float64 DFT computed here
// from its definition, every norm, lengths that are primes, powers of two
// and 1, batches given as views; inverse(forward(x)) == x; inputs never
// changed; empty batches; bad arguments raising typed errors with nothing
// changed. OpenCL devices do not run the transforms: they must say so.
#include "xylem/fft.hpp"

#include <complex>
#include <numbers>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"
#include "xylem/creation.hpp"
#include "xylem/math.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::fft::Norm;
using C = std::complex<double>;

// The DFT of n points of x from `first`, `stride` apart, with the exponent's
// sign; the angle is taken from j*k mod n, so the reference stays exact.
std::vector<C> dft(const std::vector<C>& x, std::size_t first, std::size_t stride, std::size_t n, int sign) {
  std::vector<C> out(n);
  for (std::size_t j = 0; j < n; ++j) {
    C sum = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const double angle = sign * 2 * std::numbers::pi * double((j * k) % n) / double(n);
      sum += x[first + k * stride] * C(std::cos(angle), std::sin(angle));
    }
    out[j] = sum;
  }
  return out;
}

// The unscaled transform of each of `batch` row-major blocks of dims
// `lengths` (1 or 2 of them), over every axis of the block.
std::vector<C> reference(std::vector<C> x, std::size_t batch, const std::vector<std::size_t>& lengths, int sign) {
  const std::size_t n0 = lengths[0], n1 = lengths.size() == 2 ? lengths[1] : 1, block = n0 * n1;
  for (std::size_t b = 0; b < batch; ++b) {
    if (lengths.size() == 2) {
      for (std::size_t i = 0; i < n0; ++i) {  // rows (the last axis)
        const auto row = dft(x, b * block + i * n1, 1, n1, sign);
        for (std::size_t j = 0; j < n1; ++j) x[b * block + i * n1 + j] = row[j];
      }
      for (std::size_t j = 0; j < n1; ++j) {  // columns
        const auto col = dft(x, b * block + j, n1, n0, sign);
        for (std::size_t i = 0; i < n0; ++i) x[b * block + i * n1 + j] = col[i];
      }
    } else {
      const auto row = dft(x, b * block, 1, n0, sign);
      for (std::size_t j = 0; j < n0; ++j) x[b * block + j] = row[j];
    }
  }
  return x;
}

double norm_scale(Norm norm, bool inverse, double n) {
  switch (norm) {
    case Norm::backward:
      return inverse ? 1 / n : 1;
    case Norm::ortho:
      return 1 / std::sqrt(n);
    case Norm::forward:
      return inverse ? 1 : 1 / n;
  }
  return 1;
}

const char* norm_name(Norm norm) {
  return norm == Norm::backward ? "backward" : norm == Norm::ortho ? "ortho" : "forward";
}

constexpr Norm kNorms[] = {Norm::backward, Norm::ortho, Norm::forward};
// Lengths: 1, primes, powers of two and a composite of several factors.
constexpr std::size_t k1d[] = {1, 2, 7, 8, 97, 128, 360};
// (batch, [n0, n1]) of the 2-D cases: a prime along either axis.
const std::pair<std::size_t, std::vector<std::size_t>> k2d[] = {
    {1, {1, 1}}, {2, {7, 8}}, {3, {16, 5}}, {1, {97, 4}}, {1, {4, 97}}};

// Each element of `v` times `factor`.
std::vector<C> scaled(std::vector<C> v, double factor) {
  for (auto& e : v) e *= factor;
  return v;
}

// "batch 2, n 7x8": a case's trace.
std::string case_name(std::size_t batch, const std::vector<std::size_t>& lengths) {
  std::string name = "batch " + std::to_string(batch) + ", n " + std::to_string(lengths[0]);
  if (lengths.size() == 2) name.append("x").append(std::to_string(lengths[1]));
  return name;
}

// An input x of dims [batch, lengths...] holding `data` (complex or real),
// its values in float64 and the sum of |x| over each transform's input
// (expect_close's scale).
struct Signal {
  Dims dims;
  Tensor x;
  std::vector<C> x64;
  std::vector<double> l1;

  template <class V>
  Signal(std::size_t batch, const std::vector<std::size_t>& lengths, const std::vector<V>& data)
      : dims{std::int64_t(batch)}, x64(data.begin(), data.end()), l1(batch, 0) {
    for (auto n : lengths) dims.push_back(std::int64_t(n));
    x = Tensor::from(data, layout());
    const std::size_t block = x64.size() / batch;
    for (std::size_t k = 0; k < x64.size(); ++k) l1[k / block] += std::abs(x64[k]);
  }
  [[nodiscard]] Layout layout() const { return Layout(std::span<const std::int64_t>(dims)); }
};

class Fft : public Conformance {
 protected:
  // True when the backend runs the transform `op` in `dtype` (its input's);
  // otherwise checks that a small one raises unsupported, and says so.
  bool runs_transform(OpId op, DType dtype) {
    const Layout one{1, 1};
    return runs(op, dtype, [&] {
      if (op == OpId::fft_r2c) {
        (void)xylem::fft::rfft2(backend, xylem::zeros(backend, one, dtype));
      } else {
        const Tensor x = Tensor::from(std::vector<std::complex<double>>{{1, 0}}, one);
        (void)(op == OpId::fft_c2r ? xylem::fft::irfft(backend, x, 1) : xylem::fft::fft2(backend, x));
      }
    });
  }

  // Random values in [-1, 1], exact in R.
  template <class R>
  std::vector<R> reals(std::size_t n) {
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<R> v(n);
    for (auto& e : v) e = static_cast<R>(u(rng));
    return v;
  }
  template <class R>
  std::vector<std::complex<R>> complexes(std::size_t n) {
    const auto parts = reals<R>(2 * n);
    std::vector<std::complex<R>> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = {parts[2 * i], parts[2 * i + 1]};
    return v;
  }

  // Checks `got` (complex or real tensor) against `expect`: each element of
  // transform b within tol * scale * (sum of |x| over b's input) of it.
  template <class R>
  void expect_close(const Tensor& got, const std::vector<C>& expect, std::size_t batch,
                    const std::vector<double>& input_l1, double scale, const std::string& what) {
    SCOPED_TRACE(what);
    const double tol = std::is_same_v<R, float> ? 2e-6 : 1e-14;
    const std::vector<double> values = got.to_doubles();
    const bool complex = xylem::is_complex(got.dtype());
    ASSERT_EQ(values.size(), expect.size() * (complex ? 2 : 1));
    const std::size_t per = expect.size() / batch;
    for (std::size_t k = 0; k < expect.size(); ++k) {
      const C g = complex ? C(values[2 * k], values[2 * k + 1]) : C(values[k], 0);
      const double allowed = tol * scale * input_l1[k / per] + 1e-300;
      ASSERT_LE(std::abs(g - expect[k]), allowed) << "element " << k << ": got " << g << ", expected " << expect[k];
    }
  }

  // fft/ifft (or fft2/ifft2) of a [batch, lengths...] complex input, each norm.
  template <class R>
  void c2c(std::size_t batch, const std::vector<std::size_t>& lengths) {
    const bool two = lengths.size() == 2;
    SCOPED_TRACE(case_name(batch, lengths));
    const std::size_t block = lengths[0] * (two ? lengths[1] : 1);
    const Signal in(batch, lengths, complexes<R>(batch * block));
    const Tensor& x = in.x;
    const auto forward = reference(in.x64, batch, lengths, -1);
    const auto inverse = reference(in.x64, batch, lengths, +1);
    const auto before = xylem_test::snapshot(x);
    for (Norm norm : kNorms) {
      const Tensor y = two ? xylem::fft::fft2(backend, x, norm) : xylem::fft::fft(backend, x, norm);
      EXPECT_EQ(y.dtype(), x.dtype());
      EXPECT_EQ(y.layout(), in.layout());
      const double fs = norm_scale(norm, false, double(block)), is = norm_scale(norm, true, double(block));
      expect_close<R>(y, scaled(forward, fs), batch, in.l1, fs, std::string("forward, norm ") + norm_name(norm));
      const Tensor z = two ? xylem::fft::ifft2(backend, x, norm) : xylem::fft::ifft(backend, x, norm);
      expect_close<R>(z, scaled(inverse, is), batch, in.l1, is, std::string("inverse, norm ") + norm_name(norm));
      // The round trip gives x back, whatever the norm.
      const Tensor back = two ? xylem::fft::ifft2(backend, y, norm) : xylem::fft::ifft(backend, y, norm);
      expect_close<R>(back, in.x64, batch, in.l1, 1, std::string("ifft(fft(x)), norm ") + norm_name(norm));
    }
    XY_EXPECT_UNCHANGED(x, before);
  }

  // rfft/irfft (or the 2-D forms) of a [batch, lengths...] real signal, each norm.
  template <class R>
  void real(std::size_t batch, const std::vector<std::size_t>& lengths) {
    const bool two = lengths.size() == 2;
    SCOPED_TRACE(case_name(batch, lengths));
    const std::size_t n_last = lengths.back(), half_last = n_last / 2 + 1;
    const std::size_t rows = two ? lengths[0] : 1, block = rows * n_last, half = rows * half_last;
    const Signal in(batch, lengths, reals<R>(batch * block));
    const Tensor& x = in.x;
    // The reference's non-negative frequencies of the last axis.
    const auto full = reference(in.x64, batch, lengths, -1);
    std::vector<C> spectrum(batch * half);
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < half_last; ++j)
          spectrum[b * half + i * half_last + j] = full[b * block + i * n_last + j];
    const auto before = xylem_test::snapshot(x);
    for (Norm norm : kNorms) {
      const Tensor y = two ? xylem::fft::rfft2(backend, x, norm) : xylem::fft::rfft(backend, x, norm);
      EXPECT_EQ(y.dtype(), xylem::complex_of(x.dtype()));
      EXPECT_EQ(y.shape().back(), std::int64_t(half_last));
      const double fs = norm_scale(norm, false, double(block));
      expect_close<R>(y, scaled(spectrum, fs), batch, in.l1, fs, std::string("rfft, norm ") + norm_name(norm));
      // irfft of the spectrum (n given: odd lengths cannot be told from it)
      // is the signal again; its input stays as it was.
      const auto y_before = xylem_test::snapshot(y);
      const auto n = std::int64_t(n_last);
      const Tensor back = two ? xylem::fft::irfft2(backend, y, n, norm) : xylem::fft::irfft(backend, y, n, norm);
      EXPECT_EQ(back.dtype(), x.dtype());
      EXPECT_EQ(back.layout(), x.layout());
      expect_close<R>(back, in.x64, batch, in.l1, 1, std::string("irfft(rfft(x)), norm ") + norm_name(norm));
      XY_EXPECT_UNCHANGED(y, y_before);
    }
    XY_EXPECT_UNCHANGED(x, before);
  }

  // c2c (or real) over the 1-D lengths (batches of 3) or the 2-D cases, in
  // both precisions.
  void each_case(bool real_input, int rank) {
    for_each_dtype([&](auto r) {
      using R = decltype(r);
      const auto run = [&](std::size_t batch, const std::vector<std::size_t>& lengths) {
        if (real_input) {
          real<R>(batch, lengths);
        } else {
          c2c<R>(batch, lengths);
        }
      };
      if (rank == 1) {
        for (std::size_t n : k1d) run(3, {n});
      } else {
        for (const auto& [batch, lengths] : k2d) run(batch, lengths);
      }
    });
  }
};

TEST_P(Fft, fft) {
  if (!runs_transform(OpId::fft_c2c, DType::c128)) return;
  each_case(false, 1);
  for_each_dtype([&](auto r) { c2c<decltype(r)>(1, {1024}); });
}

// Calls of 2^16 elements and more: native plans them for its threads
// (FFTW's parallel loops on oneTBB), a path the small cases never take.
TEST_P(Fft, ThreadedPlans) {
  if (!runs_transform(OpId::fft_c2c, DType::c128)) return;
  for_each_dtype([&](auto r) {
    using R = decltype(r);
    c2c<R>(257, {256});
    c2c<R>(1, {256, 257});
    real<R>(257, {256});
  });
}

TEST_P(Fft, fft2) {
  if (!runs_transform(OpId::fft_c2c, DType::c128)) return;
  each_case(false, 2);
}

TEST_P(Fft, rfft) {
  if (!runs_transform(OpId::fft_r2c, DType::f64)) return;
  each_case(true, 1);
}

TEST_P(Fft, rfft2) {
  if (!runs_transform(OpId::fft_r2c, DType::f64)) return;
  each_case(true, 2);
}

// Batches and signals as views: every other matrix of a larger batch, a
// transposed signal; leading batch axes of any rank.
TEST_P(Fft, Views) {
  if (!runs_transform(OpId::fft_c2c, DType::c128)) return;
  const auto data = complexes<double>(2 * 5 * 7);
  const Tensor base = Tensor::from(data, Layout{2, 5, 7});
  const Tensor every_other = base.slice(1, 0, 5, 2);  // [2, 3, 7]
  std::vector<C> picked;
  for (std::size_t a = 0; a < 2; ++a)
    for (std::size_t b = 0; b < 5; b += 2)
      for (std::size_t k = 0; k < 7; ++k) picked.push_back(data[(a * 5 + b) * 7 + k]);
  std::vector<double> l1(6, 0);
  for (std::size_t k = 0; k < picked.size(); ++k) l1[k / 7] += std::abs(picked[k]);
  const Tensor y = xylem::fft::fft(backend, every_other);
  EXPECT_EQ(y.layout(), (Layout{2, 3, 7}));
  expect_close<double>(y, reference(picked, 6, {7}, -1), 6, l1, 1, "every other row");
  // The transpose of a [5, 7] matrix: 7 signals of 5 points, each a column.
  const Tensor columns = base.slice(0, 0, 1).reshape({5, 7}).transpose();
  std::vector<C> cols;
  for (std::size_t j = 0; j < 7; ++j)
    for (std::size_t i = 0; i < 5; ++i) cols.push_back(data[i * 7 + j]);
  std::vector<double> l1c(7, 0);
  for (std::size_t k = 0; k < cols.size(); ++k) l1c[k / 5] += std::abs(cols[k]);
  expect_close<double>(xylem::fft::fft(backend, columns), reference(cols, 7, {5}, -1), 7, l1c, 1, "columns");
  // A real signal as a strided view, through rfft.
  const auto signal = reals<double>(16);
  const Tensor strided = Tensor::from(signal).slice(0, 1, 16, 2);  // 8 points
  std::vector<C> s64;
  for (std::size_t k = 1; k < 16; k += 2) s64.push_back(signal[k]);
  double sl1 = 0;
  for (const C& v : s64) sl1 += std::abs(v);
  auto spectrum = reference(s64, 1, {8}, -1);
  spectrum.resize(5);
  expect_close<double>(xylem::fft::rfft(backend, strided), spectrum, 1, {sl1}, 1, "strided real signal");
}

// irfft's n: the default 2*(m - 1); a shorter n crops the spectrum, a longer
// one pads it with zeros, as NumPy's does.
TEST_P(Fft, IrfftLength) {
  if (!runs_transform(OpId::fft_c2r, DType::c128)) return;
  const auto signal = reals<double>(10);
  const std::vector<C> s64(signal.begin(), signal.end());
  auto spectrum = reference(s64, 1, {10}, -1);
  spectrum.resize(6);
  const std::vector<std::complex<double>> spec(spectrum.begin(), spectrum.end());
  const Tensor y = Tensor::from(spec);
  double l1 = 0;
  for (const C& v : spectrum) l1 += std::abs(v);
  // The inverse of m frequencies as an n-point signal: the hermitian
  // spectrum of length n built from the first n/2 + 1 of them (zeros past m).
  const auto inverse_of = [&](std::size_t n) {
    std::vector<C> full(n, 0);
    for (std::size_t j = 0; j <= n / 2 && j < spec.size(); ++j) {
      full[j] = spectrum[j];
      if (j != 0) full[n - j] = std::conj(spectrum[j]);
    }
    // The bins a real signal's transform holds as real numbers: their
    // imaginary parts do not count (NumPy's irfft).
    full[0] = full[0].real();
    if (n % 2 == 0) full[n / 2] = full[n / 2].real();
    auto out = reference(full, 1, {n}, +1);
    for (auto& v : out) v /= double(n);
    return out;
  };
  expect_close<double>(xylem::fft::irfft(backend, y), s64, 1, {l1}, 1, "default n");
  for (std::int64_t n : {1, 5, 7, 10, 13, 16}) {
    const Tensor z = xylem::fft::irfft(backend, y, n);
    EXPECT_EQ(z.layout(), (Layout{n}));
    expect_close<double>(z, inverse_of(std::size_t(n)), 1, {l1}, 1.0 / double(n), "n " + std::to_string(n));
  }
}

TEST_P(Fft, EmptyBatch) {
  if (!runs_transform(OpId::fft_c2c, DType::c128)) return;
  const Tensor x = xylem::zeros(backend, Layout{0, 8}, DType::c64);
  const Tensor y = xylem::fft::fft(backend, x);
  EXPECT_EQ(y.layout(), (Layout{0, 8}));
  EXPECT_TRUE(y.to_vector<std::complex<float>>().empty());
  const Tensor r = xylem::fft::rfft(backend, xylem::zeros(backend, Layout{3, 0, 8}, DType::f32));
  EXPECT_EQ(r.layout(), (Layout{3, 0, 5}));
  EXPECT_EQ(r.dtype(), DType::c64);
}

TEST_P(Fft, BadArguments) {
  const Tensor c = Tensor::from(complexes<float>(8), Layout{2, 4});
  const Tensor r = Tensor::from(reals<float>(8), Layout{2, 4});
  const auto c_before = xylem_test::snapshot(c);
  const auto r_before = xylem_test::snapshot(r);
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::fft::fft(backend, r));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::fft::ifft2(backend, r));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::fft::rfft(backend, c));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::fft::irfft(backend, r));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  (void)xylem::fft::rfft(backend, Tensor::from(std::vector<std::int32_t>{1, 2})));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::fft::fft2(backend, c.reshape({8})));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::fft::fft(backend, c.reshape({8}).slice(0, 0, 1).reshape(std::span<const std::int64_t>())));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::fft::fft(backend, c.slice(1, 0, 0)));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::fft::irfft(backend, c, 0));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::fft::irfft(backend, c.slice(1, 0, 1)));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::fft::fft(backend, Tensor()));
  XY_EXPECT_UNCHANGED(c, c_before);
  XY_EXPECT_UNCHANGED(r, r_before);
}

// Complex tensors on the backend: fill, copies of views, and every op that
// does not take them refusing them before anything changes.
TEST_P(Fft, ComplexTensors) {
  const auto check = [&](auto r) {
    using R = decltype(r);
    const DType dtype = xylem::dtype_of_v<std::complex<R>>;
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    if (!runs(OpId::creation_fill, dtype, [&] { (void)xylem::full(backend, Layout{2}, dtype, 1); })) return;
    Tensor t = xylem::full(backend, Layout{3, 4}, dtype, 2.5);
    const auto values = t.to_doubles();
    for (std::size_t k = 0; k < values.size(); ++k) EXPECT_EQ(values[k], k % 2 == 0 ? 2.5 : 0.0) << k;
    const auto data = complexes<R>(12);
    const Tensor transposed = xylem::contiguous(backend, Tensor::from(data, Layout{3, 4}).transpose());
    const auto got = transposed.to_vector<std::complex<R>>();
    for (std::size_t i = 0; i < 4; ++i)
      for (std::size_t j = 0; j < 3; ++j) EXPECT_EQ(got[i * 3 + j], data[j * 4 + i]) << i << ", " << j;
    const auto before = xylem_test::snapshot(t);
    XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::exp(backend, t));
    XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::add(backend, t, t));
    EXPECT_FALSE(backend.supports(OpId::math_cast, dtype));
    EXPECT_FALSE(backend.supports(OpId::math_binary, dtype));
    EXPECT_FALSE(backend.supports(OpId::creation_arange, dtype));
    XY_EXPECT_ERROR(ErrorCode::unsupported, (void)xylem::cast(backend, t, DType::f32));
    XY_EXPECT_ERROR(ErrorCode::unsupported, (void)xylem::cast(backend, xylem::zeros(backend, Layout{2}, DType::f32), dtype));
    XY_EXPECT_UNCHANGED(t, before);
  };
  check(float{});
  check(double{});
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Fft, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
