#pragma once
// The kernel source of a math::fused program (fused_program.hpp), written
// once for every framework that compiles at run time: the OpenCL plugin
// compiles it as OpenCL C, the CUDA plugin through NVRTC. The text calls
// math.h's formulas and leaves the dialect to a prelude the framework puts
// before it, which defines:
//   T, ST            the compute and storage types
//   XY_GLOBAL        the address space of tensor pointers ("global", "")
//   XY_KERNEL        what starts a kernel's definition
//   XY_FUSED_PARAMS  parameters the loop needs after the kernel's own ("",
//                    or ", int stream, long per")
//   XY_FUSED_RANGE(i, end, n), XY_FUSED_LOOP(i, end)  this thread's share of
//                    the elements: set up, then the loop header over element i
//   XY_FUSED_VECTOR  (optional) a vector path first, where every view is
//                    dense or broadcast: VT, VW, XY_VLOAD(p, o, s),
//                    XY_VUNARY, XY_VBINARY, XY_VSTORE(p, o, v) (`streamed`
//                    says whether its outputs may be streamed), XY_STREAM_OK(p)
//   XY_LD(p, i), XY_ST(p, i, v)  element i of p as T, and a store of T v
//   XY_MULHI(a, b)   the high 32 bits of the product of two unsigned ints
//   XY_UNARY(c, x, p0, p1), XY_BINARY(c, a, b, p0, p1)  math.h's xy_unary_f /
//                    xy_binary_f, or their _d forms, for T
//   xy_long          a 64-bit signed integer
// The kernel, xy_fused, takes the eight tensors (x0..x4, y0..y2; an absent
// one is a null pointer), the collapsed layout (FusedLayout), the element
// count and the eight parameter reals in T.
#include <array>
#include <cstdint>
#include <string>

#include "xylem/layout.hpp"
#include "xylem/plugin/fused_program.hpp"

