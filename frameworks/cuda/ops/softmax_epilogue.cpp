// CUDA nn::softmax_epilogue: a softmax along dense rows and its tail (the
// math::fused program whose input 0 is the softmax) as one kernel, which
// NVRTC compiles per (program, dtype, row shape). Each row is read once into
// registers, as softmax.cu's softmax_rows_in_registers holds it, and only
// the tail's outputs are written: tanh(softmax(x) * m) moves 2 bytes per
// element of x where the softmax then the fused tail moved 4.
//
// The same bits as those two kernels: the kernel below is that softmax's
// text (the same lanes per row, softmax_rows.hpp; the same shuffles and
// order of sums), and the softmax is rounded to the storage type before
// the tail reads it, as the tail read it back from memory. So a chain that
// runs one call at a time (the first time a program is seen) and one that
// runs fused agree.
//
// Everything else runs the softmax kernel into y0, then the fused tail over
// it (xylem/plugin/epilogue.hpp): a softmax across columns, rows that are
// not dense and 16-byte aligned or longer than 128 KiB, and tails whose
// views are not rows of [outer, r] read by 16-byte packs (or one value a
// row, for inputs).
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "../check.hpp"
#include "frameworks/cuda/ops/fused_sources.hpp"
#include "frameworks/cuda/ops/kernels.hpp"
#include "frameworks/cuda/ops/nvrtc_build.hpp"
#include "frameworks/cuda/ops/softmax_rows.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/epilogue.hpp"
#include "xylem/plugin/fused_source.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;
namespace pe = plugin::epilogue;
namespace pf = plugin::fused;

constexpr const char* kWhat = "nn::softmax_epilogue";
// The tail's views besides its input 0: x1, x2, x3, then y0, y1, y2.
constexpr int kTailViews = 6;

// A view of the tail as rows of the softmax: element (i, j) of [outer, r] at
// offset + i*row + j*col. Mirrors xy_sm_view in the kernel's text.
struct RowView {
  std::int64_t offset = 0, row = 0, col = 0;
};
struct KernelArgs {
  std::int64_t outer = 0, r = 0, x_row = 0;
  RowView views[kTailViews];
};

