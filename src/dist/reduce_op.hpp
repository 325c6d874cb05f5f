#pragma once
// What a ReduceOp is called and what each transport makes of it: the host
// transports combine (avg is a sum the core divides), a device transport
// reduces (its library averages itself).
#include "xylem/dist.hpp"
#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

inline const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

inline plugin::dist::Combine combine_of(ReduceOp op) {
  using plugin::dist::Combine;
  return op == ReduceOp::max ? Combine::max : op == ReduceOp::min ? Combine::min : Combine::sum;
}

inline plugin::dist::Reduction reduction_of(ReduceOp op) {
  using plugin::dist::Reduction;
  switch (op) {
    case ReduceOp::sum:
      return Reduction::sum;
    case ReduceOp::avg:
      return Reduction::avg;
    case ReduceOp::max:
      return Reduction::max;
    case ReduceOp::min:
      return Reduction::min;
  }
  return Reduction::sum;
}

}  // namespace xylem::dist::detail
