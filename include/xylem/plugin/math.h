/* The math of xylem's own kernels, written once. This header compiles as
 * C++ (native), as CUDA (__host__ __device__) and as OpenCL C (embedded as
 * source), so the three frameworks share one definition of every formula
 * and of the random number generator. Keep it C99: no templates, no
 * references, no std::. Double versions need XY_HAS_FP64 in OpenCL. */
#ifndef XYLEM_PLUGIN_MATH_H
#define XYLEM_PLUGIN_MATH_H

#if defined(__OPENCL_VERSION__)
#define XY_FN inline
typedef uint xy_u32;
typedef ulong xy_u64;
#if defined(cl_khr_fp64) || defined(XY_HAS_FP64)
#define XY_DOUBLE 1
#endif
#elif defined(__CUDACC__)
#define XY_FN __host__ __device__ __forceinline__
#include <cmath>
#include <cstdint>
typedef std::uint32_t xy_u32;
typedef std::uint64_t xy_u64;
#define XY_DOUBLE 1
#else
#define XY_FN inline
#include <cmath>
#include <cstdint>
typedef std::uint32_t xy_u32;
typedef std::uint64_t xy_u64;
#define XY_DOUBLE 1
using std::exp;
using std::tanh;
using std::log;
using std::sqrt;
using std::cos;
#endif

/* ---- activations and their gradients ---------------------------------- */
XY_FN float xy_sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }
XY_FN float xy_sigmoid_grad_f(float y, float dy) { return dy * y * (1.0f - y); }
XY_FN float xy_relu_f(float x) { return x > 0.0f ? x : 0.0f; }
XY_FN float xy_relu_grad_f(float x, float dy) { return x > 0.0f ? dy : 0.0f; }
XY_FN float xy_tanh_f(float x) { return tanh(x); }
XY_FN float xy_tanh_grad_f(float y, float dy) { return dy * (1.0f - y * y); }

#ifdef XY_DOUBLE
XY_FN double xy_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }
XY_FN double xy_sigmoid_grad_d(double y, double dy) { return dy * y * (1.0 - y); }
XY_FN double xy_relu_d(double x) { return x > 0.0 ? x : 0.0; }
XY_FN double xy_relu_grad_d(double x, double dy) { return x > 0.0 ? dy : 0.0; }
XY_FN double xy_tanh_d(double x) { return tanh(x); }
XY_FN double xy_tanh_grad_d(double y, double dy) { return dy * (1.0 - y * y); }
#endif

/* ---- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
 * 1, 2, 3", SC'11). Counter-based: element k of a call with (seed, offset)
 * draws from counter offset+k, so every framework and every thread layout
 * produce the same numbers. ------------------------------------------------ */
typedef struct {
  xy_u32 v[4];
} xy_philox_out;

XY_FN xy_philox_out xy_philox(xy_u64 seed, xy_u64 counter) {
  xy_u32 c0 = (xy_u32)counter, c1 = (xy_u32)(counter >> 32), c2 = 0u, c3 = 0u;
  xy_u32 k0 = (xy_u32)seed, k1 = (xy_u32)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    xy_u64 p0 = (xy_u64)0xD2511F53u * (xy_u64)c0;
    xy_u64 p1 = (xy_u64)0xCD9E8D57u * (xy_u64)c2;
    xy_u32 hi0 = (xy_u32)(p0 >> 32), lo0 = (xy_u32)p0;
    xy_u32 hi1 = (xy_u32)(p1 >> 32), lo1 = (xy_u32)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  xy_philox_out out;
  out.v[0] = c0;
  out.v[1] = c1;
  out.v[2] = c2;
  out.v[3] = c3;
  return out;
}

/* Uniform in [0, 1): 24 random bits for float, 53 for double. */
XY_FN float xy_uniform01_f(xy_philox_out r) { return (float)(r.v[0] >> 8) * (1.0f / 16777216.0f); }
/* Normal by Box-Muller; u1 in (0, 1] so the log is finite. */
XY_FN float xy_normal_f(xy_philox_out r) {
  float u1 = ((float)(r.v[0] >> 8) + 1.0f) * (1.0f / 16777216.0f);
  float u2 = (float)(r.v[1] >> 8) * (1.0f / 16777216.0f);
  return sqrt(-2.0f * log(u1)) * cos(6.2831853071795864769f * u2);
}
#ifdef XY_DOUBLE
XY_FN double xy_uniform01_d(xy_philox_out r) {
  xy_u64 bits = ((xy_u64)r.v[0] << 21) ^ (xy_u64)(r.v[1] >> 11);
  return (double)bits * (1.0 / 9007199254740992.0);
}
XY_FN double xy_normal_d(xy_philox_out r) {
  xy_u64 b1 = ((xy_u64)r.v[0] << 21) ^ (xy_u64)(r.v[1] >> 11);
  xy_u64 b2 = ((xy_u64)r.v[2] << 21) ^ (xy_u64)(r.v[3] >> 11);
  double u1 = ((double)b1 + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = (double)b2 * (1.0 / 9007199254740992.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
#endif

#endif /* XYLEM_PLUGIN_MATH_H */
