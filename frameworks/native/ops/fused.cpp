// Native math::fused: the program checked and decoded once per call, the
// views collapsed together, then chunks spread over the cores by oneTBB,
// each run through fused_simd-inl.h's tile evaluator on the best SIMD
// target for this CPU.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/fused_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/fused_simd-inl.h"

#if HWY_ONCE
#include <string>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fused_call.hpp"

namespace xylem::native {

HWY_EXPORT(FusedF16);
HWY_EXPORT(FusedBF16);
HWY_EXPORT(FusedF32);
HWY_EXPORT(FusedF64);

namespace {

namespace pf = plugin::fused;
using plugin::OpCall;
using plugin::OpId;

// As elementwise's: large enough to amortise a task, small enough to stay
// in L2 while the tiles of a chunk go through.
constexpr std::int64_t kGrain = 16 * 1024;

template <DType D>
void run_chunk(const FusedChunk& c) {
  if constexpr (D == DType::f16)
    HWY_DYNAMIC_DISPATCH(FusedF16)(c);
  else if constexpr (D == DType::bf16)
    HWY_DYNAMIC_DISPATCH(FusedBF16)(c);
  else if constexpr (D == DType::f32)
    HWY_DYNAMIC_DISPATCH(FusedF32)(c);
  else
    HWY_DYNAMIC_DISPATCH(FusedF64)(c);
}

template <DType D>
void fused_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::math_fused>(call);
  const pf::Call c = pf::unpack_call(a);  // points into a
  if (!c.why.empty()) throw Error(ErrorCode::invalid_argument, "math::fused: " + c.why);
  const pf::Program program = pf::decode_program(c.words);
  // Collapsed once more the native way (the same merging, in the arrays
  // for_each_run walks).
  const auto layout = make_layout<kFusedViews>(c.views);
  const auto first_byte = [](const plugin::TensorArg& t) {
    return static_cast<char*>(t.data) + t.view.offset() * std::int64_t(size_of(t.dtype));
  };
  FusedChunk chunk{};
  chunk.layout = &layout;
  chunk.program = &program;
  chunk.reals = c.reals.data();
  for (std::size_t k = 0; k < std::size_t(pf::kMaxInputs); ++k) {
    const plugin::TensorArg& x = *c.tensors[k];
    chunk.in[k] = x.data ? first_byte(x) : nullptr;
    for (std::size_t j = 0; j < std::size_t(pf::kMaxOutputs); ++j) {
      const void* y = c.tensors[std::size_t(pf::kMaxInputs) + j]->data;
      chunk.copy_in[k] = chunk.copy_in[k] || (y && y == x.data);
    }
  }
  for (std::size_t j = 0; j < std::size_t(pf::kMaxOutputs); ++j) {
    const plugin::TensorArg& y = *c.tensors[std::size_t(pf::kMaxInputs) + j];
    chunk.out[j] = y.data ? first_byte(y) : nullptr;
  }
  // Outputs too large to stay in cache skip the read before each write.
  std::int64_t out_bytes = 0;
  for (std::size_t j = 0; j < std::size_t(pf::kMaxOutputs); ++j)
    if (chunk.out[j]) out_bytes += layout.numel * std::int64_t(size_of(D));
  chunk.stream = out_bytes > stream_threshold_bytes();
  parallel_chunks(layout.numel, kGrain, [&](std::int64_t begin, std::int64_t end) {
    FusedChunk part = chunk;
    part.begin = begin;
    part.end = end;
    run_chunk<D>(part);
  });
}

}  // namespace

void register_fused(KernelTable& table) {
  table.set(OpId::math_fused, DType::f16, &fused_kernel<DType::f16>);
  table.set(OpId::math_fused, DType::bf16, &fused_kernel<DType::bf16>);
  table.set(OpId::math_fused, DType::f32, &fused_kernel<DType::f32>);
  table.set(OpId::math_fused, DType::f64, &fused_kernel<DType::f64>);
}

}  // namespace xylem::native
#endif  // HWY_ONCE
