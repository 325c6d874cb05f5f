#include "timeline.hpp"

#include "check.hpp"

namespace xylem::cuda {

Timeline::Timeline(int device, HostWorker* worker)
    : stream_(device), events_(std::make_shared<EventPool>(device)), worker_(worker) {}

EventPtr Timeline::advance() {
  std::lock_guard lock(mutex_);
  return advance_locked();
}

EventPtr Timeline::advance_locked() {
  const std::uint64_t seq = enqueued_.load(std::memory_order_relaxed) + 1;
  enqueued_.store(seq, std::memory_order_release);
  if (seq % kCheckpoint == 0) (void)record_locked();
  return std::make_shared<StreamEvent>(shared_from_this(), seq);
}

void Timeline::mark_done(std::uint64_t seq) noexcept {
  std::uint64_t seen = completed_.load(std::memory_order_relaxed);
  while (seen < seq && !completed_.compare_exchange_weak(seen, seq, std::memory_order_acq_rel)) {
  }
}

RecordedPtr Timeline::record_locked() {
  cudaEvent_t e = events_->acquire();
  // cudaEventRecord needs the event and the stream on one device, not the
  // calling thread's current device: a wait from another GPU may record here.
  const cudaError_t err = cudaEventRecord(e, stream_.get());
  if (err != cudaSuccess) {
    events_->put(e);
    throw_cuda(err, "cudaEventRecord", device(), "record event");
  }
  RecordedPtr rec = std::make_shared<RecordedEvent>(events_, e, enqueued_.load(std::memory_order_relaxed));
  recent_[head_++ % kHistory] = rec;
  return rec;
}

RecordedPtr Timeline::resolve(std::uint64_t seq, bool try_only, bool* busy) {
  if (done(seq)) return nullptr;
  std::unique_lock lock(mutex_, std::defer_lock);
  if (!try_only) {
    lock.lock();
  } else if (!lock.try_lock()) {
    if (busy != nullptr) *busy = true;
    return nullptr;
  }
  // The earliest recorded event that covers seq waits for the least work.
  const RecordedEvent* best = nullptr;
  std::size_t at = 0;
  for (std::size_t i = 0; i < kHistory; ++i) {
    const RecordedEvent* r = recent_[i].get();
    if (r != nullptr && r->seq >= seq && (best == nullptr || r->seq < best->seq)) best = r, at = i;
  }
  return best != nullptr ? recent_[at] : record_locked();
}

void Timeline::order_before(cudaStream_t waiter, std::uint64_t seq, int waiter_device, std::string_view what) {
  if (waiter == stream_.get()) return;  // in-order stream: nothing to wait for
  const RecordedPtr rec = resolve(seq, false);
  // The wait takes the event's state at this call; the event may be
  // recorded again or pooled afterwards without affecting it.
  if (rec) XY_CUDA(cudaStreamWaitEvent(waiter, rec->event, 0), waiter_device, what);
}

void Timeline::wait(const RecordedPtr& rec) {
  if (!rec) return;
  XY_CUDA(cudaEventSynchronize(rec->event), device(), "event wait");
  mark_done(rec->seq);
}

void Timeline::synchronize() {
  const std::uint64_t target = enqueued();
  XY_CUDA(cudaStreamSynchronize(stream_.get()), device(), "synchronize");
  mark_done(target);
}

bool StreamEvent::ready() const {
  if (timeline_->done(seq_)) return true;
  bool busy = false;
  // Polling must not block behind another thread's launch: "not yet" is a
  // fine answer then, and the next poll asks again.
  const RecordedPtr rec = timeline_->resolve(seq_, true, &busy);
  if (busy) return false;
  if (!rec) return true;
  const cudaError_t err = cudaEventQuery(rec->event);
  if (err == cudaErrorNotReady) return false;
  XY_CUDA(err, timeline_->device(), "event query");
  timeline_->mark_done(rec->seq);
  return true;
}

void StreamEvent::wait() const { timeline_->wait(timeline_->resolve(seq_, false)); }

void StreamEvent::on_ready(std::function<void()> fn) const {
  if (ready()) {
    fn();
    return;
  }
  // Recorded here, not on the worker: the event then covers no work
  // enqueued after this call.
  RecordedPtr rec = timeline_->resolve(seq_, false);
  // The callback sees any error through its own wait() on this event, so a
  // failed wait on the worker is not reported twice.
  timeline_->worker()->post([timeline = timeline_, rec = std::move(rec), fn = std::move(fn)] {
    if (rec) {
      if (cudaEventSynchronize(rec->event) == cudaSuccess)
        timeline->mark_done(rec->seq);
      else
        (void)cudaGetLastError();
    }
    fn();
  });
}

}  // namespace xylem::cuda
