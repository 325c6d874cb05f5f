#pragma once
/// @file
/// xylem::fft: discrete Fourier transforms as numpy.fft computes them, over
/// the last axis (fft, ifft, rfft, irfft) or the last two (fft2, ifft2,
/// rfft2, irfft2) of a tensor of any rank, every leading axis a batch.
///
/// Dtypes: fft/ifft/fft2/ifft2 take c64 or c128 and return the same dtype;
/// rfft/rfft2 take f32 or f64 and return c64 or c128; irfft/irfft2 take c64
/// or c128 and return f32 or f64. The forward transform of x of length n is
/// X[j] = sum_k x[k] exp(-2 pi i j k / n), the inverse has the sign +1;
/// `norm` scales them as NumPy's does. Inputs may be any view; results are
/// new contiguous tensors.
///
/// Implementations: FFTW on the host, cuFFT on CUDA (loaded at run time:
/// where it is missing, Backend::supports says no, with the reason in the
/// error). OpenCL devices do not run them: with Fallback::native the call
/// runs on the host, otherwise it raises unsupported.
///
/// Errors, before anything changes: dtype_mismatch (a dtype above not
/// taken), invalid_argument (rank too low, a transform length of 0, n out of
/// range), unsupported (the device lacks the transform, Fallback::raise).
#include <cstdint>

#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem::fft {

/// How a transform pair is scaled (NumPy's `norm`): backward leaves the
/// forward transform unscaled and divides the inverse by n; ortho divides
/// both by sqrt(n); forward divides the forward one by n. n is the product
/// of the transformed lengths.
enum class Norm {
  backward,  ///< forward unscaled, inverse divided by n (NumPy's default)
  ortho,     ///< both divided by sqrt(n)
  forward,   ///< forward divided by n, inverse unscaled
};

/// The 1-D transform of every row (the last axis) of complex x.
[[nodiscard]] Tensor fft(const Backend& b, const Tensor& x, Norm norm = Norm::backward);
/// The inverse of fft: the 1-D transform with the sign +1.
[[nodiscard]] Tensor ifft(const Backend& b, const Tensor& x, Norm norm = Norm::backward);
/// The transform of real x over the last axis, of length n: its n/2 + 1
/// non-negative frequencies (the rest are their conjugates).
[[nodiscard]] Tensor rfft(const Backend& b, const Tensor& x, Norm norm = Norm::backward);
/// The inverse of rfft: a real signal of length n along the last axis from
/// its n/2 + 1 frequencies. n = -1 means 2*(m - 1) for m frequencies; other
/// n take the first n/2 + 1 frequencies of x, zeros past its end (NumPy's
/// crop and pad).
[[nodiscard]] Tensor irfft(const Backend& b, const Tensor& x, std::int64_t n = -1, Norm norm = Norm::backward);

/// The 2-D transform over the last two axes of complex x (rank >= 2).
[[nodiscard]] Tensor fft2(const Backend& b, const Tensor& x, Norm norm = Norm::backward);
/// The inverse of fft2.
[[nodiscard]] Tensor ifft2(const Backend& b, const Tensor& x, Norm norm = Norm::backward);
/// The 2-D transform of real x over the last two axes: [..., n0, n1/2 + 1].
[[nodiscard]] Tensor rfft2(const Backend& b, const Tensor& x, Norm norm = Norm::backward);
/// The inverse of rfft2; n is the last axis' length as irfft's.
[[nodiscard]] Tensor irfft2(const Backend& b, const Tensor& x, std::int64_t n = -1, Norm norm = Norm::backward);

}  // namespace xylem::fft
