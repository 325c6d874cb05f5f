#pragma once
// Which transport a collective on a tensor takes, and the device
// transports of a group: NCCL for tensors whose data lives on a CUDA GPU,
// started on the first such call from an id that rank 0 makes and the
// group's host transport broadcasts.
#include <memory>
#include <string>

#include "dist/group.hpp"
#include "xylem/plugin/dist.hpp"
#include "xylem/tensor.hpp"

namespace xylem::dist::detail {

// The collectives library of `device`'s framework, or null with `why`.
[[nodiscard]] plugin::dist::DeviceCollectives* collectives_of(const plugin::Device& device, std::string& why);

// The device whose collectives serve `t`: the device of its current copy
// when that device's framework has collectives (a tensor never written:
// one it has memory on), else null (the host transport).
[[nodiscard]] plugin::Device* collective_device(const Tensor& t);

// The group's transport on `device`, started on first use (collective:
// every rank calls it at the same point, which the first collective on a
// GPU tensor is). Null when the host transport serves the device: the
// group's Options::device is "host", or some rank cannot start the library
// (then every rank falls back, so they agree). With Options::device
// "nccl", that is an error instead (plugin_unavailable, or the library's
// own timeout or communication error).
[[nodiscard]] std::shared_ptr<plugin::dist::DeviceTransport> device_transport(const Group& group,
                                                                            plugin::Device& device);

}  // namespace xylem::dist::detail
