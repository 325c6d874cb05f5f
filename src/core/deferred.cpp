#include "core/deferred.hpp"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

namespace xylem::detail {
namespace {

struct Check {
  std::uint64_t id;
  Future<std::vector<std::int32_t>> flag;
  std::function<void(std::int32_t)> raise;
};

struct Pending {
  std::mutex mutex;
  std::deque<Check> checks;  // in the order deferred (ids ascending)
  std::atomic<std::uint64_t> next_id{0};
  std::atomic<std::size_t> count{0};  // checks.size(), read without the lock
};

// Leaked on purpose: a read may be waited on while statics are destroyed.
Pending& pending() {
  static Pending* p = new Pending();
  return *p;
}

// Set while this thread looks at flags: the reads it waits for then (the
// flags, the indices an error message names) must not start another round.
thread_local bool draining = false;

class Draining {
 public:
  Draining() noexcept { draining = true; }
  ~Draining() { draining = false; }
  Draining(const Draining&) = delete;
  Draining& operator=(const Draining&) = delete;
};

// The checks deferred before `mark`, out of the list.
std::deque<Check> take_before(std::uint64_t mark) {
  Pending& p = pending();
  std::lock_guard lock(p.mutex);
  std::deque<Check> due;
  while (!p.checks.empty() && p.checks.front().id < mark) {
    due.push_back(std::move(p.checks.front()));
    p.checks.pop_front();
  }
  p.count.store(p.checks.size());
  return due;
}

// Back at the front of the list, in order, for the next wait.
void put_back(std::deque<Check>& rest) {
  Pending& p = pending();
  std::lock_guard lock(p.mutex);
  while (!rest.empty()) {
    p.checks.push_front(std::move(rest.back()));
    rest.pop_back();
  }
  p.count.store(p.checks.size());
}

// Drops the oldest checks whose flags are back and clear, without waiting,
// so that a program that seldom waits does not pile them up (each holds
// its indices). Stops at the first one not back, or set: that one stays
// for a wait to raise.
void drop_passed() {
  if (draining) return;
  const Draining guard;
  Pending& p = pending();
  for (;;) {
    std::deque<Check> front;
    {
      std::lock_guard lock(p.mutex);
      if (p.checks.empty() || !p.checks.front().flag.ready()) return;
      front.push_back(std::move(p.checks.front()));
      p.checks.pop_front();
      p.count.store(p.checks.size());
    }
    bool clear = false;
    try {
      clear = front.front().flag.get().at(0) == 0;
    } catch (...) {
      // The read's own error: a wait raises it.
    }
    if (!clear) return put_back(front);
  }
}

void raise_before(std::uint64_t mark) {
  if (draining || pending().count.load() == 0) return;
  const Draining guard;
  std::deque<Check> due = take_before(mark);
  while (!due.empty()) {
    Check check = std::move(due.front());
    due.pop_front();
    std::int32_t flag = 0;
    try {
      flag = check.flag.get().at(0);
    } catch (...) {
      put_back(due);  // the read's own error (device lost...) first
      throw;
    }
    if (flag == 0) continue;
    put_back(due);
    check.raise(flag);
  }
}

class CheckedEvent final : public Event {
 public:
  CheckedEvent(EventPtr read, std::uint64_t mark) : read_(std::move(read)), mark_(mark) {}
  bool ready() const override { return read_->ready(); }
  void wait() const override {
    read_->wait();
    raise_before(mark_);
  }
  const void* queue() const noexcept override { return read_->queue(); }
  void on_ready(std::function<void()> fn) const override { read_->on_ready(std::move(fn)); }

 private:
  EventPtr read_;
  std::uint64_t mark_;  // the checks deferred before the read
};

}  // namespace

void defer_check(Future<std::vector<std::int32_t>> flag, std::function<void(std::int32_t)> raise) {
  drop_passed();
  Pending& p = pending();
  std::lock_guard lock(p.mutex);
  p.checks.push_back({p.next_id.fetch_add(1), std::move(flag), std::move(raise)});
  p.count.store(p.checks.size());
}

void raise_deferred() { raise_before(pending().next_id.load()); }

EventPtr checked(EventPtr read) {
  Pending& p = pending();
  if (p.count.load() == 0) return read;
  return std::make_shared<CheckedEvent>(std::move(read), p.next_id.load());
}

}  // namespace xylem::detail
