// The native kernel table, built once on first use (thread-safe: a
// function-local static) from every op family's registration.
#include "frameworks/native/ops/kernels.hpp"

namespace xylem::native {

const KernelTable& kernels() {
  static const KernelTable table =
      plugin::make_kernel_table<Kernel>({register_creation, register_copy, register_blas, register_activation});
  return table;
}

}  // namespace xylem::native
