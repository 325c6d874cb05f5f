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
typedef int xy_i32;
typedef long xy_i64;
#if defined(cl_khr_fp64) || defined(XY_HAS_FP64)
#define XY_DOUBLE 1
#endif
#elif defined(__CUDACC_RTC__)
/* NVRTC (the CUDA plugin's fused kernels): no standard headers; the math
 * functions are the device library's, always declared. */
#define XY_FN __device__ __forceinline__
typedef unsigned int xy_u32;
typedef unsigned long long xy_u64;
typedef int xy_i32;
typedef long long xy_i64;
#define XY_DOUBLE 1
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
#elif defined(__CUDACC__)
#define XY_FN __host__ __device__ __forceinline__
#include <cmath>
#include <cstdint>
typedef std::uint32_t xy_u32;
typedef std::uint64_t xy_u64;
typedef std::int32_t xy_i32;
typedef std::int64_t xy_i64;
#define XY_DOUBLE 1
#else
#define XY_FN inline
#include <cmath>
#include <cstdint>
typedef std::uint32_t xy_u32;
typedef std::uint64_t xy_u64;
typedef std::int32_t xy_i32;
typedef std::int64_t xy_i64;
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
  XY_UN_SILU,       /* x * sigmoid(x) */
  XY_UN_GELU_TANH,  /* GELU, the tanh approximation */
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
  XY_BIN_SILU_GRAD,
  XY_BIN_GELU_TANH_GRAD,
  /* pointwise KL divergence, a = the input (log-probabilities), b = the
   * target (probabilities): b log b - b a, 0 where b == 0 (PyTorch's xlogy) */
  XY_BIN_KL_DIV,
  XY_BIN_COUNT
};
enum { XY_CMP_EQ = 0, XY_CMP_NE, XY_CMP_LT, XY_CMP_LE, XY_CMP_GT, XY_CMP_GE, XY_CMP_COUNT };
enum { XY_RED_SUM = 0, XY_RED_MEAN, XY_RED_MAX, XY_RED_MIN, XY_RED_ARGMAX, XY_RED_ARGMIN, XY_RED_VAR, XY_RED_COUNT };

/* ---- the formulas, each written once -----------------------------------
 * One X-list per op family: CASE(code, expression) for every code, the
 * expression over a value type V (a scalar, or an OpenCL vector, whose ?:
 * and comparisons work lane by lane). What varies by type comes in as
 * arguments: K(literal) types a floating literal (XY_LIT_F: 0.5f, XY_LIT_D:
 * 0.5, so no f32 formula computes in double), and the functions a framework
 * replaces with faster equivalents (OpenCL's branch-free f32 exp and tanh,
 * its workarounds for PoCL's vector sin and pow) are exp_fn, tanh_fn,
 * sin_fn and pow_fn. Instantiated below as math.h's scalar functions
 * (native, CUDA) and by kernels/elementwise.cl (OpenCL, scalar and vector);
 * CASE can also turn a line into text (#expression) for generated kernels.
 * Only the native Highway paths write their own vector transcription
 * (Highway's vectors have no ?:), checked against these by the
 * conformance suite. */
#define XY_LIT_F(v) XY_LIT_F_(v)
#define XY_LIT_F_(v) v##f
#define XY_LIT_D(v) v
#define XY_RSQRT2 0.70710678118654752440   /* 1 / sqrt(2) */
#define XY_RSQRT2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */

#define XY_SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2 / pi) */
#define XY_GELU_KAPPA 0.044715

#define XY_SIGMOID(K, exp_fn, t) (K(1.0) / (K(1.0) + exp_fn(-(t))))
/* GELU's tanh approximation, 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715
 * x^3), is computed as x sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)): the same
 * function without 1 + tanh(u)'s cancellation for negative x. */
#define XY_GELU_TANH_S(K, exp_fn, t) \
  XY_SIGMOID(K, exp_fn, K(2.0) * K(XY_SQRT_2_OVER_PI) * ((t) + K(XY_GELU_KAPPA) * (t) * (t) * (t)))

