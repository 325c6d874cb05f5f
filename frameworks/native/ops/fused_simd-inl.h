// math::fused on the host: a tiled evaluator. The index space is cut into
// tiles of kFusedTile elements; each instruction of the program runs over a
// whole tile with the vector loops of elementwise_ops_simd-inl.h (one op
// code each, no switch per element), each register a buffer of one tile in
// the compute type (2 KiB of f32), so a chain's intermediates stay in L1 and
// only the inputs and outputs touch memory. Compiled once per SIMD target by
// Highway's foreach_target (fused.cpp includes it that way).

// Shared by every target: what fused.cpp hands a chunk of work over.
#ifndef XYLEM_NATIVE_FUSED_CALL_
#define XYLEM_NATIVE_FUSED_CALL_
#include <array>
#include <cstdint>

#include "frameworks/native/ops/strided.hpp"
#include "xylem/plugin/fused_program.hpp"

namespace xylem::native {
// Views 0..4 are the inputs, 5..7 the outputs (an absent one repeats
// output 0's view, and is never touched).
inline constexpr std::size_t kFusedViews = plugin::fused::kMaxInputs + plugin::fused::kMaxOutputs;
struct FusedChunk {
  const StridedLayout<kFusedViews>* layout;
  std::array<const void*, plugin::fused::kMaxInputs> in;  // element 0 of each input view
  std::array<void*, plugin::fused::kMaxOutputs> out;
  // An input in the memory of an output is copied into its register when
  // loaded, never read in place: a store may overwrite it in the same tile.
  std::array<bool, plugin::fused::kMaxInputs> copy_in;
  const plugin::fused::Program* program;
  const double* reals;  // the eight parameter reals
  // Dense outputs of the compute type go out through non-temporal stores
  // (an output larger than the caches: see elementwise's stream).
  bool stream;
  std::int64_t begin, end;
};
}  // namespace xylem::native
#endif

#if defined(XYLEM_NATIVE_FUSED_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_FUSED_SIMD_INL_H_
#undef XYLEM_NATIVE_FUSED_SIMD_INL_H_
#else
#define XYLEM_NATIVE_FUSED_SIMD_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "frameworks/native/ops/convert_simd-inl.h"
#include "frameworks/native/ops/elementwise_ops_simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {

// Elements per tile: 8 registers and a scratch buffer of f64 take 36 KiB
// of stack, f32 half that.
constexpr std::size_t kFusedTile = 512;

// A register's contents over the tile: n values at p, or one value for
// every element (a broadcast input, or what was computed from such values).
template <class C>
struct FusedReg {
  const C* p = nullptr;
  bool splat = false;
};

template <class C, int... K>
HWY_INLINE void FusedUnary(int code, const FusedReg<C>& x, C* y, std::size_t n, C p0, C p1,
                           std::integer_sequence<int, K...>) {
  const std::array<const C*, 1> src{x.p};
  const std::array<bool, 1> splat{false};
  (void)((code == K && (ComputeDense<C, 1>(src, splat, y, n, false, UnaryOp<K, C>{p0, p1}), true)) || ...);
}

template <class C, int... K>
HWY_INLINE void FusedBinary(int code, const FusedReg<C>& a, const FusedReg<C>& b, C* y, std::size_t n, C p0, C p1,
                            std::integer_sequence<int, K...>) {
  const std::array<const C*, 2> src{a.p, b.p};
  // Both broadcast: one value (n is then 1); one broadcast: a vector of it.
  const std::array<bool, 2> splat{a.splat && !b.splat, b.splat && !a.splat};
  (void)((code == K && (ComputeDense<C, 2>(src, splat, y, n, false, BinaryOp<K, C>{p0, p1}), true)) || ...);
}

// n dense elements copied out through non-temporal stores (aligned: the
// head up to the first aligned vector, and the tail, are plain copies).
// Writing a line whole this way skips reading it first, so a chain's
// output costs one memory trip, not two.
template <class C>
HWY_INLINE void StreamOut(const C* from, C* to, std::size_t n) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d);
  const std::size_t misalign = (reinterpret_cast<std::uintptr_t>(to) / sizeof(C)) % lanes;
  std::size_t i = std::min(n, misalign ? lanes - misalign : 0);
  std::memcpy(to, from, i * sizeof(C));
  for (; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(d, from + i), d, to + i);
  std::memcpy(to + i, from + i, (n - i) * sizeof(C));
}

