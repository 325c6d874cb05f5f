// Native elementwise math: math::unary, binary, compare and where, for f16,
// bf16, f32 and f64, over views of any strides (a broadcast input arrives
// with stride 0). The work is split into chunks that oneTBB spreads over
// the cores; each chunk runs the vector kernel of elementwise_simd-inl.h
// (best SIMD target for this CPU, chosen at run time) specialised on the
// op code. i32 and i64 take math.h's integer codes (wrapping add, sub, mul;
// maximum, minimum, neg, abs; the comparisons) as plain loops the compiler
// vectorises, split into the same chunks.

// SSSE3-only machines are rare; skipping that target saves compile time. They
// still run, on Highway's portable baseline.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/elementwise_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/elementwise_simd-inl.h"

#if HWY_ONCE
#include <cstdint>
#include <string>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/math.h"

namespace xylem::native {

HWY_EXPORT(UnaryF16);
HWY_EXPORT(UnaryBF16);
HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);
HWY_EXPORT(BinaryF16);
HWY_EXPORT(BinaryBF16);
HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(CompareF16);
HWY_EXPORT(CompareBF16);
HWY_EXPORT(CompareF32);
HWY_EXPORT(CompareF64);

namespace {

using plugin::OpCall;
using plugin::OpId;

// 16K elements (64 KiB of f32 per argument): amortises the task overhead
// while keeping each chunk's data in L2 until it is written back.
constexpr std::int64_t kGrain = 16 * 1024;

// The best SIMD target's entry for a dtype and op kind.
enum class Kind { unary, binary, compare };

template <Kind K, DType D>
void dispatch_chunk(const ElementwiseChunk<K == Kind::unary ? 1 : 2>& c) {
#define XYLEM_NATIVE_PICK(Suffix)                                 \
  if constexpr (K == Kind::unary) HWY_DYNAMIC_DISPATCH(Unary##Suffix)(c);   \
  else if constexpr (K == Kind::binary) HWY_DYNAMIC_DISPATCH(Binary##Suffix)(c); \
  else HWY_DYNAMIC_DISPATCH(Compare##Suffix)(c);
  if constexpr (D == DType::f16) {
    XYLEM_NATIVE_PICK(F16)
  } else if constexpr (D == DType::bf16) {
    XYLEM_NATIVE_PICK(BF16)
  } else if constexpr (D == DType::f32) {
    XYLEM_NATIVE_PICK(F32)
  } else {
    XYLEM_NATIVE_PICK(F64)
  }
#undef XYLEM_NATIVE_PICK
}

// One call's arguments, as the vector kernels of every kind take them.
template <std::size_t In>
struct Operands {
  std::array<plugin::TensorArg, In + 1> tensors;  // the inputs, then the output
  std::int64_t code = 0;
  double p0 = 0, p1 = 0;
};

template <Kind K>
auto operands_of(const OpCall& call) {
  if constexpr (K == Kind::unary) {
    const auto a = plugin::unpack<plugin::args::math_unary>(call);
    return Operands<1>{{a.x, a.y}, a.code, a.param0, a.param1};
  } else if constexpr (K == Kind::binary) {
    const auto a = plugin::unpack<plugin::args::math_binary>(call);
    return Operands<2>{{a.a, a.b, a.y}, a.code, a.param0, a.param1};
  } else {
    const auto a = plugin::unpack<plugin::args::math_compare>(call);
    return Operands<2>{{a.a, a.b, a.y}, a.code};
  }
}

// Splits the call into chunks and hands each to the vector kernel.
// Streaming the output only pays for a dense one.
template <std::size_t In, class Entry>
void run_elementwise(const Operands<In>& ops, Entry entry) {
  std::array<const Layout*, In + 1> views{};
  for (std::size_t k = 0; k <= In; ++k) views[k] = &ops.tensors[k].view;
  const auto layout = make_layout<In + 1>(views);
  const plugin::TensorArg& out = ops.tensors[In];
  const std::int64_t out_bytes = layout.numel * std::int64_t(size_of(out.dtype));
  ElementwiseChunk<In> chunk{};
  chunk.layout = &layout;
  const auto first_byte = [](const plugin::TensorArg& t) {
    return static_cast<char*>(t.data) + t.view.offset() * std::int64_t(size_of(t.dtype));
  };
  for (std::size_t k = 0; k < In; ++k) chunk.in[k] = first_byte(ops.tensors[k]);
  chunk.out = first_byte(out);
  chunk.code = int(ops.code);
  chunk.p0 = ops.p0;
  chunk.p1 = ops.p1;
  // Outputs too large to stay in cache go out through streaming stores
  // (stream_threshold_bytes): measured, sigmoid over 64M f32 went from
  // about copy speed to 1.2x a memcpy.
  chunk.stream = out_bytes > stream_threshold_bytes() && layout.inner_stride(In) == 1;
  parallel_chunks(layout.numel, kGrain, [&](std::int64_t begin, std::int64_t end) {
    ElementwiseChunk<In> part = chunk;
    part.begin = begin;
    part.end = end;
    entry(part);
  });
}

// The codes of math.h's X-lists for each kind: the vector kernels are
// instantiated for [0, count) and write nothing for another code.
template <Kind K>
constexpr int kCodeCount = K == Kind::unary ? int{XY_UN_COUNT} : K == Kind::binary ? int{XY_BIN_COUNT} : int{XY_CMP_COUNT};

template <Kind K, DType D>
void elementwise_kernel(const OpCall& call) {
  const auto ops = operands_of<K>(call);
  if (ops.code < 0 || ops.code >= kCodeCount<K>) {
    constexpr const char* op = K == Kind::unary ? "math::unary" : K == Kind::binary ? "math::binary" : "math::compare";
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": unknown code " + std::to_string(ops.code));
  }
  run_elementwise(ops, &dispatch_chunk<K, D>);
}

// where: y = cond ? a : b. A pure selection, so it moves storage words
// (no conversion, exact for every float dtype).
template <class Word>
void where_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::math_where>(call);
  const Word* a = element_ptr<const Word>(args.a);
  const Word* b = element_ptr<const Word>(args.b);
  const std::uint8_t* cond = element_ptr<const std::uint8_t>(args.cond);
  Word* y = element_ptr<Word>(args.y);
  const auto layout = make_layout<4>({&args.a.view, &args.b.view, &args.cond.view, &args.y.view});
  const std::int64_t sa = layout.inner_stride(0), sb = layout.inner_stride(1);
  const std::int64_t sc = layout.inner_stride(2), sy = layout.inner_stride(3);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, 4>& o, std::int64_t count, std::int64_t) {
    const Word* pa = a + o[0];
    const Word* pb = b + o[1];
    const std::uint8_t* pc = cond + o[2];
    Word* py = y + o[3];
    if (sa == 1 && sb == 1 && sc == 1 && sy == 1) {  // dense: a loop the compiler vectorises
      for (std::int64_t j = 0; j < count; ++j) py[j] = pc[j] ? pa[j] : pb[j];
    } else {
      for (std::int64_t j = 0; j < count; ++j) py[j * sy] = pc[j * sc] ? pa[j * sa] : pb[j * sb];
    }
  });
}

