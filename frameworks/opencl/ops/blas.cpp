// blas level 1 and gemv: kernels/blas.cl. Reductions in two passes through a
// scratch buffer of per-group partials; elementwise ops with a unit-stride
// fast path.
#include <algorithm>
#include <string>

#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

constinit const ProgramSpec kBlasProgram{"blas", {&sources::blas}, Helpers::none, Passes::reals};

namespace {

using plugin::OpId;
using plugin::TensorArg;

// A rank-1 view: element i at offset + i*stride. With fewer than two
// elements the stride means nothing (and may be anything).
struct Vec {
  cl_mem mem;
  cl_long offset;
  cl_long stride;
  cl_long n;
};

Vec vec(const TensorArg& a) noexcept {
  const std::int64_t n = a.view.rank() == 0 ? 1 : a.view.dims()[0];
  return {mem_of(a), a.view.offset(), n > 1 ? a.view.strides()[0] : 1, n};
}

// Work-group size and count of a reduction's first pass: as many groups as
// keep every compute unit busy, no more than the data fills, and local
// memory for `bytes_per_item` per work-item.
struct ReduceShape {
  std::size_t local;
  std::size_t groups;
};

ReduceShape reduce_shape(const Launcher& launch, const KernelInfo& kernel, std::int64_t n,
                         std::size_t bytes_per_item) {
  const DeviceInfo& info = launch.device().info();
  if (info.type & CL_DEVICE_TYPE_CPU) {
    // PoCL runs a group's items one after another on one thread: a group
    // of one item walking a contiguous share in vectors does the same work
    // without the tree. A few groups per compute unit (of at least 4096
    // elements each) let the threads balance a loaded machine.
    const std::size_t most = static_cast<std::size_t>(std::max(info.compute_units, 1)) * 8;
    return {1, std::clamp<std::size_t>(static_cast<std::size_t>((n + 4095) / 4096), 1, most)};
  }
  std::size_t local = kernel.local;
  while (local > 1 && local * bytes_per_item > info.local_mem / 2) local /= 2;
  const std::size_t per_unit = (info.type & CL_DEVICE_TYPE_GPU) ? 8 : 2;
  const std::size_t most = static_cast<std::size_t>(std::max(info.compute_units, 1)) * per_unit;
  const auto needed = static_cast<std::size_t>((n + static_cast<std::int64_t>(local) - 1) /
                                               static_cast<std::int64_t>(local));
  return {local, std::clamp<std::size_t>(needed, 1, most)};
}

// The second pass's local size: the kernel's, within local memory.
std::size_t final_local(const Launcher& launch, const KernelInfo& kernel, std::size_t bytes_per_item) {
  // A CPU device sums a few dozen partials fastest in one item.
  if (launch.device().info().type & CL_DEVICE_TYPE_CPU) return 1;
  std::size_t local = kernel.local;
  while (local > 1 && local * bytes_per_item > launch.device().info().local_mem / 2) local /= 2;
  return local;
}

// op: asum, nrm2 or dot (the one with a second vector, y).
void sum_reduction(Launcher& launch, const std::string& op, const TensorArg& x_arg, const TensorArg* y_arg,
                   const TensorArg& result) {
  const DType dtype = x_arg.dtype;
  const std::size_t elem = size_of(dtype);
  const std::string sfx = suffix(dtype);
  const ProgramPackage& program = launch.program(kBlasProgram, dtype);
  const Vec x = vec(x_arg);

  const KernelInfo& p1 = program.kernel(join({op, "_p1", sfx}));
  const bool pairs = op == "nrm2";  // (scale, ssq) per partial
  const ReduceShape shape = reduce_shape(launch, p1, x.n, pairs ? 2 * elem : elem);
  Device& device = launch.device();
  cl_mem part = device.scratch(0, shape.groups * elem * (pairs ? 2 : 1));
  const auto groups = static_cast<cl_long>(shape.groups);
  if (op == "asum") {
    launch.run_groups(p1, shape.groups, shape.local, x.mem, x.offset, x.stride, x.n, part,
                      LocalBytes{shape.local * elem});
  } else if (op == "nrm2") {
    launch.run_groups(p1, shape.groups, shape.local, x.mem, x.offset, x.stride, x.n, part,
                      LocalBytes{shape.local * elem}, LocalBytes{shape.local * elem});
  } else {
    const Vec y = vec(*y_arg);
    launch.run_groups(p1, shape.groups, shape.local, x.mem, x.offset, x.stride, y.mem, y.offset, y.stride, x.n, part,
                      LocalBytes{shape.local * elem});
  }
  if (pairs) {
    const KernelInfo& p2 = program.kernel(join({"nrm2_p2", sfx}));
    const std::size_t local = final_local(launch, p2, 2 * elem);
    launch.run_groups(p2, 1, local, part, groups, mem_of(result), offset_of(result), LocalBytes{local * elem},
                      LocalBytes{local * elem});
  } else {
    const KernelInfo& p2 = program.kernel(join({"sum_p2", sfx}));
    const std::size_t local = final_local(launch, p2, elem);
    launch.run_groups(p2, 1, local, part, groups, mem_of(result), offset_of(result), LocalBytes{local * elem});
  }
}

// iamax, or iamin when `least` (the kernels take the comparison as a flag).
template <template <class> class Args>
void extreme_index(Launcher& launch, bool least) {
  const auto args = plugin::unpack<Args>(launch.call());
  const DType dtype = args.x.dtype;
  const std::size_t elem = size_of(dtype);
  const std::string sfx = suffix(dtype);
  const ProgramPackage& program = launch.program(kBlasProgram, dtype);
  const Vec x = vec(args.x);
  const TensorArg& result = args.result;
  const KernelInfo& p1 = program.kernel(join({"iamax_p1", sfx}));
  const ReduceShape shape = reduce_shape(launch, p1, x.n, elem + sizeof(cl_long));
  Device& device = launch.device();
  cl_mem values = device.scratch(0, shape.groups * elem);
  cl_mem indices = device.scratch(1, shape.groups * sizeof(cl_long));
  launch.run_groups(p1, shape.groups, shape.local, x.mem, x.offset, x.stride, x.n, values, indices,
                    LocalBytes{shape.local * elem}, LocalBytes{shape.local * sizeof(cl_long)}, cl_int{least});
  const KernelInfo& p2 = program.kernel(join({"iamax_p2", sfx}));
  const std::size_t local = final_local(launch, p2, elem + sizeof(cl_long));
  launch.run_groups(p2, 1, local, values, indices, static_cast<cl_long>(shape.groups), mem_of(result),
                    offset_of(result), LocalBytes{local * elem}, LocalBytes{local * sizeof(cl_long)}, cl_int{least});
}

void axpy(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_axpy>(launch.call());
  const DType dtype = args.x.dtype;
  const std::string sfx = suffix(dtype);
  const Vec x = vec(args.x), y = vec(args.y);
  if (x.n == 0) return;
  const ProgramPackage& program = launch.program(kBlasProgram, dtype);
  const Scalar alpha{dtype, args.alpha};
  if (x.stride == 1 && y.stride == 1) {
    launch.run_chunks_in_place(program.kernel(join({"axpy_c", sfx})), static_cast<std::size_t>(x.n), x.mem,
                               x.offset, y.mem, y.offset, x.n, alpha);
  } else {
    launch.run(program.kernel(join({"axpy_s", sfx})), static_cast<std::size_t>(x.n), x.mem, x.offset, x.stride, y.mem,
               y.offset, y.stride, x.n, alpha);
  }
}

void scal(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_scal>(launch.call());
  const DType dtype = args.x.dtype;
  const std::string sfx = suffix(dtype);
  const Vec x = vec(args.x);
  if (x.n == 0) return;
  const ProgramPackage& program = launch.program(kBlasProgram, dtype);
  const Scalar alpha{dtype, args.alpha};
  if (x.stride == 1) {
    launch.run_chunks_in_place(program.kernel(join({"scal_c", sfx})), static_cast<std::size_t>(x.n), x.mem,
                               x.offset, x.n, alpha);
  } else {
    launch.run(program.kernel(join({"scal_s", sfx})), static_cast<std::size_t>(x.n), x.mem, x.offset, x.stride, x.n, alpha);
  }
}

void swap(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_swap>(launch.call());
  const Vec x = vec(args.x), y = vec(args.y);
  if (x.n == 0) return;
  const ProgramPackage& program = launch.program(kBlasProgram, args.x.dtype);
  launch.run(program.kernel(join({"swap_s", suffix(args.x.dtype)})), static_cast<std::size_t>(x.n), x.mem, x.offset,
             x.stride, y.mem, y.offset, y.stride, x.n);
}

void rot(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_rot>(launch.call());
  const DType dtype = args.x.dtype;
  const Vec x = vec(args.x), y = vec(args.y);
  if (x.n == 0) return;
  const ProgramPackage& program = launch.program(kBlasProgram, dtype);
  launch.run(program.kernel(join({"rot_s", suffix(dtype)})), static_cast<std::size_t>(x.n), x.mem, x.offset, x.stride,
             y.mem, y.offset, y.stride, x.n, Scalar{dtype, args.c}, Scalar{dtype, args.s});
}

// y = alpha*op(a)*x + beta*y (kernels/blas.cl: gemv_n, gemv_t).
void gemv(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_gemv>(launch.call());
  const TensorArg& a = args.a;
  const DType dtype = a.dtype;
  const std::int64_t m = a.view.dims()[0], n = a.view.dims()[1];
  const cl_long lda = m > 1 ? a.view.strides()[0] : std::max<std::int64_t>(n, 1);
  const Vec x = vec(args.x), y = vec(args.y);
  if (y.n == 0) return;
  const ProgramPackage& program = launch.program(kBlasProgram, dtype);
  const Scalar alpha{dtype, args.alpha}, beta{dtype, args.beta};
  if (args.transpose_a == 0) {
    const KernelInfo& kernel = program.kernel(join({"gemv_n", suffix(dtype)}));
    const std::size_t local = final_local(launch, kernel, size_of(dtype));
    launch.run_groups(kernel, static_cast<std::size_t>(m), local, mem_of(a), offset_of(a), lda,
                      static_cast<cl_long>(n), x.mem, x.offset, x.stride, y.mem, y.offset, y.stride, alpha, beta,
                      LocalBytes{local * size_of(dtype)});
  } else {
    launch.run(program.kernel(join({"gemv_t", suffix(dtype)})), static_cast<std::size_t>(n), mem_of(a), offset_of(a),
               lda, static_cast<cl_long>(m), static_cast<cl_long>(n), x.mem, x.offset, x.stride, y.mem, y.offset,
               y.stride, alpha, beta);
  }
}

}  // namespace