#define XY_UNARY_FORMULAS(CASE, V, K, x, p0, p1, exp_fn, tanh_fn, sin_fn)    \
  CASE(XY_UN_EXP, exp_fn(x))                                                 \
  CASE(XY_UN_LOG, log(x))                                                    \
  CASE(XY_UN_SQRT, sqrt(x))                                                  \
  CASE(XY_UN_RSQRT, K(1.0) / sqrt(x))                                        \
  CASE(XY_UN_ABS, fabs(x))                                                   \
  CASE(XY_UN_NEG, -(x))                                                      \
  CASE(XY_UN_SIN, sin_fn(x))                                                 \
  CASE(XY_UN_COS, cos(x))                                                    \
  CASE(XY_UN_CLAMP, x < p0 ? (V)(p0) : (x > p1 ? (V)(p1) : x))               \
  CASE(XY_UN_SIGMOID, XY_SIGMOID(K, exp_fn, x))                              \
  CASE(XY_UN_RELU, x < K(0.0) ? (V)(K(0.0)) : x)                             \
  CASE(XY_UN_TANH, tanh_fn(x))                                               \
  CASE(XY_UN_LEAKY_RELU, x < K(0.0) ? x * p0 : x)                            \
  CASE(XY_UN_ELU, x > K(0.0) ? x : p0 * expm1(x))                            \
  /* erfc: no cancellation for x << 0 */                                     \
  CASE(XY_UN_GELU, K(0.5) * x * erfc(x * -K(XY_RSQRT2)))                     \
  CASE(XY_UN_SOFTPLUS, x * p0 > p1 ? x : log1p(exp_fn(x * p0)) / p0)         \
  /* -Inf gives NaN in both, as PyTorch's do */                              \
  CASE(XY_UN_SILU, x / (K(1.0) + exp_fn(-(x))))                              \
  CASE(XY_UN_GELU_TANH, x * XY_GELU_TANH_S(K, exp_fn, x))

/* a != a: NaN, in every dialect and on vectors. */
#define XY_BINARY_FORMULAS(CASE, V, K, a, b, p0, p1, exp_fn, pow_fn)                                    \
  CASE(XY_BIN_ADD, a + b)                                                                               \
  CASE(XY_BIN_SUB, a - b)                                                                               \
  CASE(XY_BIN_MUL, a * b)                                                                               \
  CASE(XY_BIN_DIV, a / b)                                                                               \
  CASE(XY_BIN_POW, pow_fn(a, b))                                                                        \
  CASE(XY_BIN_MAXIMUM, (a > b || a != a) ? a : b)                                                       \
  CASE(XY_BIN_MINIMUM, (a < b || a != a) ? a : b)                                                       \
  CASE(XY_BIN_SIGMOID_GRAD, b * a * (K(1.0) - a))                                                       \
  CASE(XY_BIN_RELU_GRAD, a > K(0.0) ? b : (V)(K(0.0)))                                                  \
  CASE(XY_BIN_TANH_GRAD, b * (K(1.0) - a * a))                                                          \
  CASE(XY_BIN_LEAKY_RELU_GRAD, a > K(0.0) ? b : b * p0)                                                 \
  CASE(XY_BIN_ELU_GRAD, a > K(0.0) ? b : b * p0 * exp_fn(a))                                            \
  CASE(XY_BIN_GELU_GRAD,                                                                                \
       b * (K(0.5) * erfc(a * -K(XY_RSQRT2)) + a * (K(XY_RSQRT2PI) * exp_fn(-K(0.5) * a * a))))         \
  CASE(XY_BIN_SOFTPLUS_GRAD, a * p0 > p1 ? b : b * XY_SIGMOID(K, exp_fn, a * p0))                        \
  CASE(XY_BIN_SILU_GRAD,                                                                                \
       b * XY_SIGMOID(K, exp_fn, a) * (K(1.0) + a * (K(1.0) - XY_SIGMOID(K, exp_fn, a))))              \
  /* d/dx of x s, s = sigmoid(2u): s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 kappa x^2) */                     \
  CASE(XY_BIN_GELU_TANH_GRAD,                                                                           \
       b * (XY_GELU_TANH_S(K, exp_fn, a) +                                                              \
            K(2.0) * a * XY_GELU_TANH_S(K, exp_fn, a) * (K(1.0) - XY_GELU_TANH_S(K, exp_fn, a)) *       \
                K(XY_SQRT_2_OVER_PI) * (K(1.0) + K(3.0) * K(XY_GELU_KAPPA) * a * a)))                  \
  CASE(XY_BIN_KL_DIV, (b == K(0.0) ? (V)(K(0.0)) : b * log(b)) - b * a)

