// nn::conv2d, conv2d_grad_data and conv2d_grad_filter (NCHW; stride,
// padding, dilation, groups) as gemm over patch matrices (kernels/conv2d.cl),
// one image and group at a time, through the f32/f64 gemm that
// ops/gemm.cpp picks for the device (ours or CLBlast):
//   forward      y[n, g]  = w[g] (Kg x CRS) * im2col(x[n, g]) (CRS x PQ)
//   grad_data    col      = w[g]^T * dy[n, g];  dx[n, g] = col2im(col)
//   grad_filter  dw[g]   += dy[n, g] * im2col(x[n, g])^T, over n
// (Kg = K/groups, CRS = C/groups * R * S, PQ = P * Q). Operands that are
// 16-bit, or strided so that gemm cannot read them as matrices, are first
// packed into dense compute-type buffers; outputs that cannot take gemm's
// result directly get a dense buffer that is unpacked (rounded) at the
// end. Buffers are per call; OpenCL keeps them alive until the commands
// queued on them complete, and the queue is in order, so one patch buffer
// serves every image.
//
// The gemm is CLBlast's on GPUs and ours on CPU devices (ops/gemm.cpp
// says why). CLBlast's Convgemm would fuse im2col into its gemm, but only
// without groups and only for the forward pass, and on PoCL its gemm
// kernels run several times slower than ours. The patch kernels
// (kernels/conv2d.cl) walk rows (ops/row_runs.hpp): with an item per element
// dividing 64-bit indices, im2col took 90% of a 3x3 convolution on PoCL.
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/row_runs.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kConv2dProgram{"conv2d", {&sources::conv2d}, Helpers::nn, Passes::floats};

using plugin::TensorArg;

struct ConvShape {
  std::int64_t n, c, h, w;  // x (or dx)
  std::int64_t k, r, s;     // w [k, c/groups, r, s]
  std::int64_t p, q;        // y (or dy)
  std::int64_t groups, kg, cg, crs, pq;
  WindowArg window;
};

// Args: any convolution op's, which share the geometry.
template <class Args>
ConvShape conv_shape(const Args& a, const TensorArg& x, const TensorArg& w, const TensorArg& y) {
  ConvShape s{};
  s.n = x.view.dims()[0];
  s.c = x.view.dims()[1];
  s.h = x.view.dims()[2];
  s.w = x.view.dims()[3];
  s.k = w.view.dims()[0];
  s.r = w.view.dims()[2];
  s.s = w.view.dims()[3];
  s.p = y.view.dims()[2];
  s.q = y.view.dims()[3];
  s.groups = a.groups;
  s.kg = s.k / s.groups;
  s.cg = s.c / s.groups;
  s.crs = s.cg * s.r * s.s;
  s.pq = s.p * s.q;
  WindowArg& g = s.window;
  g.H = s.h;
  g.W = s.w;
  g.P = s.p;
  g.Q = s.q;
  g.kh = s.r;
  g.kw = s.s;
  g.sh = a.stride_h;
  g.sw = a.stride_w;
  g.ph = a.pad_h;
  g.pw = a.pad_w;
  g.dh = a.dilation_h;
  g.dw = a.dilation_w;
  return s;
}

// Whether axes [from, 4) of a rank-4 view are dense row-major (axes of
// one element ignored), so that the view reads as rows of the product of
// those dims, a row stride of stride(from - 1) apart.
bool dense_from(const Layout& v, int from) noexcept {
  std::int64_t expected = 1;
  for (int axis = 3; axis >= from; --axis) {
    const auto a = static_cast<std::size_t>(axis);
    if (v.dims()[a] != 1 && v.strides()[a] != expected) return false;
    expected *= v.dims()[a];
  }
  return true;
}

// A rows x cols matrix view at `offset` of `mem`, rows `ld` apart.
TensorArg matrix(void* mem, std::int64_t offset, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                 DType dtype) {
  const std::int64_t dims[] = {rows, cols};
  const std::int64_t strides[] = {ld, 1};
  return TensorArg{mem, Layout::strided(dims, strides, offset), dtype};
}

