#include "dist/device_link.hpp"

#include <cstdint>
#include <cstring>

#include "core/registry.hpp"
#include "core/storage.hpp"
#include "dist/work_queue.hpp"

namespace xylem::dist::detail {
namespace {

using plugin::dist::Deadline;
using plugin::dist::Transport;

// Runs `body` on the host transport (on the work queue, where every host
// call runs) and waits for it.
void on_host(const Group& group, const char* call, const std::function<void(Transport&, Deadline)>& body) {
  enqueue([&] { group.run(Signature{call, {}, DType::i32}, body); })->wait();
}

// True when every rank says true.
bool all_agree(const Group& group, bool mine) {
  std::int32_t flag = mine ? 1 : 0;
  on_host(group, "nccl start", [&](Transport& t, Deadline d) {
    t.all_reduce(&flag, 1, DType::i32, plugin::dist::Combine::min, d);
  });
  return flag == 1;
}

// Rank 0's group id, on every rank.
std::vector<std::byte> shared_id(const Group& group, plugin::dist::DeviceCollectives& lib) {
  std::vector<std::byte> id;
  std::uint64_t bytes = 0;
  if (group.transport().rank() == 0) {
    id = lib.new_group_id();
    bytes = id.size();
  }
  on_host(group, "nccl id", [&](Transport& t, Deadline d) {
    t.broadcast(&bytes, sizeof bytes, 0, d);
    id.resize(bytes);
    t.broadcast(id.data(), id.size(), 0, d);
  });
  return id;
}

Link::DeviceSlot start(const Group& group, plugin::Device& device) {
  Link::DeviceSlot slot;
  plugin::dist::DeviceCollectives* lib = collectives_of(device, slot.why);
  // Every rank must take the same road, or some would wait in NCCL and
  // the others in the host transport.
  if (!all_agree(group, lib != nullptr)) {
    if (lib != nullptr) slot.why = "another rank of the group cannot load " + std::string(lib->name());
    return slot;
  }
  const std::vector<std::byte> id = shared_id(group, *lib);
  const auto deadline = plugin::dist::Clock::now() + group.timeout();
  try {
    slot.transport = lib->join(id, device, group.transport().rank(), group.transport().size(), deadline);
  } catch (const Error& e) {
    if (group.device() == "nccl") throw;
    slot.why = e.what();
  }
  if (!all_agree(group, slot.transport != nullptr)) {
    slot.transport.reset();
    if (slot.why.empty()) slot.why = "another rank of the group could not join its " + std::string(lib->name()) + " group";
  }
  return slot;
}

}  // namespace

plugin::dist::DeviceCollectives* collectives_of(const plugin::Device& device, std::string& why) {
  const xylem::detail::FrameworkEntry* entry = xylem::detail::find_framework(device.hardware().framework);
  if (entry == nullptr || entry->framework == nullptr) {
    why = device.hardware().framework + " is not loaded";
    return nullptr;
  }
  return entry->framework->collectives(why);
}

plugin::Device* collective_device(const Tensor& t) {
  xylem::detail::Storage& s = *t.storage();
  std::lock_guard lock(s.mutex);
  plugin::Device* allocated = nullptr;
  for (const auto& copy : s.copies()) {
    if (copy.data == nullptr || copy.device->hardware().framework == xylem::detail::host_device().hardware().framework)
      continue;
    std::string why;
    if (collectives_of(*copy.device, why) == nullptr) continue;
    if (s.written() && copy.version == s.latest()) return copy.device;
    if (!s.written() && allocated == nullptr) allocated = copy.device;
  }
  return allocated;
}

std::shared_ptr<plugin::dist::DeviceTransport> device_transport(const Group& group, plugin::Device& device) {
  if (group.device() == "host") return nullptr;
  Link& link = *group.link();
  std::lock_guard lock(link.devices_mutex);
  auto it = link.devices.find(&device);
  if (it == link.devices.end()) it = link.devices.emplace(&device, start(group, device)).first;
  if (!it->second.transport && group.device() == "nccl")
    throw Error(ErrorCode::plugin_unavailable,
                "dist: nccl cannot serve " + device.hardware().id() + ": " + it->second.why);
  return it->second.transport;
}

}  // namespace xylem::dist::detail
