#include "nccl_transport.hpp"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "device.hpp"
#include "nccl_library.hpp"
#include "queue.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::dist::Clock;
using plugin::dist::Deadline;
using plugin::dist::DeviceWork;
using plugin::dist::Reduction;

// How often a waiting call looks at its communicator: NCCL's own
// watchdogs (PyTorch's) poll at about this rate.
constexpr std::chrono::microseconds kPoll{200};

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
    case DType::boolean:
      return ncclUint8;
  }
  return ncclUint8;
}

// bool as the host transports combine it: sum and max are "or", min "and"
// (0/1 bytes, so max and min of bytes give them; a byte sum would give 2).
ncclRedOp_t nccl_op(Reduction op, DType dtype) {
  switch (op) {
    case Reduction::sum:
      return dtype == DType::boolean ? ncclMax : ncclSum;
    case Reduction::avg:
      return ncclAvg;
    case Reduction::max:
      return ncclMax;
    case Reduction::min:
      return ncclMin;
  }
  return ncclSum;
}

std::string seconds_past(Deadline deadline, Deadline started) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - started).count();
  return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
}

class NcclTransport final : public plugin::dist::DeviceTransport {
 public:
  NcclTransport(const NcclLibrary& lib, ncclComm_t comm, CudaDevice& device, int rank, int size)
      : lib_(lib), comm_(comm), device_(device), rank_(rank), size_(size), watcher_([this] { watch(); }) {}

  ~NcclTransport() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    watcher_.join();
    // Abort, not destroy: ncclCommDestroy may wait for the peers to flush,
    // and a communicator released at exit must not hang on a peer that is
    // gone. What it had enqueued is done or failed by now (the watcher
    // finished every call).
    if (!aborted_) (void)lib_.ncclCommAbort(comm_);
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::string_view name() const noexcept override { return "nccl"; }

  DeviceWork all_reduce(void* data, std::size_t count, DType dtype, Reduction op, plugin::Deps deps,
                        Deadline deadline) override {
    return call("all_reduce", count, deps, deadline, [&](cudaStream_t s) {
      return lib_.ncclAllReduce(data, data, count, nccl_type(dtype), nccl_op(op, dtype), comm_, s);
    });
  }
  DeviceWork broadcast(void* data, std::size_t bytes, int root, plugin::Deps deps, Deadline deadline) override {
    return call("broadcast", bytes, deps, deadline,
                [&](cudaStream_t s) { return lib_.ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, s); });
  }
  DeviceWork reduce(void* data, std::size_t count, DType dtype, Reduction op, int root, plugin::Deps deps,
                    Deadline deadline) override {
    return call("reduce", count, deps, deadline, [&](cudaStream_t s) {
      return lib_.ncclReduce(data, data, count, nccl_type(dtype), nccl_op(op, dtype), root, comm_, s);
    });
  }
  DeviceWork all_gather(const void* in, void* out, std::size_t bytes, plugin::Deps deps,
                        Deadline deadline) override {
    return call("all_gather", bytes, deps, deadline,
                [&](cudaStream_t s) { return lib_.ncclAllGather(in, out, bytes, ncclUint8, comm_, s); });
  }
  DeviceWork reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Reduction op,
                            plugin::Deps deps, Deadline deadline) override {
    return call("reduce_scatter", count, deps, deadline, [&](cudaStream_t s) {
      return lib_.ncclReduceScatter(in, out, count, nccl_type(dtype), nccl_op(op, dtype), comm_, s);
    });
  }
  DeviceWork send(const void* data, std::size_t bytes, int peer, plugin::Deps deps, Deadline deadline) override {
    return call("send", bytes, deps, deadline,
                [&](cudaStream_t s) { return lib_.ncclSend(data, bytes, ncclUint8, peer, comm_, s); });
  }
  DeviceWork recv(void* data, std::size_t bytes, int peer, plugin::Deps deps, Deadline deadline) override {
    return call("recv", bytes, deps, deadline,
                [&](cudaStream_t s) { return lib_.ncclRecv(data, bytes, ncclUint8, peer, comm_, s); });
  }

 private:
  struct Pending {
    std::string what;
    EventPtr enqueued;
    std::shared_ptr<HostEvent> done;
    Deadline started;
    Deadline deadline;
  };

  // Enqueues one NCCL call of `elements` elements (none: nothing for NCCL
  // to do, which the ranks agree on since they pass the same shapes; the
  // op is still ordered like one).
  template <class Enqueue>
  DeviceWork call(const char* what, std::size_t elements, plugin::Deps deps, Deadline deadline, Enqueue&& enqueue) {
    const std::string name = "nccl " + std::string(what) + " on " + device_.hardware().id();
    const Deadline started = Clock::now();
    std::unique_lock lock(mutex_);
    if (!failure_.empty())
      throw Error(ErrorCode::communication, name + ": the NCCL group failed earlier and was aborted (" + failure_ + ")");
    EventPtr enqueued = device_.enqueue(what, deps, [&](cudaStream_t stream) {
      if (elements == 0) return;
      ncclResult_t r = enqueue(stream);
      // A non-blocking communicator may still be placing the call on the
      // stream; the op's event must be numbered after it is there.
      while (r == ncclInProgress) {
        if (Clock::now() > deadline) fail_locked(name + ": still being enqueued after " + seconds_past(deadline, started), true);
        std::this_thread::sleep_for(kPoll);
        (void)lib_.ncclCommGetAsyncError(comm_, &r);
      }
      if (r != ncclSuccess) fail_locked(name + ": " + lib_.ncclGetErrorString(r), false);
    });
    auto done = std::make_shared<HostEvent>(this);
    pending_.push_back(Pending{name, enqueued, done, started, deadline});
    lock.unlock();
    wake_.notify_all();
    return DeviceWork{std::move(enqueued), std::move(done)};
  }

  // Aborts the communicator (once) and throws the failure; under mutex_.
  [[noreturn]] void fail_locked(const std::string& message, bool timed_out) {
    abort_locked(message);
    throw Error(timed_out ? ErrorCode::timeout : ErrorCode::communication, message);
  }

  void abort_locked(const std::string& message) {
    if (failure_.empty()) failure_ = message;
    if (!aborted_) {
      aborted_ = true;
      (void)lib_.ncclCommAbort(comm_);
    }
  }

  // Finishes each pending call once it is done on the GPU; past its
  // deadline, or on an asynchronous NCCL error, aborts the communicator
  // and fails every pending call.
  void watch() {
    std::vector<std::pair<std::shared_ptr<HostEvent>, std::exception_ptr>> finished;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;
      std::string failure;
      ErrorCode code = ErrorCode::communication;
      ncclResult_t async = ncclSuccess;
      if (!aborted_) (void)lib_.ncclCommGetAsyncError(comm_, &async);
      for (auto it = pending_.begin(); it != pending_.end();) {
        bool ready = false;
        try {
          ready = it->enqueued->ready();
        } catch (const std::exception& e) {
          failure = it->what + ": " + e.what();
        }
        if (ready) {
          finished.emplace_back(it->done, nullptr);
          it = pending_.erase(it);
          continue;
        }
        if (failure.empty() && async != ncclSuccess && async != ncclInProgress) {
          failure = it->what + ": a rank failed (" + lib_.ncclGetErrorString(async) + ")";
        } else if (failure.empty() && Clock::now() > it->deadline) {
          failure = it->what + ": timed out after " + seconds_past(it->deadline, it->started) +
                    " waiting for the other ranks";
          code = ErrorCode::timeout;
        }
        ++it;
      }
      if (!failure.empty()) {
        abort_locked(failure);
        const auto error = std::make_exception_ptr(Error(code, failure + "; the NCCL group was aborted"));
        for (auto& p : pending_) finished.emplace_back(p.done, error);
        pending_.clear();
      }
      const bool last = stopping_ && pending_.empty();
      // Outside the lock: a finished event runs its waiters' callbacks,
      // which may enqueue the next call.
      lock.unlock();
      for (auto& [event, error] : finished) event->finish(error);
      finished.clear();
      if (last) return;
      std::this_thread::sleep_for(kPoll);
      lock.lock();
    }
  }

  const NcclLibrary& lib_;
  ncclComm_t comm_;
  CudaDevice& device_;
  int rank_, size_;
  std::mutex mutex_;  // NCCL calls on comm_, pending_, failure_, stopping_
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::string failure_;
  bool aborted_ = false;
  bool stopping_ = false;
  std::thread watcher_;  // last: it reads the members above
};

class NcclCollectives final : public plugin::dist::DeviceCollectives {
 public:
  explicit NcclCollectives(const NcclLibrary& lib) : lib_(lib) {}

  std::string_view name() const noexcept override { return "nccl"; }
  std::string description() const override { return nccl_description(); }

  std::vector<std::byte> new_group_id() override {
    ncclUniqueId id{};
    const ncclResult_t r = lib_.ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      throw Error(ErrorCode::communication, std::string("nccl: ncclGetUniqueId: ") + lib_.ncclGetErrorString(r));
    std::vector<std::byte> bytes(sizeof id.internal);
    std::memcpy(bytes.data(), id.internal, bytes.size());
    return bytes;
  }

  std::unique_ptr<plugin::dist::DeviceTransport> join(std::span<const std::byte> id, plugin::Device& device, int rank,
                                                      int size, Deadline deadline) override {
    auto* gpu = dynamic_cast<CudaDevice*>(&device);
    ncclUniqueId uid{};
    if (gpu == nullptr || id.size() != sizeof uid.internal)
      throw Error(ErrorCode::invalid_argument, "nccl: a group joins on a CUDA device with a " +
                                                   std::to_string(sizeof uid.internal) + "-byte id");
    std::memcpy(uid.internal, id.data(), id.size());
    const std::string name = "nccl: rank " + std::to_string(rank) + " of " + std::to_string(size) + " on " +
                             device.hardware().id() + " joining its group";
    const Deadline started = Clock::now();
    ncclConfig_t config{sizeof(ncclConfig_t), kNcclConfigMagic, kNcclConfigVersion, 0, kNcclConfigUndefined,
                        kNcclConfigUndefined, kNcclConfigUndefined, nullptr, kNcclConfigUndefined};
    gpu->select();
    ncclComm_t comm = nullptr;
    ncclResult_t r = lib_.ncclCommInitRankConfig(&comm, size, uid, rank, &config);
    while (r == ncclInProgress && comm != nullptr) {
      if (Clock::now() > deadline) {
        (void)lib_.ncclCommAbort(comm);
        throw Error(ErrorCode::timeout, name + ": timed out after " + seconds_past(deadline, started) +
                                            " waiting for the other ranks");
      }
      std::this_thread::sleep_for(kPoll);
      (void)lib_.ncclCommGetAsyncError(comm, &r);
    }
    if (r != ncclSuccess) {
      if (comm != nullptr) (void)lib_.ncclCommAbort(comm);
      throw Error(ErrorCode::communication, name + ": " + lib_.ncclGetErrorString(r));
    }
    return std::make_unique<NcclTransport>(lib_, comm, *gpu, rank, size);
  }

 private:
  const NcclLibrary& lib_;
};

}  // namespace

plugin::dist::DeviceCollectives* nccl_collectives(std::string& why) {
  const NcclLibrary* lib = nccl(why);
  if (lib == nullptr) return nullptr;
  static NcclCollectives collectives(*lib);  // lives as long as the plugin: until exit
  return &collectives;
}

}  // namespace xylem::cuda