// ---- i32 and i64 ---------------------------------------------------------
// math.h's integer formulas for one element type.
template <class T>
struct IntFormulas;
template <>
struct IntFormulas<std::int32_t> {
  static std::int32_t unary(int code, std::int32_t x) { return xy_int_unary_i32(code, x); }
  static std::int32_t binary(int code, std::int32_t a, std::int32_t b) { return xy_int_binary_i32(code, a, b); }
  static std::uint8_t compare(int code, std::int32_t a, std::int32_t b) {
    return std::uint8_t(xy_int_compare_i32(code, a, b));
  }
};
template <>
struct IntFormulas<std::int64_t> {
  static std::int64_t unary(int code, std::int64_t x) { return xy_int_unary_i64(code, x); }
  static std::int64_t binary(int code, std::int64_t a, std::int64_t b) { return xy_int_binary_i64(code, a, b); }
  static std::uint8_t compare(int code, std::int64_t a, std::int64_t b) {
    return std::uint8_t(xy_int_compare_i64(code, a, b));
  }
};

// y = f(x) or f(a, b) over the views `t` (inputs of T, then the output of
// Out), in parallel chunks of runs. The dense paths (a broadcast operand
// has stride 0) are the loops the compiler vectorises.
template <class T, class Out, std::size_t In, class F>
void int_map(const std::array<const plugin::TensorArg*, In + 1>& t, F f) {
  std::array<const Layout*, In + 1> views{};
  for (std::size_t k = 0; k <= In; ++k) views[k] = &t[k]->view;
  const auto layout = make_layout<In + 1>(views);
  const T* x0 = element_ptr<const T>(*t[0]);
  [[maybe_unused]] const T* x1 = element_ptr<const T>(*t[In == 2 ? 1 : 0]);
  Out* y = element_ptr<Out>(*t[In]);
  const std::int64_t s0 = layout.inner_stride(0);
  [[maybe_unused]] const std::int64_t s1 = layout.inner_stride(In == 2 ? 1 : 0);
  const std::int64_t sy = layout.inner_stride(In);
  parallel_runs(layout, kGrain, [&](const std::array<std::int64_t, In + 1>& o, std::int64_t count, std::int64_t) {
    const T* a = x0 + o[0];
    Out* py = y + o[In];
    if constexpr (In == 1) {
      if (s0 == 1 && sy == 1) {
        for (std::int64_t j = 0; j < count; ++j) py[j] = f(a[j]);
      } else {
        for (std::int64_t j = 0; j < count; ++j) py[j * sy] = f(a[j * s0]);
      }
    } else {
      const T* b = x1 + o[1];
      if (s0 == 1 && s1 == 1 && sy == 1) {
        for (std::int64_t j = 0; j < count; ++j) py[j] = f(a[j], b[j]);
      } else if (s0 == 1 && s1 == 0 && sy == 1) {  // x + 1
        const T bv = b[0];
        for (std::int64_t j = 0; j < count; ++j) py[j] = f(a[j], bv);
      } else if (s0 == 0 && s1 == 1 && sy == 1) {  // 1 - x
        const T av = a[0];
        for (std::int64_t j = 0; j < count; ++j) py[j] = f(av, b[j]);
      } else {
        for (std::int64_t j = 0; j < count; ++j) py[j * sy] = f(a[j * s0], b[j * s1]);
      }
    }
  });
}

