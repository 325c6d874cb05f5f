#include "recording.hpp"

#include <string>

#include "device.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {

GraphExec::~GraphExec() {
  // Errors ignored: the runtime may be gone at exit (see queue.cpp).
  try {
    if (last_launch) last_launch->wait();
  } catch (...) {
  }
  (void)cudaGraphExecDestroy(exec_);
}

void CudaRecording::add(const plugin::OpCall& call) { steps_.push_back({device_.kernel_of(call), {}, {}}); }

void CudaRecording::add_native(std::function<void(void*)> enqueue) {
  steps_.push_back({nullptr, std::move(enqueue), {}});
}

void CudaRecording::join_native(std::size_t native, std::size_t step) {
  if (step >= steps_.size())
    throw Error(ErrorCode::internal, "cuda recording: a join before step " + std::to_string(step) + " of " +
                                         std::to_string(steps_.size()));
  steps_[step].joins.push_back(native);
  graph_.reset();  // captured again with the join
}

EventPtr CudaRecording::replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) {
  if (calls.size() != steps_.size())
    throw Error(ErrorCode::internal, "cuda replay: " + std::to_string(calls.size()) + " calls for " +
                                         std::to_string(steps_.size()) + " recorded");
  // The prepared commands name the data pointers they were prepared for.
  const bool rebound = bound_.changed(calls);
  if (!graph_ || rebound) {
    graph_.reset();  // none, should capturing fail: the next replay tries again
    graph_ = device_.capture_graph(calls, steps_);
  }
  graph_->last_launch = device_.launch_graph(*graph_, deps);
  return graph_->last_launch;
}

}  // namespace xylem::cuda
