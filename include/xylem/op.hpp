#pragma once
/// @file
/// Every operation xylem knows, declared once: XYLEM_OPS below. The public op
/// id (xylem::Op, what Backend::supports asks about), the typed argument
/// struct each framework's kernel reads (xylem/plugin/args.hpp), the access
/// mode the core derives for each tensor and each framework's kernel table
/// slot all follow from this list.
///
/// Dtypes. "float dtypes" are f16, bf16, f32 and f64. f16 and bf16 are storage
/// types: kernels load them, compute in f32 (f64 for f64), and round results
/// to the storage type to nearest even. Accumulations (reductions, softmax,
/// norms, gemm, convolution) run in f32 for f16/bf16/f32 (wider inside where
/// that is cheap) and in f64 for f64. A framework's kernel table is indexed by
/// (op, dispatch dtype): the dtype of the first tensor, except where said.
///
/// The core checks shapes and dtypes before launch; every view may have any
/// strides unless said otherwise; views of one call may alias only where said.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xylem {

// clang-format off
/// The op table: one X(op set, name, tensors, integers, reals) per operation,
/// with what it computes in a comment above it (see the header source).
///
/// Each list is a run of entries without commas between them:
///
///     XY_IN(x)          read
///     XY_OUT(y)         written whole; its old contents are not needed
///     XY_INOUT(x)       read and written
///     XY_ACC(c, beta)   c = ... + beta*c: read and written, write-only when the
///                       real `beta` is 0 (its old contents, NaN included, are
///                       then never read)
///     XY_IN_OPT(g), XY_OUT_OPT(dg), XY_INOUT_OPT(b)  as XY_IN / XY_OUT /
///                       XY_INOUT, and may be absent (the kernel sees data == nullptr)
///     XY_INT(n)         a 64-bit integer;   XY_REAL(r)  a double
///
/// Tensors, integers and reals fill the call's slots in the order listed.
/// Users meet the table as the enumerators of xylem::Op; expanding it with an
/// X of one's own (as op_name() does) is for framework writers.
#define XYLEM_OPS(X)                                                                          \
  /* y = value */                                                                             \
  X(creation, fill, XY_OUT(y), , XY_REAL(value))                                              \
  /* y[k] = start + k*step, k = the row-major logical index */                                \
  X(creation, arange, XY_OUT(y), , XY_REAL(start) XY_REAL(step))                              \
  /* Philox stream (seed, counter offset + k) for element k (see math.h) */                   \
  X(creation, uniform, XY_OUT(y), XY_INT(seed) XY_INT(offset), XY_REAL(low) XY_REAL(high))    \
  X(creation, normal, XY_OUT(y), XY_INT(seed) XY_INT(offset), XY_REAL(mean) XY_REAL(stddev))  \
  /* same dims and dtype, any strides */                                                      \
  X(core, copy_view, XY_IN(x) XY_OUT(y), , )                                                  \
  /* BLAS level 1: vectors are rank-1 views (any stride, also negative); result is a          \
     one-element tensor of x's dtype (iamax: i64, 0-based, the first max |x|; the first       \
     NaN wins) */                                                                             \
  X(blas, asum, XY_IN(x) XY_OUT(result), , )                                                  \
  /* y += alpha*x */                                                                          \
  X(blas, axpy, XY_IN(x) XY_INOUT(y), , XY_REAL(alpha))                                       \
  /* y = x */                                                                                 \
  X(blas, copy, XY_IN(x) XY_OUT(y), , )                                                       \
  X(blas, dot, XY_IN(x) XY_IN(y) XY_OUT(result), , )                                          \
  X(blas, nrm2, XY_IN(x) XY_OUT(result), , )                                                  \
  /* x *= alpha */                                                                            \
  X(blas, scal, XY_INOUT(x), , XY_REAL(alpha))                                                \
  /* x <-> y */                                                                               \
  X(blas, swap, XY_INOUT(x) XY_INOUT(y), , )                                                  \
  X(blas, iamax, XY_IN(x) XY_OUT(result), , )                                                 \
  /* (x, y) <- (c*x + s*y, c*y - s*x) */                                                      \
  X(blas, rot, XY_INOUT(x) XY_INOUT(y), , XY_REAL(c) XY_REAL(s))                              \
  /* y = alpha*op(a)*x + beta*y; a [m, n] has stride(1) == 1, stride(0) >= n; x, y rank 1.    \
     f32, f64. */                                                                             \
  X(blas, gemv, XY_IN(a) XY_IN(x) XY_ACC(y, beta), XY_INT(transpose_a),                       \
    XY_REAL(alpha) XY_REAL(beta))                                                             \
  /* c = alpha*op(a)*op(b) + beta*c. Each matrix view has stride(1) == 1 and stride(0) >=     \
     its columns (the core normalises transposed views). f16/bf16: products accumulate in     \
     f32, alpha and beta applied in f32, c rounded to its dtype (nearest even). */            \
  X(blas, gemm, XY_IN(a) XY_IN(b) XY_ACC(c, beta), XY_INT(transpose_a) XY_INT(transpose_b),   \
    XY_REAL(alpha) XY_REAL(beta))                                                             \
  /* as gemm, over rank-3 views [batch, rows, cols]: every matrix as gemm's; stride(0) is     \
     the batch stride, any value >= 0 (0: the same matrix for every batch, for a and b        \
     only). f32, f64, f16, bf16. */                                                           \
  X(blas, gemm_batched, XY_IN(a) XY_IN(b) XY_ACC(c, beta),                                    \
    XY_INT(transpose_a) XY_INT(transpose_b), XY_REAL(alpha) XY_REAL(beta))                    \
  /* y = f(x), same dims (y may be x); code = XY_UN_* (math.h), param0, param1 its            \
     parameters. Float dtypes; i32 and i64 for abs and neg. */                                \
  X(math, unary, XY_IN(x) XY_OUT(y), XY_INT(code), XY_REAL(param0) XY_REAL(param1))           \
  /* y = f(a, b), same dims (the core broadcasts: a broadcast input arrives with stride 0     \
     along its broadcast axes); y may alias a or b exactly; code = XY_BIN_*. Float dtypes;    \
     i32, i64 for add, sub, mul (wrapping), maximum, minimum (math.h). */                     \
  X(math, binary, XY_IN(a) XY_IN(b) XY_OUT(y), XY_INT(code), XY_REAL(param0) XY_REAL(param1)) \
  /* as binary; code = XY_CMP_*; y is boolean (0 or 1). Float dtypes, i32, i64. */            \
  X(math, compare, XY_IN(a) XY_IN(b) XY_OUT(y), XY_INT(code), )                               \
  /* y = cond ? a : b, cond boolean. Dispatch dtype: a's. Float dtypes, i32, i64. */          \
  X(math, where, XY_IN(a) XY_IN(b) XY_IN(cond) XY_OUT(y), , )                                 \
  /* same dims, any two dtypes (all 8), dispatch on x's. Float to integer truncates toward    \
     zero, saturating at the integer type's range, NaN -> 0; integer to integer saturates     \
     too; to boolean: x != 0; boolean/u8/ints to float: the value (nearest even); f64 ->      \
     f32/f16/bf16: nearest even (overflow -> Inf). supports(cast, d) promises every target    \
     dtype the device has (the core asks for both dtypes). */                                 \
  X(math, cast, XY_IN(x) XY_OUT(y), , )                                                       \
  /* x rank 3 [outer, r, inner], y rank 2 [outer, inner]: y[o, i] = reduce over j of          \
     x[o, j, i]; code = XY_RED_*; var divides by r - correction (<= 0 gives Inf or NaN as     \
     0/0). r >= 1 (the core handles empty reductions). argmax/argmin: y is i64, the first     \
     index of the extreme, NaN counting as both extremes (the first NaN wins); max/min        \
     propagate NaN. y's dtype is x's otherwise. Float dtypes; i32 and i64 for sum (y i64,     \
     wrapping modulo 2^64), max, min, argmax, argmin. */                                      \
  X(math, reduce, XY_IN(x) XY_OUT(y), XY_INT(code) XY_INT(correction), )                      \
  /* x, y rank 3 [outer, r, inner], along axis 1; log = 0: softmax, 1: log_softmax. r >= 1.   \
     Float dtypes. */                                                                         \
  X(nn, softmax, XY_IN(x) XY_OUT(y), XY_INT(log), )                                           \
  /* y the forward output. softmax: dx = y*(dy - sum_j(dy*y)); log: dx = dy -                 \
     exp(y)*sum_j(dy). */                                                                     \
  X(nn, softmax_grad, XY_IN(y) XY_IN(dy) XY_OUT(dx), XY_INT(log), )                           \
  /* x, y rank 2 [rows, n], normalised over axis 1; gamma, beta rank 1 [n] or absent (1, 0);  \
     mean, rstd rank 1 [rows] in the stat dtype (f32 for f16/bf16/f32 x, f64 for f64).       \
     Biased variance; rstd = 1/sqrt(var + eps); y = (x - mean)*rstd*gamma + beta.             \
     rms = 1: RMS normalisation, mean = 0 and var = mean_j(x^2). */                           \
  X(nn, layer_norm, XY_IN(x) XY_IN_OPT(gamma) XY_IN_OPT(beta) XY_OUT(y) XY_OUT(mean)          \
    XY_OUT(rstd), XY_INT(rms), XY_REAL(eps))                                                  \
  /* xh = (x - mean)*rstd, g = dy*gamma: dx = rstd*(g - mean_j(g) - xh*mean_j(g*xh));         \
     rms = 1 (mean is then 0): dx = rstd*(g - xh*mean_j(g*xh)) */                             \
  X(nn, layer_norm_grad_input, XY_IN(x) XY_IN_OPT(gamma) XY_IN(mean) XY_IN(rstd) XY_IN(dy)    \
    XY_OUT(dx), XY_INT(rms), )                                                                \
  /* dgamma = sum_rows(dy*xh), dbeta = sum_rows(dy), rank 1 [n] in x's dtype, either absent.  \
     Overwrites (does not accumulate). */                                                     \
  X(nn, layer_norm_grad_params, XY_IN(x) XY_IN(mean) XY_IN(rstd) XY_IN(dy)                    \
    XY_OUT_OPT(dgamma) XY_OUT_OPT(dbeta), , )                                                 \
  /* batch_norm_*: x, y, dy, dx rank 3 [N, C, S] (channels on axis 1, S the spatial size,     \
     may be 1); per-channel mean, var, gamma, beta, dgamma, dbeta rank 1 [C]; mean and var    \
     in the stat dtype (see layer_norm); gamma/beta in x's dtype or absent (1, 0).            \
     stats: mean and biased variance over (N, S), N*S >= 1. */                                \
  X(nn, batch_norm_stats, XY_IN(x) XY_OUT(mean) XY_OUT(var), , )                              \
  /* y = (x - mean)/sqrt(var + eps)*gamma + beta */                                           \
  X(nn, batch_norm_apply, XY_IN(x) XY_IN(mean) XY_IN(var) XY_IN_OPT(gamma) XY_IN_OPT(beta)    \
    XY_OUT(y), , XY_REAL(eps))                                                                \
  /* dbeta = sum_{N,S}(dy); dgamma = sum_{N,S}(dy*xh), xh = (x - mean)/sqrt(var + eps); in    \
     x's dtype, either absent. */                                                             \
  X(nn, batch_norm_grad_params, XY_IN(x) XY_IN(mean) XY_IN(var) XY_IN(dy)                     \
    XY_OUT_OPT(dgamma) XY_OUT_OPT(dbeta), , XY_REAL(eps))                                     \
  /* dgamma, dbeta as grad_params wrote them; training = 1: mean/var were the batch's,        \
     dx = gamma*rstd*(dy - dbeta/M - xh*dgamma/M), M = N*S; 0: running statistics             \
     (constants), dx = gamma*rstd*dy. */                                                      \
  X(nn, batch_norm_grad_input, XY_IN(x) XY_IN(mean) XY_IN(var) XY_IN_OPT(gamma) XY_IN(dgamma) \
    XY_IN(dbeta) XY_IN(dy) XY_OUT(dx), XY_INT(training), XY_REAL(eps))                        \
  /* same dims, y may alias x exactly; p in [0, 1). Element k (row-major logical index) is    \
     kept when xy_uniform01_f(xy_philox(seed, offset + k)) >= (float)p (an f32 uniform for    \
     every dtype): y = keep ? x/(1-p) : 0, x/(1-p) in the compute type. */                    \
  X(nn, dropout, XY_IN(x) XY_OUT(y), XY_INT(seed) XY_INT(offset), XY_REAL(p))                 \
  /* the same mask: dx = keep ? dy/(1-p) : 0 */                                               \
  X(nn, dropout_grad, XY_IN(dy) XY_OUT(dx), XY_INT(seed) XY_INT(offset), XY_REAL(p))          \
  /* x [N, C] logits, target rank 1 [N] i64, loss rank 1 [N] in x's dtype:                    \
     loss[n] = logsumexp(x[n, :]) - x[n, target[n]]; 0 where target[n] == ignore_index (any   \
     value, also one inside [0, C)); else NaN where target is outside [0, C). Computed in the \
     stat type. */                                                                            \
  X(nn, cross_entropy, XY_IN(x) XY_IN(target) XY_OUT(loss), XY_INT(ignore_index), )           \
  /* dloss [N] in x's dtype: dx[n, c] = (softmax(x[n])[c] - (c == target[n]))*dloss[n]; a row \
     whose target is ignore_index gets 0, else one with a target outside [0, C) NaN. */       \
  X(nn, cross_entropy_grad, XY_IN(x) XY_IN(target) XY_IN(dloss) XY_OUT(dx),                   \
    XY_INT(ignore_index), )                                                                   \
  /* x [N, C, H, W], w [K, C/groups, R, S], y [N, K, P, Q], P = (H + 2*pad_h -                \
     dilation_h*(R-1) - 1)/stride_h + 1 (>= 1); padding is zeros. Cross-correlation (no       \
     kernel flip), as cuDNN and PyTorch. */                                                   \
  X(nn, conv2d, XY_IN(x) XY_IN(w) XY_OUT(y), XYLEM_CONV_INTS, )                               \
  /* the gradient of y with respect to x; written, not accumulated */                         \
  X(nn, conv2d_grad_data, XY_IN(dy) XY_IN(w) XY_OUT(dx), XYLEM_CONV_INTS, )                   \
  X(nn, conv2d_grad_filter, XY_IN(x) XY_IN(dy) XY_OUT(dw), XYLEM_CONV_INTS, )                 \
  /* x [N, C, H, W], y [N, C, P, Q]; padding never wins (-Inf). The window maximum, NaN       \
     propagating; each window holds at least one real element. */                            \
  X(nn, max_pool2d, XY_IN(x) XY_OUT(y), XYLEM_POOL_INTS, )                                    \
  /* each dy goes to the first maximum of its window (row-major; a NaN is the maximum); dx    \
     sums over windows */                                                                     \
  X(nn, max_pool2d_grad, XY_IN(x) XY_IN(dy) XY_OUT(dx), XYLEM_POOL_INTS, )                    \
  /* count_include_pad = 1: divide by the whole window, 0: by its real elements only */       \
  X(nn, avg_pool2d, XY_IN(x) XY_OUT(y), XYLEM_POOL_INTS XY_INT(count_include_pad), )          \
  X(nn, avg_pool2d_grad, XY_IN(dy) XY_OUT(dx), XYLEM_POOL_INTS XY_INT(count_include_pad), )   \
  /* x, y [N, C, H, W] (rank >= 2 with channels on axis 1 arrives as rank 4 with trailing     \
     1s); the window is channels [c - (size-1)/2, c + size/2]. scale = k + alpha/size *       \
     sum_window x^2; y = x * scale^-beta. */                                                  \
  X(nn, lrn, XY_IN(x) XY_OUT(y), XY_INT(size), XY_REAL(alpha) XY_REAL(beta) XY_REAL(k))       \
  /* dx = dy*scale^-beta - 2*alpha*beta/size * x * sum_{c' whose window holds c} dy*y/scale */ \
  X(nn, lrn_grad, XY_IN(x) XY_IN(y) XY_IN(dy) XY_OUT(dx), XY_INT(size),                       \
    XY_REAL(alpha) XY_REAL(beta) XY_REAL(k))                                                  \
  /* optimizer updates, in place, one pass over the elements: every tensor contiguous, of     \
     one dims and dtype (f32, f64; computed in it). PyTorch's torch.optim algorithms, as      \
     math.h's xy_sgd_step and xy_adam_step write them. sgd_step: momentum_buffer absent       \
     exactly when momentum is 0; first_step = 1 sets the buffer to the (decayed) gradient.    \
     adam_step: bias_correction1/2 = 1 - beta1^t, 1 - beta2^t for step t (from 1);            \
     decoupled = 1: AdamW's weight decay. */                                                  \
  X(optim, sgd_step, XY_INOUT(param) XY_IN(grad) XY_INOUT_OPT(momentum_buffer),               \
    XY_INT(nesterov) XY_INT(first_step),                                                      \
    XY_REAL(lr) XY_REAL(momentum) XY_REAL(dampening) XY_REAL(weight_decay))                   \
  X(optim, adam_step, XY_INOUT(param) XY_IN(grad) XY_INOUT(exp_avg) XY_INOUT(exp_avg_sq),     \
    XY_INT(decoupled), XY_REAL(lr) XY_REAL(beta1) XY_REAL(beta2) XY_REAL(eps)                 \
    XY_REAL(weight_decay) XY_REAL(bias_correction1) XY_REAL(bias_correction2))                 \
  /* Indexing along one axis. `index` is i32 or i64, any view. index_check: flag (i32, one    \
     element, which the caller zeroes) becomes 1 when an element of index lies outside        \
     [0, n); never cleared. Dispatch dtype: index's. */                                       \
  X(index, check, XY_IN(index) XY_INOUT(flag), XY_INT(n), )                                   \
  /* x, index, y of one rank; y's dims are index's (index may have stride 0 along broadcast   \
     axes), x's are y's except along axis: y[p] = x[p with p[axis] = index[p]]; an index      \
     outside [0, x.dim(axis)) gives 0 (the core checks first with index_check). Every         \
     dtype. */                                                                                \
  X(index, gather, XY_IN(x) XY_IN(index) XY_OUT(y), XY_INT(axis), )                           \
  /* src and index of one dims (either may have stride 0), y's dims theirs except along       \
     axis. For each p, q = p with q[axis] = index[p], skipped where index[p] == skip or lies  \
     outside [0, y.dim(axis)): accumulate = 0: y[q] = src[p], every dtype; a q named twice   \
     keeps the src of the last p along axis. accumulate = 1: y[q] += src[p], float dtypes,    \
     each sum in the compute type then rounded to y's dtype; the order of the sums into one  \
     q is unspecified (sums of small integers are exact whatever the order). */             \
  X(index, scatter, XY_IN(src) XY_IN(index) XY_INOUT(y), XY_INT(axis) XY_INT(accumulate)      \
    XY_INT(skip), )                                                                            \
  /* Attention, memory-efficient (tiled, online softmax; no [Sq, Sk] buffer). q [B, H, Sq, D], \
     k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv], out and dout [B, H, Sq, Dv], dq, dk, dv as q, k,  \
     v; every one with innermost stride 1. H a multiple of Hkv: head h reads kv head          \
     h/(H/Hkv). Sq, Sk, D, Dv >= 1. Score s = scale*q.k + mask[b,h,i,j]; mask absent or       \
     [B, H, Sq, Sk] (stride 0 along broadcast axes), boolean (false: the key is left out) or  \
     q's dtype (added); causal = 1 (mask then absent) leaves out keys j > i. lse [B, H, Sq]    \
     in the stat dtype (f32, f64 for f64): logsumexp of the row's scores, -Inf for a row      \
     whose every key is left out (its out is 0). p > 0: weight (b, h, i, j) is kept when      \
     xy_dropout_keep(seed, offset + ((b*H + h)*Sq + i)*Sk + j, p), kept weights / (1-p).      \
     Products accumulate in the compute type. */                                              \
  X(nn, attention, XY_IN(q) XY_IN(k) XY_IN(v) XY_IN_OPT(mask) XY_OUT(out) XY_OUT(lse),         \
    XY_INT(causal) XY_INT(seed) XY_INT(offset), XY_REAL(scale) XY_REAL(p))                    \
  /* stats [B, H, Sq, 2] contiguous, stat dtype: (lse, sum over Dv of dout*out) per row */    \
  X(nn, attention_grad_rows, XY_IN(out) XY_IN(dout) XY_IN(lse) XY_OUT(stats), , )             \
  /* with P = exp(s - lse), dP = dropout(dout.v), dS = P*(dP - delta): dq = scale*dS k */     \
  X(nn, attention_grad_q, XY_IN(q) XY_IN(k) XY_IN(v) XY_IN_OPT(mask) XY_IN(dout) XY_IN(stats) \
    XY_OUT(dq), XY_INT(causal) XY_INT(seed) XY_INT(offset), XY_REAL(scale) XY_REAL(p))        \
  /* dv = dropout(P)^T dout, dk = scale*dS^T q, summed over the heads sharing a kv head */    \
  X(nn, attention_grad_kv, XY_IN(q) XY_IN(k) XY_IN(v) XY_IN_OPT(mask) XY_IN(dout)             \
    XY_IN(stats) XY_OUT(dk) XY_OUT(dv), XY_INT(causal) XY_INT(seed) XY_INT(offset),           \
    XY_REAL(scale) XY_REAL(p))                                                                 \
  /* The three gradients in one call, for attention without mask or dropout (causal or not): \
     what a vendor's fused backward computes (cuDNN's). Optional: the core calls it where the  \
     framework supports it and else the three ops above. out and lse as nn::attention made    \
     them. */                                                                                  \
  X(nn, attention_grad, XY_IN(q) XY_IN(k) XY_IN(v) XY_IN(out) XY_IN(dout) XY_IN(lse)           \
    XY_OUT(dq) XY_OUT(dk) XY_OUT(dv), XY_INT(causal), XY_REAL(scale))                          \
  /* discrete Fourier transforms. x and y contiguous, never overlapping, rank 2 [batch, n]    \
     (a 1-D transform of each row) or rank 3 [batch, n0, n1] (a 2-D transform of each        \
     matrix), every transform length >= 1. y = scale * sum_k x[k] exp(-+2 pi i j k / n),      \
     unnormalised but for scale (the core folds NumPy's norm into it). Dispatch: x's dtype.   \
     c2c: x and y c64 or c128, same dims; inverse = 0: exponent sign -1, 1: +1. */            \
  X(fft, c2c, XY_IN(x) XY_OUT(y), XY_INT(inverse), XY_REAL(scale))                            \
  /* r2c: sign -1; x f32/f64 [..., n], y of the complex dtype [..., n/2 + 1] (the rest of a   \
     real signal's transform is the conjugate mirror of it). */                               \
  X(fft, r2c, XY_IN(x) XY_OUT(y), , XY_REAL(scale))                                           \
  /* c2r: sign +1; x c64/c128 [..., n/2 + 1], y the real dtype [..., n] (n from y): the real  \
     signal whose r2c is x. x is taken as such a transform: the imaginary parts a real        \
     signal's transform cannot have (of x[..., 0], and of x[..., n/2] for even n, in 1-D) are \
     ignored, as NumPy's irfft does. x is left unchanged. */                                  \
  X(fft, c2r, XY_IN(x) XY_OUT(y), , XY_REAL(scale))                                           \
  /* Recurrent cells, one time step of a batch, in PyTorch's nn.LSTM / nn.GRU gate order,     \
     by rnn_math.h's formulas; every tensor contiguous, of one dtype (f32, f64), gate tensors  \
     [N, k*H] with the gates side by side, states [N, H]. lstm_cell: gates holds the           \
     pre-activations of i, f, g, o (x W_ih^T + b_ih + h W_hh^T + b_hh) and becomes the        \
     activated gates; c = f c_prev + i g, h = o tanh(c). */                                   \
  X(nn, lstm_cell, XY_INOUT(gates) XY_IN(c_prev) XY_OUT(c) XY_OUT(h), , )                      \
  /* gates as lstm_cell left them; dy + dh reaches h, dc reaches c from the next step.        \
     dgates: the gradient of the pre-activations; dc_prev that of c_prev. */                  \
  X(nn, lstm_cell_grad, XY_IN(gates) XY_IN(c_prev) XY_IN(c) XY_IN(dy) XY_IN(dh) XY_IN(dc)    \
    XY_OUT(dgates) XY_OUT(dc_prev), , )                                                       \
  /* gru_cell: xg [N, 3H] = x W_ih^T + b_ih of r, z, n becomes r, z, n activated; hg =         \
     h_prev W_hh^T + b_hh. r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z),                    \
     n = tanh(x_n + r h_n), h = (1 - z) n + z h_prev. */                                      \
  X(nn, gru_cell, XY_INOUT(xg) XY_IN(hg) XY_IN(h_prev) XY_OUT(h), , )                          \
  /* gates: r, z, n as gru_cell left them; dy + dh reaches h. dxg, dhg: the gradients of xg   \
     and hg; dh_prev: h_prev's through h's z h_prev term alone (the caller adds dhg W_hh). */ \
  X(nn, gru_cell_grad, XY_IN(gates) XY_IN(hg) XY_IN(h_prev) XY_IN(dy) XY_IN(dh)              \
    XY_OUT(dxg) XY_OUT(dhg) XY_OUT(dh_prev), , )                                                 \
  /* More BLAS, f32 and f64. Matrix views have stride(1) == 1 and stride(0) >= their columns  \
     (the core normalises them); vectors are rank-1 views with a non-zero stride (also        \
     negative); outputs never overlap inputs. ger: a [m, n] += alpha*x*y^T, x [m], y [n]. */  \
  X(blas, ger, XY_IN(x) XY_IN(y) XY_INOUT(a), , XY_REAL(alpha))                               \
  /* c [n, n] = alpha*op(a)*op(a)^T + beta*c on the triangle `upper` names (1: upper, 0:      \
     lower; the diagonal belongs to both); op(a) [n, k], k may be 0. The other triangle is    \
     left as it was (so c is read even for beta 0); beta 0 never reads the triangle's old     \
     values (NaN included). */                                                                \
  X(blas, syrk, XY_IN(a) XY_INOUT(c), XY_INT(upper) XY_INT(transpose), XY_REAL(alpha)         \
    XY_REAL(beta))                                                                            \
  /* b [m, n] is overwritten by x solving op(a)*x = alpha*b (left = 1; a [m, m]) or           \
     x*op(a) = alpha*b (left = 0; a [n, n]). a is triangular: only its `upper` (1) or lower   \
     (0) triangle is read; unit_diagonal = 1 takes its diagonal as ones, unread. alpha != 0   \
     (the core writes zeros for 0). No check for a zero pivot: it gives Inf or NaN. */        \
  X(blas, trsm, XY_IN(a) XY_INOUT(b), XY_INT(left) XY_INT(upper) XY_INT(transpose)            \
    XY_INT(unit_diagonal), XY_REAL(alpha))                                                    \
  /* c [m, n] = alpha*op(a) + beta*op(b); a term whose scale is 0 is left out (its operand's  \
     values, NaN included, do not matter). */                                                 \
  X(blas, geam, XY_IN(a) XY_IN(b) XY_OUT(c), XY_INT(transpose_a) XY_INT(transpose_b),         \
    XY_REAL(alpha) XY_REAL(beta))                                                             \
  /* result: i64, 0-based index of the first min |x_i|; the first NaN wins (as argmin). x has \
     at least one element. */                                                                 \
  X(blas, iamin, XY_IN(x) XY_OUT(result), , )                                                \
  /* A chain of unary and binary codes as one pass (xylem/plugin/fused_program.hpp): the      \
     program packed in w0..w7, the codes' parameters in r0..r7. Every tensor of one dims and  \
     dtype (a broadcast input arrives with stride 0); an output may alias an input exactly.   \
     Intermediate values stay in the compute type. Float dtypes. */                           \
  X(math, fused, XY_IN(x0) XY_IN_OPT(x1) XY_IN_OPT(x2) XY_IN_OPT(x3) XY_IN_OPT(x4) XY_OUT(y0)  \
    XY_OUT_OPT(y1) XY_OUT_OPT(y2), XY_INT(w0) XY_INT(w1) XY_INT(w2) XY_INT(w3) XY_INT(w4)     \
    XY_INT(w5) XY_INT(w6) XY_INT(w7), XY_REAL(r0) XY_REAL(r1) XY_REAL(r2) XY_REAL(r3)         \
    XY_REAL(r4) XY_REAL(r5) XY_REAL(r6) XY_REAL(r7))                                             \
  /* An elementwise tail on a gemm (automatic fusion's gemm epilogue, xylem/fused.hpp): the     \
     product p = op(a)*op(b) [m, n] (gemm's, alpha 1, beta 0) is input x0 of a math::fused       \
     program of at most 12 instructions (w0..w5; its reals r0..r7), x1..x3 broadcast to [m, n]. \
     y0..y2 are [m, n], y0 with stride(1) == 1; no output shares memory with a, b or x1..x3, so  \
     y0 may hold p before the tail. Float dtypes. */                                            \
  X(blas, gemm_epilogue, XY_IN(a) XY_IN(b) XY_IN_OPT(x1) XY_IN_OPT(x2) XY_IN_OPT(x3) XY_OUT(y0) \
    XY_OUT_OPT(y1) XY_OUT_OPT(y2), XY_INT(transpose_a) XY_INT(transpose_b) XY_INT(w0) XY_INT(w1) \
    XY_INT(w2) XY_INT(w3) XY_INT(w4) XY_INT(w5), XY_REAL(r0) XY_REAL(r1) XY_REAL(r2) XY_REAL(r3) \
    XY_REAL(r4) XY_REAL(r5) XY_REAL(r6) XY_REAL(r7))                                             \
  /* An elementwise tail on a convolution (automatic fusion's conv epilogue): the result p of  \
     nn::conv2d(x, w) [N, K, P, Q] is input x0 of a math::fused program of at most 12          \
     instructions (w0..w5; its reals r0..r7), x1..x3 broadcast to [N, K, P, Q]. y0..y2 are      \
     [N, K, P, Q]; no output shares memory with x, w or x1..x3, so y0 may hold p before the     \
     tail. Float dtypes. */                                                                     \
  X(nn, conv2d_epilogue, XY_IN(x) XY_IN(w) XY_IN_OPT(x1) XY_IN_OPT(x2) XY_IN_OPT(x3) XY_OUT(y0) \
    XY_OUT_OPT(y1) XY_OUT_OPT(y2), XYLEM_CONV_INTS XY_INT(w0) XY_INT(w1) XY_INT(w2) XY_INT(w3)   \
    XY_INT(w4) XY_INT(w5), XY_REAL(r0) XY_REAL(r1) XY_REAL(r2) XY_REAL(r3) XY_REAL(r4)          \
    XY_REAL(r5) XY_REAL(r6) XY_REAL(r7))                                                        \
  /* An elementwise tail on a softmax (automatic fusion's softmax epilogue): s = nn::softmax(x, \
     log) over x [outer, r, inner] along axis 1 is input x0 of a math::fused program of at most \
     12 instructions (w0..w5; its reals r0..r7). y0..y2 and x1..x3 share one dims of           \
     outer*r*inner elements in x's order (x1..x3 broadcast to them); y0 is contiguous, so its   \
     [outer, r, inner] reshape may hold s before the tail. No output shares memory with x or    \
     x1..x3. Float dtypes. */                                                                   \
  X(nn, softmax_epilogue, XY_IN(x) XY_IN_OPT(x1) XY_IN_OPT(x2) XY_IN_OPT(x3) XY_OUT(y0)         \
    XY_OUT_OPT(y1) XY_OUT_OPT(y2), XY_INT(log) XY_INT(w0) XY_INT(w1) XY_INT(w2) XY_INT(w3)      \
    XY_INT(w4) XY_INT(w5), XY_REAL(r0) XY_REAL(r1) XY_REAL(r2) XY_REAL(r3) XY_REAL(r4)          \
    XY_REAL(r5) XY_REAL(r6) XY_REAL(r7))                                                        \
  /* An elementwise tail on a reduction (automatic fusion's reduction epilogue): v =           \
     math::reduce(x, code) over x [outer, r, inner] along axis 1, code XY_RED_SUM, _MEAN, _MAX  \
     or _MIN, is input x0 of a math::fused program of at most 12 instructions (w0..w5; its      \
     reals r0..r7). y0..y2 and x1..x3 share one dims of outer*inner elements in v's order       \
     (x1..x3 broadcast to them); y0 is contiguous. No output shares memory with x or x1..x3.    \
     r >= 1. Float dtypes. */                                                                   \
  X(math, reduce_epilogue, XY_IN(x) XY_IN_OPT(x1) XY_IN_OPT(x2) XY_IN_OPT(x3) XY_OUT(y0)        \
    XY_OUT_OPT(y1) XY_OUT_OPT(y2), XY_INT(code) XY_INT(w0) XY_INT(w1) XY_INT(w2) XY_INT(w3)     \
    XY_INT(w4) XY_INT(w5), XY_REAL(r0) XY_REAL(r1) XY_REAL(r2) XY_REAL(r3) XY_REAL(r4)          \
    XY_REAL(r5) XY_REAL(r6) XY_REAL(r7))                                                        \
  /* Whole recurrent stacks (PyTorch's nn.LSTM / nn.GRU) over a sequence, through cuDNN's RNN \
     API: only CUDA with cuDNN runs them (layers::Recurrent runs per step elsewhere). f32,    \
     f64, every tensor contiguous, T, N >= 1. mode 0: LSTM (i, f, g, o), 1: GRU (r, z, n);    \
     layers L >= 1, bidirectional 0 or 1 (D = 1 or 2). x [T, N, I]; states [S, L*D, N, H]:    \
     h, then c for an LSTM (S = 2; S = 1 for a GRU); w: every layer and direction's           \
     weight_ih, weight_hh, bias_ih, bias_hh flattened one after another in PyTorch's order;   \
     y [T, N, D*H]. reserve: u8, of the bytes rnn_sequence_reserve gave, written by forward   \
     for the two gradients. bytes: reserve's size for x's T and N (one i64; unsupported with  \
     XYLEM_CUDA_CUDNN_RNN=0). */                                                              \
  X(nn, rnn_sequence_reserve, XY_IN(x) XY_OUT(bytes),                                         \
    XY_INT(mode) XY_INT(hidden) XY_INT(layers) XY_INT(bidirectional), )                       \
  X(nn, rnn_sequence, XY_IN(x) XY_IN(states) XY_IN(w) XY_OUT(y) XY_OUT(states_out)            \
    XY_OUT(reserve), XY_INT(mode) XY_INT(hidden) XY_INT(layers) XY_INT(bidirectional), )      \
  /* dy, dstates_out: the gradients of y and states_out; writes dx and dstates (of x and      \
     states). Runs before rnn_sequence_grad_weights, which reads what it leaves in            \
     reserve. */                                                                              \
  X(nn, rnn_sequence_grad_data, XY_IN(y) XY_IN(dy) XY_IN(dstates_out) XY_IN(states) XY_IN(w)  \
    XY_INOUT(reserve) XY_OUT(dx) XY_OUT(dstates),                                             \
    XY_INT(mode) XY_INT(hidden) XY_INT(layers) XY_INT(bidirectional), )                       \
  /* dw, in w's flat layout: the weights' gradient (written, not added). */                   \
  X(nn, rnn_sequence_grad_weights, XY_IN(x) XY_IN(states) XY_IN(y) XY_IN(reserve) XY_OUT(dw), \
    XY_INT(mode) XY_INT(hidden) XY_INT(layers) XY_INT(bidirectional), )

/// @name Tensor entries of XYLEM_OPS
/// Every tensor entry is one XY_TENSOR(name, access, optional[, scale]): an
/// expansion of the list defines XY_TENSOR, XY_INT and XY_REAL.
/// @{
#define XY_IN(n) XY_TENSOR(n, read, false)                       ///< a tensor the op reads
#define XY_OUT(n) XY_TENSOR(n, write, false)                     ///< a tensor written whole
#define XY_INOUT(n) XY_TENSOR(n, read_write, false)              ///< a tensor read and written
#define XY_ACC(n, scale) XY_TENSOR(n, read_write, false, scale)  ///< n = ... + scale*n; write-only for scale 0
#define XY_IN_OPT(n) XY_TENSOR(n, read, true)                    ///< as XY_IN, may be absent
#define XY_OUT_OPT(n) XY_TENSOR(n, write, true)                  ///< as XY_OUT, may be absent
#define XY_INOUT_OPT(n) XY_TENSOR(n, read_write, true)           ///< as XY_INOUT, may be absent
/// @}

/// Convolution geometry, shared by conv2d and its gradients (nn::Conv2d).
#define XYLEM_CONV_INTS                                                                 \
  XY_INT(stride_h) XY_INT(stride_w) XY_INT(pad_h) XY_INT(pad_w) XY_INT(dilation_h)      \
  XY_INT(dilation_w) XY_INT(groups)
/// Pooling window geometry, shared by both poolings and their gradients (nn::Pool2d).
#define XYLEM_POOL_INTS \
  XY_INT(window_h) XY_INT(window_w) XY_INT(stride_h) XY_INT(stride_w) XY_INT(pad_h) XY_INT(pad_w)
// clang-format on

/// One operation, as Backend::supports asks about it: set_name
/// (Op::blas_gemm). Several public functions may share one (every
/// activation is a math::unary code). One enumerator per XYLEM_OPS entry, in
/// its order; count_ is the number of them, not an operation.
enum class Op : std::uint16_t {
// Hidden from Doxygen, which would list the #define as an enumerator;
// Doxyfile.in's PREDEFINED stands in for it.
/// @cond
#define XYLEM_OP_ENUM(set, op, ...) set##_##op,
/// @endcond
  XYLEM_OPS(XYLEM_OP_ENUM)
#undef XYLEM_OP_ENUM
      count_
};

/// The number of operations: every Op is below it.
inline constexpr std::size_t kOpCount = static_cast<std::size_t>(Op::count_);

/// The op's printed name, "blas::gemm"; "?" for a value outside the list.
[[nodiscard]] constexpr std::string_view op_name(Op op) noexcept {
  constexpr std::string_view names[] = {
#define XYLEM_OP_NAME(set, op, ...) #set "::" #op,
      XYLEM_OPS(XYLEM_OP_NAME)
#undef XYLEM_OP_NAME
  };
  const auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? names[i] : std::string_view("?");
}

}  // namespace xylem
