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
using std::sin;
using std::fabs;
using std::pow;
using std::erf;
using std::erfc;
using std::expm1;
using std::log1p;
#endif

/* ---- elementwise codes: OpCall::i[0] of math::unary, binary, compare,
 * reduce. Append only: the numbers are part of the plugin API. ---------- */
enum {
  XY_UN_EXP = 0,
  XY_UN_LOG,
  XY_UN_SQRT,
  XY_UN_RSQRT,
  XY_UN_ABS,
  XY_UN_NEG,
  XY_UN_SIN,
  XY_UN_COS,
  XY_UN_CLAMP,      /* p0 = low, p1 = high; NaN stays NaN */
  XY_UN_SIGMOID,
  XY_UN_RELU,       /* NaN stays NaN */
  XY_UN_TANH,
  XY_UN_LEAKY_RELU, /* p0 = negative slope */
  XY_UN_ELU,        /* p0 = alpha */
  XY_UN_GELU,       /* exact: x * Phi(x) */
  XY_UN_SOFTPLUS,   /* p0 = beta, p1 = threshold (x*beta > threshold: x) */
  XY_UN_COUNT
};
enum {
  XY_BIN_ADD = 0,
  XY_BIN_SUB,
  XY_BIN_MUL,
  XY_BIN_DIV,
  XY_BIN_POW,
  XY_BIN_MAXIMUM, /* NaN propagates */
  XY_BIN_MINIMUM, /* NaN propagates */
  /* activation gradients: a = the forward output y (sigmoid, tanh) or its
   * input x (the others), b = dy; p0 = the forward op's p0 */
  XY_BIN_SIGMOID_GRAD,
  XY_BIN_RELU_GRAD,
  XY_BIN_TANH_GRAD,
  XY_BIN_LEAKY_RELU_GRAD,
  XY_BIN_ELU_GRAD,
  XY_BIN_GELU_GRAD,
  XY_BIN_SOFTPLUS_GRAD, /* p0 = beta; threshold in p1 (OpCall f1) */
  XY_BIN_COUNT
};
enum { XY_CMP_EQ = 0, XY_CMP_NE, XY_CMP_LT, XY_CMP_LE, XY_CMP_GT, XY_CMP_GE, XY_CMP_COUNT };
enum { XY_RED_SUM = 0, XY_RED_MEAN, XY_RED_MAX, XY_RED_MIN, XY_RED_ARGMAX, XY_RED_ARGMIN, XY_RED_VAR, XY_RED_COUNT };

/* ---- the scalar formulas, in f32 and f64. With a constant code (a template
 * argument, a kernel specialised per code) the switch folds away. -------- */
XY_FN float xy_sigmoid_f(float x) { return 1.0f / (1.0f + exp(-x)); }

XY_FN float xy_unary_f(int op, float x, float p0, float p1) {
  switch (op) {
    case XY_UN_EXP: return exp(x);
    case XY_UN_LOG: return log(x);
    case XY_UN_SQRT: return sqrt(x);
    case XY_UN_RSQRT: return 1.0f / sqrt(x);
    case XY_UN_ABS: return fabs(x);
    case XY_UN_NEG: return -x;
    case XY_UN_SIN: return sin(x);
    case XY_UN_COS: return cos(x);
    case XY_UN_CLAMP: return x < p0 ? p0 : (x > p1 ? p1 : x);
    case XY_UN_SIGMOID: return xy_sigmoid_f(x);
    case XY_UN_RELU: return x < 0.0f ? 0.0f : x;
    case XY_UN_TANH: return tanh(x);
    case XY_UN_LEAKY_RELU: return x < 0.0f ? x * p0 : x;
    case XY_UN_ELU: return x > 0.0f ? x : p0 * expm1(x);
    case XY_UN_GELU: return 0.5f * x * erfc(x * -0.70710678118654752f); /* erfc: no cancellation for x << 0 */
    case XY_UN_SOFTPLUS: return x * p0 > p1 ? x : log1p(exp(x * p0)) / p0;
    default: return x;
  }
}

XY_FN float xy_binary_f(int op, float a, float b, float p0, float p1) {
  switch (op) {
    case XY_BIN_ADD: return a + b;
    case XY_BIN_SUB: return a - b;
    case XY_BIN_MUL: return a * b;
    case XY_BIN_DIV: return a / b;
    case XY_BIN_POW: return pow(a, b);
    case XY_BIN_MAXIMUM: return (a > b || a != a) ? a : b;
    case XY_BIN_MINIMUM: return (a < b || a != a) ? a : b;
    case XY_BIN_SIGMOID_GRAD: return b * a * (1.0f - a);
    case XY_BIN_RELU_GRAD: return a > 0.0f ? b : 0.0f;
    case XY_BIN_TANH_GRAD: return b * (1.0f - a * a);
    case XY_BIN_LEAKY_RELU_GRAD: return a > 0.0f ? b : b * p0;
    case XY_BIN_ELU_GRAD: return a > 0.0f ? b : b * p0 * exp(a);
    case XY_BIN_GELU_GRAD: {
      const float cdf = 0.5f * erfc(a * -0.70710678118654752f);
      const float pdf = 0.39894228040143268f * exp(-0.5f * a * a);
      return b * (cdf + a * pdf);
    }
    case XY_BIN_SOFTPLUS_GRAD: return a * p0 > p1 ? b : b * xy_sigmoid_f(a * p0);
    default: return a;
  }
}

