#pragma once
// The op list (xylem/op.hpp) as the core and the frameworks see it: the op
// id, and each op's tensors with their access modes, taken from the list so
// that no wrapper restates them.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "xylem/op.hpp"

namespace xylem::plugin {

using OpId = Op;
using xylem::kOpCount;
using xylem::op_name;

enum class Access : std::uint8_t { read, write, read_write };

// One tensor of an op, as the list declares it.
struct TensorParam {
  std::string_view name;
  Access access = Access::read;
  bool optional = false;      // may be absent (data == nullptr)
  std::string_view scaled_by;  // XY_ACC: the real that scales the old contents ("" otherwise)
};

namespace op_params {
#define XY_TENSOR(n, mode, may_be_absent, ...) TensorParam{#n, Access::mode, may_be_absent, #__VA_ARGS__},
#define XYLEM_OP_PARAMS(set, op, tensors, ints, reals) inline constexpr TensorParam set##_##op[] = {tensors};
XYLEM_OPS(XYLEM_OP_PARAMS)
#undef XYLEM_OP_PARAMS
#undef XY_TENSOR
}  // namespace op_params

// The op's tensors in slot order; empty for a value outside the list.
[[nodiscard]] constexpr std::span<const TensorParam> tensor_params(OpId op) noexcept {
  constexpr std::span<const TensorParam> params[] = {
#define XYLEM_OP_SPAN(set, op, ...) op_params::set##_##op,
      XYLEM_OPS(XYLEM_OP_SPAN)
#undef XYLEM_OP_SPAN
  };
  const auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? params[i] : std::span<const TensorParam>();
}

// The tensors as text, "a:read b:read c:read_write", for messages.
[[nodiscard]] constexpr std::string_view op_signature(OpId op) noexcept {
  constexpr std::string_view sigs[] = {
#define XY_TENSOR(n, mode, ...) " " #n ":" #mode
#define XYLEM_OP_SIG(set, op, tensors, ints, reals) tensors,
      XYLEM_OPS(XYLEM_OP_SIG)
#undef XYLEM_OP_SIG
#undef XY_TENSOR
  };
  const auto i = static_cast<std::size_t>(op);
  return i < kOpCount ? sigs[i].substr(1) : std::string_view("");
}

}  // namespace xylem::plugin
