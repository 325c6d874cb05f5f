// Local response normalisation, forward and backward: kernels/lrn.cl, each
// work-item a run of positions of one row (n, h) across every channel
// (ops/row_runs.hpp). Backward first writes every element's scale into the
// device's scratch.
#include <cstdint>

#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/ops/row_runs.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kLrnProgram{"lrn", {&sources::lrn}, Helpers::nn, Passes::floats};

// Args: nn_lrn's or nn_lrn_grad's (which adds dy and dx); both share x,
// y, size, alpha, beta and k.
template <class Args>
void lrn(Launcher& launch, const Args& args) {
  const plugin::TensorArg& x = args.x;
  const DType dtype = x.dtype;
  const auto dims = x.view.dims();
  const cl_long channels = dims[1];
  // The core passes [N, C, S, 1] (every rank as one spatial axis): the
  // kernels' runs go along w, so S becomes the width, of a single row.
  const bool one_column = dims[3] == 1;
  const cl_long height = one_column ? 1 : dims[2], width = one_column ? dims[2] : dims[3];
  const auto view = [one_column](const plugin::TensorArg& a) {
    ViewArg v = view_arg(a);
    if (one_column) {
      v.s[3] = v.s[2];
      v.s[2] = 0;
    }
    return v;
  };
  const std::int64_t total = x.view.numel();
  if (total == 0) return;
  const auto size = static_cast<cl_long>(args.size);
  const Scalar alpha = compute_scalar(dtype, args.alpha), beta = compute_scalar(dtype, args.beta),
               k = compute_scalar(dtype, args.k);
  const ProgramPackage& program = launch.program(kLrnProgram, dtype);
  const auto rows = static_cast<cl_long>(dims[0] * height);
  const RowRuns r = row_runs(launch.device(), rows, width);
  const auto per = static_cast<cl_long>(r.per);
  // The betas kernels/lrn.cl computes s^-beta of without pow.
  const double b = args.beta;
  const cl_int mode = b == 0.75 ? 1 : b == 0.5 ? 2 : b == 1.0 ? 3 : 0;
  if constexpr (Args::id == plugin::OpId::nn_lrn) {
    launch.run(program.kernel(join({"lrn", suffix(dtype)})), r.items, mem_of(x), view(x), mem_of(args.y),
               view(args.y), channels, height, width, per, rows, r.narrow, size, alpha, beta, k, mode);
  } else {
    cl_mem scale = launch.device().scratch(0, static_cast<std::size_t>(total) * size_of(compute_dtype(dtype)));
    launch.run(program.kernel(join({"lrn_scale", suffix(dtype)})), r.items, mem_of(x), view(x), scale, channels,
               height, width, per, rows, r.narrow, size, alpha, k);
    launch.run(program.kernel(join({"lrn_grad", suffix(dtype)})), r.items, mem_of(x), view(x), mem_of(args.y),
               view(args.y), mem_of(args.dy), view(args.dy), scale, mem_of(args.dx), view(args.dx), channels,
               height, width, per, rows, r.narrow, size, alpha, beta, mode);
  }
}

}  // namespace

EventPtr launch_lrn(Launcher& launch) {
  if (launch.call().op == plugin::OpId::nn_lrn) {
    lrn(launch, plugin::unpack<plugin::args::nn_lrn>(launch.call()));
  } else {
    lrn(launch, plugin::unpack<plugin::args::nn_lrn_grad>(launch.call()));
  }
  return launch.finish();
}

namespace {

constinit const OpKernel kLrn{launch_lrn, {&kLrnProgram}};

}  // namespace

void register_lrn(KernelTable& table) {
  set_dtypes(table, plugin::OpId::nn_lrn, kFloatDtypes, &kLrn);
  set_dtypes(table, plugin::OpId::nn_lrn_grad, kFloatDtypes, &kLrn);
}

}  // namespace xylem::opencl
