#include "frameworks/native/queue.hpp"

#include <algorithm>
#include <chrono>

namespace xylem::native {

void NativeEvent::wait() const {
  done_.wait(false, std::memory_order_acquire);
  if (error_) std::rethrow_exception(error_);
}

void NativeEvent::on_ready(std::function<void()> fn) const {
  {
    std::lock_guard lock(callbacks_mutex_);
    if (!done_.load(std::memory_order_acquire)) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

void NativeEvent::complete(std::exception_ptr error) noexcept {
  error_ = std::move(error);
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard lock(callbacks_mutex_);
    done_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  done_.notify_all();
  for (auto& fn : callbacks) fn();
}

NativeQueue::NativeQueue() : worker_([this] { loop(); }) {}

NativeQueue::~NativeQueue() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

EventPtr NativeQueue::enqueue(Kernel kernel, const plugin::OpCall& call, plugin::Deps deps) {
  return push(deps, [&](Task& task) {
    task.kernel = kernel;
    // Copy only the arguments in use: an OpCall is mostly empty slots.
    task.call.op = call.op;
    task.call.num_tensors = call.num_tensors;
    std::copy_n(call.t.begin(), call.num_tensors, task.call.t.begin());
    task.call.f = call.f;
    task.call.i = call.i;
  });
}

EventPtr NativeQueue::enqueue(std::function<void()> fn, plugin::Deps deps) {
  return push(deps, [&](Task& task) {
    task.kernel = nullptr;
    task.fn = std::move(fn);
  });
}

template <class Fill>
EventPtr NativeQueue::push(plugin::Deps deps, Fill&& fill) {
  auto event = std::make_shared<NativeEvent>(this);
  bool wake;
  {
    std::lock_guard lock(mutex_);
    Task& task = pending_.emplace_back();
    fill(task);
    // Work on this queue is already ordered; only other queues' events are kept.
    for (const auto& dep : deps)
      if (dep && dep->queue() != this && !dep->ready()) task.foreign_deps.push_back(dep);
    task.event = event;
    if (!has_work_.load(std::memory_order_relaxed)) has_work_.store(true, std::memory_order_relaxed);
    wake = sleeping_;
  }
  if (wake) wake_.notify_one();
  return event;
}

void NativeQueue::run(Task& task) noexcept {
  std::exception_ptr error;
  try {
    for (const auto& dep : task.foreign_deps) dep->wait();
    if (task.kernel) {
      task.kernel(task.call);
    } else {
      task.fn();
    }
  } catch (...) {
    error = std::current_exception();
  }
  task.event->complete(std::move(error));
}

void NativeQueue::loop() {
  std::vector<Task> batch;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (pending_.empty() && !stop_) {
        // Spin briefly before sleeping: a caller issuing ops back to back
        // then never pays for a wake-up.
        lock.unlock();
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
        while (!has_work_.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until) {
        }
        lock.lock();
        sleeping_ = true;
        wake_.wait(lock, [&] { return !pending_.empty() || stop_; });
        sleeping_ = false;
      }
      if (pending_.empty() && stop_) return;
      batch.swap(pending_);
      has_work_.store(false, std::memory_order_relaxed);
    }
    for (auto& task : batch) run(task);
    batch.clear();
  }
}

void NativeQueue::drain() { enqueue([] {}, {})->wait(); }

}  // namespace xylem::native
