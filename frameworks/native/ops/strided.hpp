#pragma once
// Walking views of any strides in row-major logical order, split into
// chunks that oneTBB runs in parallel. Every native elementwise kernel
// (creation, copy, activation) is "for each run of elements, do a typed inner
// loop", so the index arithmetic lives here once.
//
// A run is a stretch of the innermost (collapsed) dimension: within it each
// tensor advances by a fixed stride, so the inner loop is a plain strided
// loop, or a SIMD/memcpy call when every stride is 1.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "xylem/layout.hpp"

namespace xylem::native {

// Dimensions shared by N views of the same dims, with size-1 dimensions
// dropped and neighbours merged where every view is dense across them. A
// contiguous view becomes rank 1 with stride 1, so the common case is one
// run per chunk.
template <std::size_t N>
struct StridedLayout {
  int rank = 1;
  std::array<std::int64_t, kMaxRank> dims{};
  std::array<std::array<std::int64_t, kMaxRank>, N> strides{};
  std::int64_t numel = 0;

  [[nodiscard]] std::int64_t inner_stride(std::size_t t) const noexcept { return strides[t][rank - 1]; }
  // Every view is dense in the innermost dimension: runs may use SIMD/memcpy.
  [[nodiscard]] bool inner_unit() const noexcept {
    for (std::size_t t = 0; t < N; ++t)
      if (strides[t][rank - 1] != 1) return false;
    return true;
  }
};

// The views must have the same dims (the core checks); strides may differ.
template <std::size_t N>
[[nodiscard]] StridedLayout<N> make_layout(const std::array<const Layout*, N>& views) noexcept {
  StridedLayout<N> out;
  const Layout& first = *views[0];
  out.numel = 1;
  for (std::int64_t d : first.dims()) out.numel *= d;
  out.rank = 0;
  for (int axis = 0; axis < first.rank(); ++axis) {
    const std::int64_t size = first.dims()[std::size_t(axis)];
    if (size == 1) continue;  // its stride never matters
    if (out.rank > 0) {
      // Merge into the previous kept dimension when, for every view, a step
      // there equals `size` steps here (dense across the boundary).
      bool mergeable = true;
      for (std::size_t t = 0; t < N; ++t)
        mergeable = mergeable && out.strides[t][out.rank - 1] == views[t]->strides()[std::size_t(axis)] * size;
      if (mergeable) {
        out.dims[out.rank - 1] *= size;
        for (std::size_t t = 0; t < N; ++t) out.strides[t][out.rank - 1] = views[t]->strides()[std::size_t(axis)];
        continue;
      }
    }
    out.dims[out.rank] = size;
    for (std::size_t t = 0; t < N; ++t) out.strides[t][out.rank] = views[t]->strides()[std::size_t(axis)];
    ++out.rank;
  }
  if (out.rank == 0) {  // a scalar or all-ones dims: one element, unit stride
    out.rank = 1;
    out.dims[0] = out.numel == 0 ? 0 : 1;
    for (std::size_t t = 0; t < N; ++t) out.strides[t][0] = 1;
  }
  return out;
}

// Calls run(offsets, count, first) for each run covering logical elements
// [begin, end): offsets[t] is the element offset of the run's first element
// from view t's element 0, `first` its row-major logical index.
template <std::size_t N, class Run>
void for_each_run(const StridedLayout<N>& layout, std::int64_t begin, std::int64_t end, Run&& run) {
  const int r = layout.rank;
  std::array<std::int64_t, kMaxRank> index{};
  std::array<std::int64_t, N> offsets{};
  std::int64_t rest = begin;
  for (int axis = r - 1; axis >= 0; --axis) {
    index[std::size_t(axis)] = rest % layout.dims[std::size_t(axis)];
    rest /= layout.dims[std::size_t(axis)];
    for (std::size_t t = 0; t < N; ++t) offsets[t] += index[std::size_t(axis)] * layout.strides[t][std::size_t(axis)];
  }
  const std::int64_t inner = layout.dims[std::size_t(r - 1)];
  std::int64_t k = begin;
  while (k < end) {
    const std::int64_t count = std::min(inner - index[std::size_t(r - 1)], end - k);
    run(offsets, count, k);
    k += count;
    if (k >= end) break;
    // The run ended a row: go back to its start, then carry into outer axes.
    for (std::size_t t = 0; t < N; ++t) offsets[t] -= index[std::size_t(r - 1)] * layout.strides[t][std::size_t(r - 1)];
    index[std::size_t(r - 1)] = 0;
    for (int axis = r - 2; axis >= 0; --axis) {
      const auto a = std::size_t(axis);
      ++index[a];
      for (std::size_t t = 0; t < N; ++t) offsets[t] += layout.strides[t][a];
      if (index[a] < layout.dims[a]) break;
      for (std::size_t t = 0; t < N; ++t) offsets[t] -= index[a] * layout.strides[t][a];
      index[a] = 0;
    }
  }
}

// Runs body(begin, end) over [0, n) in chunks of about `grain` elements.
// Work that fits one chunk stays on the calling thread without entering
// oneTBB at all: small ops then cost no more than their loop.
template <class Body>
void parallel_chunks(std::int64_t n, std::int64_t grain, Body&& body) {
  if (n <= 0) return;
  if (n <= grain) {
    body(std::int64_t{0}, n);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, std::size_t(grain)),
                    [&](const tbb::blocked_range<std::int64_t>& range) { body(range.begin(), range.end()); });
}

// The usual combination: walk the views' layout in parallel chunks.
template <std::size_t N, class Run>
void parallel_runs(const StridedLayout<N>& layout, std::int64_t grain, Run&& run) {
  parallel_chunks(layout.numel, grain,
                  [&](std::int64_t begin, std::int64_t end) { for_each_run(layout, begin, end, run); });
}

}  // namespace xylem::native
