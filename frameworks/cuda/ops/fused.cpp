// math::fused on CUDA: the program's kernel (xylem/plugin/fused_source.hpp,
// the text the OpenCL plugin compiles too) after a CUDA prelude and math.h,
// built by NVRTC (nvrtc_build.hpp) and kept in memory per (program, dtype,
// architecture).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "../check.hpp"
#include "fused_sources.hpp"
#include "kernels.hpp"
#include "nvrtc_build.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/args.hpp"
#include "xylem/plugin/fused_call.hpp"
#include "xylem/plugin/fused_source.hpp"

namespace xylem::cuda {
namespace {

namespace pf = plugin::fused;
using plugin::OpCall;
using plugin::OpId;

constexpr int kThreads = 256;
// Elements a thread of the dense kernel takes per step (loads in flight).
constexpr int kLanes = 8;
// 16-byte vectors of each view a thread of the vector kernel takes (XY_VU in
// its source; map.cuh's kMapUnroll), loaded before any is used. Half as many
// for 2-byte types: their values widen to f32 in registers (8 a vector).
constexpr int kVectorSteps = 4;

// Benchmarking knobs for the vector kernel (its source and cache key change
// with them): XYLEM_CUDA_FUSED_VECTOR_STEPS (1 to 8) in place of
// kVectorSteps, XYLEM_CUDA_FUSED_MIN_BLOCKS (1 to 8) as its
// __launch_bounds__ minimum of resident blocks per multiprocessor.
int env_int(const char* name, int fallback, int low, int high) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return std::clamp(std::atoi(v), low, high);
}
int vector_steps_setting() {
  static const int steps = env_int("XYLEM_CUDA_FUSED_VECTOR_STEPS", kVectorSteps, 1, 8);
  return steps;
}
int min_blocks_setting() {
  static const int blocks = env_int("XYLEM_CUDA_FUSED_MIN_BLOCKS", 0, 0, 8);
  return blocks;
}
std::int64_t vector_steps(std::size_t element_bytes) {
  const int steps = vector_steps_setting();
  return element_bytes == 2 ? std::max(1, steps / 2) : steps;
}

// XYLEM_CUDA_FUSED_VECTOR=0 keeps dense calls on xy_fused_dense and
// broadcasts on xy_fused (to compare).
bool disable_vector_kernel() {
  static const bool off = [] {
    const char* v = std::getenv("XYLEM_CUDA_FUSED_VECTOR");
    return v != nullptr && std::string_view(v) == "0";
  }();
  return off;
}

// The dialect of fused_source.hpp in CUDA C++, before math.h: a grid-stride
// loop, 64-bit indices; f16 through the PTX conversions (round to nearest
// even; no cuda_fp16.h, which NVRTC would need a path to), bf16 through
// math.h's bit conversions.
constexpr std::string_view kPrelude =
    "#define XY_GLOBAL\n#define XY_KERNEL extern \"C\" __global__ void\n"
    "typedef long long xy_long;\n#define XY_MULHI(a, b) __umulhi(a, b)\n"
    "#define XY_FUSED_PARAMS\n#define XY_FUSED_RANGE(i, end, n) const xy_long end = (n);\n"
    "#define XY_FUSED_LOOP(i, end) for (xy_long i = (xy_long)blockIdx.x * blockDim.x + threadIdx.x; i < end; "
    "i += (xy_long)gridDim.x * blockDim.x)\n";

std::string typed_prelude(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return "#define T double\n#define ST double\n#define XY_LD(p, i) ((p)[i])\n"
             "#define XY_ST(p, i, v) ((p)[i] = (v))\n"
             "#define XY_UNARY xy_unary_d\n#define XY_BINARY xy_binary_d\n";
    case DType::f16:
      return "#define T float\n#define ST unsigned short\n"
             "__device__ __forceinline__ float xy_ld_f16(unsigned short h) {\n"
             "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
             "__device__ __forceinline__ unsigned short xy_f16_of(float f) {\n"
             "  unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
             "#define XY_LD(p, i) xy_ld_f16((p)[i])\n#define XY_ST(p, i, v) ((p)[i] = xy_f16_of(v))\n"
             "#define XY_UNARY xy_unary_f\n#define XY_BINARY xy_binary_f\n";
    case DType::bf16:
      return "#define T float\n#define ST unsigned short\n"
             "#define XY_LD(p, i) __uint_as_float(xy_bf16_to_f32_bits((p)[i]))\n"
             "#define XY_ST(p, i, v) ((p)[i] = (unsigned short)xy_f32_bits_to_bf16(__float_as_uint(v)))\n"
             "#define XY_UNARY xy_unary_f\n#define XY_BINARY xy_binary_f\n";
    default:
      return "#define T float\n#define ST float\n#define XY_LD(p, i) ((p)[i])\n"
             "#define XY_ST(p, i, v) ((p)[i] = (v))\n"
             "#define XY_UNARY xy_unary_f\n#define XY_BINARY xy_binary_f\n";
  }
}

}  // namespace