#define XY_COMPARE_FORMULAS(CASE, a, b) \
  CASE(XY_CMP_EQ, a == b)               \
  CASE(XY_CMP_NE, a != b)               \
  CASE(XY_CMP_LT, a < b)                \
  CASE(XY_CMP_LE, a <= b)               \
  CASE(XY_CMP_GT, a > b)                \
  CASE(XY_CMP_GE, a >= b)

#define XY_RETURN_CASE(code, expression) \
  case code:                             \
    return expression;

/* The scalar functions, for a scalar type S (math.h suffix FS). A code
 * outside the list gives NaN (compare: 0, what NaN compares to): device
 * code cannot throw, and every framework rejects such a code on the host
 * before launching; the NaN makes a missed check visible. With a constant
 * code (a template argument, a kernel specialised per code) the switch
 * folds away. */
#define XY_DEFINE_SCALAR_FORMULAS(S, FS, K)                                 \
  XY_FN S xy_unary_##FS(int op, S x, S p0, S p1) {                          \
    switch (op) {                                                           \
      XY_UNARY_FORMULAS(XY_RETURN_CASE, S, K, x, p0, p1, exp, tanh, sin)    \
      default: return (S)NAN;                                               \
    }                                                                       \
  }                                                                         \
  XY_FN S xy_binary_##FS(int op, S a, S b, S p0, S p1) {                    \
    switch (op) {                                                           \
      XY_BINARY_FORMULAS(XY_RETURN_CASE, S, K, a, b, p0, p1, exp, pow)      \
      default: return (S)NAN;                                               \
    }                                                                       \
  }                                                                         \
  XY_FN int xy_compare_##FS(int op, S a, S b) {                             \
    switch (op) {                                                           \
      XY_COMPARE_FORMULAS(XY_RETURN_CASE, a, b)                             \
      default: return 0;                                                    \
    }                                                                       \
  }

XY_DEFINE_SCALAR_FORMULAS(float, f, XY_LIT_F)
#ifdef XY_DOUBLE
XY_DEFINE_SCALAR_FORMULAS(double, d, XY_LIT_D)
#endif

/* ---- integer arithmetic (i32, i64): the codes integer tensors take.
 * add, sub, mul, neg and abs wrap around as two's complement does (NumPy's
 * and PyTorch's results: INT32_MAX + 1 is INT32_MIN, abs(INT32_MIN) is
 * INT32_MIN), computed in the unsigned type U, where C defines overflow, and
 * converted back (modular in C++20, CUDA and OpenCL alike). Comparisons are
 * XY_COMPARE_FORMULAS. Any other code is refused on the host (xylem::add and
 * the others check xy_int_binary_code / xy_int_unary_code first); the
 * scalar functions give 0 for it. */
#define XY_INT_UNARY_FORMULAS(CASE, S, U, x)       \
  CASE(XY_UN_ABS, (x) < 0 ? (S)((U)0 - (U)(x)) : (x)) \
  CASE(XY_UN_NEG, (S)((U)0 - (U)(x)))
#define XY_INT_BINARY_FORMULAS(CASE, S, U, a, b) \
  CASE(XY_BIN_ADD, (S)((U)(a) + (U)(b)))          \
  CASE(XY_BIN_SUB, (S)((U)(a) - (U)(b)))          \
  CASE(XY_BIN_MUL, (S)((U)(a) * (U)(b)))          \
  CASE(XY_BIN_MAXIMUM, (a) > (b) ? (a) : (b))     \
  CASE(XY_BIN_MINIMUM, (a) < (b) ? (a) : (b))

#define XY_RETURN_TRUE(code, expression) \
  case code:                             \
    return 1;
/* Whether an integer dtype takes the code (1) or not (0). */
XY_FN int xy_int_unary_code(int op) {
  switch (op) {
    XY_INT_UNARY_FORMULAS(XY_RETURN_TRUE, , , )
    default: return 0;
  }
}
XY_FN int xy_int_binary_code(int op) {
  switch (op) {
    XY_INT_BINARY_FORMULAS(XY_RETURN_TRUE, , , , )
    default: return 0;
  }
}

