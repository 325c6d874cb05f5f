// A row's largest element in vectors (Max) and the partial-vector load it
// uses (LoadPart), shared by softmax_simd-inl.h and attention_simd-inl.h.
// Templates only, so both files' foreach_target units may include it.

#if defined(XYLEM_NATIVE_ROW_MAX_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XYLEM_NATIVE_ROW_MAX_SIMD_INL_H_
#undef XYLEM_NATIVE_ROW_MAX_SIMD_INL_H_
#else
#define XYLEM_NATIVE_ROW_MAX_SIMD_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xylem::native::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Loads count (<= lanes) elements from p, the rest of the lanes `pad`.
template <class D>
HWY_INLINE hn::Vec<D> LoadPart(D d, const hn::TFromD<D>* p, std::size_t count, hn::TFromD<D> pad) {
  if (count == hn::Lanes(d)) return hn::LoadU(d, p);
  using C = hn::TFromD<D>;
  HWY_ALIGN C buf[HWY_MAX_BYTES / sizeof(C)];
  for (std::size_t k = 0; k < hn::Lanes(d); ++k) buf[k] = k < count ? p[k] : pad;
  return hn::Load(d, buf);
}

// The largest element, the shift for exp; it need not handle NaN: a NaN
// in the row makes its exp term NaN (or the shift NaN), hence the sum and
// every output NaN, whatever Max returned (x86's max may drop a lane's
// maximum after a NaN: terms of a too-small shift may be garbage, but times
// the NaN sum they are NaN too).
// Without a per-vector NaN check and with four independent maxima this
// memory-bound pass ran 1.15x faster on one core (AMD EPYC, AVX-512).
template <class C>
HWY_INLINE C Max(const C* HWY_RESTRICT x, std::size_t n) {
  const hn::ScalableTag<C> d;
  const std::size_t lanes = hn::Lanes(d);
  auto m0 = hn::Set(d, C(-HUGE_VAL)), m1 = m0, m2 = m0, m3 = m0;
  std::size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    m0 = hn::Max(m0, hn::LoadU(d, x + i));
    m1 = hn::Max(m1, hn::LoadU(d, x + i + lanes));
    m2 = hn::Max(m2, hn::LoadU(d, x + i + 2 * lanes));
    m3 = hn::Max(m3, hn::LoadU(d, x + i + 3 * lanes));
  }
  for (; i < n; i += lanes) m0 = hn::Max(m0, LoadPart(d, x + i, std::min(lanes, n - i), C(-HUGE_VAL)));
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(hn::Max(m0, m1), hn::Max(m2, m3))));
}

}  // namespace xylem::native::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target toggle
