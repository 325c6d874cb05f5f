#include "nccl_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <string_view>
#include <mutex>
#include <numeric>
#include <optional>
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

// How often the watcher looks at calls in flight that no caller waits
// for: NCCL's own watchdogs (PyTorch's) poll at about this rate.
constexpr std::chrono::microseconds kPoll{200};
// For that long after a caller says it waits (HostEvent says it again every
// millisecond while it does), the watcher only yields between looks: a
// small collective is done within microseconds, and a sleep there
// would add its whole length to every call (a 200 us sleep made every
// collective up to 16 MiB take ~330 us on two H100s). Not while no one
// waits: a thread querying CUDA events without pause slows the launches
// of the thread that enqueues the work.
constexpr std::chrono::microseconds kSpin{2000};
// How long a non-blocking communicator may take to place a captured call.
constexpr std::chrono::seconds kPlaceCaptured{60};
// How often an idle watcher looks at a call being placed.
constexpr std::chrono::milliseconds kIdleLook{50};

// Pauses between two looks at something that is usually ready soon.
class Backoff {
 public:
  void pause() {
    if (Clock::now() - since_ < kSpin) std::this_thread::yield();
    else std::this_thread::sleep_for(kPoll);
  }
  void restart() { since_ = Clock::now(); }

 private:
  Deadline since_ = Clock::now();
};

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
    case DType::c64:
    case DType::c128:
      break;  // refused before any transport (src/dist/communicator.cpp)
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

class NcclTransport;

// One rank's call, collected by NcclCollectives::together for a group launch.
struct Collected {
  NcclTransport* transport;
  std::string name;
  std::size_t elements;
  std::vector<EventPtr> deps;
  Deadline started, deadline;
  std::function<ncclResult_t(cudaStream_t)> enqueue;
};
// Where NcclTransport::call puts its call while collect() runs on this thread.
thread_local std::vector<Collected>* collecting = nullptr;

// Runs `calls` (each makes NCCL calls through NcclTransport::call) with
// their NCCL calls collected, not placed, for one group launch.
std::vector<Collected> collect(std::span<const std::function<plugin::dist::DeviceWork()>> calls) {
  std::vector<Collected> collected;
  collecting = &collected;
  try {
    for (const auto& c : calls) (void)c();
  } catch (...) {
    collecting = nullptr;
    throw;
  }
  collecting = nullptr;
  return collected;
}

