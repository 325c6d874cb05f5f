// Events that need no queue, and the fallback for Event::on_ready: a core
// thread that polls pending events and runs their continuations.
#include <chrono>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

#include "xylem/future.hpp"

namespace xylem {
namespace {

class CompletedEvent final : public Event {
 public:
  bool ready() const override { return true; }
  void wait() const override {}
  const void* queue() const noexcept override { return nullptr; }
  void on_ready(std::function<void()> fn) const override { fn(); }
};

// Runs continuations of events that cannot call back themselves. Leaked on
// purpose: continuations may still be pending while statics are destroyed.
class Poller {
 public:
  static Poller& instance() {
    static Poller* poller = new Poller();
    return *poller;
  }

  void add(const Event* event, std::function<void()> fn) {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back({event, std::move(fn)});
    }
    wake_.notify_one();
  }

 private:
  struct Pending {
    const Event* event;
    std::function<void()> fn;
  };

  Poller() { std::thread([this] { loop(); }).detach(); }

  void loop() {
    auto pause = std::chrono::microseconds(20);
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return !pending_.empty(); });
      std::list<Pending> done;
      for (auto it = pending_.begin(); it != pending_.end();) {
        auto next = std::next(it);
        if (it->event == nullptr || it->event->ready()) done.splice(done.end(), pending_, it);
        it = next;
      }
      if (done.empty()) {
        // Nothing finished yet: poll again soon, sooner if work is added.
        wake_.wait_for(lock, pause);
        pause = std::min(pause * 2, std::chrono::microseconds(1000));
        continue;
      }
      lock.unlock();
      for (auto& p : done) p.fn();
      lock.lock();
      pause = std::chrono::microseconds(20);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Pending> pending_;
};

}  // namespace

void Event::on_ready(std::function<void()> fn) const {
  if (ready()) {
    fn();
    return;
  }
  Poller::instance().add(this, std::move(fn));
}

namespace detail {
void run_when_ready(const EventPtr& event, std::function<void()> fn) {
  // Hop to the poller thread: a continuation must never run on (and so
  // block) a framework's queue thread.
  auto post = [fn = std::move(fn)]() mutable { Poller::instance().add(nullptr, std::move(fn)); };
  if (event) {
    event->on_ready(std::move(post));
  } else {
    post();
  }
}
}  // namespace detail

EventPtr ready_event() {
  static const EventPtr event = std::make_shared<CompletedEvent>();
  return event;
}

}  // namespace xylem
