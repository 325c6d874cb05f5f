#pragma once
// The mirror framework's device collectives: a group of one, the least a
// device transport can be, so that the core's device road (routing, the
// ordering of collectives against ops, the agreement to fall back to the
// host transport when a group cannot start) is tested on any machine,
// not only where NCCL and a GPU are.
#include "xylem/plugin/dist.hpp"

namespace mirror {

[[nodiscard]] xylem::plugin::dist::DeviceCollectives& collectives();

}  // namespace mirror