// The kernel after fused_prelude: row_all_reduce and the loop of
// softmax_rows_in_registers (softmax.cu) with the program's steps at each
// element in place of the store.
std::string kernel_source(const pf::Words& words, DType dtype, RowShape shape) {
  const pf::Program p = pf::decode_program(words);
  bool used[pf::kViews] = {};
  pf::mark_used_views(p, used);
  const auto s = [](int v) { return std::to_string(v); };
  std::string src = fused_prelude(dtype);
  src += "#define XY_SM_W " + s(shape.width) + "\n#define XY_SM_P " + s(shape.packs) + "\n";
  src += dtype == DType::f64 ? "#define XY_SM_NEG_INF (-__longlong_as_double(0x7ff0000000000000LL))\n"
                             : "#define XY_SM_NEG_INF (-__int_as_float(0x7f800000))\n";
  src +=
      "#define XY_VW " + s(int(16 / size_of(dtype))) + "\n"
      "union __align__(16) xy_v16 { unsigned int w[4]; ST v[XY_VW]; };\n"
      "struct xy_sm_view { xy_long offset, row, col; };\n"
      "struct xy_sm_args { xy_long outer, r, x_row; xy_sm_view v[" + s(kTailViews) + "]; };\n"
      "__device__ __forceinline__ void xy_ldcs(xy_v16& q, const ST* p) {\n"
      "  asm volatile(\"ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\"\n"
      "               : \"=r\"(q.w[0]), \"=r\"(q.w[1]), \"=r\"(q.w[2]), \"=r\"(q.w[3]) : \"l\"(p));\n}\n"
      "__device__ __forceinline__ void xy_stcs(ST* p, const xy_v16& q) {\n"
      "  asm volatile(\"st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};\"\n"
      "               :: \"l\"(p), \"r\"(q.w[0]), \"r\"(q.w[1]), \"r\"(q.w[2]), \"r\"(q.w[3]) : \"memory\");\n}\n"
      "__device__ __forceinline__ T xy_nan_max(T a, T b) { return (a > b || a != a) ? a : b; }\n"
      "template <bool Max>\n__device__ T xy_row_all_reduce(T v) {\n"
      "  const int w = XY_SM_W < 32 ? XY_SM_W : 32;\n"
      "  for (int o = w / 2; o > 0; o /= 2) {\n"
      "    const T other = __shfl_xor_sync(0xffffffffu, v, o);\n"
      "    v = Max ? xy_nan_max(v, other) : v + other;\n  }\n"
      "  if (XY_SM_W <= 32) return v;\n"
      "  __shared__ T partial[32];\n"
      "  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = XY_SM_W / 32;\n"
      "  if (lane == 0) partial[warp] = v;\n  __syncthreads();\n  v = partial[0];\n"
      "  for (int k = 1; k < warps; ++k) v = Max ? xy_nan_max(v, partial[k]) : v + partial[k];\n"
      "  __syncthreads();\n  return v;\n}\n"
      // An input's pack at element j0 of row `row`: 16 bytes, or its one
      // value of the row splat.
      "__device__ __forceinline__ void xy_sm_in(T* out, const ST* p, xy_sm_view v, xy_long row, xy_long j0) {\n"
      "  const xy_long o = v.offset + row * v.row;\n"
      "  if (v.col == 0) {\n    const T x = XY_LD(p, o);\n#pragma unroll\n"
      "    for (int e = 0; e < XY_VW; ++e) out[e] = x;\n    return;\n  }\n"
      "  xy_v16 q;\n  const uint4 w = *reinterpret_cast<const uint4*>(p + o + j0);\n"
      "  q.w[0] = w.x; q.w[1] = w.y; q.w[2] = w.z; q.w[3] = w.w;\n#pragma unroll\n"
      "  for (int e = 0; e < XY_VW; ++e) out[e] = XY_LD(q.v, e);\n}\n"
      "__device__ __forceinline__ void xy_sm_out(ST* p, xy_sm_view v, xy_long row, xy_long j0, const T* x) {\n"
      "  xy_v16 q;\n#pragma unroll\n  for (int e = 0; e < XY_VW; ++e) XY_ST(q.v, e, x[e]);\n"
      "  xy_stcs(p + v.offset + row * v.row + j0, q);\n}\n"
      "#define XY_SM_LOAD(x, o, s) (x##_p[e])\n#define XY_SM_STORE(y, o, v) (y##_p[e] = (v))\n\n";
  src += "extern \"C\" __global__ void __launch_bounds__(" + s(shape.threads()) +
         ") xy_softmax_tail(const ST* x, const ST* x1, const ST* x2, const ST* x3, ST* y0, ST* y1, ST* y2, "
         "xy_sm_args a, int log_softmax";
  for (int r = 0; r < 2 * pf::kParamPairs; ++r) src += ", T p" + s(r);
  src +=
      ") {\n"
      "  const int lane = threadIdx.x % XY_SM_W;\n"
      "  const xy_long row = (xy_long)blockIdx.x * (blockDim.x / XY_SM_W) + threadIdx.x / XY_SM_W;\n"
      "  const bool valid = row < a.outer;  /* a block's rows share barriers: no early return */\n"
      "  const xy_long packs = a.r / XY_VW;\n"
      "  const ST* xr = x + (valid ? row : 0) * a.x_row;\n"
      "  xy_v16 v[XY_SM_P];\n#pragma unroll\n"
      "  for (int k = 0; k < XY_SM_P; ++k) {\n"
      "    const xy_long q = lane + (xy_long)k * XY_SM_W;\n"
      "    if (valid && q < packs) xy_ldcs(v[k], xr + q * XY_VW);\n  }\n"
      "  T m = XY_SM_NEG_INF;\n#pragma unroll\n"
      "  for (int k = 0; k < XY_SM_P; ++k)\n"
      "    if (valid && lane + (xy_long)k * XY_SM_W < packs)\n#pragma unroll\n"
      "      for (int e = 0; e < XY_VW; ++e) m = xy_nan_max(m, XY_LD(v[k].v, e));\n"
      "  m = xy_row_all_reduce<true>(m);\n"
      // Where registers allow (16 values a thread, as the 256-thread
      // shapes of f32 and bf16 rows up to 16 KiB have), each exponential is
      // kept for the output: the softmax kernel computes it again there,
      // the same value, and the tail leaves less time for it.
      "#define XY_SM_KEEP (XY_SM_P * XY_VW <= 16 && XY_SM_W <= 256)\n"
      "#if XY_SM_KEEP\n#define XY_SM_EXP(k, e, t) ex[k][e]\n#else\n#define XY_SM_EXP(k, e, t) exp(t)\n#endif\n"
      "  T s = (T)0;\n"
      "#if XY_SM_KEEP\n  T ex[XY_SM_P][XY_VW];\n#endif\n#pragma unroll\n"
      "  for (int k = 0; k < XY_SM_P; ++k)\n"
      "    if (valid && lane + (xy_long)k * XY_SM_W < packs)\n#pragma unroll\n"
      "      for (int e = 0; e < XY_VW; ++e) {\n"
      "        const T xe = exp(XY_LD(v[k].v, e) - m);\n"
      "#if XY_SM_KEEP\n        ex[k][e] = xe;\n#endif\n"
      "        s += xe;\n      }\n"
      "  s = xy_row_all_reduce<false>(s);\n"
      "  if (!valid) return;\n"
      "  const T log_s = log(s), scale = (T)1 / s;\n#pragma unroll\n"
      "  for (int k = 0; k < XY_SM_P; ++k) {\n"
      "    const xy_long q = lane + (xy_long)k * XY_SM_W;\n"
      "    if (q >= packs) continue;\n"
      "    const xy_long j0 = q * XY_VW;\n"
      "    T x0_p[XY_VW];\n#pragma unroll\n"
      "    for (int e = 0; e < XY_VW; ++e) {\n"
      "      const T t = XY_LD(v[k].v, e) - m;\n"
      "      ST rounded[1];\n"
      "      XY_ST(rounded, 0, log_softmax ? t - log_s : XY_SM_EXP(k, e, t) * scale);\n"
      "      x0_p[e] = XY_LD(rounded, 0);\n    }\n";
  for (int t = 1; t < pf::kMaxInputs; ++t)
    if (used[t])
      src += "    T x" + s(t) + "_p[XY_VW];\n    xy_sm_in(x" + s(t) + "_p, x" + s(t) + ", a.v[" + s(t - 1) +
             "], row, j0);\n";
  for (int t = 0; t < pf::kMaxOutputs; ++t)
    if (used[pf::kMaxInputs + t]) src += "    T y" + s(t) + "_p[XY_VW];\n";
  src += "#pragma unroll\n    for (int e = 0; e < XY_VW; ++e) {\n";
  src += pf::program_steps(p, "T", "XY_SM_LOAD", "XY_UNARY", "XY_BINARY", "XY_SM_STORE", "      ");
  src += "    }\n";
  for (int t = 0; t < pf::kMaxOutputs; ++t)
    if (used[pf::kMaxInputs + t])
      src += "    xy_sm_out(y" + s(t) + ", a.v[" + s(3 + t) + "], row, j0, y" + s(t) + "_p);\n";
  src += "  }\n}\n";
  return src;
}

