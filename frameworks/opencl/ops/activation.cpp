// nn activations and gradients: kernels/activation.cl, contiguous or
// strided.
#include <string>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;

std::string kernel_base(OpId op) {
  switch (op) {
    case OpId::nn_sigmoid:
      return "sigmoid";
    case OpId::nn_relu:
      return "relu";
    case OpId::nn_tanh:
      return "tanh";
    case OpId::nn_sigmoid_grad:
      return "sigmoid_grad";
    case OpId::nn_relu_grad:
      return "relu_grad";
    case OpId::nn_tanh_grad:
      return "tanh_grad";
    default:
      return {};
  }
}

}  // namespace

EventPtr launch_activation(Launcher& launch) {
  const plugin::OpCall& call = launch.call();
  const std::string base = kernel_base(call.op);
  const std::string sfx = suffix(call.t[0].dtype);
  const ProgramPackage& program = launch.program(Family::activation);
  const bool unary = call.num_tensors == 2;

  if (unary) {
    const auto& x = call.t[0];
    const auto& y = call.t[1];
    const Collapsed c = collapse({&x.view, &y.view});
    if (c.numel == 0) return launch.finish();
    const cl_long n = c.numel;
    if (c.contiguous) {
      launch.run_chunks(program.kernel(join({base, "_c", sfx})), static_cast<std::size_t>(n), size_of(x.dtype), mem_of(x),
                        offset_of(x), mem_of(y), offset_of(y), n);
    } else {
      launch.run(program.kernel(join({base, "_s", sfx})), static_cast<std::size_t>(n), mem_of(x), mem_of(y), c.layout, n);
    }
    return launch.finish();
  }

  const auto& a = call.t[0];
  const auto& b = call.t[1];
  const auto& y = call.t[2];
  const Collapsed c = collapse({&a.view, &b.view, &y.view});
  if (c.numel == 0) return launch.finish();
  const cl_long n = c.numel;
  if (c.contiguous) {
    launch.run_chunks(program.kernel(join({base, "_c", sfx})), static_cast<std::size_t>(n), size_of(a.dtype), mem_of(a),
                      offset_of(a), mem_of(b), offset_of(b), mem_of(y), offset_of(y), n);
  } else {
    launch.run(program.kernel(join({base, "_s", sfx})), static_cast<std::size_t>(n), mem_of(a), mem_of(b), mem_of(y),
               c.layout, n);
  }
  return launch.finish();
}

}  // namespace xylem::opencl
