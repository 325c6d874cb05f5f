// Shared launch helpers of the nn families (nn_launch.hpp).
#include "frameworks/opencl/ops/nn_launch.hpp"

#include <algorithm>
#include <string>

namespace xylem::opencl {

ViewArg view_arg(const plugin::TensorArg& t) noexcept {
  ViewArg v;
  if (!t.data) return v;
  v.offset = t.view.offset();
  const auto strides = t.view.strides();
  for (std::size_t i = 0; i < strides.size() && i < 4; ++i) v.s[i] = strides[i];
  return v;
}

Mem temporary_buffer(Launcher& launch, std::int64_t elements, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * size_of(dtype);
  const DeviceInfo& info = launch.device().info();
  if (info.max_alloc && bytes > info.max_alloc)
    throw Error(ErrorCode::out_of_memory, launch.describe() + ": a temporary buffer of " + std::to_string(bytes) +
                                              " bytes; the device allows at most " + std::to_string(info.max_alloc) +
                                              " in one buffer");
  cl_int status = CL_SUCCESS;
  Mem mem(clCreateBuffer(launch.device().context(), CL_MEM_READ_WRITE, bytes, nullptr, &status));
  check(status, [&] { return launch.describe() + ": a temporary buffer of " + std::to_string(bytes) + " bytes"; });
  return mem;
}

std::size_t reduction_group_size(const Device& device, const KernelInfo& kernel, std::int64_t n) {
  const bool cpu = (device.info().type & CL_DEVICE_TYPE_CPU) != 0;
  const std::size_t most = std::min<std::size_t>(kernel.max_local, cpu ? 64 : 256);
  std::size_t local = 1;
  while (local * 2 <= most && static_cast<std::int64_t>(local) < n) local *= 2;
  return local;
}

}  // namespace xylem::opencl