// A rank-4 tensor as gemm operands: groups of `rows` x `cols` matrices,
// matrix (a, b) of them (a along axis 0, b a block of `rows` along axis
// 1) at offset + a*stride0 + b*rows*stride1, rows ld apart. Either the
// tensor itself (when its dtype is the compute type and its inner axes are
// dense) or a dense compute-type buffer.
class MatrixOperand {
 public:
  // A matrix row of t [d0, d1, d2, d3] is (d2, d3), or with whole
  // (d1, d2, d3) (then b is 0 and a counts rows). With read, a dense
  // buffer starts as a copy of t.
  MatrixOperand(Launcher& launch, const TensorArg& t, bool whole, bool read)
      : launch_(launch), t_(t), compute_(compute_dtype(t.dtype)) {
    const auto dims = t.view.dims();
    const std::int64_t row = whole ? dims[1] * dims[2] * dims[3] : dims[2] * dims[3];
    const int from = whole ? 1 : 2;
    const std::int64_t ld_axis_dim = whole ? dims[0] : dims[1];
    const std::int64_t ld = t.view.strides()[static_cast<std::size_t>(from - 1)];
    direct_ = t.dtype == compute_ && dense_from(t.view, from) && (ld_axis_dim <= 1 || ld >= row);
    if (direct_) {
      mem_ = mem_of(t);
      offset_ = t.view.offset();
      stride0_ = t.view.strides()[0];
      stride1_ = whole ? 0 : t.view.strides()[1];
      ld_ = ld_axis_dim <= 1 ? std::max<std::int64_t>(row, 1) : ld;
      return;
    }
    buffer_ = temporary_buffer(launch, t.view.numel(), compute_);
    mem_ = buffer_.get();
    offset_ = 0;
    stride0_ = dims[1] * dims[2] * dims[3];
    stride1_ = whole ? 0 : dims[2] * dims[3];
    ld_ = row;
    if (read) {
      const KernelInfo& pack = launch.program(kConv2dProgram, t.dtype).kernel(join({"pack4", suffix(t.dtype)}));
      if (t.view.numel() > 0) {
        const RowRuns r = row_runs(launch.device(), dims[0] * dims[1] * dims[2], dims[3]);
        launch.run(pack, r.items, mem_of(t), view_arg(t), dims[1], dims[2], dims[3], static_cast<cl_long>(r.per),
                   static_cast<cl_long>(dims[0] * dims[1] * dims[2]), r.narrow, mem_);
      }
    }
  }

  // Matrix (a, b): rows x cols.
  [[nodiscard]] TensorArg at(std::int64_t a, std::int64_t b, std::int64_t rows, std::int64_t cols) const {
    return matrix(mem_, offset_ + a * stride0_ + b * rows * stride1_, rows, cols, ld_, compute_);
  }

  // Writes a dense buffer back into the tensor (rounded to its dtype).
  void store() {
    if (direct_ || t_.view.numel() == 0) return;
    const auto dims = t_.view.dims();
    const KernelInfo& unpack = launch_.program(kConv2dProgram, t_.dtype).kernel(join({"unpack4", suffix(t_.dtype)}));
    const RowRuns r = row_runs(launch_.device(), dims[0] * dims[1] * dims[2], dims[3]);
    launch_.run(unpack, r.items, mem_, dims[1], dims[2], dims[3], static_cast<cl_long>(r.per),
                static_cast<cl_long>(dims[0] * dims[1] * dims[2]), r.narrow, mem_of(t_), view_arg(t_));
  }

 private:
  Launcher& launch_;
  TensorArg t_;
  DType compute_;
  bool direct_ = false;
  Mem buffer_;
  cl_mem mem_ = nullptr;
  std::int64_t offset_ = 0, stride0_ = 0, stride1_ = 0, ld_ = 1;
};