bool placed(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

// A group's communicators: `calls`, which the collectives run on, and the
// non-blocking one the group started with when `calls` was split from it
// (else null, and `calls` is that one).
struct Communicators {
  ncclComm_t calls = nullptr;
  ncclComm_t parent = nullptr;
};

class NcclTransport final : public plugin::dist::DeviceTransport {
 public:
  NcclTransport(const NcclLibrary& lib, Communicators comms, CudaDevice& device, int rank, int size)
      : lib_(lib), comm_(comms.calls), parent_(comms.parent), device_(device), rank_(rank), size_(size),
        watcher_([this] { watch(); }) {}

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
    if (!aborted_) abort_communicators();
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::string_view name() const noexcept override { return "nccl"; }

  DeviceWork all_reduce(void* data, std::size_t count, DType dtype, Reduction op, plugin::Deps deps,
                        Deadline deadline) override {
    return call("all_reduce", count, deps, deadline, [=, this](cudaStream_t s) {
      return lib_.ncclAllReduce(data, data, count, nccl_type(dtype), nccl_op(op, dtype), comm_, s);
    });
  }
  DeviceWork broadcast(void* data, std::size_t bytes, int root, plugin::Deps deps, Deadline deadline) override {
    return call("broadcast", bytes, deps, deadline,
                [=, this](cudaStream_t s) { return lib_.ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, s); });
  }
  DeviceWork reduce(void* data, std::size_t count, DType dtype, Reduction op, int root, plugin::Deps deps,
                    Deadline deadline) override {
    return call("reduce", count, deps, deadline, [=, this](cudaStream_t s) {
      return lib_.ncclReduce(data, data, count, nccl_type(dtype), nccl_op(op, dtype), root, comm_, s);
    });
  }
  DeviceWork all_gather(const void* in, void* out, std::size_t bytes, plugin::Deps deps,
                        Deadline deadline) override {
    return call("all_gather", bytes, deps, deadline,
                [=, this](cudaStream_t s) { return lib_.ncclAllGather(in, out, bytes, ncclUint8, comm_, s); });
  }
  DeviceWork reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Reduction op,
                            plugin::Deps deps, Deadline deadline) override {
    return call("reduce_scatter", count, deps, deadline, [=, this](cudaStream_t s) {
      return lib_.ncclReduceScatter(in, out, count, nccl_type(dtype), nccl_op(op, dtype), comm_, s);
    });
  }
  DeviceWork send(const void* data, std::size_t bytes, int peer, plugin::Deps deps, Deadline deadline) override {
    return call("send", bytes, deps, deadline,
                [=, this](cudaStream_t s) { return lib_.ncclSend(data, bytes, ncclUint8, peer, comm_, s); });
  }
  DeviceWork recv(void* data, std::size_t bytes, int peer, plugin::Deps deps, Deadline deadline) override {
    return call("recv", bytes, deps, deadline,
                [=, this](cudaStream_t s) { return lib_.ncclRecv(data, bytes, ncclUint8, peer, comm_, s); });
  }

  // The calls as one NCCL group on the communication stream: one launch
  // for a bucket of tensors (one per tensor cost ~30-60 us each).
  DeviceWork grouped(std::span<const std::function<DeviceWork()>> calls) override {
    if (collecting != nullptr) {  // inside a group launch already: its calls join it
      for (const auto& c : calls) (void)c();
      return {};
    }
    std::vector<Collected> collected = collect(calls);
    if (collected.empty()) return {};
    std::vector<EventPtr> deps;
    Deadline deadline = collected.front().deadline;
    for (Collected& c : collected) {
      deps.insert(deps.end(), c.deps.begin(), c.deps.end());
      deadline = std::min(deadline, c.deadline);
    }
    const std::string name = collected.size() == 1 ? collected.front().name
                                                   : collected.front().name + " and " +
                                                         std::to_string(collected.size() - 1) + " more, grouped";
    const Deadline started = collected.front().started;
    std::unique_lock calling(call_mutex_);
    throw_if_failed(name);
    EventPtr enqueued = device_.enqueue("nccl group", deps, [&](cudaStream_t stream) {
      ncclResult_t r = ncclSuccess;
      const ncclResult_t ended = placing(deadline, [&] {
        r = lib_.ncclGroupStart();
        for (std::size_t i = 0; i < collected.size() && placed(r); ++i)
          if (collected[i].elements > 0) r = collected[i].enqueue(stream);
        return lib_.ncclGroupEnd();  // also after a failed call: the group must be closed
      });
      if (!placed(r)) fail(name + ": " + lib_.ncclGetErrorString(r), false);
      settle(ended, name, started, deadline);
    });
    calling.unlock();
    return track(name, std::move(enqueued), started, deadline);
  }

  // The calls' NCCL calls, collected now and placed as one group on the
  // stream a recording captures (CudaDevice::capture_graph, at the graph's
  // first replay and after a rebind): NCCL's calls can be captured into a
  // CUDA graph. Nothing is tracked: the graph's launch is the op. The
  // capture holds the compute stream's lock while this takes call_mutex_,
  // the other order from call(); only two threads making collectives on one
  // communicator at once could meet there, which NCCL forbids anyway (the
  // ranks would not see the calls in one order).
  std::function<void(void*)> recorded(std::span<const std::function<DeviceWork()>> calls) override {
    auto collected = std::make_shared<const std::vector<Collected>>(collect(calls));
    return [this, collected](void* queue) {
      const auto stream = static_cast<cudaStream_t>(queue);
      const std::string name = collected->empty() ? "nccl (nothing)" : collected->front().name + " (captured)";
      std::lock_guard calling(call_mutex_);
      throw_if_failed(name);
      ncclResult_t r = lib_.ncclGroupStart();
      for (std::size_t i = 0; i < collected->size() && placed(r); ++i)
        if ((*collected)[i].elements > 0) r = (*collected)[i].enqueue(stream);
      const ncclResult_t ended = lib_.ncclGroupEnd();  // also after a failed call: the group must be closed
      // Refused by NCCL in a capture: the capture fails, the group stays usable.
      if (!placed(r) || !placed(ended))
        throw Error(ErrorCode::unsupported,
                    name + ": NCCL refused the call in a CUDA graph capture: " +
                        lib_.ncclGetErrorString(placed(r) ? ended : r));
      const Deadline started = Clock::now();
      settle(ended, name, started, started + kPlaceCaptured);
    };
  }

 private:
  friend class NcclCollectives;

  struct Pending {
    std::string what;
    EventPtr enqueued;
    std::shared_ptr<HostEvent> done;
    Deadline started;
    Deadline deadline;
  };

  // Enqueues one NCCL call of `elements` elements (none: nothing for NCCL
  // to do, which the ranks agree on since they pass the same shapes; the
  // op is still ordered like one). While NcclCollectives::together runs on
  // this thread, the call is collected for its group launch instead.
  template <class Enqueue>
  DeviceWork call(const char* what, std::size_t elements, plugin::Deps deps, Deadline deadline, Enqueue&& enqueue) {
    const std::string name = "nccl " + std::string(what) + " on " + device_.hardware().id();
    const Deadline started = Clock::now();
    std::unique_lock calling(call_mutex_);
    throw_if_failed(name);
    if (collecting != nullptr) {
      collecting->push_back(Collected{this, name, elements, {deps.begin(), deps.end()}, started, deadline,
                                      std::forward<Enqueue>(enqueue)});
      return {};
    }
    EventPtr enqueued = device_.enqueue(what, deps, [&](cudaStream_t stream) {
      if (elements == 0) return;
      const ncclResult_t r = placing(deadline, [&] { return enqueue(stream); });
      settle(r, name, started, deadline);
    });
    calling.unlock();
    return track(name, std::move(enqueued), started, deadline);
  }

  void throw_if_failed(const std::string& name) {
    std::lock_guard lock(mutex_);
    if (!failure_.empty())
      throw Error(ErrorCode::communication, name + ": the NCCL group failed earlier and was aborted (" + failure_ + ")");
  }

  // Runs `place` (an NCCL call on comm_), telling the watcher by when it
  // must return: a blocking communicator's call waits for the peers while
  // it connects to them, and only an abort from the watcher ends that wait
  // when a peer is gone. Under call_mutex_.
  template <class Place>
  ncclResult_t placing(Deadline deadline, Place&& place) {
    NcclTransport* self = this;
    return placing_all(std::span(&self, 1), deadline, std::forward<Place>(place));
  }
  // placing() for one call (a group launch) on several transports' communicators.
  template <class Place>
  static ncclResult_t placing_all(std::span<NcclTransport* const> transports, Deadline deadline, Place&& place) {
    const auto mark = [&](std::optional<Deadline> until) {
      for (NcclTransport* t : transports) {
        std::lock_guard lock(t->mutex_);
        t->placing_until_ = until;
      }
    };
    mark(deadline);
    try {
      const ncclResult_t r = place();
      mark(std::nullopt);
      return r;
    } catch (...) {
      mark(std::nullopt);
      throw;
    }
  }

  // A non-blocking communicator may still be placing a call (or a group
  // of them) on the stream when the call returns: the op's event must be
  // numbered after it is there (a blocking one has placed it). Under
  // call_mutex_.
  void settle(ncclResult_t r, const std::string& name, Deadline started, Deadline deadline) {
    Backoff backoff;
    while (r == ncclInProgress && !aborted()) {
      if (Clock::now() > deadline) fail(name + ": still being enqueued after " + seconds_past(deadline, started), true);
      backoff.pause();
      (void)lib_.ncclCommGetAsyncError(comm_, &r);
    }
    if (aborted()) fail(name + ": the NCCL group was aborted while it was being enqueued", true);
    if (r != ncclSuccess) fail(name + ": " + lib_.ncclGetErrorString(r), false);
  }

  bool aborted() {
    std::lock_guard lock(mutex_);
    return aborted_;
  }

  // A caller waits for a call: the watcher looks without pause for a while.
  // (From HostEvent under its lock, before the event is finished, so
  // before this transport can be gone.)
  void wanted() {
    {
      std::lock_guard lock(mutex_);
      wanted_until_ = Clock::now() + kSpin;
    }
    wake_.notify_all();
  }

  // Hands an enqueued call to the watcher, which completes its `done`.
  DeviceWork track(const std::string& name, EventPtr enqueued, Deadline started, Deadline deadline) {
    auto done = std::make_shared<HostEvent>(this, [this] { wanted(); });
    {
      std::lock_guard lock(mutex_);
      pending_.push_back(Pending{name, enqueued, done, started, deadline});
    }
    wake_.notify_all();
    return DeviceWork{std::move(enqueued), std::move(done)};
  }

  // Aborts the communicators (once) and throws the failure.
  [[noreturn]] void fail(const std::string& message, bool timed_out) {
    {
      std::lock_guard lock(mutex_);
      abort_locked(message);
    }
    throw Error(timed_out ? ErrorCode::timeout : ErrorCode::communication, message);
  }

  void abort(const std::string& message) {
    std::lock_guard lock(mutex_);
    abort_locked(message);
  }

  // Under mutex_.
  void abort_locked(const std::string& message) {
    if (failure_.empty()) failure_ = message;
    if (!aborted_) {
      aborted_ = true;
      abort_communicators();
    }
  }

  void abort_communicators() {
    (void)lib_.ncclCommAbort(comm_);
    if (parent_ != nullptr) (void)lib_.ncclCommAbort(parent_);
  }

  // Finishes each pending call once it is done on the GPU; past its
  // deadline, or on an asynchronous NCCL error, aborts the communicator
  // and fails every pending call.
  void watch() {
    std::vector<std::pair<std::shared_ptr<HostEvent>, std::exception_ptr>> finished;
    std::unique_lock lock(mutex_);
    for (;;) {
      // Idle, it still looks now and then at a call being placed, which a
      // peer that is gone can hold up forever (placing()).
      wake_.wait_for(lock, kIdleLook, [&] { return stopping_ || !pending_.empty(); });
      if (placing_until_ && Clock::now() > *placing_until_ && !aborted_) {
        const std::string failure = "nccl on " + device_.hardware().id() +
                                    ": a call was still waiting for the other ranks at its deadline";
        abort_locked(failure);
        const auto error = std::make_exception_ptr(Error(ErrorCode::timeout, failure + "; the NCCL group was aborted"));
        for (auto& p : pending_) finished.emplace_back(p.done, error);
        pending_.clear();
      }
      if (pending_.empty() && finished.empty()) {
        if (stopping_) return;
        continue;
      }
      std::string failure;
      ErrorCode code = ErrorCode::communication;
      ncclResult_t async = ncclSuccess;
      {
        // Not beside a caller's NCCL call: on a non-blocking communicator
        // ncclCommGetAsyncError also joins and frees the call's group job,
        // which two threads at once would do twice.
        std::unique_lock calling(call_mutex_, std::try_to_lock);
        if (calling.owns_lock() && !aborted_) (void)lib_.ncclCommGetAsyncError(comm_, &async);
      }
      // Oldest first, and no further than the first call still running:
      // they run in order on one stream, and looking at every call in
      // flight (up to hundreds) under the lock held up each new call.
      while (!pending_.empty() && failure.empty()) {
        Pending& oldest = pending_.front();
        bool ready = false;
        try {
          ready = oldest.enqueued->ready();
        } catch (const std::exception& e) {
          failure = oldest.what + ": " + e.what();
          break;
        }
        if (ready) {
          finished.emplace_back(oldest.done, nullptr);
          pending_.pop_front();
          continue;
        }
        if (async != ncclSuccess && async != ncclInProgress) {
          failure = oldest.what + ": a rank failed (" + lib_.ncclGetErrorString(async) + ")";
        } else if (Clock::now() > oldest.deadline) {
          failure = oldest.what + ": timed out after " + seconds_past(oldest.deadline, oldest.started) +
                    " waiting for the other ranks";
          code = ErrorCode::timeout;
        }
        break;
      }
      if (!failure.empty()) {
        // Not while a caller is in an NCCL call on comm_ (an abort frees
        // it), unless that call is past its deadline: then it waits for a
        // peer that is gone, and only the abort ends it. Else next look.
        std::unique_lock calling(call_mutex_, std::try_to_lock);
        if (calling.owns_lock() || (placing_until_ && Clock::now() > *placing_until_)) {
          abort_locked(failure);
          const auto error = std::make_exception_ptr(Error(code, failure + "; the NCCL group was aborted"));
          for (auto& p : pending_) finished.emplace_back(p.done, error);
          pending_.clear();
        }
      }
      const bool last = stopping_ && pending_.empty();
      // Outside the lock: a finished event runs its waiters' callbacks,
      // which may enqueue the next call.
      lock.unlock();
      for (auto& [event, error] : finished) event->finish(error);
      finished.clear();
      if (last) return;
      // The next look: at once while a caller waits (kSpin), else after
      // kPoll or when one starts waiting.
      if (Clock::now() < wanted_until_.load()) {
        std::this_thread::yield();
        lock.lock();
      } else {
        lock.lock();
        wake_.wait_for(lock, kPoll, [&] { return stopping_ || Clock::now() < wanted_until_.load(); });
      }
    }
  }

  const NcclLibrary& lib_;
  ncclComm_t comm_;
  ncclComm_t parent_;
  CudaDevice& device_;
  int rank_, size_;
  // One NCCL call on comm_ at a time (NCCL's communicators are not
  // thread-safe); taken before mutex_, never while holding it.
  std::mutex call_mutex_;
  std::mutex mutex_;  // pending_, failure_, aborted_, stopping_, placing_until_
  std::optional<Deadline> placing_until_;  // a call being placed must return by then
  std::atomic<Deadline> wanted_until_{};   // the watcher spins until then (wanted())
  std::condition_variable wake_;
  std::deque<Pending> pending_;
  std::string failure_;
  bool aborted_ = false;
  bool stopping_ = false;
  std::thread watcher_;  // last: it reads the members above
};

// blocking = 0: no NCCL call waits for a peer.
ncclConfig_t config(int blocking) {
  return ncclConfig_t{sizeof(ncclConfig_t), kNcclConfigMagic,     kNcclConfigVersion,   blocking, kNcclConfigUndefined,
                      kNcclConfigUndefined, kNcclConfigUndefined, nullptr, kNcclConfigUndefined};
}

// XYLEM_NCCL_BLOCKING=0 keeps the calls on the non-blocking communicators
// (to measure what the blocking ones save).
bool blocking_calls() {
  const char* v = std::getenv("XYLEM_NCCL_BLOCKING");
  return v == nullptr || std::string_view(v) != "0";
}

CudaDevice& gpu_of(plugin::Device& device) {
  auto* gpu = dynamic_cast<CudaDevice*>(&device);
  if (gpu == nullptr)
    throw Error(ErrorCode::invalid_argument, "nccl: " + device.hardware().id() + " is not a CUDA device");
  return *gpu;
}

class NcclCollectives final : public plugin::dist::DeviceCollectives {
 public:
  explicit NcclCollectives(const NcclLibrary& lib) : lib_(lib) {}

  std::string_view name() const noexcept override { return "nccl"; }
  std::string description() const override { return nccl_description(); }

  std::vector<std::byte> new_group_id() override {
    const ncclUniqueId id = unique_id();
    std::vector<std::byte> bytes(sizeof id.internal);
    std::memcpy(bytes.data(), id.internal, bytes.size());
    return bytes;
  }

  std::unique_ptr<plugin::dist::DeviceTransport> join(std::span<const std::byte> id, plugin::Device& device, int rank,
                                                      int size, Deadline deadline) override {
    CudaDevice& gpu = gpu_of(device);
    ncclUniqueId uid{};
    if (id.size() != sizeof uid.internal)
      throw Error(ErrorCode::invalid_argument, "nccl: a group id has " + std::to_string(sizeof uid.internal) + " bytes");
    std::memcpy(uid.internal, id.data(), id.size());
    const std::string name = "nccl: rank " + std::to_string(rank) + " of " + std::to_string(size) + " on " +
                             device.hardware().id() + " joining its group";
    const Deadline started = Clock::now();
    ncclConfig_t non_blocking = config(0);
    gpu.select();
    ncclComm_t comm = nullptr;
    const ncclResult_t r = lib_.ncclCommInitRankConfig(&comm, size, uid, rank, &non_blocking);
    std::vector<ncclComm_t> comms{comm};
    settle_started(comms, r, name, started, deadline);
    CudaDevice* gpus[] = {&gpu};
    const int ranks[] = {rank};
    return std::make_unique<NcclTransport>(lib_, for_calls(comms, gpus, ranks, name, started, deadline).front(), gpu,
                                           rank, size);
  }

  // ncclCommInitAll's work with non-blocking communicators: every rank's
  // ncclCommInitRankConfig in one NCCL group, which one thread may start
  // for all the devices (separate calls would each wait for the others).
  std::vector<std::unique_ptr<plugin::dist::DeviceTransport>> join_local(std::span<plugin::Device* const> devices,
                                                                        Deadline deadline) override {
    std::vector<CudaDevice*> gpus;
    for (plugin::Device* d : devices) gpus.push_back(&gpu_of(*d));
    const int size = static_cast<int>(gpus.size());
    const std::string name = "nccl: a group of " + std::to_string(size) + " GPUs in this process starting";
    const Deadline started = Clock::now();
    const ncclUniqueId uid = unique_id();
    std::vector<ncclConfig_t> configs(gpus.size(), config(0));
    std::vector<ncclComm_t> comms(gpus.size(), nullptr);
    ncclResult_t r = lib_.ncclGroupStart();
    for (int i = 0; i < size && placed(r); ++i) {
      gpus[std::size_t(i)]->select();
      r = lib_.ncclCommInitRankConfig(&comms[std::size_t(i)], size, uid, i, &configs[std::size_t(i)]);
    }
    const ncclResult_t ended = lib_.ncclGroupEnd();
    settle_started(comms, placed(r) ? ended : r, name, started, deadline);
    std::vector<int> ranks(gpus.size());
    std::iota(ranks.begin(), ranks.end(), 0);
    const std::vector<Communicators> made = for_calls(comms, gpus, ranks, name, started, deadline);
    std::vector<std::unique_ptr<plugin::dist::DeviceTransport>> transports;
    for (int i = 0; i < size; ++i)
      transports.push_back(std::make_unique<NcclTransport>(lib_, made[std::size_t(i)], *gpus[std::size_t(i)], i, size));
    return transports;
  }

  // The calls collected (NcclTransport::call), then launched as one NCCL
  // group on every rank's stream at once. calls[i] makes rank i's NCCL
  // calls (one, or a bucket's), all on its own transport.
  std::vector<DeviceWork> together(std::span<const std::function<DeviceWork()>> calls) override {
    std::vector<Collected> collected = collect(calls);
    // Each rank's calls, ranks in the order of their first call.
    std::vector<NcclTransport*> ranks;
    std::vector<std::vector<Collected*>> calls_of;
    for (Collected& c : collected) {
      const auto at = std::find(ranks.begin(), ranks.end(), c.transport);
      if (at == ranks.end()) {
        ranks.push_back(c.transport);
        calls_of.push_back({&c});
      } else {
        calls_of[std::size_t(at - ranks.begin())].push_back(&c);
      }
    }
    if (ranks.size() != calls.size())
      throw Error(ErrorCode::invalid_argument, "nccl: a group launch takes each rank's NCCL calls on its own transport");
    std::vector<CudaDevice*> devices;
    std::vector<std::vector<EventPtr>> deps(ranks.size());
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      devices.push_back(&ranks[i]->device_);
      for (Collected* c : calls_of[i]) deps[i].insert(deps[i].end(), c->deps.begin(), c->deps.end());
    }
    const std::string& what = collected.front().name;
    const Deadline deadline = collected.front().deadline;
    std::vector<std::unique_lock<std::mutex>> locks;
    const auto abort_all = [&](const std::string& why) {
      for (NcclTransport* t : ranks) t->abort(why);
    };
    const std::vector<EventPtr> enqueued =
        CudaDevice::enqueue_together(devices, deps, what, [&](std::span<const cudaStream_t> streams) {
          // Each transport's call lock, as its own calls take it: in
          // address order, after the dependencies were waited for.
          std::vector<NcclTransport*> order(ranks);
          std::sort(order.begin(), order.end());
          for (NcclTransport* t : order) locks.emplace_back(t->call_mutex_);
          for (Collected& c : collected) c.transport->throw_if_failed(c.name);
          const Collected* failed = nullptr;
          ncclResult_t r = ncclSuccess;
          const ncclResult_t ended = NcclTransport::placing_all(order, deadline, [&] {
            r = lib_.ncclGroupStart();
            for (std::size_t i = 0; i < ranks.size() && placed(r); ++i)
              for (Collected* c : calls_of[i]) {
                if (c->elements > 0) r = c->enqueue(streams[i]);
                if (!placed(r)) {
                  failed = c;
                  break;
                }
              }
            return lib_.ncclGroupEnd();
          });
          if (failed != nullptr) {
            abort_all(failed->name + ": " + lib_.ncclGetErrorString(r));
            throw Error(ErrorCode::communication, failed->name + ": " + lib_.ncclGetErrorString(r));
          }
          // Every communicator of the group settles; the first failure
          // aborts them all (their ranks would wait for it forever).
          try {
            for (std::size_t i = 0; i < ranks.size(); ++i)
              ranks[i]->settle(ended, calls_of[i].front()->name, calls_of[i].front()->started, deadline);
          } catch (...) {
            abort_all("another rank of the group failed");
            throw;
          }
        });
    locks.clear();
    std::vector<DeviceWork> works;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const Collected& first = *calls_of[i].front();
      works.push_back(ranks[i]->track(first.name, enqueued[i], first.started, first.deadline));
    }
    return works;
  }

 private:
  ncclUniqueId unique_id() const {
    ncclUniqueId id{};
    const ncclResult_t r = lib_.ncclGetUniqueId(&id);
    if (r != ncclSuccess)
      throw Error(ErrorCode::communication, std::string("nccl: ncclGetUniqueId: ") + lib_.ncclGetErrorString(r));
    return id;
  }

  // The communicators the calls run on: blocking ones split from the
  // started group's non-blocking `parents` (one per GPU this process
  // drives, of the given ranks). NCCL hands every call on a non-blocking
  // communicator to a thread it starts for that call (some 50-100 us a
  // call on two H100s); a blocking one places it on the stream at once.
  // The group starts non-blocking so that a rank that never comes ends in
  // a timeout, not a hang; the split, which every rank makes right after,
  // runs as a job of the non-blocking parents, polled under the same
  // deadline. Without ncclCommSplit (NCCL before 2.18), or with
  // XYLEM_NCCL_BLOCKING=0, the calls run on the parents.
  std::vector<Communicators> for_calls(std::span<const ncclComm_t> parents, std::span<CudaDevice* const> gpus,
                                       std::span<const int> ranks, const std::string& name, Deadline started,
                                       Deadline deadline) const {
    std::vector<Communicators> out;
    if (lib_.ncclCommSplit == nullptr || !blocking_calls()) {
      for (ncclComm_t p : parents) out.push_back({p, nullptr});
      return out;
    }
    std::vector<ncclComm_t> children(parents.size(), nullptr);
    std::vector<ncclConfig_t> configs(parents.size(), config(1));
    ncclResult_t r = lib_.ncclGroupStart();
    for (std::size_t i = 0; i < parents.size() && placed(r); ++i) {
      gpus[i]->select();
      r = lib_.ncclCommSplit(parents[i], 0, ranks[i], &children[i], &configs[i]);
    }
    const ncclResult_t ended = lib_.ncclGroupEnd();
    // The parents' state tells when the split is done (the children are
    // written then); settle_started aborts the parents if it fails.
    settle_started(parents, placed(r) ? ended : r,
                   name + " (its blocking communicators)", started, deadline);
    for (std::size_t i = 0; i < parents.size(); ++i) {
      if (children[i] == nullptr) {
        for (ncclComm_t c : children)
          if (c != nullptr) (void)lib_.ncclCommAbort(c);
        for (ncclComm_t p : parents) (void)lib_.ncclCommAbort(p);
        throw Error(ErrorCode::communication, name + ": ncclCommSplit made no communicator");
      }
      out.push_back({children[i], parents[i]});
    }
    return out;
  }

  // Polls communicators being made (non-blocking: `r` may say in
  // progress) until each is ready; past the deadline or on a failure
  // aborts them all and throws.
  void settle_started(std::span<const ncclComm_t> comms, ncclResult_t r, const std::string& name, Deadline started,
                      Deadline deadline) const {
    auto abort_all = [&] {
      for (ncclComm_t c : comms)
        if (c != nullptr) (void)lib_.ncclCommAbort(c);
    };
    for (ncclComm_t comm : comms) {
      ncclResult_t state = r;
      while (state == ncclInProgress && comm != nullptr) {
        if (Clock::now() > deadline) {
          abort_all();
          throw Error(ErrorCode::timeout, name + ": timed out after " + seconds_past(deadline, started) +
                                              " waiting for the other ranks");
        }
        std::this_thread::sleep_for(kPoll);
        (void)lib_.ncclCommGetAsyncError(comm, &state);
      }
      if (state != ncclSuccess || comm == nullptr) {
        abort_all();
        throw Error(ErrorCode::communication,
                    name + ": " + (state != ncclSuccess ? lib_.ncclGetErrorString(state) : "no communicator made"));
      }
    }
  }

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
