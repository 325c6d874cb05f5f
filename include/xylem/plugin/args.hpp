#pragma once
// The typed form of every op's arguments, generated from the op list
// (xylem/op.hpp): args::blas_gemm<> has fields a, b, c, transpose_a,
// transpose_b, alpha and beta. The core fills one with Tensors and the
// access of each follows from the list; a kernel reads its call through
// unpack<args::blas_gemm>(call) rather than by slot number.
#include <array>
#include <cstddef>
#include <cstdint>

#include "xylem/dtype.hpp"
#include "xylem/layout.hpp"
#include "xylem/plugin/ops.hpp"

namespace xylem::plugin {

// One tensor argument as a kernel sees it.
struct TensorArg {
  void* data = nullptr;  // the allocation: host pointer (native), cl_mem (opencl), device pointer (cuda)
  Layout view;           // dims, strides and offset, in elements, into data
  DType dtype = DType::f32;
};

inline constexpr std::size_t kMaxOpTensors = 9;  // nn::attention_grad has 9
inline constexpr std::size_t kMaxOpReals = 8;
inline constexpr std::size_t kMaxOpIntegers = 16;  // nn::conv2d_epilogue has 13

// One operation call, by slot: what crosses the plugin boundary. Fixed size:
// enqueuing never allocates for arguments. The op list fixes which named
// argument lives in which slot; pack and unpack convert.
struct OpCall {
  OpId op = OpId::count_;
  std::uint8_t num_tensors = 0;
  std::array<TensorArg, kMaxOpTensors> t{};
  std::array<double, kMaxOpReals> f{};
  std::array<std::int64_t, kMaxOpIntegers> i{};
};

// args::<set>_<op><T>: the op's tensors as T (TensorArg for kernels, the
// core's Tensor handle when it launches), then its integers and reals.
// visit(self, v) walks the fields in slot order: v.tensor(field, param,
// access) with the access this call needs (XY_ACC resolved against its
// scale), v.integer(field), v.real(field).
namespace args {
#define XY_TENSOR(n, ...) T n{};
#define XY_INT(n) std::int64_t n = 0;
#define XY_REAL(n) double n = 0;
#define XYLEM_ARGS_FIELDS(set, op, tensors, ints, reals) \
  template <class T = TensorArg>                        \
  struct set##_##op {                                   \
    static constexpr OpId id = OpId::set##_##op;        \
    tensors ints reals                                  \
  };
XYLEM_OPS(XYLEM_ARGS_FIELDS)
#undef XYLEM_ARGS_FIELDS
#undef XY_TENSOR
#undef XY_INT
#undef XY_REAL
}  // namespace args

namespace detail {

// Slot counts per op, checked against OpCall's capacity below.
struct SlotCounts {
  std::size_t tensors = 0, integers = 0, reals = 0;
};

template <template <class> class A>
struct ArgsTraits;

// XY_ACC's tensor is write-only when its scale is 0.
#define XY_TENSOR(n, mode, may_be_absent, ...) \
  v.tensor(self.n, params[k], __VA_OPT__(self.__VA_ARGS__ == 0 ? Access::write :) params[k].access), ++k;
#define XY_INT(n) v.integer(self.n);
#define XY_REAL(n) v.real(self.n);
#define XYLEM_ARGS_TRAITS(set, op, tensors, ints, reals)                                    \
  template <>                                                                               \
  struct ArgsTraits<args::set##_##op> {                                                     \
    template <class Self, class V>                                                          \
    static constexpr void visit(Self& self, V& v) {                                         \
      [[maybe_unused]] const auto params = tensor_params(OpId::set##_##op);                 \
      [[maybe_unused]] std::size_t k = 0;                                                   \
      tensors ints reals                                                                    \
    }                                                                                       \
  };
XYLEM_OPS(XYLEM_ARGS_TRAITS)
#undef XYLEM_ARGS_TRAITS
#undef XY_TENSOR
#undef XY_INT
#undef XY_REAL

// Counting: every field adds one to its kind.
struct Counter {
  SlotCounts n;
  template <class T, class P>
  constexpr void tensor(T&, const P&, Access) { ++n.tensors; }
  constexpr void integer(std::int64_t&) { ++n.integers; }
  constexpr void real(double&) { ++n.reals; }
};

template <template <class> class A>
constexpr SlotCounts slot_counts() {
  A<TensorArg> a{};
  Counter c;
  ArgsTraits<A>::visit(a, c);
  return c.n;
}

#define XYLEM_ARGS_FIT(set, op, ...)                                                              \
  static_assert(slot_counts<args::set##_##op>().tensors <= kMaxOpTensors &&                      \
                    slot_counts<args::set##_##op>().integers <= kMaxOpIntegers &&                \
                    slot_counts<args::set##_##op>().reals <= kMaxOpReals,                        \
                "op " #set "::" #op " has more arguments than an OpCall holds");                  \
  static_assert(slot_counts<args::set##_##op>().tensors == tensor_params(OpId::set##_##op).size());
XYLEM_OPS(XYLEM_ARGS_FIT)
#undef XYLEM_ARGS_FIT

}  // namespace detail

// The op's arguments packed into slots, and back.
template <template <class> class A>
[[nodiscard]] OpCall pack(const A<TensorArg>& a) {
  struct Packer {
    OpCall& call;
    std::size_t f = 0, i = 0;
    void tensor(const TensorArg& t, const TensorParam&, Access) { call.t[call.num_tensors++] = t; }
    void integer(std::int64_t v) { call.i[i++] = v; }
    void real(double v) { call.f[f++] = v; }
  };
  OpCall call;
  call.op = A<TensorArg>::id;
  Packer p{call};
  detail::ArgsTraits<A>::visit(a, p);
  return call;
}

template <template <class> class A>
[[nodiscard]] A<TensorArg> unpack(const OpCall& call) {
  struct Unpacker {
    const OpCall& call;
    std::size_t t = 0, f = 0, i = 0;
    void tensor(TensorArg& out, const TensorParam&, Access) { out = call.t[t++]; }
    void integer(std::int64_t& out) { out = call.i[i++]; }
    void real(double& out) { out = call.f[f++]; }
  };
  A<TensorArg> a;
  Unpacker u{call};
  detail::ArgsTraits<A>::visit(a, u);
  return a;
}

}  // namespace xylem::plugin
