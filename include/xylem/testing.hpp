#pragma once
// Test support: hold a backend's queue closed to prove that operations
// return before their work runs.
#include <memory>

#include "xylem/backend.hpp"

namespace xylem::testing {

// Enqueues a task that blocks the backend's queue until open() (or the
// destructor). Work enqueued after it cannot start before then.
class Gate {
 public:
  explicit Gate(const Backend& backend);
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;
  void open();
  // True once the queue has reached the gate.
  [[nodiscard]] bool reached() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace xylem::testing
