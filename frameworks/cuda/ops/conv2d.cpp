// nn::conv2d, conv2d_grad_data, conv2d_grad_filter: staging and the choice
// of engine (see conv2d.hpp). Both engines take dense NCHW tensors; a
// strided operand (rare: the core hands convolutions dense tensors in the
// usual case) is copied into temporary memory first, and a strided output
// is computed there and copied out.
#include <cstdlib>
#include <optional>
#include <string_view>

#include "conv2d.hpp"
#include "xylem/plugin/epilogue.hpp"
#if XYLEM_HAVE_CUDNN
#include "cudnn_library.hpp"
#include "cudnn_package.hpp"
#endif

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

// A dense version of a tensor argument: the argument itself, or a copy in
// temporary memory.
class Dense {
 public:
  Dense(const TensorArg& t, bool copy_in, const Context& ctx) : original_(t), arg_(t) {
    if (t.view.is_contiguous()) return;
    buffer_.emplace(ctx.temp(std::size_t(t.view.numel()) * size_of(t.dtype)));
    arg_.data = buffer_->get();
    arg_.view = Layout(t.view.dims());
    if (copy_in) copy(t, arg_, ctx);
  }
  // For an output: copies the dense result into the original view.
  void copy_out(const Context& ctx) const {
    if (buffer_) copy(arg_, original_, ctx);
  }
  [[nodiscard]] void* ptr() const noexcept {
    return static_cast<char*>(arg_.data) + arg_.view.offset() * std::int64_t(size_of(arg_.dtype));
  }

 private:
  static void copy(const TensorArg& from, const TensorArg& to, const Context& ctx) {
    const OpCall call = plugin::pack(plugin::args::core_copy_view<>{from, to});
    kernels().get(OpId::core_copy_view, from.dtype)(call, ctx);
  }

  TensorArg original_;
  TensorArg arg_;
  std::optional<TempBuffer> buffer_;
};

// Args: any convolution op's, which share the geometry; x [N, C, H, W],
// w [K, C/groups, R, S], y [N, K, P, Q] whichever of them the pass reads.
template <class Args>
ConvShape shape_of(const Args& a, const TensorArg& x, const TensorArg& w, const TensorArg& y) {
  const auto xd = x.view.dims(), wd = w.view.dims(), yd = y.view.dims();
  return {xd[0], xd[1], xd[2], xd[3], wd[0], wd[2], wd[3], yd[2], yd[3],
          a.stride_h, a.stride_w, a.pad_h, a.pad_w, a.dilation_h, a.dilation_w, a.groups};
}

// in0, in1, out in the op's argument order: forward (x, w, y), grad_data
// (dy, w, dx), grad_filter (x, dy, dw).
void run_pass(ConvPass pass, const TensorArg& in0, const TensorArg& in1, const TensorArg& out, const ConvShape& s,
              const Context& ctx) {
  if (out.view.numel() == 0) return;
  const Dense a(in0, true, ctx), b(in1, true, ctx), result(out, false, ctx);
  const ConvOperands ops{a.ptr(), b.ptr(), result.ptr()};
#if XYLEM_HAVE_CUDNN
  if (!conv_cudnn(pass, in0.dtype, s, ops, ctx)) conv_im2col(pass, in0.dtype, s, ops, ctx);
#else
  conv_im2col(pass, in0.dtype, s, ops, ctx);
#endif
  result.copy_out(ctx);
}

void conv2d(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_conv2d>(c);
  run_pass(ConvPass::forward, a.x, a.w, a.y, shape_of(a, a.x, a.w, a.y), ctx);
}

void conv2d_grad_data(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_conv2d_grad_data>(c);
  run_pass(ConvPass::grad_data, a.dy, a.w, a.dx, shape_of(a, a.dx, a.w, a.dy), ctx);
}

void conv2d_grad_filter(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_conv2d_grad_filter>(c);
  run_pass(ConvPass::grad_filter, a.x, a.dy, a.dw, shape_of(a, a.x, a.dw, a.dy), ctx);
}

namespace pe = plugin::epilogue;

#if XYLEM_HAVE_CUDNN
// When cuDNN's fused graph runs, XYLEM_CUDA_CUDNN_EPILOGUE, read at each
// call: unset, only where the convolution's candidates are timed
// (XYLEM_CUDA_CUDNN_FIND=1 or tuning on); "1" always, "0" never. On the
// H100 (relu(conv2d + bias), [64, 64, 56, 56] 3x3, ms) the heuristics'
// first fused engine was no faster than our two steps (f32 0.23 against
// 0.22, bf16 0.14 against 0.14); the fastest timed one was (f32 0.19
// against 0.22; bf16 0.15 against 0.14).
bool cudnn_epilogue_wanted(const ConvOperands& ops) {
  const char* v = std::getenv("XYLEM_CUDA_CUDNN_EPILOGUE");
  if (v != nullptr && *v != '\0') return std::string_view(v) != "0";
  return cudnn_find_wanted(ops);
}

