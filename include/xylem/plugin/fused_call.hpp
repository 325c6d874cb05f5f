#pragma once
// A math::fused call as every framework's kernel first takes it apart: the
// program's words, the eight tensors in view order (x0..x4, then y0..y2),
// whether the program can run on the tensors present, and their views
// collapsed together (fused_source.hpp's FusedLayout).
#include <array>
#include <cstdint>
#include <string>

#include "xylem/plugin/args.hpp"
#include "xylem/plugin/fused_source.hpp"

namespace xylem::plugin::fused {

struct Call {
  Words words{};
  std::array<double, 8> reals{};
  std::array<const TensorArg*, kViews> tensors{};  // x0..x4, y0..y2; data == nullptr: absent
  std::array<const Layout*, kViews> views{};       // an absent tensor's is y0's
  std::string why;                                 // why the program cannot run; "" when it can
  FusedLayout layout;
  std::int64_t numel = 0;
};

// The Call of a's arguments; it points into a, which must outlive it.
[[nodiscard]] inline Call unpack_call(const args::math_fused<TensorArg>& a) {
  Call c;
  c.words = {a.w0, a.w1, a.w2, a.w3, a.w4, a.w5, a.w6, a.w7};
  c.reals = {a.r0, a.r1, a.r2, a.r3, a.r4, a.r5, a.r6, a.r7};
  c.tensors = {&a.x0, &a.x1, &a.x2, &a.x3, &a.x4, &a.y0, &a.y1, &a.y2};
  unsigned in_mask = 0, out_mask = 0;
  for (int k = 0; k < kViews; ++k) {
    const TensorArg& t = *c.tensors[std::size_t(k)];
    c.views[std::size_t(k)] = t.data ? &t.view : &a.y0.view;
    if (!t.data) continue;
    if (k < kMaxInputs)
      in_mask |= 1u << k;
    else
      out_mask |= 1u << (k - kMaxInputs);
  }
  c.why = validate(c.words, in_mask, out_mask);
  c.layout = collapse(c.views, &c.numel);
  return c;
}

}  // namespace xylem::plugin::fused
