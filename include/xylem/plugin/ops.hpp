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

#define XYLEM_OPS(X)                                  \
  /* creation: fill a tensor on its device */         \
  X(creation, fill, "y:w")                            \
  X(creation, arange, "y:w")                          \
  X(creation, uniform, "y:w")                         \
  X(creation, normal, "y:w")                          \
  /* core: strided copy / dtype-preserving gather */  \
  X(core, copy_view, "x:r y:w")                       \
  /* blas level 1 */                                  \
  X(blas, asum, "x:r result:w")                       \
  X(blas, axpy, "x:r y:rw")                           \
  X(blas, copy, "x:r y:w")                            \
  X(blas, dot, "x:r y:r result:w")                    \
  X(blas, nrm2, "x:r result:w")                       \
  X(blas, scal, "x:rw")                               \
  X(blas, swap, "x:rw y:rw")                          \
  X(blas, iamax, "x:r result:w")                      \
  /* blas level 3 */                                  \
  X(blas, gemm, "a:r b:r c:rw")                       \
  /* nn activations and their gradients */            \
  X(nn, sigmoid, "x:r y:w")                           \
  X(nn, sigmoid_grad, "y:r dy:r dx:w")                \
  X(nn, relu, "x:r y:w")                              \
  X(nn, relu_grad, "x:r dy:r dx:w")                   \
  X(nn, tanh, "x:r y:w")                              \
  X(nn, tanh_grad, "y:r dy:r dx:w")

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
