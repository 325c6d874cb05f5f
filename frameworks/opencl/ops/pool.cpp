// Max and average pooling, forward and backward: kernels/pool.cl, each
// work-item a run along the last axis of one row (ops/row_runs.hpp).
// max_pool2d_grad runs in two passes: each window's first maximum into a
// scratch index map, then a gather over dx.
#include <cstdint>

#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/row_runs.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kPoolProgram{"pool", {&sources::pool}, Helpers::nn, Passes::floats};

using plugin::OpId;
using plugin::TensorArg;

// The window of a pooling call between input x [N, C, H, W] and output
// [N, C, P, Q]. Args: any pooling op's, which share the window geometry.
template <class Args>
WindowArg pool_window(const Args& a, const TensorArg& input, const TensorArg& output) {
  WindowArg g;
  g.H = input.view.dims()[2];
  g.W = input.view.dims()[3];
  g.P = output.view.dims()[2];
  g.Q = output.view.dims()[3];
  g.kh = a.window_h;
  g.kw = a.window_w;
  g.sh = a.stride_h;
  g.sw = a.stride_w;
  g.ph = a.pad_h;
  g.pw = a.pad_w;
  return g;
}

const KernelInfo& pool_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(kPoolProgram, dtype).kernel(join({name, suffix(dtype)}));
}

// Runs `name` over the rows of t [N, C, A, B] (y of the forward kernels,
// dx of the backward ones), passing args, then C and the run arguments.
template <class... Args>
void run_rows(Launcher& launch, const char* name, DType dtype, const TensorArg& t, const Args&... args) {
  const auto dims = t.view.dims();
  const std::int64_t rows = dims[0] * dims[1] * dims[2];
  const RowRuns r = row_runs(launch.device(), rows, dims[3]);
  launch.run(pool_kernel(launch, name, dtype), r.items, args..., static_cast<cl_long>(dims[1]),
             static_cast<cl_long>(r.per), static_cast<cl_long>(rows), r.narrow);
}

}  // namespace

EventPtr launch_pool(Launcher& launch) {
  const auto& call = launch.call();
  const DType dtype = plugin::dispatch_dtype(call);
  switch (call.op) {
    case OpId::nn_max_pool2d: {
      const auto args = plugin::unpack<plugin::args::nn_max_pool2d>(call);
      const TensorArg &x = args.x, &y = args.y;
      const WindowArg g = pool_window(args, x, y);
      if (y.view.numel() == 0) break;
      run_rows(launch, "max_pool2d", dtype, y, mem_of(x), view_arg(x), mem_of(y), view_arg(y), g);
      break;
    }
    case OpId::nn_avg_pool2d: {
      const auto args = plugin::unpack<plugin::args::nn_avg_pool2d>(call);
      const TensorArg &x = args.x, &y = args.y;
      const WindowArg g = pool_window(args, x, y);
      if (y.view.numel() == 0) break;
      run_rows(launch, "avg_pool2d", dtype, y, mem_of(x), view_arg(x), mem_of(y), view_arg(y), g,
               cl_int{args.count_include_pad != 0});
      break;
    }
    case OpId::nn_max_pool2d_grad: {
      const auto args = plugin::unpack<plugin::args::nn_max_pool2d_grad>(call);
      const TensorArg &x = args.x, &dy = args.dy, &dx = args.dx;
      const WindowArg g = pool_window(args, x, dy);
      const std::int64_t outputs = dy.view.numel();
      if (dx.view.numel() == 0) break;
      if (g.H * g.W > INT32_MAX)
        throw Error(ErrorCode::unsupported, launch.describe() + ": planes over 2^31 elements");
      cl_mem arg = launch.device().scratch(0, static_cast<std::size_t>(outputs) * sizeof(cl_int));
      if (outputs > 0) run_rows(launch, "max_pool2d_argmax", dtype, dy, mem_of(x), view_arg(x), arg, g);
      run_rows(launch, "max_pool2d_grad", dtype, dx, arg, mem_of(dy), view_arg(dy), mem_of(dx), view_arg(dx), g);
      break;
    }
    case OpId::nn_avg_pool2d_grad: {
      const auto args = plugin::unpack<plugin::args::nn_avg_pool2d_grad>(call);
      const TensorArg &dy = args.dy, &dx = args.dx;
      const WindowArg g = pool_window(args, dx, dy);
      if (dx.view.numel() == 0) break;
      run_rows(launch, "avg_pool2d_grad", dtype, dx, mem_of(dy), view_arg(dy), mem_of(dx), view_arg(dx), g,
               cl_int{args.count_include_pad != 0});
      break;
    }
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a pooling op");
  }
  return launch.finish();
}

namespace {

constinit const OpKernel kPool{launch_pool, {&kPoolProgram}};

}  // namespace

void register_pool(KernelTable& table) {
  for (OpId op : {OpId::nn_max_pool2d, OpId::nn_max_pool2d_grad, OpId::nn_avg_pool2d, OpId::nn_avg_pool2d_grad})
    set_dtypes(table, op, kFloatDtypes, &kPool);
}

}  // namespace xylem::opencl
