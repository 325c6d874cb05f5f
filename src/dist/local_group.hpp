#pragma once
// A group whose ranks all live in this process (Communicator::local): one
// rank per device, driven by one thread or several. Each collective runs
// once every rank has called it, as one launch over every rank's tensors:
// on the devices' collectives library (NCCL) when each rank's tensors live
// on its device, else on the host copies, combined in this process.
// A rank's call returns at once, recording a stand-in (stand_in.hpp) on
// its tensors and in its future until the last rank's call launches it.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/check.hpp"
#include "dist/tensor_uses.hpp"
#include "xylem/dist.hpp"
#include "xylem/plugin/dist.hpp"

namespace xylem::dist::detail {

// What one rank passes to one collective.
struct LocalCall {
  enum class Kind { all_reduce, broadcast, reduce, all_gather, reduce_scatter, barrier };
  Kind kind = Kind::barrier;
  Signature signature;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  // all_reduce: the tensors, each in place (a bucket has several);
  // broadcast, reduce: the tensor; all_gather, reduce_scatter: in, out.
  std::vector<TensorUse> uses;
};

class LocalGroup {
 public:
  // Ranks 0..devices.size()-1, rank i on devices[i]: distinct devices of
  // one framework (the host device may repeat: its ranks share host
  // memory). Starts the framework's collectives over them when it has
  // some. Throws invalid_argument (no device, several frameworks, a
  // device twice), or what starting the library throws.
  // `device_policy` is Options::device: "host" keeps every collective on
  // the host copies, "nccl" makes a missing library an error.
  LocalGroup(std::vector<plugin::Device*> devices, std::chrono::milliseconds timeout, const std::string& device_policy);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  [[nodiscard]] int size() const noexcept { return static_cast<int>(devices_.size()); }
  // "nccl" where the devices' library serves the group, else "local".
  [[nodiscard]] std::string_view transport() const noexcept;

  // Rank `rank`'s part of its next collective; the event its future holds.
  // Throws before recording anything (uninitialized_read and the like).
  EventPtr submit(int rank, LocalCall call);

 public:  // what the launch helpers of local_group.cpp see
  struct Part;
  struct Batch;

 private:
  void launch_ready();
  void launch(Batch& batch);
  void launch_on_host(Batch& batch);
  void launch_on_devices(Batch& batch);

  std::vector<plugin::Device*> devices_;
  std::chrono::milliseconds timeout_;
  plugin::dist::DeviceCollectives* library_ = nullptr;  // null: host copies only
  std::vector<std::shared_ptr<plugin::dist::DeviceTransport>> transports_;

  std::mutex mutex_;  // calls_, batches_
  std::vector<std::uint64_t> calls_;  // per rank: its collectives so far
  std::map<std::uint64_t, Batch> batches_;
  std::mutex launch_mutex_;  // batches launch one at a time, in order
  std::uint64_t next_launch_ = 0;
};

}  // namespace xylem::dist::detail
