#pragma once
// Lazy completion events for one CUDA stream.
//
// Recording a cudaEvent after every op cost about a microsecond of host time
// per op, and most of those events were never looked at: the next op on the
// same stream needs no wait. So an op's event is a token (the stream's
// Timeline and the op's sequence number), and a real cudaEvent is recorded
// only when someone needs one: another stream or device must wait for it, or
// the host asks ready(), wait() or on_ready(). That event is recorded "now",
// after everything enqueued so far, which is later than the op but correct
// on an in-order stream. The last few recorded events are kept, so a token
// waits on the earliest of them that covers it; one is also recorded every
// kCheckpoint ops, so that a wait for an older op (a transfer reusing memory
// that kernels freed a while ago) need not wait for all the work queued
// since. A completed-sequence watermark answers most questions about old
// tokens without calling CUDA at all.
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>

#include "queue.hpp"
#include "xylem/future.hpp"

namespace xylem::cuda {

// A cudaEvent recorded on a timeline's stream after every op up to `seq`.
// Shared by every token it covers; its event goes back to the pool with the
// last of them.
struct RecordedEvent {
  RecordedEvent(std::shared_ptr<EventPool> from, cudaEvent_t recorded, std::uint64_t covers) noexcept
      : pool(std::move(from)), event(recorded), seq(covers) {}
  ~RecordedEvent() { pool->put(event); }
  RecordedEvent(const RecordedEvent&) = delete;
  RecordedEvent& operator=(const RecordedEvent&) = delete;

  std::shared_ptr<EventPool> pool;
  cudaEvent_t event;
  std::uint64_t seq;
};
using RecordedPtr = std::shared_ptr<const RecordedEvent>;

class Timeline : public std::enable_shared_from_this<Timeline> {
 public:
  Timeline(int device, HostWorker* worker);
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  [[nodiscard]] cudaStream_t stream() const noexcept { return stream_.get(); }
  [[nodiscard]] int device() const noexcept { return stream_.device(); }

  // Held by whoever must enqueue several commands back to back (a kernel and
  // its scratch buffer) and by advance(). Enqueuing needs no lock otherwise:
  // sequence numbers are given after an op's commands are in the stream, so
  // an event recorded under the lock covers every numbered op.
  [[nodiscard]] std::mutex& mutex() noexcept { return mutex_; }
  // Numbers the op just enqueued and returns its token.
  [[nodiscard]] EventPtr advance();
  [[nodiscard]] EventPtr advance_locked();

  // Sequence number of the last op numbered so far (for fences).
  [[nodiscard]] std::uint64_t enqueued() const noexcept { return enqueued_.load(std::memory_order_acquire); }
  [[nodiscard]] bool done(std::uint64_t seq) const noexcept {
    return seq <= completed_.load(std::memory_order_acquire);
  }
  void mark_done(std::uint64_t seq) noexcept;

  // A recorded event covering op `seq`, or null once that op is known done.
  // Records one now unless the cached event covers it. With try_only, gives
  // up (returns `busy`) rather than wait for the lock.
  [[nodiscard]] RecordedPtr resolve(std::uint64_t seq, bool try_only, bool* busy = nullptr);
  // The same for everything enqueued so far (host tasks, fences).
  [[nodiscard]] RecordedPtr resolve_all() { return resolve(enqueued(), false); }

  // Makes `waiter` wait on the device for op `seq` of this timeline.
  void order_before(cudaStream_t waiter, std::uint64_t seq, int waiter_device, std::string_view what);

  // Blocks the host until `rec` (from resolve) is done; null: nothing to do.
  void wait(const RecordedPtr& rec);
  // Blocks the host until everything numbered so far is done.
  void synchronize();

  [[nodiscard]] HostWorker* worker() const noexcept { return worker_; }

 private:
  [[nodiscard]] RecordedPtr record_locked();

  // About 1 µs of host time per checkpoint: a few ns per op.
  static constexpr std::uint64_t kCheckpoint = 64;
  static constexpr std::size_t kHistory = 8;

  Stream stream_;
  std::shared_ptr<EventPool> events_;
  HostWorker* worker_;
  std::mutex mutex_;
  std::atomic<std::uint64_t> enqueued_{0};   // written under mutex_
  std::atomic<std::uint64_t> completed_{0};  // every op up to here is done
  std::array<RecordedPtr, kHistory> recent_;  // under mutex_; a ring, newest at head_ - 1
  std::size_t head_ = 0;
};

// An op's completion: a timeline and the op's sequence number on it.
class StreamEvent final : public Event {
 public:
  StreamEvent(std::shared_ptr<Timeline> timeline, std::uint64_t seq) noexcept
      : timeline_(std::move(timeline)), seq_(seq) {}

  [[nodiscard]] bool ready() const override;
  void wait() const override;
  [[nodiscard]] const void* queue() const noexcept override { return timeline_.get(); }
  void on_ready(std::function<void()> fn) const override;

  [[nodiscard]] Timeline& timeline() const noexcept { return *timeline_; }
  [[nodiscard]] std::uint64_t seq() const noexcept { return seq_; }

 private:
  std::shared_ptr<Timeline> timeline_;
  std::uint64_t seq_;
};

}  // namespace xylem::cuda