const void* first_element(const TensorArg& t) {
  return static_cast<const char*>(t.data) + t.view.offset() * std::int64_t(size_of(t.dtype));
}

// A tail tensor as cuDNN takes it: a broadcast (stride 0) dimension has
// size 1. None for a layout cuDNN cannot describe.
std::optional<TailTensor> tail_tensor(const TensorArg& t) {
  if (t.view.rank() != 4) return std::nullopt;
  TailTensor r;
  r.dtype = t.dtype;
  for (std::size_t i = 0; i < 4; ++i) {
    const std::int64_t stride = t.view.strides()[i];
    if (stride < 0) return std::nullopt;
    r.dims[i] = stride == 0 ? 1 : t.view.dims()[i];
    r.strides[i] = stride == 0 ? 1 : stride;
  }
  r.alignment = alignment_of(first_element(t));
  return r;
}

// The whole call as one cuDNN graph, the tail in the convolution's
// epilogue, or false (nothing run) where it is not wanted or cuDNN cannot
// take it: more than one output, operands not dense, a code without a
// pointwise mode, no engine for the fused graph.
bool run_fused(const pe::ConvArgs& e, const Context& ctx) {
  if (e.y1.data != nullptr || e.y2.data != nullptr) return false;
  for (const TensorArg* t : {&e.x, &e.w, &e.y0})
    if (!t->view.is_contiguous()) return false;
  ConvTail tail;
  tail.words = pe::words(e);
  const TensorArg* inputs[3] = {&e.x1, &e.x2, &e.x3};
  for (std::size_t k = 0; k < 3; ++k) {
    if (inputs[k]->data == nullptr) continue;
    tail.inputs[k] = tail_tensor(*inputs[k]);
    if (!tail.inputs[k]) return false;
    tail.input_data[k] = first_element(*inputs[k]);
  }
  const std::optional<TailTensor> y0 = tail_tensor(e.y0);
  if (!y0) return false;
  tail.y0 = *y0;
  const ConvOperands ops{first_element(e.x), first_element(e.w), const_cast<void*>(first_element(e.y0))};
  if (!cudnn_epilogue_wanted(ops)) return false;
  return conv_cudnn_fused(e.y0.dtype, shape_of(e, e.x, e.w, e.y0), ops, tail, ctx, nullptr);
}
#endif

// nn::conv2d_epilogue: one cuDNN graph where it fuses the tail and is
// wanted, else the convolution into y0, then the fused tail over it (one
// pass over the result instead of the bias add's and the activation's).
void conv2d_epilogue(const OpCall& c, const Context& ctx) {
  const auto e = plugin::unpack<plugin::args::nn_conv2d_epilogue>(c);
  if (e.y0.view.numel() == 0) return;
#if XYLEM_HAVE_CUDNN
  if (run_fused(e, ctx)) return;
#endif
  conv2d(pe::conv(e), ctx);
  kernels().get(OpId::math_fused, e.y0.dtype)(pe::tail(e), ctx);
}

}  // namespace

std::string conv2d_engine_description() {
#if XYLEM_HAVE_CUDNN
  std::string why_not;
  if (cudnn_library(&why_not) != nullptr) return "convolutions: " + cudnn_description();
  return "convolutions: im2col + cuBLAS (cuDNN not used: " + why_not + ")";
#else
  return "convolutions: im2col + cuBLAS (built without cuDNN)";
#endif
}

bool conv_tf32_allowed() noexcept {
  const char* v = std::getenv("XYLEM_CUDA_CONV_TF32");
  return v == nullptr || *v == '\0' || std::string_view(v) != "0";
}

void register_conv2d(KernelTable& table) {
  for (DType d : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    table.set(OpId::nn_conv2d, d, &conv2d);
    table.set(OpId::nn_conv2d_grad_data, d, &conv2d_grad_data);
    table.set(OpId::nn_conv2d_grad_filter, d, &conv2d_grad_filter);
  }
  // cuDNN's runtime fusion computes in f32: no f64 epilogue.
  for (DType d : {DType::f16, DType::bf16, DType::f32}) table.set(OpId::nn_conv2d_epilogue, d, &conv2d_epilogue);
}

}  // namespace xylem::cuda
