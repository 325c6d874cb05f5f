// Max and average pooling, forward and backward: kernels/pool.cl.
// max_pool2d_grad runs in two passes: each window's first maximum into a
// scratch index map, then a gather over dx.
#include <cstdint>

#include "frameworks/opencl/ops/nn_launch.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

// The window of a pooling call between input x [N, C, H, W] and output
// [N, C, P, Q]: i0,i1 window, i2,i3 stride, i4,i5 padding.
WindowArg pool_window(const plugin::OpCall& call, const TensorArg& input, const TensorArg& output) {
  WindowArg g;
  g.H = input.view.dims()[2];
  g.W = input.view.dims()[3];
  g.P = output.view.dims()[2];
  g.Q = output.view.dims()[3];
  g.kh = call.i[0];
  g.kw = call.i[1];
  g.sh = call.i[2];
  g.sw = call.i[3];
  g.ph = call.i[4];
  g.pw = call.i[5];
  return g;
}

const KernelInfo& pool_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(Family::pool).kernel(join({name, suffix(dtype)}));
}

}  // namespace

EventPtr launch_pool(Launcher& launch) {
  const auto& call = launch.call();
  const auto& t = call.t;
  const DType dtype = t[0].dtype;
  switch (call.op) {
    case OpId::nn_max_pool2d:
    case OpId::nn_avg_pool2d: {
      const TensorArg &x = t[0], &y = t[1];
      const WindowArg g = pool_window(call, x, y);
      const std::int64_t channels = y.view.dims()[1], total = y.view.numel();
      if (total == 0) break;
      if (call.op == OpId::nn_max_pool2d) {
        launch.run(pool_kernel(launch, "max_pool2d", dtype), static_cast<std::size_t>(total), mem_of(x), view_arg(x),
                   mem_of(y), view_arg(y), g, static_cast<cl_long>(channels), static_cast<cl_long>(total));
      } else {
        launch.run(pool_kernel(launch, "avg_pool2d", dtype), static_cast<std::size_t>(total), mem_of(x), view_arg(x),
                   mem_of(y), view_arg(y), g, static_cast<cl_long>(channels), static_cast<cl_long>(total),
                   static_cast<cl_int>(call.i[6] != 0));
      }
      break;
    }
    case OpId::nn_max_pool2d_grad: {
      const TensorArg &x = t[0], &dy = t[1], &dx = t[2];
      const WindowArg g = pool_window(call, x, dy);
      const std::int64_t channels = x.view.dims()[1], outputs = dy.view.numel(), inputs = dx.view.numel();
      if (inputs == 0) break;
      if (g.H * g.W > INT32_MAX)
        throw Error(ErrorCode::unsupported, launch.describe() + ": planes over 2^31 elements");
      cl_mem arg = launch.device().scratch(0, static_cast<std::size_t>(outputs) * sizeof(cl_int));
      if (outputs > 0) {
        launch.run(pool_kernel(launch, "max_pool2d_argmax", dtype), static_cast<std::size_t>(outputs), mem_of(x),
                   view_arg(x), arg, g, static_cast<cl_long>(channels), static_cast<cl_long>(outputs));
      }
      launch.run(pool_kernel(launch, "max_pool2d_grad", dtype), static_cast<std::size_t>(inputs), arg, mem_of(dy),
                 view_arg(dy), mem_of(dx), view_arg(dx), g, static_cast<cl_long>(channels),
                 static_cast<cl_long>(inputs));
      break;
    }
    case OpId::nn_avg_pool2d_grad: {
      const TensorArg &dy = t[0], &dx = t[1];
      const WindowArg g = pool_window(call, dx, dy);
      const std::int64_t channels = dx.view.dims()[1], inputs = dx.view.numel();
      if (inputs == 0) break;
      launch.run(pool_kernel(launch, "avg_pool2d_grad", dtype), static_cast<std::size_t>(inputs), mem_of(dy),
                 view_arg(dy), mem_of(dx), view_arg(dx), g, static_cast<cl_long>(channels),
                 static_cast<cl_long>(inputs), static_cast<cl_int>(call.i[6] != 0));
      break;
    }
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a pooling op");
  }
  return launch.finish();
}

}  // namespace xylem::opencl
