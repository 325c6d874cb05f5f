#pragma once
// Native replay of captured work (xylem/capture.hpp): each call's kernel is
// looked up once, when the call is recorded; a replay is one queue task
// that calls the kernels in order, with no table lookup, dependency check
// or hand-off per call.
#include <memory>
#include <vector>

#include "frameworks/native/queue.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

// The kernel of `call`; unsupported, naming the op and dtype, where native has none.
[[nodiscard]] Kernel kernel_of(const plugin::OpCall& call);

class NativeRecording final : public plugin::Recording {
 public:
  explicit NativeRecording(NativeQueue& queue) : queue_(queue) {}
  void add(const plugin::OpCall& call) override;
  EventPtr replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) override;

 private:
  NativeQueue& queue_;
  // Shared with the replays in flight, which may outlive the recording.
  std::shared_ptr<std::vector<Kernel>> kernels_ = std::make_shared<std::vector<Kernel>>();
};

}  // namespace xylem::native