std::string fused_prelude(DType dtype) {
  std::string source(kPrelude);
  source += sources::math_h;
  source += "\n";
  source += typed_prelude(dtype);
  return source;
}

namespace {

// What the dense and vector kernels share: which views the program uses,
// their signature, and each used view's offset at element i (one axis, stride
// 0 or 1: the strides s<t> read once at the kernel's start).
struct UsedViews {
  bool used[pf::kViews] = {};
  explicit UsedViews(const pf::Program& p) { pf::mark_used_views(p, used); }
  [[nodiscard]] std::string strides() const {
    std::string src;
    for (int t = 0; t < pf::kViews; ++t)
      if (used[t]) src += "  const xy_long s" + std::to_string(t) + " = l.strides[" + std::to_string(t) + "][0];\n";
    return src;
  }
  [[nodiscard]] std::string offsets() const {
    std::string src;
    for (int t = 0; t < pf::kViews; ++t)
      if (used[t])
        src += "    const xy_long o" + std::to_string(t) + " = l.offsets[" + std::to_string(t) + "] + i * s" +
               std::to_string(t) + ";\n";
    return src;
  }
};

// "XY_KERNEL <name>(x0..x4, y0..y2, xy_fused_layout l, xy_long n, T p0..p7) {".
std::string kernel_signature(const std::string& name) {
  std::string src = "XY_KERNEL " + name + "(";
  for (int t = 0; t < pf::kViews; ++t) {
    src += t < pf::kMaxInputs ? "XY_GLOBAL const ST* x" + std::to_string(t)
                              : "XY_GLOBAL ST* y" + std::to_string(t - pf::kMaxInputs);
    src += ", ";
  }
  src += "xy_fused_layout l, xy_long n";
  for (int r = 0; r < 2 * pf::kParamPairs; ++r) src += ", T p" + std::to_string(r);
  return src + ") {\n";
}

// A second kernel, xy_fused_dense, for the commonest call: one axis, every
// input dense or broadcast (stride 1 or 0), every output dense. Each thread
// takes kLanes elements a block's width apart per step (a warp's accesses
// stay coalesced, and kLanes loads an input are in flight where the
// generic kernel has one), then the last partial group element by element.
// The program's steps are fused_source.hpp's, on a kLanes-lane type.
std::string dense_kernel_source(const pf::Words& words) {
  const pf::Program p = pf::decode_program(words);
  const UsedViews views(p);
  const auto s = [](int v) { return std::to_string(v); };
  // The lane type and its steps: lane k of a view at offset o is element
  // o + k * B (B: the block's width).
  const std::string lanes = s(kLanes);
  std::string ctor_args, ctor_init, splat, load, unary, binary, store;
  for (int k = 0; k < kLanes; ++k) {
    const std::string c = k ? ", " : "", at = k ? "(o) + " + s(k) + " * B" : "(o)", v = "v[" + s(k) + "]";
    ctor_args += c + "T a" + s(k);
    ctor_init += c + "a" + s(k);
    splat += c + "x";
    load += c + "XY_LD(p, " + at + ")";
    unary += c + "XY_UNARY(c, (x)." + v + ", q0, q1)";
    binary += c + "XY_BINARY(c, (a)." + v + ", (b)." + v + ", q0, q1)";
    store += " XY_ST(p, " + at + ", (x)." + v + ");";
  }
  std::string src = "\nstruct xy_lanes {\n  T v[" + lanes + "];\n  __device__ explicit xy_lanes(T x) : v{" + splat +
                    "} {}\n  __device__ xy_lanes(" + ctor_args + ") : v{" + ctor_init + "} {}\n};\n";
  src += "#define XY_LANES_LOAD(p, o, s) ((s) ? xy_lanes(" + load + ") : xy_lanes(XY_LD(p, (o))))\n";
  src += "#define XY_LANES_UNARY(c, x, q0, q1) xy_lanes(" + unary + ")\n";
  src += "#define XY_LANES_BINARY(c, a, b, q0, q1) xy_lanes(" + binary + ")\n";
  src += "#define XY_LANES_STORE(p, o, x) do {" + store + " } while (0)\n\n";
  src += kernel_signature("xy_fused_dense");
  src += "  const xy_long B = blockDim.x, group = " + lanes + " * B, full = n / group * group;\n";
  src += views.strides();
  src += "  for (xy_long g = (xy_long)blockIdx.x * group; g < full; g += (xy_long)gridDim.x * group) {\n"
         "    const xy_long i = g + threadIdx.x;\n";
  src += views.offsets();
  src += pf::program_steps(p, "xy_lanes", "XY_LANES_LOAD", "XY_LANES_UNARY", "XY_LANES_BINARY", "XY_LANES_STORE", "    ");
  src += "  }\n  for (xy_long i = full + (xy_long)blockIdx.x * B + threadIdx.x; i < n; i += (xy_long)gridDim.x * B) {\n";
  src += views.offsets();
  src += pf::program_steps(p, "T", "XY_SLOAD", "XY_UNARY", "XY_BINARY", "XY_SSTORE", "    ");
  src += "  }\n}\n";
  return src;
}

// A third kernel, xy_fused_vec, for a dense call whose dense views all start
// on 16 bytes, shaped as the unfused map kernels (map.cuh, map_tiles) that
// run at 0.94 of copy: each block takes one tile and each thread XY_VU
// 16-byte vectors of every view, a block's width of vectors apart, loaded
// all before use, with the streaming cache hint (.cs), one instruction per
// vector. A broadcast input is read once and splat. The last, partial tile
// runs element by element.
std::string vector_kernel_source(const pf::Words& words) {
  const pf::Program p = pf::decode_program(words);
  const UsedViews views(p);
  const auto s = [](int v) { return std::to_string(v); };
  std::string src =
      "\n#define XY_VW ((int)(16 / sizeof(ST)))\n#define XY_VU ((int)(sizeof(ST) == 2 ? " + s(int(vector_steps(2))) +
      " : " + s(int(vector_steps(4))) + "))\n"
      "union __align__(16) xy_v16 { unsigned int w[4]; ST v[XY_VW]; };\n"
      "struct xy_vl {\n  T v[XY_VW * XY_VU];\n  __device__ xy_vl() {}\n"
      "  __device__ explicit xy_vl(T x) {\n#pragma unroll\n    for (int k = 0; k < XY_VW * XY_VU; ++k) v[k] = x;\n  }\n};\n"
      // volatile: the loads and stores keep the program's order (every load
      // before every store), which an output that is also an input needs.
      "__device__ __forceinline__ void xy_ldcs(xy_v16& q, const ST* p) {\n"
      "  asm volatile(\"ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
      "               : \"=r\"(q.w[0]), \"=r\"(q.w[1]), \"=r\"(q.w[2]), \"=r\"(q.w[3]) : \"l\"(p));\n}\n"
      "__device__ __forceinline__ void xy_stcs(ST* p, const xy_v16& q) {\n"
      "  asm volatile(\"st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};\"\n"
      "               :: \"l\"(p), \"r\"(q.w[0]), \"r\"(q.w[1]), \"r\"(q.w[2]), \"r\"(q.w[3]) : \"memory\");\n}\n"
      "__device__ __forceinline__ xy_vl xy_vl_load(const ST* p, xy_long o, xy_long s, xy_long B) {\n"
      "  if (!s) return xy_vl(XY_LD(p, o));\n  xy_vl r;\n#pragma unroll\n  for (int u = 0; u < XY_VU; ++u) {\n"
      "    xy_v16 q;\n    xy_ldcs(q, p + o + u * B * XY_VW);\n#pragma unroll\n"
      "    for (int k = 0; k < XY_VW; ++k) r.v[u * XY_VW + k] = XY_LD(q.v, k);\n  }\n  return r;\n}\n"
      "__device__ __forceinline__ void xy_vl_store(ST* p, xy_long o, const xy_vl& x, xy_long B) {\n"
      "#pragma unroll\n  for (int u = 0; u < XY_VU; ++u) {\n    xy_v16 q;\n#pragma unroll\n"
      "    for (int k = 0; k < XY_VW; ++k) XY_ST(q.v, k, x.v[u * XY_VW + k]);\n"
      "    xy_stcs(p + o + u * B * XY_VW, q);\n  }\n}\n"
      "__device__ __forceinline__ xy_vl xy_vl_unary(int c, const xy_vl& x, T q0, T q1) {\n  xy_vl r;\n"
      "#pragma unroll\n  for (int k = 0; k < XY_VW * XY_VU; ++k) r.v[k] = XY_UNARY(c, x.v[k], q0, q1);\n  return r;\n}\n"
      "__device__ __forceinline__ xy_vl xy_vl_binary(int c, const xy_vl& a, const xy_vl& b, T q0, T q1) {\n  xy_vl r;\n"
      "#pragma unroll\n  for (int k = 0; k < XY_VW * XY_VU; ++k) r.v[k] = XY_BINARY(c, a.v[k], b.v[k], q0, q1);\n"
      "  return r;\n}\n"
      "#define XY_VL_LOAD(p, o, s) xy_vl_load(p, o, s, B)\n#define XY_VL_STORE(p, o, x) xy_vl_store(p, o, x, B)\n\n";
  const int min_blocks = min_blocks_setting();
  src += kernel_signature(
      (min_blocks > 0 ? "__launch_bounds__(" + s(kThreads) + ", " + s(min_blocks) + ") " : std::string()) +
      "xy_fused_vec");
  src += "  const xy_long B = blockDim.x, tile = (xy_long)XY_VW * XY_VU * B, g = (xy_long)blockIdx.x * tile;\n";
  src += views.strides();
  src += "  if (g + tile <= n) {\n    const xy_long i = g + (xy_long)threadIdx.x * XY_VW;\n";
  src += views.offsets();
  src += pf::program_steps(p, "xy_vl", "XY_VL_LOAD", "xy_vl_unary", "xy_vl_binary", "XY_VL_STORE", "    ");
  src += "    return;\n  }\n  for (xy_long i = g + threadIdx.x; i < n; i += B) {\n";
  src += views.offsets();
  src += pf::program_steps(p, "T", "XY_SLOAD", "XY_UNARY", "XY_BINARY", "XY_SSTORE", "    ");
  src += "  }\n}\n";
  return src;
}

// A fourth kernel, xy_fused_vecb, for the broadcasts a network makes most (a
// bias over a linear layer's rows, over a convolution's channels): the
// vector kernel's tiles over a rank-2 or 3 layout whose innermost dim is a
// whole number of 16-byte vectors. Each view steps through that dim by 1
// (a vector per 16 bytes) or 0 (one element splat); each vector's offsets
// come from small_divisors_source's divisions. s<t> says how view t is read:
// 0 one element splat, 1 streamed vectors (.cs: read once), 2 vectors kept
// in cache (a view read again along an outer dim, as a bias over rows).
std::string broadcast_vector_kernel_source(const pf::Words& words) {
  const pf::Program p = pf::decode_program(words);
  const UsedViews views(p);
  const auto s = [](int v) { return std::to_string(v); };
  std::string src =
      "\n__device__ __forceinline__ void xy_ldv(xy_v16& q, const ST* p) {\n"
      "  const uint4 w = *reinterpret_cast<const uint4*>(p);\n  q.w[0] = w.x; q.w[1] = w.y; q.w[2] = w.z; q.w[3] = w.w;\n}\n"
      "__device__ __forceinline__ xy_vl xy_vb_load(const ST* p, const xy_long* o, xy_long s) {\n  xy_vl r;\n"
      "#pragma unroll\n  for (int u = 0; u < XY_VU; ++u) {\n    if (!s) {\n      const T x = XY_LD(p, o[u]);\n"
      "#pragma unroll\n      for (int k = 0; k < XY_VW; ++k) r.v[u * XY_VW + k] = x;\n      continue;\n    }\n"
      "    xy_v16 q;\n    if (s == 1) xy_ldcs(q, p + o[u]); else xy_ldv(q, p + o[u]);\n#pragma unroll\n"
      "    for (int k = 0; k < XY_VW; ++k) r.v[u * XY_VW + k] = XY_LD(q.v, k);\n  }\n  return r;\n}\n"
      "__device__ __forceinline__ void xy_vb_store(ST* p, const xy_long* o, const xy_vl& x) {\n"
      "#pragma unroll\n  for (int u = 0; u < XY_VU; ++u) {\n    xy_v16 q;\n#pragma unroll\n"
      "    for (int k = 0; k < XY_VW; ++k) XY_ST(q.v, k, x.v[u * XY_VW + k]);\n    xy_stcs(p + o[u], q);\n  }\n}\n"
      "#define XY_VB_LOAD(p, o, s) xy_vb_load(p, o, s)\n#define XY_VB_STORE(p, o, x) xy_vb_store(p, o, x)\n\n";
  src += kernel_signature("xy_fused_vecb");
  src += pf::small_divisors_source();
  for (int t = 0; t < pf::kViews; ++t) {
    if (!views.used[t]) continue;
    const std::string st = "l.strides[" + s(t) + "]";
    src += "  const xy_long s" + s(t) + " = " + st + "[l.rank - 1] == 0 ? 0 : " + st + "[0] == 0 || " + st +
           "[1] == 0 ? 2 : 1;\n";
  }
  src += "  const xy_long B = blockDim.x, tile = (xy_long)XY_VW * XY_VU * B, g = (xy_long)blockIdx.x * tile;\n";
  src += "  if (g + tile <= n) {\n";
  for (int t = 0; t < pf::kViews; ++t)
    if (views.used[t]) src += "    xy_long o" + s(t) + "[XY_VU];\n";
  src += "#pragma unroll\n    for (int u = 0; u < XY_VU; ++u) {\n"
         "      const unsigned int xy_u = (unsigned int)(g + ((xy_long)threadIdx.x + (xy_long)u * B) * XY_VW);\n";
  for (int t = 0; t < pf::kViews; ++t)
    if (views.used[t]) src += "      o" + s(t) + "[u] = l.offsets[" + s(t) + "];\n";
  src += pf::small_offsets_source(views.used, "[u]", "      ");
  src += "    }\n";
  src += pf::program_steps(p, "xy_vl", "XY_VB_LOAD", "xy_vl_unary", "xy_vl_binary", "XY_VB_STORE", "    ");
  src += "    return;\n  }\n  for (xy_long i = g + threadIdx.x; i < n; i += B) {\n"
         "    const unsigned int xy_u = (unsigned int)i;\n";
  for (int t = 0; t < pf::kViews; ++t)
    if (views.used[t]) src += "    xy_long o" + s(t) + " = l.offsets[" + s(t) + "];\n";
  src += pf::small_offsets_source(views.used, "", "    ");
  src += pf::program_steps(p, "T", "XY_SLOAD", "XY_UNARY", "XY_BINARY", "XY_SSTORE", "    ");
  src += "  }\n}\n";
  return src;
}

std::string program_source(const pf::Words& words, DType dtype) {
  std::string source = fused_prelude(dtype);
  source += pf::kernel_source(words);
  source += dense_kernel_source(words);
  source += vector_kernel_source(words);
  source += broadcast_vector_kernel_source(words);
  return source;
}

// A program's four kernels: any layout, xy_fused_dense, xy_fused_vec,
// xy_fused_vecb.
struct FusedKernels {
  cudaKernel_t any = nullptr, dense = nullptr, vec = nullptr, vecb = nullptr;
};

// Whether xy_fused_dense serves the call: one axis, inputs of stride 0 or
// 1, outputs of stride 1 (absent tensors do not count).
bool dense_call(const pf::Call& c) {
  if (c.layout.rank != 1) return false;
  for (int t = 0; t < pf::kViews; ++t) {
    if (c.tensors[std::size_t(t)]->data == nullptr) continue;
    const std::int64_t stride = c.layout.strides[t][0];
    if (stride != 1 && (t >= pf::kMaxInputs || stride != 0)) return false;
  }
  return true;
}

// Whether xy_fused_vec serves a dense call: every view of stride 1 starts
// on 16 bytes (its allocation's start plus its offset).
bool vector_call(const pf::Call& c, std::size_t element_bytes) {
  for (int t = 0; t < pf::kViews; ++t) {
    if (c.tensors[std::size_t(t)]->data == nullptr || c.layout.strides[t][0] == 0) continue;
    const auto start = reinterpret_cast<std::uintptr_t>(c.tensors[std::size_t(t)]->data) +
                       std::uintptr_t(c.layout.offsets[t]) * element_bytes;
    if (start % 16 != 0) return false;
  }
  return true;
}

// Whether xy_fused_vecb serves the call: rank 2 or 3, fewer than 2^31
// elements (small_divisors_source), an innermost dim of whole vectors;
// every view steps through it by 1 or 0 (outputs by 1), and each of stride
// 1 starts on 16 bytes and moves along the outer dims by whole vectors.
bool broadcast_vector_call(const pf::Call& c, std::size_t element_bytes) {
  const std::int64_t rank = c.layout.rank, width = std::int64_t(16 / element_bytes);
  if ((rank != 2 && rank != 3) || c.numel >= (std::int64_t{1} << 31) || c.layout.dims[rank - 1] % width != 0)
    return false;
  for (int t = 0; t < pf::kViews; ++t) {
    if (c.tensors[std::size_t(t)]->data == nullptr) continue;
    const std::int64_t* strides = c.layout.strides[t];
    const std::int64_t inner = strides[rank - 1];
    if (inner == 0 && t < pf::kMaxInputs) continue;
    if (inner != 1) return false;
    for (std::int64_t d = 0; d + 1 < rank; ++d)
      if (strides[d] % width != 0) return false;
    const auto start = reinterpret_cast<std::uintptr_t>(c.tensors[std::size_t(t)]->data) +
                       std::uintptr_t(c.layout.offsets[t]) * element_bytes;
    if (start % 16 != 0) return false;
  }
  return true;
}

// The kernels of (program, dtype) for `device`'s architecture: from memory,
// else nvrtc_kernels (the disk cache, else NVRTC).
FusedKernels kernels_for(const pf::Words& words, DType dtype, int device) {
  using Key = std::tuple<pf::Words, DType, std::string>;
  static std::mutex mutex;
  static std::map<Key, FusedKernels> kernels;
  std::lock_guard lock(mutex);
  const Key key{words, dtype, nvrtc_architecture(device)};
  if (const auto it = kernels.find(key); it != kernels.end()) return it->second;
  const std::string hex = pf::program_hex(words), dtype_name(name(dtype));
  const std::vector<cudaKernel_t> made =
      nvrtc_kernels(NvrtcBuild{.what = "math::fused",
                               .label = "math::fused " + hex + " " + dtype_name,
                               .source = program_source(words, dtype),
                               .key = "xylem-cuda-fused\nprogram=" + hex + "\ndtype=" + dtype_name,
                               .kernels = {"xy_fused", "xy_fused_dense", "xy_fused_vec", "xy_fused_vecb"}},
                    device);
  const FusedKernels found{made[0], made[1], made[2], made[3]};
  kernels.emplace(key, found);
  return found;
}

template <DType D>
void fused_kernel(const OpCall& call, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::math_fused>(call);
  const pf::Call c = pf::unpack_call(a);  // points into a
  if (!c.why.empty()) throw Error(ErrorCode::invalid_argument, "math::fused: " + c.why);
  if (c.numel == 0) return;
  const FusedKernels made = kernels_for(c.words, D, ctx.device);
  const bool dense = dense_call(c);
  const std::size_t element_bytes = size_of(D);
  const bool vector_dense = dense && vector_call(c, element_bytes) && !disable_vector_kernel();
  const bool vector_broadcast = !dense && !disable_vector_kernel() && broadcast_vector_call(c, element_bytes);
  const bool vector = vector_dense || vector_broadcast;
  const cudaKernel_t kernel = vector_broadcast ? made.vecb : vector ? made.vec : dense ? made.dense : made.any;
  pf::FusedLayout layout = c.layout;
  std::int64_t n = c.numel;

  // The arguments in the kernel's order: eight pointers (element 0 of each
  // allocation; the layout's offsets locate the views), the layout, n, and
  // the eight reals in the compute type.
  std::array<void*, pf::kViews> pointers{};
  for (std::size_t k = 0; k < pointers.size(); ++k) pointers[k] = c.tensors[k]->data;
  ProgramReals reals(c.reals, D);
  std::array<void*, pf::kViews + 2 + ProgramReals::size()> args{};
  std::size_t k = 0;
  for (void*& p : pointers) args[k++] = &p;
  args[k++] = &layout;
  args[k++] = &n;
  for (std::size_t r = 0; r < ProgramReals::size(); ++r) args[k++] = reals.arg(r);
  // Enough resident blocks to keep the memory system busy; each thread
  // then strides through the rest.
  const std::int64_t resident = std::int64_t(ctx.multiprocessors) * (2048 / kThreads);
  const std::int64_t per_block = vector  ? std::int64_t(16 / element_bytes) * vector_steps(element_bytes) * kThreads
                                 : dense ? kLanes * kThreads
                                         : kThreads;
  // The vector kernel takes one tile per block, the whole call in one grid
  // (as map.cuh's: 7% faster there than a wave of blocks looping).
  const auto blocks = static_cast<unsigned>(std::clamp<std::int64_t>(
      (n + per_block - 1) / per_block, 1, vector ? std::int64_t{1} << 30 : resident));
  XY_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(kThreads), args.data(), 0,
                           ctx.stream),
          ctx.device, "math::fused");
}

}  // namespace

void register_fused(KernelTable& table) {
  table.set(OpId::math_fused, DType::f16, &fused_kernel<DType::f16>);
  table.set(OpId::math_fused, DType::bf16, &fused_kernel<DType::bf16>);
  table.set(OpId::math_fused, DType::f32, &fused_kernel<DType::f32>);
  table.set(OpId::math_fused, DType::f64, &fused_kernel<DType::f64>);
}

}  // namespace xylem::cuda
