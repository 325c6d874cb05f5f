#pragma once
// For a Recording (plugin.hpp) that prepares its replays once with the
// calls' data pointers built in (OpenCL kernel arguments, a CUDA graph): the
// pointers it prepared for, and whether a replay's calls bind others (after
// a rebind, say), so it prepares again only then.
#include <cstddef>
#include <span>
#include <vector>

#include "xylem/plugin/args.hpp"

namespace xylem::plugin {

class BoundPointers {
 public:
  // True when `calls` bind other data pointers than the last calls given
  // (always, the first time); remembers these.
  [[nodiscard]] bool changed(std::span<const OpCall> calls) {
    bool changed = bound_.empty() && !calls.empty();
    std::size_t at = 0;
    for (const OpCall& call : calls)
      for (std::size_t k = 0; k < call.num_tensors; ++k, ++at) {
        if (at == bound_.size()) {
          bound_.push_back(nullptr);
          changed = true;
        }
        if (bound_[at] != call.t[k].data) {
          bound_[at] = call.t[k].data;
          changed = true;
        }
      }
    return changed;
  }

 private:
  std::vector<void*> bound_;
};

}  // namespace xylem::plugin