#define XY_DEFINE_INT_FORMULAS(S, U, FS)                 \
  XY_FN S xy_int_unary_##FS(int op, S x) {               \
    switch (op) {                                        \
      XY_INT_UNARY_FORMULAS(XY_RETURN_CASE, S, U, x)     \
      default: return 0;                                 \
    }                                                    \
  }                                                      \
  XY_FN S xy_int_binary_##FS(int op, S a, S b) {         \
    switch (op) {                                        \
      XY_INT_BINARY_FORMULAS(XY_RETURN_CASE, S, U, a, b) \
      default: return 0;                                 \
    }                                                    \
  }                                                      \
  XY_FN int xy_int_compare_##FS(int op, S a, S b) {      \
    switch (op) {                                        \
      XY_COMPARE_FORMULAS(XY_RETURN_CASE, a, b)          \
      default: return 0;                                 \
    }                                                    \
  }

XY_DEFINE_INT_FORMULAS(xy_i32, xy_u32, i32)
XY_DEFINE_INT_FORMULAS(xy_i64, xy_u64, i64)

/* Integer reductions (math::reduce over i32 and i64): sums accumulate in
 * i64 with xy_int_binary_i64(XY_BIN_ADD, ...), wrapping modulo 2^64, and an
 * i32 sum's result is i64 (NumPy's and PyTorch's dtype), so it is exact up
 * to 2^63; max and min are XY_BIN_MAXIMUM and XY_BIN_MINIMUM in the
 * input's type. */

/* ---- optimizer updates of one element, PyTorch's torch.optim algorithms
 * (optim::sgd_step, optim::adam_step). Each returns the new parameter and
 * updates its state through the pointers (private memory in OpenCL). Weight
 * decay is skipped when 0, as PyTorch does, so an Inf parameter stays Inf.
 * SGD: d = g + wd*p; with momentum, b = first_step ? d : momentum*b +
 * (1 - dampening)*d and d = nesterov ? d + momentum*b : b; p - lr*d.
 * Adam: d = g + wd*p (AdamW instead scales p by 1 - lr*wd); m += (1 -
 * beta1)*(d - m) (PyTorch's lerp); v = beta2*v + (1 - beta2)*d*d;
 * p - (lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps), bc = 1 - beta^t. */
#define XY_DEFINE_OPTIM_FORMULAS(S, FS, K)                                                          \
  XY_FN S xy_sgd_step_##FS(S p, S g, S* buf, S lr, S momentum, S dampening, S weight_decay,        \
                           int nesterov, int first_step) {                                         \
    S d = weight_decay != K(0.0) ? g + weight_decay * p : g;                                        \
    if (momentum != K(0.0)) {                                                                       \
      const S b = first_step ? d : momentum * *buf + (K(1.0) - dampening) * d;                      \
      *buf = b;                                                                                     \
      d = nesterov ? d + momentum * b : b;                                                          \
    }                                                                                               \
    return p - lr * d;                                                                              \
  }                                                                                                 \
  XY_FN S xy_adam_step_##FS(S p, S g, S* m, S* v, S lr, S beta1, S beta2, S eps, S weight_decay,   \
                            S bias_correction1, S bias_correction2, int decoupled) {               \
    if (weight_decay != K(0.0)) {                                                                   \
      if (decoupled)                                                                                \
        p = p * (K(1.0) - lr * weight_decay);                                                       \
      else                                                                                          \
        g = g + weight_decay * p;                                                                   \
    }                                                                                               \
    const S m1 = *m + (K(1.0) - beta1) * (g - *m);                                                  \
    const S v1 = beta2 * *v + (K(1.0) - beta2) * g * g;                                             \
    *m = m1;                                                                                        \
    *v = v1;                                                                                        \
    const S denom = sqrt(v1) / sqrt(bias_correction2) + eps;                                        \
    return p - (lr / bias_correction1) * (m1 / denom);                                              \
  }

XY_DEFINE_OPTIM_FORMULAS(float, f, XY_LIT_F)
#ifdef XY_DOUBLE
XY_DEFINE_OPTIM_FORMULAS(double, d, XY_LIT_D)
#endif

/* ---- bf16 <-> f32 on the bits (any C dialect): bf16 is the top half of an
 * f32. Rounding to nearest even; NaN stays a (quiet) NaN. The macro works on
 * any unsigned 32-bit lane type (OpenCL's uint16 included: its ?: selects
 * per lane), so scalar and vector conversions share it. */
