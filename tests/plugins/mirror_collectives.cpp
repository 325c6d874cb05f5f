#include "mirror_collectives.hpp"

#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "xylem/error.hpp"

namespace mirror {
namespace {

using xylem::DType;
using xylem::Error;
using xylem::ErrorCode;
using xylem::plugin::Deps;
using xylem::plugin::dist::Deadline;
using xylem::plugin::dist::DeviceWork;
using xylem::plugin::dist::Reduction;

// Each call is one task on the device's queue, after `deps`: a group of
// one combines a tensor with itself (avg divides by one), so only the
// calls with an output apart from their input move bytes.
class GroupOfOne final : public xylem::plugin::dist::DeviceTransport {
 public:
  explicit GroupOfOne(xylem::plugin::Device& device) : device_(device) {}
  int rank() const noexcept override { return 0; }
  int size() const noexcept override { return 1; }
  std::string_view name() const noexcept override { return "mirror"; }

  DeviceWork all_reduce(void*, std::size_t, DType, Reduction, Deps deps, Deadline) override { return copy({}, {}, 0, deps); }
  DeviceWork broadcast(void*, std::size_t, int, Deps deps, Deadline) override { return copy({}, {}, 0, deps); }
  DeviceWork reduce(void*, std::size_t, DType, Reduction, int, Deps deps, Deadline) override {
    return copy({}, {}, 0, deps);
  }
  DeviceWork all_gather(const void* in, void* out, std::size_t bytes, Deps deps, Deadline) override {
    return copy(in, out, bytes, deps);
  }
  DeviceWork reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Reduction, Deps deps,
                            Deadline) override {
    return copy(in, out, count * xylem::size_of(dtype), deps);
  }
  DeviceWork send(const void*, std::size_t, int peer, Deps, Deadline) override { throw no_peer(peer); }
  DeviceWork recv(void*, std::size_t, int peer, Deps, Deadline) override { throw no_peer(peer); }

  // The calls' copies, collected now, made again at each replay (where the
  // replay's task runs: the queue is not needed).
  std::function<void(void*)> recorded(std::span<const std::function<DeviceWork()>> calls) override {
    std::vector<std::function<void()>> copies;
    collecting_ = &copies;
    try {
      for (const auto& call : calls) (void)call();
    } catch (...) {
      collecting_ = nullptr;
      throw;
    }
    collecting_ = nullptr;
    return [copies = std::move(copies)](void*) {
      for (const auto& c : copies) c();
    };
  }

 private:
  DeviceWork copy(const void* in, void* out, std::size_t bytes, Deps deps) {
    auto work = [in, out, bytes] {
      if (bytes > 0) std::memcpy(out, in, bytes);
    };
    if (collecting_ != nullptr) {
      collecting_->push_back(work);
      return {};
    }
    xylem::EventPtr done = device_.host_task(work, deps);
    return DeviceWork{done, done};
  }
  std::vector<std::function<void()>>* collecting_ = nullptr;  // while recorded() runs
  static Error no_peer(int peer) {
    return Error(ErrorCode::invalid_argument, "mirror: no rank " + std::to_string(peer) + " in a group of one");
  }
  xylem::plugin::Device& device_;
};

class Collectives final : public xylem::plugin::dist::DeviceCollectives {
 public:
  std::string_view name() const noexcept override { return "mirror"; }
  std::string description() const override { return "mirror collectives (a group of one)"; }
  std::vector<std::byte> new_group_id() override { return {std::byte{1}}; }
  std::unique_ptr<xylem::plugin::dist::DeviceTransport> join(std::span<const std::byte>, xylem::plugin::Device& device,
                                                             int, int size, Deadline) override {
    if (size != 1)
      throw Error(ErrorCode::communication, "mirror: its collectives serve a group of one, not " + std::to_string(size));
    return std::make_unique<GroupOfOne>(device);
  }
};

}  // namespace

xylem::plugin::dist::DeviceCollectives& collectives() {
  static Collectives once;
  return once;
}

}  // namespace mirror
