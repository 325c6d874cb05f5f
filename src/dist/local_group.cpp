#include "dist/local_group.hpp"

#include <algorithm>
#include <cstring>

#include "core/storage.hpp"
#include "dist/average.hpp"
#include "dist/device_link.hpp"
#include "dist/reduce_op.hpp"
#include "dist/stand_in.hpp"
#include "dist/work_queue.hpp"
#include "graph/recorder.hpp"

namespace xylem::dist::detail {

using plugin::dist::Clock;
using plugin::dist::DeviceTransport;
using plugin::dist::DeviceWork;
using Kind = LocalCall::Kind;

struct LocalGroup::Part {
  LocalCall call;
  bool on_device = false;
  std::vector<std::byte*> data;
  std::vector<EventPtr> data_deps, order_deps;
  std::shared_ptr<StandIn> enqueued, done;
};

struct LocalGroup::Batch {
  std::vector<std::unique_ptr<Part>> parts;
  int arrived = 0;
};

namespace {

std::size_t count_of(const TensorUse& use) { return static_cast<std::size_t>(use.tensor.numel()); }
std::size_t bytes_of(const TensorUse& use) { return count_of(use) * size_of(use.tensor.dtype()); }

void copy_bytes(std::byte* to, const std::byte* from, std::size_t bytes) {
  if (bytes > 0) std::memcpy(to, from, bytes);
}

// The combination of every rank's `use`-th buffer, combined in rank order
// (so every call combines alike), averaged for avg.
std::vector<std::byte> combination(std::span<const std::unique_ptr<LocalGroup::Part>> parts, std::size_t use,
                                   std::size_t count, DType dtype, ReduceOp op) {
  const std::size_t bytes = count * size_of(dtype);
  std::vector<std::byte> sum(bytes);
  copy_bytes(sum.data(), parts[0]->data[use], bytes);
  for (std::size_t r = 1; r < parts.size(); ++r)
    if (count > 0) plugin::dist::combine(sum.data(), parts[r]->data[use], count, dtype, combine_of(op));
  if (op == ReduceOp::avg && count > 0) divide(sum.data(), count, dtype, static_cast<int>(parts.size()));
  return sum;
}

// One collective over every rank's host copies, in this process.
void run_on_host(std::span<const std::unique_ptr<LocalGroup::Part>> parts) {
  const LocalCall& c = parts[0]->call;
  const std::size_t n = parts.size();
  switch (c.kind) {
    case Kind::all_reduce:
      for (std::size_t u = 0; u < c.uses.size(); ++u) {
        const auto sum = combination(parts, u, count_of(c.uses[u]), c.uses[u].tensor.dtype(), c.op);
        for (const auto& p : parts) copy_bytes(p->data[u], sum.data(), sum.size());
      }
      return;
    case Kind::broadcast:
      for (std::size_t u = 0; u < c.uses.size(); ++u)
        for (std::size_t r = 0; r < n; ++r)
          if (int(r) != c.root) copy_bytes(parts[r]->data[u], parts[std::size_t(c.root)]->data[u], bytes_of(c.uses[u]));
      return;
    case Kind::reduce: {
      const auto sum = combination(parts, 0, count_of(c.uses[0]), c.uses[0].tensor.dtype(), c.op);
      copy_bytes(parts[std::size_t(c.root)]->data[0], sum.data(), sum.size());
      return;
    }
    case Kind::all_gather: {
      const std::size_t bytes = bytes_of(c.uses[0]);
      for (const auto& to : parts)
        for (std::size_t r = 0; r < n; ++r) copy_bytes(to->data[1] + r * bytes, parts[r]->data[0], bytes);
      return;
    }
    case Kind::reduce_scatter: {
      const auto sum = combination(parts, 0, count_of(c.uses[0]), c.uses[0].tensor.dtype(), c.op);
      const std::size_t block = bytes_of(c.uses[1]);
      for (std::size_t r = 0; r < n; ++r) copy_bytes(parts[r]->data[1], sum.data() + r * block, block);
      return;
    }
    case Kind::barrier:
      return;
  }
}

// Every rank passes the same call, dtype and shapes, or every rank's call
// fails naming rank 0's and the first that differs (in one process this
// costs nothing, so it is checked whatever Options::checked says).
void check_same(std::span<const std::unique_ptr<LocalGroup::Part>> parts) {
  const Signature& first = parts[0]->call.signature;
  for (std::size_t r = 1; r < parts.size(); ++r) {
    const Signature& other = parts[r]->call.signature;
    if (other.call == first.call && other.shape == first.shape) continue;
    const ErrorCode code = other.call != first.call     ? ErrorCode::invalid_argument
                           : other.dtype != first.dtype ? ErrorCode::dtype_mismatch
                                                        : ErrorCode::shape_mismatch;
    auto describe = [](const Signature& s) { return s.call + (s.shape.empty() ? "" : " on " + s.shape); };
    throw Error(code, "dist::" + first.call + ": rank 0 calls " + describe(first) + " but rank " + std::to_string(r) +
                          " calls " + describe(other) + "; every rank must pass the same call, dtype and shape");
  }
}

// Where `part`'s tensors recorded its stand-in, they record `event` now.
void hand_over(const LocalGroup::Part& part, const EventPtr& event) {
  for (const TensorUse& use : part.call.uses) {
    xylem::detail::Storage& s = *use.tensor.storage();
    std::lock_guard lock(s.mutex);
    s.replace_event(part.enqueued.get(), event);
  }
}

}  // namespace

LocalGroup::LocalGroup(std::vector<plugin::Device*> devices, std::chrono::milliseconds timeout,
                       const std::string& device_policy)
    : devices_(std::move(devices)), timeout_(timeout), calls_(devices_.size(), 0) {
  const std::string call = "dist::Communicator::local";
  if (devices_.empty()) throw Error(ErrorCode::invalid_argument, call + ": no backends given; pass one per rank");
  const plugin::Device& host = xylem::detail::host_device();
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    const Hardware& hw = devices_[i]->hardware();
    if (hw.framework != devices_[0]->hardware().framework)
      throw Error(ErrorCode::invalid_argument, call + ": rank 0 is on " + devices_[0]->hardware().id() + " but rank " +
                                                   std::to_string(i) + " on " + hw.id() +
                                                   "; the ranks of a local group use one framework");
    for (std::size_t j = 0; j < i; ++j)
      if (devices_[j] == devices_[i] && devices_[i] != &host)
        throw Error(ErrorCode::invalid_argument, call + ": ranks " + std::to_string(j) + " and " + std::to_string(i) +
                                                     " are both on " + hw.id() +
                                                     "; each rank of a local group needs a device of its own");
  }
  if (devices_[0] == &host || device_policy == "host") return;
  std::string why;
  library_ = collectives_of(*devices_[0], why);
  if (library_ == nullptr) {
    if (device_policy == "nccl")
      throw Error(ErrorCode::plugin_unavailable, call + ": nccl cannot serve " + devices_[0]->hardware().id() + ": " + why);
    return;
  }
  std::vector<std::unique_ptr<plugin::dist::DeviceTransport>> joined;
  try {
    joined = library_->join_local(devices_, Clock::now() + timeout_);
  } catch (const Error& e) {
    // A library that cannot make a group in one process leaves it to the
    // host copies, as one missing does.
    if (e.code() != ErrorCode::unsupported || device_policy == "nccl") throw;
  }
  for (auto& t : joined) transports_.push_back(std::move(t));
}