#define XY_F32_BITS_TO_BF16(u)                                            \
  ((((u) & 0x7fffffffu) > 0x7f800000u) ? (((u) >> 16) | 0x0040u) /* NaN: keep it quiet */ \
                                       : (((u) + 0x7fffu + (((u) >> 16) & 1u)) >> 16))
XY_FN xy_u32 xy_bf16_to_f32_bits(xy_u32 bf16) { return bf16 << 16; }
XY_FN xy_u32 xy_f32_bits_to_bf16(xy_u32 bits) { return XY_F32_BITS_TO_BF16(bits); }

/* ---- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
 * 1, 2, 3", SC'11). Counter-based: element k of a call with (seed, offset)
 * draws from counter offset+k, so every framework and every thread layout
 * produce the same numbers. ------------------------------------------------ */
typedef struct {
  xy_u32 v[4];
} xy_philox_out;

#define XY_PHILOX_M0 0xD2511F53u /* round multipliers */
#define XY_PHILOX_M1 0xCD9E8D57u
#define XY_PHILOX_W0 0x9E3779B9u /* key schedule (Weyl) increments */
#define XY_PHILOX_W1 0xBB67AE85u

/* The ten rounds, on any lane type: counters c0..c3 (a word, an OpenCL
 * vector, a Highway vector) and keys k0, k1 (words, or lanes of the same
 * key), updated in place. MUL(m, c) forms the product of the multiplier m
 * and the 32-bit c, of type P; HI(m, p) and LO(m, p) take its high and low
 * 32 bits (a dialect without a 64-bit product, such as OpenCL's vectors
 * with mul_hi, makes P the word itself and computes from m in HI and LO).
 * XOR3(a, b, k) gives a ^ b ^ k, KEY_ADD(k, w) the next key k + w.
 * xy_philox below, OpenCL's vector dropout and the native SIMD block
 * (philox_simd-inl.h) all expand this. Both products come first: the
 * order the compilers schedule best. */
#define XY_PHILOX_ROUNDS(P, MUL, HI, LO, XOR3, KEY_ADD, c0, c1, c2, c3, k0, k1) \
  for (int xy_round = 0; xy_round < 10; ++xy_round) {                           \
    const P xy_p0 = MUL(XY_PHILOX_M0, c0), xy_p1 = MUL(XY_PHILOX_M1, c2);       \
    c0 = XOR3(HI(XY_PHILOX_M1, xy_p1), c1, k0);                                 \
    c1 = LO(XY_PHILOX_M1, xy_p1);                                               \
    c2 = XOR3(HI(XY_PHILOX_M0, xy_p0), c3, k1);                                 \
    c3 = LO(XY_PHILOX_M0, xy_p0);                                               \
    k0 = KEY_ADD(k0, XY_PHILOX_W0);                                             \
    k1 = KEY_ADD(k1, XY_PHILOX_W1);                                             \
  }
/* The operations on words (XOR3 and KEY_ADD serve OpenCL's vectors too). */
#define XY_PHILOX_MUL64(m, c) ((xy_u64)(m) * (xy_u64)(c))
#define XY_PHILOX_HI64(m, p) ((xy_u32)((p) >> 32))
#define XY_PHILOX_LO64(m, p) ((xy_u32)(p))
#define XY_PHILOX_XOR3(a, b, k) ((a) ^ (b) ^ (k))
#define XY_PHILOX_KEY_ADD(k, w) ((k) + (w))

XY_FN xy_philox_out xy_philox(xy_u64 seed, xy_u64 counter) {
  xy_u32 c0 = (xy_u32)counter, c1 = (xy_u32)(counter >> 32), c2 = 0u, c3 = 0u;
  xy_u32 k0 = (xy_u32)seed, k1 = (xy_u32)(seed >> 32);
  XY_PHILOX_ROUNDS(xy_u64, XY_PHILOX_MUL64, XY_PHILOX_HI64, XY_PHILOX_LO64, XY_PHILOX_XOR3, XY_PHILOX_KEY_ADD, c0, c1, c2, c3, k0, k1)
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
/* Dropout's keep test on a counter (nn::dropout, the attention weights of
 * nn::scaled_dot_product_attention): kept when the f32 uniform it draws is
 * >= p, an f32 comparison on every framework, fp64 or not. */
XY_FN int xy_dropout_keep(xy_u64 seed, xy_u64 counter, float p) {
  return xy_uniform01_f(xy_philox(seed, counter)) >= p;
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
