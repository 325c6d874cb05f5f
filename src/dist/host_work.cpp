#include "dist/host_work.hpp"

#include <algorithm>
#include <optional>

#include "core/fusion.hpp"
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

EventPtr run_small_here(const Tensor& t, bool reads, bool writes, FunctionRef<void(std::byte* data)> work) {
  const std::size_t bytes = size_of(t.dtype()) * std::size_t(t.numel());
  if (bytes == 0 || bytes > kInlineBytes || xylem::detail::active_recorder()) return nullptr;
  xylem::detail::flush_fusion();
  plugin::Device& host = xylem::detail::host_device();
  xylem::detail::Storage& s = *t.storage();
  std::unique_lock lock(s.mutex);
  // A host copy alone: no transfer to make, and no GPU copy that a device
  // transport would serve (collective_device finds none).
  if (s.copies().size() != 1) return nullptr;
  xylem::detail::DeviceCopy* copy = s.find(host);
  if (copy == nullptr || copy->data == nullptr) return nullptr;
  // A write of part of the storage keeps the rest: it reads it too.
  reads = reads || bytes != s.bytes();
  if (reads && (!s.written() || copy->version != s.latest())) return nullptr;
  // What the general way waits for must be done already; a failed write
  // before is its business (it fails this work with that error).
  if (const EventPtr& last = copy->last_write) {
    if (!last->ready()) return nullptr;
    if (reads) {
      try {
        last->wait();
      } catch (...) {
        return nullptr;
      }
    }
  }
  if (writes)
    for (const EventPtr& read : copy->reads)
      if (!read->ready()) return nullptr;
  std::optional<InlineWork> here = InlineWork::claim();
  if (!here) return nullptr;
  EventPtr done = here->event();
  if (writes) {
    s.mark_written(*copy, done);
  } else {
    copy->add_read(done);
  }
  std::byte* data = static_cast<std::byte*>(copy->data) + std::size_t(t.layout().offset()) * size_of(t.dtype());
  lock.unlock();  // not held while the work runs: others wait on `done` instead
  std::move(*here).run(FunctionRef<void()>([&] { work(data); }));
  return done;
}

}  // namespace xylem::dist::detail