LocalGroup::~LocalGroup() = default;

std::string_view LocalGroup::transport() const noexcept {
  return transports_.empty() ? std::string_view("local") : library_->name();
}

EventPtr LocalGroup::submit(int rank, LocalCall call) {
  // A local group's call completes once every rank has made it: not a
  // step one rank's graph can replay alone.
  if (xylem::detail::active_recorder())
    xylem::detail::refuse_in_capture("the collective dist::" + call.signature.call + " of a local group");
  auto part = std::make_unique<Part>();
  const std::string name = "dist::" + call.signature.call + " on rank " + std::to_string(rank) + " of a local group";
  part->on_device = !transports_.empty() && !call.uses.empty() &&
                    collective_device(call.uses[0].tensor) == devices_[std::size_t(rank)];
  {
    TensorUses prepared(part->on_device ? *devices_[std::size_t(rank)] : xylem::detail::host_device(), call.uses,
                        name.c_str());
    part->data = prepared.data();
    part->data_deps = prepared.data_deps();
    part->order_deps = prepared.order_deps();
    const auto deadline = Clock::now() + timeout_;
    part->enqueued = std::make_shared<StandIn>(deadline, name);
    part->done = std::make_shared<StandIn>(deadline, name);
    prepared.record(part->enqueued);
  }
  part->call = std::move(call);
  EventPtr done = part->done;
  bool complete = false;
  {
    std::lock_guard lock(mutex_);
    Batch& batch = batches_[calls_[std::size_t(rank)]++];
    batch.parts.resize(devices_.size());
    batch.parts[std::size_t(rank)] = std::move(part);
    complete = ++batch.arrived == size();
  }
  if (complete) launch_ready();
  return done;
}