const KernelInfo& conv_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(kConv2dProgram, dtype).kernel(join({name, suffix(dtype)}));
}

// col (dense, in the compute type) = the patches of image n, group g of x:
// [crs, pq], or [pq, crs] when transposed.
void im2col(Launcher& launch, const TensorArg& x, const ConvShape& s, std::int64_t n, std::int64_t g, bool transposed,
            cl_mem col) {
  const auto image = static_cast<cl_long>(n), c0 = static_cast<cl_long>(g * s.cg);
  const auto R = static_cast<cl_long>(s.r), Sk = static_cast<cl_long>(s.s);
  if (transposed) {
    // Items: runs of the CRS patch entries of each output position.
    const RowRuns r = row_runs(launch.device(), s.pq, s.crs);
    launch.run(conv_kernel(launch, "im2col_t", x.dtype), r.items, mem_of(x), view_arg(x), image, c0, s.window, R, Sk,
               static_cast<cl_long>(s.crs), static_cast<cl_long>(r.per), r.narrow, col);
  } else {
    // Items: runs along q of each (patch row, output row p).
    const RowRuns r = row_runs(launch.device(), s.crs * s.p, s.q);
    launch.run(conv_kernel(launch, "im2col", x.dtype), r.items, mem_of(x), view_arg(x), image, c0, s.window, R, Sk,
               static_cast<cl_long>(r.per), static_cast<cl_long>(s.crs * s.p), r.narrow, col);
  }
}

// 1x1 filters of stride 1 without padding read x itself as the patch
// matrix (CRS = C/groups rows of H*W).
bool pointwise(const ConvShape& s) noexcept {
  return s.r == 1 && s.s == 1 && s.window.sh == 1 && s.window.sw == 1 && s.window.ph == 0 && s.window.pw == 0;
}

void conv2d(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_conv2d>(launch.call());
  const TensorArg &x = args.x, &w = args.w, &y = args.y;
  const ConvShape s = conv_shape(args, x, w, y);
  if (y.view.numel() == 0) return;
  const MatrixOperand weights(launch, w, /*whole=*/true, /*read=*/true);
  MatrixOperand out(launch, y, /*whole=*/false, /*read=*/false);
  const DType ct = compute_dtype(x.dtype);
  const bool direct_x =
      pointwise(s) && x.dtype == ct && dense_from(x.view, 2) && (s.cg <= 1 || x.view.strides()[1] >= s.pq);
  Mem col;
  if (!direct_x) col = temporary_buffer(launch, s.crs * s.pq, ct);
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      TensorArg patches;
      if (direct_x) {
        patches = matrix(x.data, x.view.offset() + n * x.view.strides()[0] + g * s.cg * x.view.strides()[1], s.cg,
                         s.pq, s.cg <= 1 ? s.pq : x.view.strides()[1], ct);
      } else {
        im2col(launch, x, s, n, g, false, col.get());
        patches = matrix(col.get(), 0, s.crs, s.pq, s.pq, ct);
      }
      enqueue_gemm(launch, weights.at(g * s.kg, 0, s.kg, s.crs), patches, out.at(n, g, s.kg, s.pq), false, false,
                   1.0, 0.0);
    }
  }
  out.store();
}

