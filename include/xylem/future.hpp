#pragma once
/// @file
/// Completion of enqueued work. An Event says when work ends; a Future<T>
/// carries a value produced by that work (a host read, a scalar result).
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

namespace xylem {

/// The completion of enqueued work, as a framework's queue reports it.
class Event {
 public:
  virtual ~Event() = default;
  /// True once the work is done (never blocks).
  [[nodiscard]] virtual bool ready() const = 0;
  /// Blocks until done; rethrows an error the work raised (device_lost...).
  virtual void wait() const = 0;
  /// Identity of the in-order queue this event belongs to; work on the same
  /// queue needs no explicit wait on it.
  [[nodiscard]] virtual const void* queue() const noexcept = 0;
  /// Runs fn once the event is done (at once if it is). The default polls from
  /// a core thread; frameworks with completion callbacks override it.
  virtual void on_ready(std::function<void()> fn) const;
};
/// Events are shared: every tensor copy the work touched holds one.
using EventPtr = std::shared_ptr<const Event>;

/// An event that is already complete.
[[nodiscard]] EventPtr ready_event();

namespace detail {
/// Runs fn on a xylem continuation thread once event is done.
void run_when_ready(const EventPtr& event, std::function<void()> fn);

template <class T>
struct FutureState {
  EventPtr event;          ///< the work that makes the value
  std::optional<T> value;  ///< set by that work
  std::exception_ptr error;
};
}  // namespace detail

/// A value that enqueued work produces: a host read, a scalar result.
/// get() waits for that work only, then returns the value or rethrows the
/// work's error.
template <class T>
class Future {
 public:
  Future() = default;  ///< invalid: valid() is false
  /// The future of `state`'s value, which `event`'s work sets.
  Future(EventPtr event, std::shared_ptr<detail::FutureState<T>> state)
      : state_(std::move(state)) {
    state_->event = std::move(event);
  }
  /// A future that is already ready with a value.
  static Future ready(T value) {
    auto s = std::make_shared<detail::FutureState<T>>();
    s->value = std::move(value);
    return Future(ready_event(), std::move(s));
  }

  /// False for a default-constructed future.
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// True once the value is there (never blocks).
  [[nodiscard]] bool ready() const { return state_->event == nullptr || state_->event->ready(); }
  /// Blocks until the value is there; rethrows the work's error.
  void wait() const {
    if (state_->event) state_->event->wait();
    if (state_->error) std::rethrow_exception(state_->error);
  }
  /// Waits, then returns the value (or rethrows the work's error).
  [[nodiscard]] const T& get() const& {
    wait();
    return *state_->value;
  }
  /// Waits, then moves the value out when this is its only future.
  [[nodiscard]] T get() && {
    wait();
    return state_.use_count() == 1 ? std::move(*state_->value) : *state_->value;
  }
  /// The work that produces the value (to wait on from other work).
  [[nodiscard]] const EventPtr& event() const noexcept { return state_->event; }

  /// Runs fn(value) when the value is ready, on a xylem continuation thread
  /// (never a queue thread, so fn may wait on other xylem work); the result
  /// is a new future. An exception thrown by fn is rethrown by the new one.
  template <class F>
  auto then(F fn) const -> Future<std::invoke_result_t<F, const T&>> {
    using U = std::invoke_result_t<F, const T&>;
    static_assert(!std::is_void_v<U>, "then() needs a function that returns a value");
    auto next = std::make_shared<detail::FutureState<U>>();
    auto done = std::make_shared<ManualEvent>();
    auto self = state_;
    auto run = [self, next, done, fn = std::move(fn)]() mutable {
      try {
        if (self->event) self->event->wait();
        if (self->error) std::rethrow_exception(self->error);
        next->value = fn(*self->value);
      } catch (...) {
        next->error = std::current_exception();
      }
      done->set();
    };
    detail::run_when_ready(state_->event, std::move(run));
    return Future<U>(done, next);
  }

 private:
  /// Completed by a continuation rather than a queue.
  class ManualEvent final : public Event {
   public:
    bool ready() const override {
      std::lock_guard lock(mutex_);
      return done_;
    }
    void wait() const override {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return done_; });
    }
    const void* queue() const noexcept override { return this; }
    void set() {
      {
        std::lock_guard lock(mutex_);
        done_ = true;
      }
      cv_.notify_all();
    }

   private:
    mutable std::mutex mutex_;
    mutable std::condition_variable cv_;
    bool done_ = false;
  };

  std::shared_ptr<detail::FutureState<T>> state_;
};

}  // namespace xylem
