#pragma once
// Dense row loops of softmax.cpp (vectorised, best SIMD target), for the
// other kernels that need them (cross_entropy.cpp). Rows are in the
// compute type: f32 for f16/bf16/f32, f64 for f64.
#include <cstddef>

namespace xylem::native {

// softmax, or log_softmax with `log`, of x into y (y may be x).
void softmax_row(const float* x, float* y, std::size_t n, bool log);
void softmax_row(const double* x, double* y, std::size_t n, bool log);
// log(sum(exp(x))), computed stably.
float log_sum_exp(const float* x, std::size_t n);
double log_sum_exp(const double* x, std::size_t n);

}  // namespace xylem::native
