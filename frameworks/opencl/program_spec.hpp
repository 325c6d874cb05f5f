#pragma once
// What one OpenCL program is made of, as data: each op family file
// describes its program once (ops/<family>.cpp) and its ops name it in the
// kernel table (ops/kernels.hpp). A program is built per (spec, pass,
// variant) on first use: one pass holds the kernels of one element type,
// one variant the kernels of one op code, so the first f32 sigmoid compiles
// the f32 sigmoid kernel alone. (On PoCL a program's compile time grows with
// every formula and kernel it holds: the whole f32 elementwise family took
// 9 s on 2 cores, one formula of it well under one.)
#include <array>
#include <string>
#include <string_view>

#include "xylem/dtype.hpp"

namespace xylem::plugin {
struct OpCall;
}  // namespace xylem::plugin

namespace xylem::opencl {

// The shared OpenCL C a program's kernels use besides kernels/common.cl
// and kernels/storage.cl (which every program has).
enum class Helpers {
  none,
  nn,    // kernels/nn_common.cl: views, windows, work-group sums
  rows,  // nn_common.cl, then kernels/rows.cl: one slice per work-group
};

// The element types a program is compiled for, one pass each.
enum class Passes {
  once,    // the f32 pass holds every dtype's kernels (copy, cast, convert: bit patterns and casts)
  reals,   // f32 and f64 (f64 with fp64); other dtypes' kernels are in the f32 pass (creation's fill)
  floats,  // f16, bf16, f32, f64: f16 and bf16 computed in f32, moved as ST (kernels/storage.cl)
  integers,  // i32 and i64: T = int or long, FS = SUF = i32 or i64 (kernels/integer.cl)
};

struct ProgramSpec {
  std::string_view name;  // the family's name: cache keys, messages, `xylem warm`
  // The embedded texts (sources.hpp) appended for the pass, in order; null
  // past the last. Pointers, so specs are constants whatever the order in
  // which translation units initialise.
  std::array<const std::string_view*, 2> texts{};
  Helpers helpers = Helpers::none;
  Passes passes = Passes::reals;
  // A family split by a code of the call: variant v's source defines
  // `variant_define` (when set) as v, so the kernels compile the one case
  // they need, and the call picks its variant with `variant_of` (variant 0
  // without one).
  int variants = 1;
  std::string_view variant_define{};
  int (*variant_of)(const plugin::OpCall& call) = nullptr;
  // What variant v computes, for labels ("unary sigmoid f32").
  std::string (*variant_name)(int variant) = nullptr;
  // OpenCL C put ahead of the family's text in variant v's source (the
  // defines of a kernel variant: gemm's tile shapes), when set.
  std::string (*variant_source)(int variant) = nullptr;
};

// The variant of `spec` a call runs: -1 for a code outside the spec's
// variants (the caller rejects the call).
[[nodiscard]] inline int variant_for(const ProgramSpec& spec, const plugin::OpCall& call) noexcept {
  const int v = spec.variant_of ? spec.variant_of(call) : 0;
  return v >= 0 && v < spec.variants ? v : -1;
}

// The pass that holds the kernels `dtype` dispatches to.
[[nodiscard]] constexpr DType pass_for(const ProgramSpec& spec, DType dtype) noexcept {
  switch (spec.passes) {
    case Passes::once:
      return DType::f32;
    case Passes::reals:
      return dtype == DType::f64 ? DType::f64 : DType::f32;
    case Passes::floats:
      return dtype == DType::f64 || dtype == DType::f16 || dtype == DType::bf16 ? dtype : DType::f32;
    case Passes::integers:
      return dtype == DType::i64 ? DType::i64 : DType::i32;
  }
  return DType::f32;
}

}  // namespace xylem::opencl