namespace xylem::plugin::fused {

inline constexpr int kViews = kMaxInputs + kMaxOutputs;  // x0..x4, then y0..y2

// The views of one call over their common dims, collapsed: dims of one
// element dropped, neighbours merged where every view steps through them
// as one. Mirrors xy_fused_layout of the generated source (all 64-bit).
struct FusedLayout {
  std::int64_t rank = 1;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t strides[kViews][kMaxRank] = {};
  std::int64_t offsets[kViews] = {};
};

// views[k] of one dims each (an absent tensor may repeat another's view).
[[nodiscard]] inline FusedLayout collapse(const std::array<const Layout*, kViews>& views, std::int64_t* numel) {
  FusedLayout out;
  const Layout& first = *views[0];
  std::int64_t n = 1;
  for (std::int64_t d : first.dims()) n *= d;
  *numel = n;
  for (int t = 0; t < kViews; ++t) out.offsets[t] = views[std::size_t(t)]->offset();
  int rank = 0;
  for (int axis = 0; axis < first.rank(); ++axis) {
    const std::int64_t size = first.dims()[std::size_t(axis)];
    if (size == 1) continue;
    bool merge = rank > 0;
    for (int t = 0; t < kViews && merge; ++t)
      merge = out.strides[t][rank - 1] == views[std::size_t(t)]->strides()[std::size_t(axis)] * size;
    if (merge) {
      out.dims[rank - 1] *= size;
      for (int t = 0; t < kViews; ++t) out.strides[t][rank - 1] = views[std::size_t(t)]->strides()[std::size_t(axis)];
      continue;
    }
    out.dims[rank] = size;
    for (int t = 0; t < kViews; ++t) out.strides[t][rank] = views[std::size_t(t)]->strides()[std::size_t(axis)];
    ++rank;
  }
  if (rank == 0) {  // one element (or none): rank 1, any stride
    out.dims[0] = n == 0 ? 0 : 1;
    rank = 1;
  }
  out.rank = rank;
  return out;
}

// The program's instructions on registers r0..r7 of type v: LOAD(x, o, s)
// reads input x at offset o (stride s), STORE(y, o, v) writes an output.
[[nodiscard]] inline std::string program_steps(const Program& p, const std::string& v, const std::string& load,
                                               const std::string& unary, const std::string& binary,
                                               const std::string& store, const std::string& indent) {
  const auto s = [](int k) { return std::to_string(k); };
  std::string out = indent + v + " r0 = (" + v + ")(0)";
  for (int r = 1; r < kRegisters; ++r) out += ", r" + s(r) + " = (" + v + ")(0)";
  out += ";\n";
  for (int k = 0; k < p.size; ++k) {
    const Instruction& in = p.code[std::size_t(k)];
    const std::string params = "p" + s(2 * in.params) + ", p" + s(2 * in.params + 1);
    switch (in.kind) {
      case Kind::load:
        out += indent + "r" + s(in.dst) + " = " + load + "(x" + s(in.a) + ", o" + s(in.a) + ", s" + s(in.a) + ");\n";
        break;
      case Kind::unary:
        out += indent + "r" + s(in.dst) + " = " + unary + "(" + s(in.code) + ", r" + s(in.a) + ", " + params + ");\n";
        break;
      case Kind::binary:
        out += indent + "r" + s(in.dst) + " = " + binary + "(" + s(in.code) + ", r" + s(in.a) + ", r" + s(in.b) + ", " +
               params + ");\n";
        break;
      case Kind::store:
        out += indent + store + "(y" + s(in.dst) + ", o" + s(kMaxInputs + in.dst) + ", r" + s(in.a) + ");\n";
        break;
      default:
        break;
    }
  }
  return out;
}

// Which views (x0..x4, y0..y2) the program loads or stores.
inline void mark_used_views(const Program& p, bool (&used)[kViews]) {
  for (int k = 0; k < p.size; ++k) {
    const Instruction& in = p.code[std::size_t(k)];
    if (in.kind == Kind::load) used[in.a] = true;
    if (in.kind == Kind::store) used[kMaxInputs + in.dst] = true;
  }
}

// Ranks 2 and 3 (a broadcast bias over rows, or over a convolution's
// channels) where every index fits 31 bits: the innermost dims divide by a
// multiply and a shift (Granlund and Montgomery), worked out once per
// thread, instead of the 64-bit divisions of the general path (bias and
// ReLU over a bf16 [16384, 4096] took twice as long fused as unfused).
// Declares xy_small (whether they apply), the divisors xy_d0, xy_d1 and
// their shifts and multipliers.
[[nodiscard]] inline std::string small_divisors_source() {
  return "  const int xy_small = n < 2147483648L && (l.rank == 2 || l.rank == 3);\n"
         "  const unsigned int xy_d0 = xy_small ? (unsigned int)l.dims[l.rank - 1] : 1;\n"
         "  const unsigned int xy_d1 = xy_small && l.rank == 3 ? (unsigned int)l.dims[1] : 1;\n"
         "  unsigned int xy_h0 = 0, xy_h1 = 0;\n"
         "  while (xy_h0 < 32 && ((unsigned long)1 << xy_h0) < xy_d0) ++xy_h0;\n"
         "  while (xy_h1 < 32 && ((unsigned long)1 << xy_h1) < xy_d1) ++xy_h1;\n"
         "  const unsigned long xy_two32 = (unsigned long)1 << 32;\n"
         "  const unsigned int xy_m0 =\n"
         "      (unsigned int)(xy_two32 * (((unsigned long)1 << xy_h0) - xy_d0) / xy_d0 + 1);\n"
         "  const unsigned int xy_m1 =\n"
         "      (unsigned int)(xy_two32 * (((unsigned long)1 << xy_h1) - xy_d1) / xy_d1 + 1);\n";
}

// Adds to o<t><suffix> of every used view the offset of element xy_u (an
// unsigned int in scope) of a rank-2 or 3 layout, by small_divisors_source's
// divisions.
[[nodiscard]] inline std::string small_offsets_source(const bool (&used)[kViews], const std::string& suffix,
                                                      const std::string& indent) {
  const auto s = [](int v) { return std::to_string(v); };
  std::string src = indent + "const unsigned int xy_q = (XY_MULHI(xy_u, xy_m0) + xy_u) >> xy_h0;\n" +  // xy_u / xy_d0
                    indent + "const unsigned int xy_c2 = xy_u - xy_q * xy_d0;\n" +
                    // xy_q / xy_d1 (xy_q itself at rank 2, where xy_d1 is 1)
                    indent + "const unsigned int xy_c0 = (XY_MULHI(xy_q, xy_m1) + xy_q) >> xy_h1;\n" + indent +
                    "const unsigned int xy_c1 = xy_q - xy_c0 * xy_d1;\n" + indent + "if (l.rank == 2) {\n";
  for (int t = 0; t < kViews; ++t)
    if (used[t])
      src += indent + "  o" + s(t) + suffix + " += xy_q * l.strides[" + s(t) + "][0] + xy_c2 * l.strides[" + s(t) +
             "][1];\n";
  src += indent + "} else {\n";
  for (int t = 0; t < kViews; ++t)
    if (used[t])
      src += indent + "  o" + s(t) + suffix + " += xy_c0 * l.strides[" + s(t) + "][0] + xy_c1 * l.strides[" + s(t) +
             "][1] + xy_c2 * l.strides[" + s(t) + "][2];\n";
  return src + indent + "}\n";
}

// The kernel's text for a valid program (validate() said "").
[[nodiscard]] inline std::string kernel_source(const Words& words) {
  const Program p = decode_program(words);
  bool used[kViews] = {};
  mark_used_views(p, used);
  const auto s = [](int v) { return std::to_string(v); };
  std::string src =
      "typedef struct {\n  xy_long rank;\n  xy_long dims[8];\n  xy_long strides[8][8];\n  xy_long offsets[8];\n"
      "} xy_fused_layout;\n#define XY_SLOAD(p, o, s) XY_LD(p, o)\n#define XY_SSTORE(p, o, v) XY_ST(p, o, v)\n\n"
      "XY_KERNEL xy_fused(";
  for (int t = 0; t < kViews; ++t) {
    src += t < kMaxInputs ? "XY_GLOBAL const ST* x" + s(t) : "XY_GLOBAL ST* y" + s(t - kMaxInputs);
    src += ", ";
  }
  src += "xy_fused_layout l, xy_long n";
  for (int r = 0; r < 2 * kParamPairs; ++r) src += ", T p" + s(r);
  src += " XY_FUSED_PARAMS) {\n";
  for (int t = 0; t < kViews; ++t)
    if (used[t]) src += "  const xy_long s" + s(t) + " = l.strides[" + s(t) + "][0];\n";
  src += small_divisors_source();
  src += "  XY_FUSED_RANGE(i, end, n)\n#ifdef XY_FUSED_VECTOR\n";
  // One axis, every input dense or broadcast, every output dense.
  src += "  if (l.rank == 1";
  for (int t = 0; t < kViews; ++t) {
    if (!used[t]) continue;
    src += t < kMaxInputs ? " && (s" + s(t) + " == 0 || s" + s(t) + " == 1)" : " && s" + s(t) + " == 1";
  }
  src += ") {\n    const int streamed = 1";
  for (int t = kMaxInputs; t < kViews; ++t)
    if (used[t]) src += " && XY_STREAM_OK(y" + s(t - kMaxInputs) + " + l.offsets[" + s(t) + "] + i)";
  src += ";\n    for (; i + VW <= end; i += VW) {\n";
  for (int t = 0; t < kViews; ++t)
    if (used[t]) src += "      const xy_long o" + s(t) + " = l.offsets[" + s(t) + "] + i * s" + s(t) + ";\n";
  src += program_steps(p, "VT", "XY_VLOAD", "XY_VUNARY", "XY_VBINARY", "XY_VSTORE", "      ");
  src += "    }\n  }\n";
  // Two axes whose inner one every input steps through by 1 or 0 and
  // every output by 1 (a bias over rows): the chunk row by row, vectors
  // along each row and the row's last elements one by one, a division per
  // row, not per element (PoCL: tanh(x * m), m a row over [4096, 4096],
  // ran 7x slower fused than as its two ops).
  src += "  if (l.rank == 2";
  for (int t = 0; t < kViews; ++t) {
    if (!used[t]) continue;
    const std::string inner = "l.strides[" + s(t) + "][1]";
    src += t < kMaxInputs ? " && (" + inner + " == 0 || " + inner + " == 1)" : " && " + inner + " == 1";
  }
  src += ") {\n    const int streamed = 0;\n    while (i < end) {\n"
         "      const xy_long row = i / l.dims[1];\n"
         "      const xy_long row_end = min(end, (row + 1) * l.dims[1]);\n";
  const auto row_offsets = [&](const std::string& indent) {
    std::string out;
    for (int t = 0; t < kViews; ++t)
      if (used[t])
        out += indent + "const xy_long o" + s(t) + " = l.offsets[" + s(t) + "] + row * l.strides[" + s(t) +
               "][0] + (i - row * l.dims[1]) * l.strides[" + s(t) + "][1];\n";
    return out;
  };
  src += "      for (; i + VW <= row_end; i += VW) {\n";
  // The vector loads step along the inner axis: its strides, in a block
  // that shadows the kernel's s0.. (axis 0's, the one-axis path's).
  for (int t = 0; t < kMaxInputs; ++t)
    if (used[t]) src += "        const xy_long s" + s(t) + " = l.strides[" + s(t) + "][1];\n";
  src += row_offsets("        ");
  src += program_steps(p, "VT", "XY_VLOAD", "XY_VUNARY", "XY_VBINARY", "XY_VSTORE", "        ");
  src += "      }\n      for (; i < row_end; ++i) {\n";
  src += row_offsets("        ");
  src += program_steps(p, "T", "XY_SLOAD", "XY_UNARY", "XY_BINARY", "XY_SSTORE", "        ");
  src += "      }\n    }\n  }\n#endif\n  XY_FUSED_LOOP(i, end) {\n";
  // Offsets of the used views: one multiply when the views collapsed to
  // one axis (every contiguous call), else the row-major index taken apart.
  for (int t = 0; t < kViews; ++t)
    if (used[t]) src += "    xy_long o" + s(t) + " = l.offsets[" + s(t) + "];\n";
  src += "    if (l.rank == 1) {\n";
  for (int t = 0; t < kViews; ++t)
    if (used[t]) src += "      o" + s(t) + " += i * s" + s(t) + ";\n";
  src += "    } else if (xy_small) {\n"
         "      const unsigned int xy_u = (unsigned int)i;\n";
  src += small_offsets_source(used, "", "      ");
  src += "    } else {\n      xy_long rest = i;\n      for (int d = (int)l.rank - 1; d >= 0; --d) {\n"
         "        const xy_long c = rest % l.dims[d];\n        rest /= l.dims[d];\n";
  for (int t = 0; t < kViews; ++t)
    if (used[t]) src += "        o" + s(t) + " += c * l.strides[" + s(t) + "][d];\n";
  src += "      }\n    }\n";
  src += program_steps(p, "T", "XY_SLOAD", "XY_UNARY", "XY_BINARY", "XY_SSTORE", "    ");
  src += "  }\n}\n";
  return src;
}

// The program as hexadecimal text: names and cache keys.
[[nodiscard]] inline std::string program_hex(const Words& words) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (std::int64_t w : words)
    for (int shift = 60; shift >= 0; shift -= 4) out += digits[(std::uint64_t(w) >> shift) & 15];
  while (out.size() > 16 && out.compare(out.size() - 16, 16, std::string(16, '0')) == 0) out.resize(out.size() - 16);
  return out;
}

}  // namespace xylem::plugin::fused
