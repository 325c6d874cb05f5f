// The native kernel table, built once on first use (thread-safe: a
// function-local static) from every op family's registration.
#include "frameworks/native/ops/kernels.hpp"

namespace xylem::native {

const KernelTable& kernels() {
  static const KernelTable table =
      plugin::make_kernel_table<Kernel>({register_creation, register_copy, register_blas, register_elementwise, register_cast,
                                         register_reduce, register_softmax, register_dropout, register_cross_entropy,
                                         register_layer_norm, register_batch_norm, register_conv2d, register_pool,
                                         register_lrn});
  return table;
}

}  // namespace xylem::native