void conv2d_grad_data(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_conv2d_grad_data>(launch.call());
  const TensorArg &dy = args.dy, &w = args.w, &dx = args.dx;
  const ConvShape s = conv_shape(args, dx, w, dy);
  if (dx.view.numel() == 0) return;
  const DType ct = compute_dtype(dx.dtype);
  const MatrixOperand weights(launch, w, /*whole=*/true, /*read=*/true);
  const MatrixOperand grads(launch, dy, /*whole=*/false, /*read=*/true);
  Mem col = temporary_buffer(launch, s.crs * s.pq, ct);
  const KernelInfo& col2im = conv_kernel(launch, "col2im", dx.dtype);
  // Runs of at most 64 elements: kernels/conv2d.cl's XY_COL2IM_RUN.
  const RowRuns runs = row_runs(launch.device(), s.cg * s.h, s.w, 64);
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      // col = w[g]^T * dy[n, g]: a [Kg, CRS] read transposed.
      enqueue_gemm(launch, weights.at(g * s.kg, 0, s.kg, s.crs), grads.at(n, g, s.kg, s.pq),
                   matrix(col.get(), 0, s.crs, s.pq, s.pq, ct), true, false, 1.0, 0.0);
      launch.run(col2im, runs.items, col.get(), static_cast<cl_long>(s.cg), static_cast<cl_long>(s.r),
                 static_cast<cl_long>(s.s), s.window, mem_of(dx), view_arg(dx), static_cast<cl_long>(n),
                 static_cast<cl_long>(g * s.cg), static_cast<cl_long>(runs.per), runs.narrow);
    }
  }
}

void conv2d_grad_filter(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::nn_conv2d_grad_filter>(launch.call());
  const TensorArg &x = args.x, &dy = args.dy, &dw = args.dw;
  const ConvShape s = conv_shape(args, x, dw, dy);
  if (dw.view.numel() == 0) return;
  const DType ct = compute_dtype(x.dtype);
  const MatrixOperand grads(launch, dy, /*whole=*/false, /*read=*/true);
  MatrixOperand out(launch, dw, /*whole=*/true, /*read=*/false);
  if (s.n == 0 || s.pq == 0) {
    // Nothing to sum: dw = 0 (a product over an empty inner dimension).
    Mem none = temporary_buffer(launch, 1, ct);
    for (std::int64_t g = 0; g < s.groups; ++g) {
      enqueue_gemm(launch, matrix(none.get(), 0, s.kg, 0, 1, ct), matrix(none.get(), 0, 0, s.crs, s.crs, ct),
                   out.at(g * s.kg, 0, s.kg, s.crs), false, false, 1.0, 0.0);
    }
    out.store();
    return;
  }
  // The patches transposed ([PQ, CRS]) make the product's b untransposed,
  // which the gemm reads fastest.
  Mem col = temporary_buffer(launch, s.crs * s.pq, ct);
  for (std::int64_t n = 0; n < s.n; ++n) {
    for (std::int64_t g = 0; g < s.groups; ++g) {
      im2col(launch, x, s, n, g, true, col.get());
      enqueue_gemm(launch, grads.at(n, g, s.kg, s.pq), matrix(col.get(), 0, s.pq, s.crs, s.crs, ct),
                   out.at(g * s.kg, 0, s.kg, s.crs), false, false, 1.0, n == 0 ? 0.0 : 1.0);
    }
  }
  out.store();
}

}  // namespace

EventPtr launch_conv2d(Launcher& launch) {
  switch (launch.call().op) {
    case plugin::OpId::nn_conv2d:
      conv2d(launch);
      break;
    case plugin::OpId::nn_conv2d_grad_data:
      conv2d_grad_data(launch);
      break;
    case plugin::OpId::nn_conv2d_grad_filter:
      conv2d_grad_filter(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a convolution op");
  }
  return launch.finish();
}

namespace {

// Convolutions run gemm (ops/gemm.hpp); f16 and bf16 gemm converts to f32.
constinit const OpKernel kConv2d{launch_conv2d, {&kConv2dProgram, &kGemmProgram}};
constinit const OpKernel kConv2dHalf{launch_conv2d, {&kConv2dProgram, &kGemmProgram, &kConvertProgram}};

}  // namespace

void register_conv2d(KernelTable& table) {
  for (auto op : {plugin::OpId::nn_conv2d, plugin::OpId::nn_conv2d_grad_data, plugin::OpId::nn_conv2d_grad_filter})
    for (DType dtype : kFloatDtypes)
      table.set(op, dtype, dtype == DType::f16 || dtype == DType::bf16 ? &kConv2dHalf : &kConv2d);
}

}  // namespace xylem::opencl
