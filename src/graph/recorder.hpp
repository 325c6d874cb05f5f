#pragma once
// The capture in progress on this thread (xylem/capture.hpp), as the paths
// that launch work see it: OpLaunch records each call here, host reads and
// collectives ask whether they are refused.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/plugin/plugin.hpp"

namespace xylem::detail {

class Storage;
struct GraphState;
class Recorder;

// One storage a call touches (several arguments may share one): whether
// the call reads it (a partial write reads the rest) and whether it writes.
struct RecordedUse {
  const std::shared_ptr<Storage>* storage = nullptr;
  bool reads = false;
  bool writes = false;
};

// While one lives, this thread records nothing: work it launches that is
// not the block's own (a fused chain made before the capture began, run by a
// flush inside it) runs as usual.
class RecorderPause {
 public:
  RecorderPause() noexcept;
  ~RecorderPause();
  RecorderPause(const RecorderPause&) = delete;
  RecorderPause& operator=(const RecorderPause&) = delete;

 private:
  Recorder* paused_;
};

class Recorder {
 public:
  // Starts recording on `device` (unsupported, naming the framework, where
  // it cannot replay) and makes this the thread's capture; invalid_argument
  // when the thread already captures.
  Recorder(plugin::Device& device, std::string backend_id);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Before a call runs: refuses a call on another device than the
  // capture's, and one the framework cannot record. `op` names the call.
  void admit(const plugin::Device& device, const plugin::OpCall& call, std::string_view op);
  // Refuses a call whose input is current only on another device: the
  // transfer would not be part of the graph.
  void refuse_transfer(std::string_view op, std::string_view argument);
  // After the call ran: it joins the graph. use_of[k] is tensor k's entry
  // in `uses`, or -1 for an absent optional argument.
  void add(const plugin::OpCall& call, std::span<const RecordedUse> uses, std::span<const int> use_of);
  // A library's own launch on `device` (a collective) joins the graph:
  // `enqueue` puts it on the capture's native queue with the data pointers
  // it has now, so the storages of `uses` are never rebound. Refuses it
  // (unsupported) where the framework's graphs cannot hold one. `what`
  // names the call.
  void add_native(const plugin::Device& device, std::function<void(void*)> enqueue,
                  std::span<const RecordedUse> uses, std::string_view what);
  // Remembers the first error raised inside the block (the capture is then
  // refused, even where the block catches it) and returns it to be thrown.
  Error fail(Error error) noexcept;
  // The graph, or the first failure.
  [[nodiscard]] std::shared_ptr<GraphState> finish();

 private:
  // The graph's entry for a use's storage (added on first sight), its
  // flags updated by the use.
  std::size_t bind(const RecordedUse& use);

  // A native step whose tensors no later op has touched yet: the graph
  // may run the ops meanwhile beside it (Recording::join_native).
  struct Unjoined {
    std::size_t native;                 // among the native steps
    std::vector<std::size_t> storages;  // indices into the graph's storages
  };

  std::shared_ptr<GraphState> graph_;
  std::unique_ptr<Error> failure_;
  std::vector<Unjoined> unjoined_;
  std::size_t natives_ = 0;
  Recorder* outer_;
};

// The capture running on this thread, or null (the common case: one
// thread-local load).
[[nodiscard]] Recorder* active_recorder() noexcept;

// Throws unsupported when this thread is capturing: `what` (a host read, a
// collective) cannot be part of a replayed graph.
void refuse_in_capture(std::string_view what);

}  // namespace xylem::detail
