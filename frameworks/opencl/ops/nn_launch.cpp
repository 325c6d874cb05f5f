// Shared launch helpers of the nn families (nn_launch.hpp).
#include "frameworks/opencl/ops/nn_launch.hpp"

#include <algorithm>

namespace xylem::opencl {

ViewArg view_arg(const plugin::TensorArg& t) noexcept {
  ViewArg v;
  if (!t.data) return v;
  v.offset = t.view.offset();
  const auto strides = t.view.strides();
  for (std::size_t i = 0; i < strides.size() && i < 4; ++i) v.s[i] = strides[i];
  return v;
}

std::size_t reduction_group_size(const Device& device, const KernelInfo& kernel, std::int64_t n) {
  const bool cpu = (device.info().type & CL_DEVICE_TYPE_CPU) != 0;
  const std::size_t most = std::min<std::size_t>(kernel.max_local, cpu ? 64 : 256);
  std::size_t local = 1;
  while (local * 2 <= most && static_cast<std::int64_t>(local) < n) local *= 2;
  return local;
}

}  // namespace xylem::opencl
