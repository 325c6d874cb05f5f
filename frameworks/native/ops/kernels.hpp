#pragma once
// The native framework's kernel table: one slot per (op, dtype). Each op
// family file (blas.cpp, activation.cpp, creation.cpp, copy.cpp) fills its
// slots in register_<family>(). Kernels run on the device's queue thread and
// may use oneTBB for parallelism inside.
#include <array>

#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

using Kernel = void (*)(const plugin::OpCall& call);

class KernelTable {
 public:
  void set(plugin::OpId op, DType dtype, Kernel k) noexcept { slots_[index(op)][index(dtype)] = k; }
  [[nodiscard]] Kernel get(plugin::OpId op, DType dtype) const noexcept {
    return slots_[index(op)][index(dtype)];
  }

 private:
  static constexpr std::size_t index(plugin::OpId op) noexcept { return static_cast<std::size_t>(op); }
  static constexpr std::size_t index(DType t) noexcept { return static_cast<std::size_t>(t); }
  std::array<std::array<Kernel, kDTypeCount>, plugin::kOpCount> slots_{};
};

// The dtype a call dispatches on: that of its first tensor argument.
[[nodiscard]] inline DType dispatch_dtype(const plugin::OpCall& call) noexcept { return call.t[0].dtype; }

void register_creation(KernelTable& table);
void register_copy(KernelTable& table);
void register_blas(KernelTable& table);
void register_activation(KernelTable& table);

// The table with every family registered (built once).
[[nodiscard]] const KernelTable& kernels();

// Typed element pointer of an argument: data + view offset.
template <class T>
[[nodiscard]] inline T* element_ptr(const plugin::TensorArg& a) noexcept {
  return static_cast<T*>(a.data) + a.view.offset();
}

}  // namespace xylem::native
