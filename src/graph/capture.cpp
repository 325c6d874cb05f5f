// Capture (the block runs once while OpLaunch records its calls: recorder.*)
// and replay: the graph's storages are made current and ordered once per
// replay, then the framework runs every call as one piece of work.
#include "xylem/capture.hpp"

#include <algorithm>
#include <functional>
#include <string>

#include "core/fusion.hpp"
#include "graph/graph_state.hpp"
#include "graph/recorder.hpp"
#include "xylem/error.hpp"

namespace xylem {

Graph capture(const Backend& backend, const std::function<void()>& block) {
  detail::flush_fusion();  // calls made before the capture are not part of it
  detail::Recorder recorder(plugin::device_of(backend), backend.id());
  try {
    block();
    detail::end_capture_fusion(/*run=*/true);  // the block's pending calls, into the graph
  } catch (const Error& e) {
    detail::end_capture_fusion(/*run=*/false);
    (void)recorder.fail(e);
  } catch (...) {
    detail::end_capture_fusion(/*run=*/false);
    throw;
  }
  return Graph(recorder.finish());
}

std::size_t Graph::size() const noexcept { return state_ ? state_->steps.size() : 0; }

void Graph::rebind(const Tensor& captured, const Tensor& replacement) {
  if (!state_) throw Error(ErrorCode::invalid_argument, "Graph::rebind: the graph is empty");
  if (!captured.defined() || !replacement.defined())
    throw Error(ErrorCode::invalid_argument, "Graph::rebind: both tensors must be defined");
  std::lock_guard lock(state_->mutex);
  auto& storages = state_->storages;
  const auto uses = [&](const Tensor& t) {
    return std::find_if(storages.begin(), storages.end(),
                        [&](const detail::GraphState::Bound& b) { return b.storage == t.storage(); });
  };
  const auto bound = uses(captured);
  if (bound == storages.end())
    throw Error(ErrorCode::invalid_argument, "Graph::rebind: the captured tensor (shape " +
                                                 captured.layout().dims_string() + ") is not used by the graph");
  const std::string both = " (captured: shape " + captured.layout().dims_string() + ", strides " +
                           captured.layout().strides_string() + ", " + std::string(name(captured.dtype())) +
                           "; replacement: shape " + replacement.layout().dims_string() + ", strides " +
                           replacement.layout().strides_string() + ", " + std::string(name(replacement.dtype())) + ")";
  if (replacement.dtype() != captured.dtype())
    throw Error(ErrorCode::dtype_mismatch, "Graph::rebind: the replacement's dtype differs" + both);
  if (!(replacement.layout() == captured.layout()) ||
      replacement.storage()->bytes() != captured.storage()->bytes())
    throw Error(ErrorCode::shape_mismatch,
                "Graph::rebind: the replacement's shape, strides, offset or storage size differ" + both);
  if (bound->pinned && replacement.storage() != captured.storage())
    throw Error(ErrorCode::invalid_argument,
                "Graph::rebind: the captured tensor takes part in a collective of the graph, whose launch holds its "
                "address; copy the new data into it instead" + both);
  if (replacement.storage() != captured.storage() && uses(replacement) != storages.end())
    throw Error(ErrorCode::invalid_argument,
                "Graph::rebind: the replacement shares its storage with another tensor of the graph" + both);
  bound->storage = replacement.storage();
}

EventPtr Graph::replay() {
  if (!state_) throw Error(ErrorCode::invalid_argument, "Graph::replay: the graph is empty");
  detail::flush_fusion();
  detail::GraphState& g = *state_;
  std::lock_guard serial(g.mutex);
  const std::size_t n = g.storages.size();

  // Lock every storage, in address order as OpLaunch does, so a replay and
  // an op never deadlock.
  std::vector<detail::GraphState::Bound*> order;
  order.reserve(n);
  for (auto& b : g.storages) order.push_back(&b);
  std::sort(order.begin(), order.end(),
            [](const auto* a, const auto* b) { return std::less<>()(a->storage.get(), b->storage.get()); });
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(n);
  for (auto* b : order) locks.emplace_back(b->storage->mutex);

  // Everything that can fail comes before any tensor changes.
  std::vector<detail::DeviceCopy*> copies(n);
  for (std::size_t s = 0; s < n; ++s) {
    detail::Storage& storage = *g.storages[s].storage;
    if (g.storages[s].reads && !storage.written())
      throw Error(ErrorCode::uninitialized_read, "Graph::replay on " + g.backend_id + ": an input of " +
                                                     std::to_string(storage.bytes()) +
                                                     " bytes was never written (a rebound tensor?)");
    copies[s] = &storage.allocated_copy(*g.device);
  }
  for (std::size_t s = 0; s < n; ++s)
    if (g.storages[s].reads) g.storages[s].storage->make_current(*copies[s]);

  // The graph's dependencies, gathered once: the last write of what it
  // reads, and for what it writes the last write and the reads since.
  detail::EventList deps;
  for (std::size_t s = 0; s < n; ++s) {
    const detail::DeviceCopy& copy = *copies[s];
    // As OpLaunch: a write kept only for order is dropped once done, so a
    // failed replay does not fail every later one through its temporaries.
    if (g.storages[s].reads || (copy.last_write && !copy.last_write->ready())) deps.push(copy.last_write);
    if (g.storages[s].writes)
      for (const EventPtr& read : copy.reads)
        if (!read->ready()) deps.push(read);
  }

  std::vector<plugin::OpCall> calls(g.steps.size());
  for (std::size_t i = 0; i < g.steps.size(); ++i) {
    const detail::GraphState::Step& step = g.steps[i];
    plugin::OpCall& call = calls[i];
    call.op = step.call.op;
    call.num_tensors = step.call.num_tensors;
    for (std::size_t k = 0; k < step.call.num_tensors; ++k) {
      call.t[k] = step.call.t[k];
      if (step.storage[k] >= 0) call.t[k].data = copies[static_cast<std::size_t>(step.storage[k])]->data;
    }
    call.f = step.call.f;
    call.i = step.call.i;
  }
  const EventPtr done = g.recording->replay(std::move(calls), deps.span());
  for (std::size_t s = 0; s < n; ++s) {
    if (g.storages[s].writes) {
      g.storages[s].storage->mark_written(*copies[s], done);
    } else {
      copies[s]->add_read(done);
    }
  }
  return done;
}

}  // namespace xylem