cudaKernel_t kernel_for(const pf::Words& words, DType dtype, RowShape shape, int device) {
  using Key = std::tuple<pf::Words, DType, int, int, std::string>;
  static std::mutex mutex;
  static std::map<Key, cudaKernel_t> kernels;
  std::lock_guard lock(mutex);
  const Key key{words, dtype, shape.width, shape.packs, nvrtc_architecture(device)};
  if (const auto it = kernels.find(key); it != kernels.end()) return it->second;
  const std::string hex = pf::program_hex(words), dtype_name(name(dtype));
  const std::string rows = std::to_string(shape.width) + "x" + std::to_string(shape.packs);
  const cudaKernel_t made = nvrtc_kernels(NvrtcBuild{.what = kWhat,
                                                     .label = std::string(kWhat) + " " + hex + " " + dtype_name +
                                                              " rows " + rows,
                                                     .source = kernel_source(words, dtype, shape),
                                                     .key = "xylem-cuda-softmax-tail\nprogram=" + hex + "\ndtype=" +
                                                            dtype_name + "\nrows=" + rows,
                                                     .kernels = {"xy_softmax_tail"}},
                                          device)
                                .front();
  kernels.emplace(key, made);
  return made;
}

// The view as rows of [outer, r]: its trailing dims whose sizes multiply to
// r step as one axis, and so do the others. False when they do not.
bool as_rows(const TensorArg& t, std::int64_t r, RowView& out) {
  const auto dims = t.view.dims();
  const auto strides = t.view.strides();
  // Folds dims [begin, end) into one axis of stride `stride` (0 when every
  // dim has size 1): each dim must step over the ones inside it.
  const auto fold = [&](std::size_t begin, std::size_t end, std::int64_t& stride) {
    stride = 0;
    std::int64_t span = 0;  // elements of the dims folded so far; 0: none yet
    for (std::size_t d = end; d-- > begin;) {
      if (dims[d] == 1) continue;
      if (span == 0) {
        stride = strides[d];
        span = dims[d];
        continue;
      }
      if (strides[d] != stride * span) return false;
      span *= dims[d];
    }
    return true;
  };
  std::size_t split = dims.size();
  std::int64_t product = 1;
  while (split > 0 && product < r) product *= dims[--split];
  if (product != r) return false;
  out.offset = t.view.offset();
  return fold(split, dims.size(), out.col) && fold(0, split, out.row);
}