EventPtr launch_blas(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::blas_asum: {
      const auto args = plugin::unpack<plugin::args::blas_asum>(launch.call());
      sum_reduction(launch, "asum", args.x, nullptr, args.result);
      break;
    }
    case OpId::blas_dot: {
      const auto args = plugin::unpack<plugin::args::blas_dot>(launch.call());
      sum_reduction(launch, "dot", args.x, &args.y, args.result);
      break;
    }
    case OpId::blas_nrm2: {
      const auto args = plugin::unpack<plugin::args::blas_nrm2>(launch.call());
      sum_reduction(launch, "nrm2", args.x, nullptr, args.result);
      break;
    }
    case OpId::blas_iamax:
      extreme_index<plugin::args::blas_iamax>(launch, false);
      break;
    case OpId::blas_iamin:
      extreme_index<plugin::args::blas_iamin>(launch, true);
      break;
    case OpId::blas_axpy:
      axpy(launch);
      break;
    case OpId::blas_scal:
      scal(launch);
      break;
    case OpId::blas_swap:
      swap(launch);
      break;
    case OpId::blas_rot:
      rot(launch);
      break;
    case OpId::blas_gemv:
      gemv(launch);
      break;
    case OpId::blas_copy: {
      const auto args = plugin::unpack<plugin::args::blas_copy>(launch.call());
      enqueue_copy(launch, args.x, args.y);
      break;
    }
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a blas level-1 op");
  }
  return launch.finish();
}

namespace {

constinit const OpKernel kBlas{launch_blas, {&kBlasProgram}};
constinit const OpKernel kBlasCopy{launch_blas, {&kCopyProgram}};
// (c = beta*c alone, when there is nothing to multiply, runs a blas kernel:
// that program is built at first use, under the launch lock.)
constinit const OpKernel kGemm{launch_gemm, {&kGemmProgram}};

}  // namespace

void register_blas(KernelTable& table) {
  for (OpId op : {OpId::blas_asum, OpId::blas_axpy, OpId::blas_dot, OpId::blas_nrm2, OpId::blas_scal, OpId::blas_swap,
                  OpId::blas_iamax, OpId::blas_iamin, OpId::blas_rot, OpId::blas_gemv})
    set_dtypes(table, op, kRealDtypes, &kBlas);
  // blas::copy runs kernels/copy.cl (enqueue_copy).
  set_dtypes(table, OpId::blas_copy, kRealDtypes, &kBlasCopy);
  set_dtypes(table, OpId::blas_gemm, kRealDtypes, &kGemm);
  set_dtypes(table, OpId::blas_gemm_batched, kRealDtypes, &kGemm);
  register_gemm_half(table);
}

}  // namespace xylem::opencl