// One tile of n elements: input k at in[k] + i*in_stride[k], output j at
// out[j] + i*out_stride[j].
template <class T>
HWY_INLINE void FusedTile(const FusedChunk& c, const std::array<const T*, plugin::fused::kMaxInputs>& in,
                          const std::array<std::int64_t, plugin::fused::kMaxInputs>& in_stride,
                          const std::array<T*, plugin::fused::kMaxOutputs>& out,
                          const std::array<std::int64_t, plugin::fused::kMaxOutputs>& out_stride, std::size_t n,
                          ComputeOf<T> (*buf)[kFusedTile]) {
  using C = ComputeOf<T>;
  namespace pf = plugin::fused;
  constexpr bool same = std::is_same_v<T, C>;
  std::array<FusedReg<C>, pf::kRegisters> reg{};
  C* scratch = buf[pf::kRegisters];
  const pf::Program& program = *c.program;
  for (int k = 0; k < program.size; ++k) {
    const pf::Instruction& ins = program.code[std::size_t(k)];
    C* dst = buf[ins.dst];
    const C p0 = C(c.reals[2 * ins.params]), p1 = C(c.reals[2 * ins.params + 1]);
    switch (ins.kind) {
      case pf::Kind::load: {
        const auto s = in_stride[std::size_t(ins.a)];
        const T* src = in[std::size_t(ins.a)];
        if (s == 0) {
          dst[0] = to_compute(src[0]);
          reg[std::size_t(ins.dst)] = {dst, true};
        } else if (same && s == 1 && !c.copy_in[std::size_t(ins.a)]) {
          reg[std::size_t(ins.dst)] = {reinterpret_cast<const C*>(src), false};
        } else {
          WidenStrided(src, s, dst, n);
          reg[std::size_t(ins.dst)] = {dst, false};
        }
        break;
      }
      case pf::Kind::unary: {
        const FusedReg<C> x = reg[std::size_t(ins.a)];
        FusedUnary<C>(ins.code, x, dst, x.splat ? 1 : n, p0, p1, std::make_integer_sequence<int, XY_UN_COUNT>());
        reg[std::size_t(ins.dst)] = {dst, x.splat};
        break;
      }
      case pf::Kind::binary: {
        const FusedReg<C> a = reg[std::size_t(ins.a)], b = reg[std::size_t(ins.b)];
        const bool splat = a.splat && b.splat;
        FusedBinary<C>(ins.code, a, b, dst, splat ? 1 : n, p0, p1, std::make_integer_sequence<int, XY_BIN_COUNT>());
        reg[std::size_t(ins.dst)] = {dst, splat};
        break;
      }
      case pf::Kind::store: {
        const FusedReg<C> r = reg[std::size_t(ins.a)];
        const C* from = r.p;
        if (r.splat) {
          for (std::size_t i = 0; i < n; ++i) scratch[i] = r.p[0];
          from = scratch;
        }
        T* to = out[std::size_t(ins.dst)];
        const auto s = out_stride[std::size_t(ins.dst)];
        if constexpr (same) {
          if (c.stream && s == 1) {
            StreamOut(from, reinterpret_cast<C*>(to), n);
            break;
          }
        }
        NarrowStrided(from, to, s, n);
        break;
      }
      default:
        break;  // the host validated the program
    }
  }
}

template <class T>
HWY_INLINE void FusedRun(const FusedChunk& c) {
  namespace pf = plugin::fused;
  using C = ComputeOf<T>;
  HWY_ALIGN C buf[pf::kRegisters + 1][kFusedTile];
  const auto& layout = *c.layout;
  std::array<std::int64_t, pf::kMaxInputs> in_stride{};
  std::array<std::int64_t, pf::kMaxOutputs> out_stride{};
  for (std::size_t k = 0; k < std::size_t(pf::kMaxInputs); ++k) in_stride[k] = layout.inner_stride(k);
  for (std::size_t j = 0; j < std::size_t(pf::kMaxOutputs); ++j)
    out_stride[j] = layout.inner_stride(std::size_t(pf::kMaxInputs) + j);
  std::array<const T*, pf::kMaxInputs> in{};
  std::array<T*, pf::kMaxOutputs> out{};
  for_each_run(layout, c.begin, c.end,
               [&](const std::array<std::int64_t, kFusedViews>& offsets, std::int64_t count, std::int64_t) {
                 for (std::int64_t b = 0; b < count; b += std::int64_t(kFusedTile)) {
                   const std::size_t n = std::size_t(std::min<std::int64_t>(std::int64_t(kFusedTile), count - b));
                   for (std::size_t k = 0; k < std::size_t(pf::kMaxInputs); ++k)
                     if (c.in[k]) in[k] = static_cast<const T*>(c.in[k]) + offsets[k] + b * in_stride[k];
                   for (std::size_t j = 0; j < std::size_t(pf::kMaxOutputs); ++j)
                     if (c.out[j])
                       out[j] = static_cast<T*>(c.out[j]) + offsets[std::size_t(pf::kMaxInputs) + j] + b * out_stride[j];
                   FusedTile<T>(c, in, in_stride, out, out_stride, n, buf);
                 }
               });
  // Streaming stores are weakly ordered: fence them before the queue
  // signals completion to another thread.
  if (c.stream) hwy::FlushStream();
}

#define XYLEM_NATIVE_FUSED_ENTRY(Suffix, T) \
  HWY_NOINLINE void Fused##Suffix(const FusedChunk& c) { FusedRun<T>(c); }
XYLEM_NATIVE_FUSED_ENTRY(F16, hwy::float16_t)
XYLEM_NATIVE_FUSED_ENTRY(BF16, hwy::bfloat16_t)
XYLEM_NATIVE_FUSED_ENTRY(F32, float)
XYLEM_NATIVE_FUSED_ENTRY(F64, double)
#undef XYLEM_NATIVE_FUSED_ENTRY

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle
