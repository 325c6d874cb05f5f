#include "dist/host_work.hpp"

#include "core/storage.hpp"
#include "dist/work_queue.hpp"
#include "graph/recorder.hpp"

namespace xylem::dist::detail {

EventPtr enqueue_host_work(std::span<const TensorUse> uses, HostWork work, const char* op) {
  // Work of the host transport runs on its own thread, outside any graph.
  if (xylem::detail::active_recorder())
    xylem::detail::refuse_in_capture(std::string("the collective ") + op + " (on the host transport)");
  TensorUses prepared(xylem::detail::host_device(), uses, op);
  EventPtr done = enqueue([data_deps = prepared.data_deps(), order_deps = prepared.order_deps(),
                           data = prepared.data(), work = std::move(work)] {
    for (const auto& dep : order_deps) {
      try {
        dep->wait();
      } catch (...) {  // its failure is its readers' business, not this work's
      }
    }
    for (const auto& dep : data_deps) dep->wait();
    work(data);
  });
  prepared.record(done);
  return done;
}

}  // namespace xylem::dist::detail