bool aligned16(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Whether `t` (an input when `input`) can be read or written by the kernel
// in 16-byte packs along rows of `r`, starting each row on 16 bytes.
bool packable(const TensorArg& t, const RowView& v, std::int64_t outer, bool input) {
  const std::int64_t width = std::int64_t(16 / size_of(t.dtype));
  if (input && v.col == 0) return true;
  return v.col == 1 && aligned16(t.data) && v.offset % width == 0 && (outer == 1 || v.row % width == 0);
}

// The kernel's arguments, or false when the call is not its.
bool kernel_args(const pe::SoftmaxArgs& e, KernelArgs& out) {
  const auto dims = e.x.view.dims();
  const auto strides = e.x.view.strides();
  const std::int64_t width = std::int64_t(16 / size_of(e.x.dtype));
  out.outer = dims[0];
  out.r = dims[1];
  out.x_row = strides[0];
  const auto* x = static_cast<const std::byte*>(e.x.data) + e.x.view.offset() * std::int64_t(size_of(e.x.dtype));
  if (dims[2] != 1 || strides[1] != 1 || out.r % width != 0 || !aligned16(x) ||
      (out.outer > 1 && out.x_row % width != 0) || softmax_row_shape(out.r * std::int64_t(size_of(e.x.dtype))).width == 0)
    return false;
  bool used[pf::kViews] = {};
  pf::mark_used_views(pf::decode_program(pe::words(e)), used);
  if (used[pf::kMaxInputs - 1]) return false;  // x4: not an argument of the op
  const std::array<const TensorArg*, kTailViews> views{&e.x1, &e.x2, &e.x3, &e.y0, &e.y1, &e.y2};
  for (int k = 0; k < kTailViews; ++k) {
    const TensorArg& t = *views[std::size_t(k)];
    if (t.data == nullptr) continue;
    if (!as_rows(t, out.r, out.views[k]) || !packable(t, out.views[k], out.outer, k < 3)) return false;
  }
  return true;
}

template <DType D>
void softmax_epilogue_kernel(const OpCall& call, const Context& ctx) {
  const auto e = plugin::unpack<plugin::args::nn_softmax_epilogue>(call);
  if (e.y0.view.numel() == 0) return;
  KernelArgs a;
  if (!kernel_args(e, a)) {
    kernels().get(OpId::nn_softmax, D)(pe::softmax(e), ctx);
    kernels().get(OpId::math_fused, D)(pe::tail(e), ctx);
    return;
  }
  const RowShape shape = softmax_row_shape(a.r * std::int64_t(size_of(D)));
  const cudaKernel_t kernel = kernel_for(pe::words(e), D, shape, ctx.device);
  const void* x = static_cast<const std::byte*>(e.x.data) + e.x.view.offset() * std::int64_t(size_of(D));
  std::array<const void*, kTailViews> pointers{e.x1.data, e.x2.data, e.x3.data, e.y0.data, e.y1.data, e.y2.data};
  int log_softmax = e.log != 0 ? 1 : 0;
  ProgramReals reals({e.r0, e.r1, e.r2, e.r3, e.r4, e.r5, e.r6, e.r7}, D);
  std::array<void*, 1 + kTailViews + 2 + ProgramReals::size()> args{};
  std::size_t k = 0;
  args[k++] = &x;
  for (const void*& p : pointers) args[k++] = &p;
  args[k++] = &a;
  args[k++] = &log_softmax;
  for (std::size_t r = 0; r < ProgramReals::size(); ++r) args[k++] = reals.arg(r);
  const int rows_per_block = shape.threads() / shape.width;
  const auto blocks = static_cast<unsigned>((a.outer + rows_per_block - 1) / rows_per_block);
  XY_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocks), dim3(unsigned(shape.threads())),
                           args.data(), 0, ctx.stream),
          ctx.device, kWhat);
}

}  // namespace

void register_softmax_epilogue(KernelTable& table) {
  table.set(OpId::nn_softmax_epilogue, DType::f16, &softmax_epilogue_kernel<DType::f16>);
  table.set(OpId::nn_softmax_epilogue, DType::bf16, &softmax_epilogue_kernel<DType::bf16>);
  table.set(OpId::nn_softmax_epilogue, DType::f32, &softmax_epilogue_kernel<DType::f32>);
  table.set(OpId::nn_softmax_epilogue, DType::f64, &softmax_epilogue_kernel<DType::f64>);
}

}  // namespace xylem::cuda
