// nn::conv2d, conv2d_grad_data, conv2d_grad_filter: staging and the choice
// of engine (see conv2d.hpp). Both engines take dense NCHW tensors; a
// strided operand (rare: the core hands convolutions dense tensors in the
// usual case) is copied into temporary memory first, and a strided output
// is computed there and copied out.
#include <cstdlib>
#include <optional>
#include <string_view>

#include "conv2d.hpp"
#if XYLEM_HAVE_CUDNN
#include "cudnn_library.hpp"
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
}

}  // namespace xylem::cuda
