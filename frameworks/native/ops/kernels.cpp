// The native kernel table, built once on first use (thread-safe: a
// function-local static) from every op family's registration.
#include "frameworks/native/ops/kernels.hpp"

namespace xylem::native {

const KernelTable& kernels() {
  static const KernelTable table = [] {
    KernelTable t;
    register_creation(t);
    register_copy(t);
    register_blas(t);
    register_activation(t);
    return t;
  }();
  return table;
}

}  // namespace xylem::native
