#pragma once
// What a captured graph holds: the framework's recording, the calls in order
// and the storages they touch (xylem/capture.hpp).
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/storage.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::detail {

struct GraphState {
  struct Step {
    plugin::OpCall call;  // data pointers are bound at each replay
    std::array<std::int16_t, plugin::kMaxOpTensors> storage{};  // index into storages; -1: absent
    // A library's own launch (a collective, Recording::add_native): no op,
    // its data pointers fixed at the capture.
    bool native = false;
  };
  struct Bound {
    std::shared_ptr<Storage> storage;
    // Read by the graph before the graph writes all of it: its data must
    // exist at replay and the replay waits for its last write.
    bool reads = false;
    bool writes = false;
    bool produced = false;  // written whole by an earlier step (while capturing)
    // Used by a native step, which holds its data pointer: never rebound.
    bool pinned = false;
  };

  plugin::Device* device = nullptr;
  std::string backend_id;
  std::unique_ptr<plugin::Recording> recording;
  std::vector<Step> steps;
  std::vector<Bound> storages;
  // Replays and rebinds of one graph run one at a time.
  std::mutex mutex;
};

}  // namespace xylem::detail
