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
    OpCall call;
    call.op = OpId::core_copy_view;
    call.num_tensors = 2;
    call.t[0] = from;
    call.t[1] = to;
    kernels().get(OpId::core_copy_view, from.dtype)(call, ctx);
  }

  TensorArg original_;
  TensorArg arg_;
  std::optional<TempBuffer> buffer_;
};

ConvShape shape_of(const OpCall& c, const TensorArg& x, const TensorArg& w, const TensorArg& y) {
  const auto xd = x.view.dims(), wd = w.view.dims(), yd = y.view.dims();
  return {xd[0], xd[1], xd[2], xd[3], wd[0], wd[2], wd[3], yd[2], yd[3],
          c.i[0], c.i[1], c.i[2], c.i[3], c.i[4], c.i[5], c.i[6]};
}

template <ConvPass Pass>
void conv(const OpCall& c, const Context& ctx) {
  // Argument order: forward (x, w, y), grad_data (dy, w, dx), grad_filter (x, dy, dw).
  const TensorArg &a = c.t[0], &b = c.t[1], &out = c.t[2];
  const ConvShape s = Pass == ConvPass::forward     ? shape_of(c, a, b, out)
                      : Pass == ConvPass::grad_data ? shape_of(c, out, b, a)
                                                    : shape_of(c, a, out, b);
  if (out.view.numel() == 0) return;
  const Dense in0(a, true, ctx), in1(b, true, ctx), result(out, false, ctx);
  const ConvOperands ops{in0.ptr(), in1.ptr(), result.ptr()};
#if XYLEM_HAVE_CUDNN
  if (!conv_cudnn(Pass, a.dtype, s, ops, ctx)) conv_im2col(Pass, a.dtype, s, ops, ctx);
#else
  conv_im2col(Pass, a.dtype, s, ops, ctx);
#endif
  result.copy_out(ctx);
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
    table.set(OpId::nn_conv2d, d, &conv<ConvPass::forward>);
    table.set(OpId::nn_conv2d_grad_data, d, &conv<ConvPass::grad_data>);
    table.set(OpId::nn_conv2d_grad_filter, d, &conv<ConvPass::grad_filter>);
  }
}

}  // namespace xylem::cuda
