#pragma once
// The tensors one piece of dist work touches, on the device it runs on
// (the host for a host transport, a GPU for a device one), ordered like an
// op: their storages locked (in address order, as ops lock them), the
// copies there allocated and, for what is read, brought up to date by the
// coherence; `record` then marks the work as their last write or a read,
// exactly as OpLaunch::launch_on does for kernels.
#include <cstddef>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "graph/recorder.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/plugin.hpp"
#include "xylem/tensor.hpp"

namespace xylem::detail {
class Storage;
struct DeviceCopy;
}  // namespace xylem::detail

namespace xylem::dist::detail {

struct TensorUse {
  Tensor tensor;  // dense (Layout::is_contiguous)
  bool reads = false;
  bool writes = false;
};

class TensorUses {
 public:
  // Throws before changing anything: uninitialized_read for a read of a
  // tensor never written, naming `op`; out_of_memory when a copy cannot
  // be made.
  TensorUses(plugin::Device& device, std::span<const TensorUse> uses, const char* op);
  TensorUses(const TensorUses&) = delete;
  TensorUses& operator=(const TensorUses&) = delete;

  // The first byte of each use's elements on the device (null for a
  // tensor of no elements), in the order of the uses.
  [[nodiscard]] const std::vector<std::byte*>& data() const noexcept { return data_; }
  // The last writes of what is read: their failure is the work's (its
  // input would be garbage).
  [[nodiscard]] const std::vector<EventPtr>& data_deps() const noexcept { return data_deps_; }
  // Kept only for order (earlier reads, the last write of what is
  // overwritten whole): merely waited for.
  [[nodiscard]] const std::vector<EventPtr>& order_deps() const noexcept { return order_deps_; }

  // After the work is enqueued as `done`: what it writes is current on the
  // device alone, what it reads remembers it as a reader.
  void record(const EventPtr& done);
  // The storages as a captured graph sees them (xylem/capture.hpp): whether
  // the work reads each (a partial write reads the rest) and writes it.
  [[nodiscard]] std::vector<xylem::detail::RecordedUse> recorded_uses() const;

 private:
  struct StorageUse {
    xylem::detail::Storage* storage = nullptr;
    // The first use's handle, valid while the uses are.
    const std::shared_ptr<xylem::detail::Storage>* owner = nullptr;
    bool reads = false;
    bool writes = false;
    xylem::detail::DeviceCopy* copy = nullptr;
  };
  std::vector<StorageUse> storages_;
  std::vector<std::unique_lock<std::mutex>> locks_;
  std::vector<std::byte*> data_;
  std::vector<EventPtr> data_deps_, order_deps_;
};

}  // namespace xylem::dist::detail
