#include "graph/recorder.hpp"

#include <algorithm>
#include <string>

#include "graph/graph_state.hpp"
#include "xylem/error.hpp"

namespace xylem::detail {
namespace {

thread_local Recorder* active = nullptr;

}  // namespace

Recorder* active_recorder() noexcept { return active; }

void refuse_in_capture(std::string_view what) {
  Recorder* recorder = active_recorder();
  if (recorder == nullptr) return;
  throw recorder->fail(Error(ErrorCode::unsupported,
                             "capture: " + std::string(what) +
                                 " cannot be part of a captured graph; do it before or after the capture"));
}

RecorderPause::RecorderPause() noexcept : paused_(active) { active = nullptr; }
RecorderPause::~RecorderPause() { active = paused_; }

Recorder::Recorder(plugin::Device& device, std::string backend_id) : outer_(active) {
  if (outer_ != nullptr)
    throw Error(ErrorCode::invalid_argument,
                "capture on " + backend_id + ": this thread is already capturing; captures do not nest");
  graph_ = std::make_shared<GraphState>();
  graph_->device = &device;
  graph_->recording = device.record();
  if (!graph_->recording)
    throw Error(ErrorCode::unsupported, "capture on " + backend_id + " (" + device.hardware().name + "): the " +
                                            std::string(device.hardware().framework) +
                                            " framework cannot replay captured work yet; capture on native");
  graph_->backend_id = std::move(backend_id);
  active = this;
}

Recorder::~Recorder() { active = outer_; }

void Recorder::admit(const plugin::Device& device, const plugin::OpCall& call, std::string_view op) {
  if (&device != graph_->device)
    throw fail(Error(ErrorCode::invalid_argument,
                     "capture on " + graph_->backend_id + ": " + std::string(op) + " runs on " +
                         device.hardware().id() + "; a graph holds the ops of its own backend only"));
  try {
    graph_->recording->add(call);
  } catch (const Error& e) {
    throw fail(Error(e.code(), "capture on " + graph_->backend_id + ": " + std::string(op) +
                                   " cannot be recorded: " + e.message()));
  }
}

void Recorder::refuse_transfer(std::string_view op, std::string_view argument) {
  throw fail(Error(ErrorCode::invalid_argument,
                   "capture on " + graph_->backend_id + ": " + std::string(op) + "'s argument '" +
                       std::string(argument) +
                       "' is current on another device only; a transfer is not recorded, so move the tensor "
                       "to the backend before the capture"));
}

std::size_t Recorder::bind(const RecordedUse& use) {
  GraphState& g = *graph_;
  const std::shared_ptr<Storage>& s = *use.storage;
  auto it =
      std::find_if(g.storages.begin(), g.storages.end(), [&](const GraphState::Bound& b) { return b.storage == s; });
  if (it == g.storages.end()) it = g.storages.insert(g.storages.end(), GraphState::Bound{s});
  if (use.reads && !it->produced) it->reads = true;
  if (use.writes && !use.reads) it->produced = true;
  it->writes |= use.writes;
  return static_cast<std::size_t>(it - g.storages.begin());
}

void Recorder::add(const plugin::OpCall& call, std::span<const RecordedUse> uses, std::span<const int> use_of) {
  GraphState& g = *graph_;
  // Where each use's storage sits in the graph (appended on first sight).
  std::array<std::int16_t, plugin::kMaxOpTensors> index{};
  for (std::size_t u = 0; u < uses.size(); ++u) index[u] = static_cast<std::int16_t>(bind(uses[u]));
  // The first op touching a collective's tensors waits for it; the ops
  // before it may run beside it.
  std::erase_if(unjoined_, [&](const Unjoined& n) {
    const bool touches = std::any_of(index.begin(), index.begin() + std::ptrdiff_t(uses.size()), [&](std::int16_t i) {
      return std::find(n.storages.begin(), n.storages.end(), std::size_t(i)) != n.storages.end();
    });
    if (touches) g.recording->join_native(n.native, g.steps.size());
    return touches;
  });
  GraphState::Step& step = g.steps.emplace_back();
  step.call = call;
  for (std::size_t k = 0; k < call.num_tensors; ++k) {
    step.call.t[k].data = nullptr;
    step.storage[k] = use_of[k] < 0 ? std::int16_t{-1} : index[static_cast<std::size_t>(use_of[k])];
  }
}

void Recorder::add_native(const plugin::Device& device, std::function<void(void*)> enqueue,
                          std::span<const RecordedUse> uses, std::string_view what) {
  GraphState& g = *graph_;
  if (&device != g.device)
    throw fail(Error(ErrorCode::invalid_argument, "capture on " + g.backend_id + ": " + std::string(what) +
                                                      " runs on " + device.hardware().id() +
                                                      "; a graph holds the work of its own backend only"));
  try {
    g.recording->add_native(std::move(enqueue));
  } catch (const Error& e) {
    throw fail(Error(e.code(), "capture on " + g.backend_id + ": " + std::string(what) +
                                   " cannot be recorded: " + e.message()));
  }
  Unjoined& mine = unjoined_.emplace_back(Unjoined{natives_++, {}});
  for (const RecordedUse& use : uses) {
    const std::size_t i = bind(use);
    g.storages[i].pinned = true;
    mine.storages.push_back(i);
  }
  GraphState::Step& step = g.steps.emplace_back();
  step.native = true;
  step.storage.fill(-1);
}

Error Recorder::fail(Error error) noexcept {
  if (!failure_) failure_ = std::make_unique<Error>(error);
  return error;
}

std::shared_ptr<GraphState> Recorder::finish() {
  if (failure_)
    throw Error(failure_->code(), "capture refused (an op inside the block failed): " + failure_->message());
  return std::move(graph_);
}

}  // namespace xylem::detail