// Calls body.template operator()<code>() for the code of an X-list (math.h)
// equal to `code`: the code becomes a constant its formula's switch folds.
#define XYLEM_NATIVE_INT_CASE(c, expression) \
  case c:                                    \
    body.template operator()<c>();           \
    return true;

template <Kind K, class Body>
bool with_int_code(std::int64_t code, Body&& body) {
  if constexpr (K == Kind::unary) {
    switch (code) {
      XY_INT_UNARY_FORMULAS(XYLEM_NATIVE_INT_CASE, , , )
      default: return false;
    }
  } else if constexpr (K == Kind::binary) {
    switch (code) {
      XY_INT_BINARY_FORMULAS(XYLEM_NATIVE_INT_CASE, , , , )
      default: return false;
    }
  } else {
    switch (code) {
      XY_COMPARE_FORMULAS(XYLEM_NATIVE_INT_CASE, , )
      default: return false;
    }
  }
}
#undef XYLEM_NATIVE_INT_CASE

template <Kind K, class T>
void int_kernel(const OpCall& call) {
  using F = IntFormulas<T>;
  const auto ops = operands_of<K>(call);
  const bool known = with_int_code<K>(ops.code, [&]<int Code>() {
    if constexpr (K == Kind::unary) {
      int_map<T, T, 1>({&ops.tensors[0], &ops.tensors[1]}, [](T x) { return F::unary(Code, x); });
    } else if constexpr (K == Kind::binary) {
      int_map<T, T, 2>({&ops.tensors[0], &ops.tensors[1], &ops.tensors[2]},
                       [](T a, T b) { return F::binary(Code, a, b); });
    } else {
      int_map<T, std::uint8_t, 2>({&ops.tensors[0], &ops.tensors[1], &ops.tensors[2]},
                                  [](T a, T b) { return F::compare(Code, a, b); });
    }
  });
  if (!known) {
    constexpr const char* op = K == Kind::unary ? "math::unary" : K == Kind::binary ? "math::binary" : "math::compare";
    throw Error(ErrorCode::invalid_argument, std::string(op) + ": code " + std::to_string(ops.code) +
                                                 " has no integer form (" + std::string(name(dtype_of_v<T>)) + ")");
  }
}

template <DType D>
void register_typed(KernelTable& table) {
  table.set(OpId::math_unary, D, &elementwise_kernel<Kind::unary, D>);
  table.set(OpId::math_binary, D, &elementwise_kernel<Kind::binary, D>);
  table.set(OpId::math_compare, D, &elementwise_kernel<Kind::compare, D>);
}

}  // namespace

void register_elementwise(KernelTable& table) {
  register_typed<DType::f16>(table);
  register_typed<DType::bf16>(table);
  register_typed<DType::f32>(table);
  register_typed<DType::f64>(table);
  table.set(OpId::math_where, DType::f16, &where_kernel<std::uint16_t>);
  table.set(OpId::math_where, DType::bf16, &where_kernel<std::uint16_t>);
  table.set(OpId::math_where, DType::f32, &where_kernel<std::uint32_t>);
  table.set(OpId::math_where, DType::f64, &where_kernel<std::uint64_t>);
  table.set(OpId::math_unary, DType::i32, &int_kernel<Kind::unary, std::int32_t>);
  table.set(OpId::math_binary, DType::i32, &int_kernel<Kind::binary, std::int32_t>);
  table.set(OpId::math_compare, DType::i32, &int_kernel<Kind::compare, std::int32_t>);
  table.set(OpId::math_where, DType::i32, &where_kernel<std::uint32_t>);
  table.set(OpId::math_unary, DType::i64, &int_kernel<Kind::unary, std::int64_t>);
  table.set(OpId::math_binary, DType::i64, &int_kernel<Kind::binary, std::int64_t>);
  table.set(OpId::math_compare, DType::i64, &int_kernel<Kind::compare, std::int64_t>);
  table.set(OpId::math_where, DType::i64, &where_kernel<std::uint64_t>);
}

}  // namespace xylem::native
#endif  // HWY_ONCE