void LocalGroup::launch_ready() {
  std::lock_guard launching(launch_mutex_);
  for (;;) {
    Batch batch;
    {
      std::lock_guard lock(mutex_);
      auto it = batches_.find(next_launch_);
      if (it == batches_.end() || it->second.arrived < size()) return;
      batch = std::move(it->second);
      batches_.erase(it);
      ++next_launch_;
    }
    launch(batch);
  }
}

void LocalGroup::launch(Batch& batch) {
  try {
    check_same(batch.parts);
    const auto on_device = [](const auto& p) { return p->on_device; };
    if (std::all_of(batch.parts.begin(), batch.parts.end(), on_device)) {
      launch_on_devices(batch);
    } else if (std::none_of(batch.parts.begin(), batch.parts.end(), on_device)) {
      launch_on_host(batch);
    } else {
      throw Error(ErrorCode::invalid_argument,
                  "dist::" + batch.parts[0]->call.signature.call +
                      ": some ranks' tensors live on their GPUs and others' on the host; every rank's must live on "
                      "its own device, or every rank's on the host");
    }
  } catch (...) {
    for (const auto& p : batch.parts) {
      p->enqueued->fail(std::current_exception());
      p->done->fail(std::current_exception());
    }
  }
}

void LocalGroup::launch_on_host(Batch& batch) {
  auto parts = std::make_shared<std::vector<std::unique_ptr<Part>>>(std::move(batch.parts));
  EventPtr work = enqueue([parts] {
    for (const auto& p : *parts)
      for (const auto& dep : p->order_deps) {
        try {
          dep->wait();
        } catch (...) {  // its failure is its readers' business, not this work's
        }
      }
    for (const auto& p : *parts)
      for (const auto& dep : p->data_deps) dep->wait();
    run_on_host(*parts);
  });
  for (const auto& p : *parts) {
    p->enqueued->follow(work);
    p->done->follow(work);
    hand_over(*p, work);
  }
}

void LocalGroup::launch_on_devices(Batch& batch) {
  const LocalCall& c = batch.parts[0]->call;
  const auto deadline = Clock::now() + timeout_;
  std::vector<std::vector<EventPtr>> deps;
  for (const auto& p : batch.parts) {
    deps.push_back(p->data_deps);
    deps.back().insert(deps.back().end(), p->order_deps.begin(), p->order_deps.end());
  }
  // One launch over every rank: make(rank, transport, deps) is rank's call.
  std::vector<DeviceWork> works;
  auto together = [&](const auto& make) {
    std::vector<std::function<DeviceWork()>> calls;
    for (std::size_t r = 0; r < batch.parts.size(); ++r)
      calls.push_back([&, r] { return make(*batch.parts[r], *transports_[r], plugin::Deps(deps[r])); });
    works = library_->together(calls);
  };
  const auto reduction = reduction_of(c.op);
  switch (c.kind) {
    // A bucket: every tensor's call in the one launch.
    case Kind::all_reduce:
      together([&](Part& p, DeviceTransport& t, plugin::Deps d) {
        DeviceWork last;
        for (std::size_t u = 0; u < c.uses.size(); ++u)
          last = t.all_reduce(p.data[u], count_of(c.uses[u]), c.uses[u].tensor.dtype(), reduction, d, deadline);
        return last;
      });
      break;
    case Kind::broadcast:
      together([&](Part& p, DeviceTransport& t, plugin::Deps d) {
        DeviceWork last;
        for (std::size_t u = 0; u < c.uses.size(); ++u) last = t.broadcast(p.data[u], bytes_of(c.uses[u]), c.root, d, deadline);
        return last;
      });
      break;
    case Kind::reduce:
      together([&](Part& p, DeviceTransport& t, plugin::Deps d) {
        return t.reduce(p.data[0], count_of(c.uses[0]), c.uses[0].tensor.dtype(), reduction, c.root, d, deadline);
      });
      break;
    case Kind::all_gather:
      together([&](Part& p, DeviceTransport& t, plugin::Deps d) {
        return t.all_gather(p.data[0], p.data[1], bytes_of(c.uses[0]), d, deadline);
      });
      break;
    case Kind::reduce_scatter:
      together([&](Part& p, DeviceTransport& t, plugin::Deps d) {
        return t.reduce_scatter(p.data[0], p.data[1], count_of(c.uses[1]), c.uses[0].tensor.dtype(), reduction, d,
                                deadline);
      });
      break;
    case Kind::barrier:
      break;
  }
  for (std::size_t r = 0; r < batch.parts.size(); ++r) {
    Part& p = *batch.parts[r];
    const DeviceWork w = works.empty() ? DeviceWork{ready_event(), ready_event()} : works[r];
    p.enqueued->follow(w.enqueued);
    p.done->follow(w.done);
    hand_over(p, w.enqueued);
  }
}

}  // namespace xylem::dist::detail
