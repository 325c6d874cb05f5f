#pragma once
// A framework's kernels, one slot per (op, dtype): what `supports` answers
// from and what `launch` calls. Each framework fills it once, family by
// family (register_blas, register_activation, ...), with its own kernel
// signature.
#include <array>
#include <cstddef>
#include <initializer_list>

#include "xylem/dtype.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::plugin {

template <class Kernel>
class KernelTable {
 public:
  void set(OpId op, DType dtype, Kernel k) noexcept { slots_[index(op)][index(dtype)] = k; }
  [[nodiscard]] Kernel get(OpId op, DType dtype) const noexcept {
    return index(op) < kOpCount ? slots_[index(op)][index(dtype)] : nullptr;
  }

 private:
  static constexpr std::size_t index(OpId op) noexcept { return static_cast<std::size_t>(op); }
  static constexpr std::size_t index(DType t) noexcept { return static_cast<std::size_t>(t); }
  std::array<std::array<Kernel, kDTypeCount>, kOpCount> slots_{};
};

// A table filled by each op family's registration function, in order.
template <class Kernel>
[[nodiscard]] KernelTable<Kernel> make_kernel_table(
    std::initializer_list<void (*)(KernelTable<Kernel>&)> families) {
  KernelTable<Kernel> table;
  for (auto register_family : families) register_family(table);
  return table;
}

// The dtype a call dispatches on: that of its first tensor argument.
[[nodiscard]] inline DType dispatch_dtype(const OpCall& call) noexcept { return call.t[0].dtype; }

}  // namespace xylem::plugin
