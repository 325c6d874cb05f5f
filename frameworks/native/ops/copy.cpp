// core::copy_view natively: y = x for two views of the same dims and dtype,
// any strides. Only the element size matters, so one kernel per size serves
// every dtype. Dense stretches go through memcpy, in parallel chunks, since
// one core alone cannot saturate memory bandwidth.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "frameworks/native/ops/copy_simd-inl.h"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h: the static target's copy.
#include "frameworks/native/ops/copy_simd-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {

HWY_EXPORT(TransposeU32);
HWY_EXPORT(TransposeU64);

namespace {

using plugin::OpCall;

// About 256 KiB per chunk: large enough that the split costs nothing next to
// the copy, small enough that both cores get work from a few MiB up.
constexpr std::int64_t kChunkBytes = 256 * 1024;

// The word of a 16-byte element (c128).
struct Word128 {
  std::uint64_t lo, hi;
};

// Views whose dense axes differ (a transpose) defeat a row walk: it reads
// one element per cache line, and for large strides one per page. Such
// copies go tile by tile over the two axes instead, through a small buffer:
// the tile is read with the loop running along the source's dense axis and
// written along the destination's, so every line is streamed whole on both
// sides. (Copying tile to tile directly keeps a tile's worth of lines at
// one power-of-two stride live at once, which thrashes the L1 and the TLB.)
// Returns the axis to pair with the innermost one, or -1 when the row walk
// is fine.
template <std::size_t N>
int tile_axis(const StridedLayout<N>& layout) {
  const int inner = layout.rank - 1;
  for (std::size_t t = 0; t < N; ++t) {
    int best = -1;
    for (int axis = 0; axis < inner; ++axis) {
      const std::int64_t s = std::abs(layout.strides[t][std::size_t(axis)]);
      if (best < 0 || s < std::abs(layout.strides[t][std::size_t(best)])) best = axis;
    }
    if (best >= 0 && std::abs(layout.strides[t][std::size_t(best)]) < std::abs(layout.inner_stride(t))) return best;
  }
  return -1;
}

// A whole tile that is a plain transpose (one side dense along a, the
// other along b) turned in registers (copy_simd-inl.h); false for other
// tiles, which go through the buffer.
template <class Word>
  requires std::is_same_v<Word, std::uint32_t> || std::is_same_v<Word, std::uint64_t>
bool transpose_tile(const Word* from, Word* to, std::int64_t xa, std::int64_t xb, std::int64_t ya, std::int64_t yb) {
  constexpr std::int64_t kTile = 64 / sizeof(Word);
  const auto run = [](const Word* s, std::int64_t ls, Word* d, std::int64_t ld) {
    if constexpr (sizeof(Word) == 4)
      HWY_DYNAMIC_DISPATCH(TransposeU32)(s, ls, d, ld, kTile, kTile);
    else
      HWY_DYNAMIC_DISPATCH(TransposeU64)(s, ls, d, ld, kTile, kTile);
  };
  if (xa == 1 && yb == 1) {  // x's rows run along b
    run(from, xb, to, ya);
    return true;
  }
  if (xb == 1 && ya == 1) {
    run(from, xa, to, yb);
    return true;
  }
  return false;
}

template <class Word>
void copy_tiled(const Word* x, Word* y, const StridedLayout<2>& layout, int a) {
  // One cache line of words per side: each line is then touched exactly
  // once, whole (measured on a 4096^2 f32 transpose: 16 beats 8, 24, 32, 64).
  constexpr std::int64_t kTile = 64 / sizeof(Word);
  const auto ua = std::size_t(a), ub = std::size_t(layout.rank - 1);
  const std::int64_t na = layout.dims[ua], nb = layout.dims[ub];
  const std::int64_t xa = layout.strides[0][ua], xb = layout.strides[0][ub];
  const std::int64_t ya = layout.strides[1][ua], yb = layout.strides[1][ub];
  const bool read_along_a = std::abs(xa) < std::abs(xb), write_along_a = std::abs(ya) < std::abs(yb);
  const std::int64_t bands = (na + kTile - 1) / kTile;
  const std::int64_t planes = layout.numel / (na * nb);
  // Work item = one band of kTile indices along a in one plane (one index
  // of every other axis); enough items per chunk for ~64K elements.
  const std::int64_t grain = std::max<std::int64_t>(1, (64 * 1024) / (kTile * nb));
  parallel_chunks(planes * bands, grain, [&](std::int64_t begin, std::int64_t end) {
    Word buf[kTile][kTile];
    for (std::int64_t item = begin; item < end; ++item) {
      std::int64_t plane = item / bands, ox = 0, oy = 0;
      for (int axis = layout.rank - 2; axis >= 0; --axis) {
        if (axis == a) continue;
        const auto u = std::size_t(axis);
        const std::int64_t i = plane % layout.dims[u];
        plane /= layout.dims[u];
        ox += i * layout.strides[0][u];
        oy += i * layout.strides[1][u];
      }
      const std::int64_t i0 = (item % bands) * kTile, ni = std::min(kTile, na - i0);
      for (std::int64_t j0 = 0; j0 < nb; j0 += kTile) {
        const std::int64_t nj = std::min(kTile, nb - j0);
        const Word* from = x + ox + i0 * xa + j0 * xb;
        Word* to = y + oy + i0 * ya + j0 * yb;
        if constexpr (std::is_same_v<Word, std::uint32_t> || std::is_same_v<Word, std::uint64_t>) {
          if (ni == kTile && nj == kTile && transpose_tile(from, to, xa, xb, ya, yb)) continue;
        }
        if (read_along_a) {
          for (std::int64_t j = 0; j < nj; ++j)
            for (std::int64_t i = 0; i < ni; ++i) buf[i][j] = from[i * xa + j * xb];
        } else {
          for (std::int64_t i = 0; i < ni; ++i)
            for (std::int64_t j = 0; j < nj; ++j) buf[i][j] = from[i * xa + j * xb];
        }
        if (write_along_a) {
          for (std::int64_t j = 0; j < nj; ++j)
            for (std::int64_t i = 0; i < ni; ++i) to[i * ya + j * yb] = buf[i][j];
        } else {
          for (std::int64_t i = 0; i < ni; ++i)
            for (std::int64_t j = 0; j < nj; ++j) to[i * ya + j * yb] = buf[i][j];
        }
      }
    }
  });
}

template <class Word>
void copy_kernel(const OpCall& call) {
  const auto args = plugin::unpack<plugin::args::core_copy_view>(call);
  const auto* x = element_ptr<const Word>(args.x);
  auto* y = element_ptr<Word>(args.y);
  const auto layout = make_layout<2>({&args.x.view, &args.y.view});
  const std::int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  const bool dense = layout.inner_unit();
  if (!dense) {
    if (const int a = tile_axis(layout); a >= 0) return copy_tiled(x, y, layout, a);
  }
  parallel_runs(layout, kChunkBytes / std::int64_t(sizeof(Word)),
                [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t) {
                  const Word* from = x + offsets[0];
                  Word* to = y + offsets[1];
                  if (dense) {
                    // Copying a view onto itself is a no-op, and memcpy must
                    // not see identical source and destination.
                    if (from != to) std::memcpy(to, from, std::size_t(count) * sizeof(Word));
                  } else {
                    for (std::int64_t j = 0; j < count; ++j) to[j * sy] = from[j * sx];
                  }
                });
}

}  // namespace

void register_copy(KernelTable& table) {
  using plugin::OpId;
  for (std::size_t i = 0; i < kDTypeCount; ++i) {
    const auto dtype = static_cast<DType>(i);
    switch (size_of(dtype)) {
      case 1:
        table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint8_t>);
        break;
      case 2:
        table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint16_t>);
        break;
      case 4:
        table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint32_t>);
        break;
      case 8:
        table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint64_t>);
        break;
      case 16:
        table.set(OpId::core_copy_view, dtype, &copy_kernel<Word128>);
        break;
      default:
        break;  // no such dtype today; a new size needs a new word type here
    }
  }
}

}  // namespace xylem::native
#endif  // HWY_ONCE
