#pragma once
// Every operation xylem knows, declared once. The op id, its name and its
// slot in each framework's kernel table follow from this list; the public
// wrappers (src/ops/*.cpp) check arguments and dispatch by id.
//
// X(op set, name, tensor arguments with their access: r = read,
//   w = write-only (no sync needed), rw = read and write)
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xylem::plugin {

#define XYLEM_OPS(X)                                                        \
  /* creation: fill a tensor on its device */                               \
  X(creation, fill, "y:w")                                                  \
  X(creation, arange, "y:w")                                                \
  X(creation, uniform, "y:w")                                               \
  X(creation, normal, "y:w")                                                \
  /* core: strided copy / dtype-preserving gather */                        \
  X(core, copy_view, "x:r y:w")                                             \
  /* blas level 1 */                                                        \
  X(blas, asum, "x:r result:w")                                             \
  X(blas, axpy, "x:r y:rw")                                                 \
  X(blas, copy, "x:r y:w")                                                  \
  X(blas, dot, "x:r y:r result:w")                                          \
  X(blas, nrm2, "x:r result:w")                                             \
  X(blas, scal, "x:rw")                                                     \
  X(blas, swap, "x:rw y:rw")                                                \
  X(blas, iamax, "x:r result:w")                                            \
  X(blas, rot, "x:rw y:rw")                                                 \
  /* blas level 2 and 3 */                                                  \
  X(blas, gemv, "a:r x:r y:rw")                                             \
  X(blas, gemm, "a:r b:r c:rw")                                             \
  X(blas, gemm_batched, "a:r b:r c:rw")                                     \
  /* elementwise math; codes and formulas in math.h */                      \
  X(math, unary, "x:r y:w")                                                 \
  X(math, binary, "a:r b:r y:w")                                            \
  X(math, compare, "a:r b:r y:w")                                           \
  X(math, where, "a:r b:r cond:r y:w")                                      \
  X(math, cast, "x:r y:w")                                                  \
  X(math, reduce, "x:r y:w")                                                \
  /* nn: softmax, normalisation, losses, dropout */                         \
  X(nn, softmax, "x:r y:w")                                                 \
  X(nn, softmax_grad, "y:r dy:r dx:w")                                      \
  X(nn, layer_norm, "x:r gamma:r beta:r y:w mean:w rstd:w")                 \
  X(nn, layer_norm_grad_input, "x:r gamma:r mean:r rstd:r dy:r dx:w")       \
  X(nn, layer_norm_grad_params, "x:r mean:r rstd:r dy:r dgamma:w dbeta:w")  \
  X(nn, batch_norm_stats, "x:r mean:w var:w")                               \
  X(nn, batch_norm_apply, "x:r mean:r var:r gamma:r beta:r y:w")            \
  X(nn, batch_norm_grad_params, "x:r mean:r var:r dy:r dgamma:w dbeta:w")   \
  X(nn, batch_norm_grad_input,                                              \
    "x:r mean:r var:r gamma:r dgamma:r dbeta:r dy:r dx:w")                  \
  X(nn, dropout, "x:r y:w")                                                 \
  X(nn, dropout_grad, "dy:r dx:w")                                          \
  X(nn, cross_entropy, "x:r target:r loss:w")                               \
  X(nn, cross_entropy_grad, "x:r target:r dloss:r dx:w")                    \
  /* nn: convolution, pooling, local response normalisation (NCHW) */       \
  X(nn, conv2d, "x:r w:r y:w")                                              \
  X(nn, conv2d_grad_data, "dy:r w:r dx:w")                                  \
  X(nn, conv2d_grad_filter, "x:r dy:r dw:w")                                \
  X(nn, max_pool2d, "x:r y:w")                                              \
  X(nn, max_pool2d_grad, "x:r dy:r dx:w")                                   \
  X(nn, avg_pool2d, "x:r y:w")                                              \
  X(nn, avg_pool2d_grad, "dy:r dx:w")                                       \
  X(nn, lrn, "x:r y:w")                                                     \
  X(nn, lrn_grad, "x:r y:r dy:r dx:w")

enum class OpId : std::uint16_t {
#define XYLEM_OP_ENUM(set, op, args) set##_##op,
  XYLEM_OPS(XYLEM_OP_ENUM)
#undef XYLEM_OP_ENUM
      count_
};

inline constexpr std::size_t kOpCount = static_cast<std::size_t>(OpId::count_);

[[nodiscard]] constexpr std::string_view op_name(OpId op) noexcept {
  constexpr std::string_view names[] = {
#define XYLEM_OP_NAME(set, op, args) #set "::" #op,
      XYLEM_OPS(XYLEM_OP_NAME)
#undef XYLEM_OP_NAME
  };
  auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? names[i] : std::string_view("?");
}

[[nodiscard]] constexpr std::string_view op_signature(OpId op) noexcept {
  constexpr std::string_view sigs[] = {
#define XYLEM_OP_SIG(set, op, args) args,
      XYLEM_OPS(XYLEM_OP_SIG)
#undef XYLEM_OP_SIG
  };
  auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? sigs[i] : std::string_view("");
}

}  // namespace xylem::plugin