XY_FN int xy_compare_f(int op, float a, float b) {
  switch (op) {
    case XY_CMP_EQ: return a == b;
    case XY_CMP_NE: return a != b;
    case XY_CMP_LT: return a < b;
    case XY_CMP_LE: return a <= b;
    case XY_CMP_GT: return a > b;
    case XY_CMP_GE: return a >= b;
    default: return 0;
  }
}

#ifdef XY_DOUBLE
XY_FN double xy_sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

XY_FN double xy_unary_d(int op, double x, double p0, double p1) {
  switch (op) {
    case XY_UN_EXP: return exp(x);
    case XY_UN_LOG: return log(x);
    case XY_UN_SQRT: return sqrt(x);
    case XY_UN_RSQRT: return 1.0 / sqrt(x);
    case XY_UN_ABS: return fabs(x);
    case XY_UN_NEG: return -x;
    case XY_UN_SIN: return sin(x);
    case XY_UN_COS: return cos(x);
    case XY_UN_CLAMP: return x < p0 ? p0 : (x > p1 ? p1 : x);
    case XY_UN_SIGMOID: return xy_sigmoid_d(x);
    case XY_UN_RELU: return x < 0.0 ? 0.0 : x;
    case XY_UN_TANH: return tanh(x);
    case XY_UN_LEAKY_RELU: return x < 0.0 ? x * p0 : x;
    case XY_UN_ELU: return x > 0.0 ? x : p0 * expm1(x);
    case XY_UN_GELU: return 0.5 * x * erfc(x * -0.70710678118654752440);
    case XY_UN_SOFTPLUS: return x * p0 > p1 ? x : log1p(exp(x * p0)) / p0;
    default: return x;
  }
}

XY_FN double xy_binary_d(int op, double a, double b, double p0, double p1) {
  switch (op) {
    case XY_BIN_ADD: return a + b;
    case XY_BIN_SUB: return a - b;
    case XY_BIN_MUL: return a * b;
    case XY_BIN_DIV: return a / b;
    case XY_BIN_POW: return pow(a, b);
    case XY_BIN_MAXIMUM: return (a > b || a != a) ? a : b;
    case XY_BIN_MINIMUM: return (a < b || a != a) ? a : b;
    case XY_BIN_SIGMOID_GRAD: return b * a * (1.0 - a);
    case XY_BIN_RELU_GRAD: return a > 0.0 ? b : 0.0;
    case XY_BIN_TANH_GRAD: return b * (1.0 - a * a);
    case XY_BIN_LEAKY_RELU_GRAD: return a > 0.0 ? b : b * p0;
    case XY_BIN_ELU_GRAD: return a > 0.0 ? b : b * p0 * exp(a);
    case XY_BIN_GELU_GRAD: {
      const double cdf = 0.5 * erfc(a * -0.70710678118654752440);
      const double pdf = 0.39894228040143267794 * exp(-0.5 * a * a);
      return b * (cdf + a * pdf);
    }
    case XY_BIN_SOFTPLUS_GRAD: return a * p0 > p1 ? b : b * xy_sigmoid_d(a * p0);
    default: return a;
  }
}

XY_FN int xy_compare_d(int op, double a, double b) {
  switch (op) {
    case XY_CMP_EQ: return a == b;
    case XY_CMP_NE: return a != b;
    case XY_CMP_LT: return a < b;
    case XY_CMP_LE: return a <= b;
    case XY_CMP_GT: return a > b;
    case XY_CMP_GE: return a >= b;
    default: return 0;
  }
}
#endif

/* The old per-activation names, kept for the tuned kernels that call them. */
XY_FN float xy_relu_f(float x) { return xy_unary_f(XY_UN_RELU, x, 0.0f, 0.0f); }
XY_FN float xy_tanh_f(float x) { return tanh(x); }
XY_FN float xy_sigmoid_grad_f(float y, float dy) { return dy * y * (1.0f - y); }
XY_FN float xy_relu_grad_f(float x, float dy) { return x > 0.0f ? dy : 0.0f; }
XY_FN float xy_tanh_grad_f(float y, float dy) { return dy * (1.0f - y * y); }
#ifdef XY_DOUBLE
XY_FN double xy_relu_d(double x) { return xy_unary_d(XY_UN_RELU, x, 0.0, 0.0); }
XY_FN double xy_tanh_d(double x) { return tanh(x); }
XY_FN double xy_sigmoid_grad_d(double y, double dy) { return dy * y * (1.0 - y); }
XY_FN double xy_relu_grad_d(double x, double dy) { return x > 0.0 ? dy : 0.0; }
XY_FN double xy_tanh_grad_d(double y, double dy) { return dy * (1.0 - y * y); }
#endif

/* bf16 <-> f32 on the bits (any C dialect): bf16 is the top half of an f32.
 * Rounding to nearest even; NaN stays a (quiet) NaN. */
XY_FN xy_u32 xy_bf16_to_f32_bits(xy_u32 bf16) { return bf16 << 16; }
XY_FN xy_u32 xy_f32_bits_to_bf16(xy_u32 bits) {
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x0040u; /* NaN: keep it quiet */
  return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

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
