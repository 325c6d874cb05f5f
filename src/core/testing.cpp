#include "xylem/testing.hpp"

#include <condition_variable>
#include <mutex>

#include "xylem/plugin/plugin.hpp"

namespace xylem::testing {

struct Gate::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  bool reached = false;
};

Gate::Gate(const Backend& backend) : state_(std::make_shared<State>()) {
  (void)plugin::device_of(backend).host_task(
      [state = state_] {
        std::unique_lock lock(state->mutex);
        state->reached = true;
        state->cv.notify_all();
        state->cv.wait(lock, [&] { return state->open; });
      },
      {});
}

Gate::~Gate() { open(); }

void Gate::open() {
  {
    std::lock_guard lock(state_->mutex);
    state_->open = true;
  }
  state_->cv.notify_all();
}

bool Gate::reached() const {
  std::lock_guard lock(state_->mutex);
  return state_->reached;
}

}  // namespace xylem::testing
