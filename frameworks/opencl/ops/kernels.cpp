// The OpenCL kernel table, built once on first use (thread-safe: a
// function-local static) from every op family's registration.
#include "frameworks/opencl/ops/kernels.hpp"

namespace xylem::opencl {

void set_dtypes(KernelTable& table, plugin::OpId op, std::span<const DType> dtypes,
                const OpKernel* kernel) {
  for (DType dtype : dtypes) table.set(op, dtype, kernel);
}

const KernelTable& kernels() {
  static const KernelTable table = plugin::make_kernel_table<const OpKernel*>(
      {register_creation, register_copy, register_blas, register_elementwise, register_cast, register_reduce,
       register_softmax, register_dropout, register_cross_entropy, register_layer_norm, register_batch_norm,
       register_conv2d, register_pool, register_lrn, register_optim, register_index,
       register_attention, register_rnn, register_blas_extra, register_fused});
  return table;
}

}  // namespace xylem::opencl
