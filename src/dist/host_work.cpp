#include "dist/host_work.hpp"

#include <algorithm>
#include <optional>

#include "core/storage.hpp"
#include "dist/work_queue.hpp"
#include "graph/recorder.hpp"

namespace xylem::dist::detail {
namespace {

// Work on at most this many bytes runs on the caller's thread when it can
// (below). A small collective is mostly fixed cost, which the hand-off to
// the queue's thread and back doubled or more; a large one keeps the
// queue, so the caller computes while it runs (docs/BENCHMARKS.md has the
// measurements behind the figure).
constexpr std::size_t kInlineBytes = std::size_t(256) << 10;

std::size_t bytes_of(std::span<const TensorUse> uses) {
  std::size_t bytes = 0;
  for (const auto& u : uses) bytes += size_of(u.tensor.dtype()) * std::size_t(u.tensor.numel());
  return bytes;
}

bool all_ready(const std::vector<EventPtr>& events) {
  return std::all_of(events.begin(), events.end(), [](const EventPtr& e) { return e->ready(); });
}

}  // namespace

EventPtr enqueue_host_work(std::span<const TensorUse> uses, HostWork work, const char* op) {
  // Work of the host transport runs on its own thread, outside any graph.
  if (xylem::detail::active_recorder())
    xylem::detail::refuse_in_capture(std::string("the collective ") + op + " (on the host transport)");
  std::optional<TensorUses> prepared;
  prepared.emplace(xylem::detail::host_device(), uses, op);
  // Run here only when that waits on nothing: the data is current on the
  // host already (no write or read still pending) and the queue is idle,
  // so nothing enqueued earlier is overtaken.
  std::optional<InlineWork> here =
      bytes_of(uses) <= kInlineBytes && all_ready(prepared->data_deps()) && all_ready(prepared->order_deps())
          ? InlineWork::claim()
          : std::nullopt;
  std::function<void()> run = [data_deps = prepared->data_deps(), order_deps = prepared->order_deps(),
                               data = prepared->data(), work = std::move(work)] {
    for (const auto& dep : order_deps) {
      try {
        dep->wait();
      } catch (...) {  // its failure is its readers' business, not this work's
      }
    }
    for (const auto& dep : data_deps) dep->wait();
    work(data);
  };
  const EventPtr done = here ? EventPtr(here->event()) : EventPtr(enqueue(std::move(run)));
  prepared->record(done);
  prepared.reset();  // the storages' locks, not held while the work runs here
  if (here) std::move(*here).run(std::move(run));
  return done;
}

}  // namespace xylem::dist::detail
