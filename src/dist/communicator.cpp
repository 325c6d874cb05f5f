// The public collectives: argument checks on the caller's thread, then one
// piece of host work that runs the transport call on the work queue.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "core/storage.hpp"
#include "dist/average.hpp"
#include "dist/device_link.hpp"
#include "dist/group.hpp"
#include "dist/host_work.hpp"
#include "dist/local_group.hpp"
#include "dist/reduce_op.hpp"
#include "dist/work_queue.hpp"
#include "dist/world.hpp"
#include "graph/recorder.hpp"
#include "xylem/dist.hpp"

namespace xylem::dist {
namespace {

using detail::combine_of;
using detail::LocalCall;
using Kind = detail::LocalCall::Kind;
using detail::op_name;
using detail::reduction_of;
using detail::TensorUse;
using detail::Signature;
using plugin::dist::Deadline;
using plugin::dist::DeviceTransport;
using plugin::dist::DeviceWork;
using plugin::dist::Transport;

constexpr std::chrono::milliseconds kDefaultTimeout{300'000};

std::chrono::milliseconds timeout_of(const Options& options) {
  if (options.timeout.count() > 0) return options.timeout;
  if (const char* env = std::getenv("XYLEM_DIST_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(seconds > 0) || !std::isfinite(seconds))
      throw Error(ErrorCode::invalid_argument,
                  std::string("XYLEM_DIST_TIMEOUT='") + env + "' is not a positive number of seconds");
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(seconds * 1000)));
  }
  return kDefaultTimeout;
}

// "f32 [3, 4]", as Layout::dims_string writes the shape, without its
// ostringstream: the checked mode describes every call's tensor, and the
// stream was a fifth of a small call.
std::string describe(const Tensor& t) {
  std::string text(name(t.dtype()));
  text += " [";
  const auto dims = t.shape();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, dims[i]).ptr;
    if (i > 0) text += ", ";
    text.append(digits, end);
  }
  text += ']';
  return text;
}

std::size_t count_of(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

// What every collective asks of a tensor.
void require_dense(const Tensor& t, const std::string& call) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "dist::" + call + ": the tensor is empty (undefined)");
  if (is_complex(t.dtype()))
    throw Error(ErrorCode::dtype_mismatch, "dist::" + call + ": " + std::string(name(t.dtype())) +
                                               " tensors are not supported by the communicators");
  if (!t.layout().is_contiguous())
    throw Error(ErrorCode::invalid_argument, "dist::" + call + ": the tensor (shape " + t.layout().dims_string() +
                                                 ", strides " + t.layout().strides_string() +
                                                 ") is not dense; pass a contiguous copy");
}

void require_reducible(DType dtype, ReduceOp op, const std::string& call) {
  if (op == ReduceOp::avg && dtype == DType::boolean)
    throw Error(ErrorCode::invalid_argument, "dist::" + call + ": avg is not defined for bool tensors");
}

void require_rank(int r, int size, const char* what, const std::string& call) {
  if (r < 0 || r >= size)
    throw Error(ErrorCode::invalid_argument, "dist::" + call + ": " + what + " " + std::to_string(r) +
                                                 " is not a rank of this group of " + std::to_string(size));
}

std::string with(const char* call, const std::string& detail) { return std::string(call) + "(" + detail + ")"; }

// Sum, then divide for avg.
void reduce_in_place(Transport& t, void* data, std::size_t count, DType dtype, ReduceOp op, Deadline deadline) {
  t.all_reduce(data, count, dtype, combine_of(op), deadline);
  if (op == ReduceOp::avg) detail::divide(data, count, dtype, t.size());
}

Error unsupported_locally(const std::string& call) {
  return Error(ErrorCode::unsupported, "dist::" + call +
                                           " is not supported between ranks of one process (Communicator::local); "
                                           "use the collectives, or a group of processes");
}

Future<Tensor> tensor_future(EventPtr done, Tensor value) {
  auto state = std::make_shared<xylem::detail::FutureState<Tensor>>();
  state->value = std::move(value);
  return Future<Tensor>(std::move(done), std::move(state));
}

// Runs `body` on the work queue over the host copies of `uses`.
using Body = std::function<void(Transport&, Deadline, std::span<std::byte* const>)>;
EventPtr submit(const std::shared_ptr<detail::Group>& group, std::vector<TensorUse> uses, Signature signature,
                Body body) {
  const std::string name = "dist::" + signature.call;
  return detail::enqueue_host_work(
      uses,
      [group, signature = std::move(signature), body = std::move(body)](std::span<std::byte* const> data) {
        group->run(signature, [&](Transport& t, Deadline deadline) { body(t, deadline, data); });
      },
      name.c_str());
}

// Only the checked mode compares (and so needs) the shape; describing it
// was a fifth of a small unchecked all_reduce's time.
Signature signature_of(const detail::Group& g, std::string call, const Tensor& t) {
  return Signature{std::move(call), g.checked() ? describe(t) : std::string(), t.dtype()};
}

// A collective on device memory: the transport and the device it runs on.
struct DeviceRoute {
  std::shared_ptr<DeviceTransport> transport;
  plugin::Device* device = nullptr;
  explicit operator bool() const noexcept { return transport != nullptr; }
};

// The device transport for a call on `t` (its data on a GPU), or an empty
// route for the host transport. In the checked mode the ranks first
// compare the call with where it runs, so a rank with the tensor on the
// host and one with it on a GPU get a mismatch instead of a hang.
DeviceRoute route(const std::shared_ptr<detail::Group>& group, const Tensor& t, const Signature& signature) {
  if (group->device() == "host") return {};
  plugin::Device* device = detail::collective_device(t);
  if (device == nullptr) return {};
  if (group->checked()) {
    Signature placed = signature;
    placed.shape += " on " + device->hardware().framework;
    detail::enqueue([&] { group->run(placed, [](Transport&, Deadline) {}); })->wait();
  }
  auto transport = detail::device_transport(*group, *device);
  if (!transport) return {};
  return DeviceRoute{std::move(transport), device};
}

// A bucket takes the device route when every tensor lives on one device.
DeviceRoute bucket_route(const std::shared_ptr<detail::Group>& group, const std::vector<Tensor>& tensors,
                         const Signature& signature) {
  if (tensors.empty()) return {};
  plugin::Device* first = detail::collective_device(tensors.front());
  for (const Tensor& t : tensors)
    if (first == nullptr || detail::collective_device(t) != first) return {};
  return route(group, tensors.front(), signature);
}

// calls made by make(0..n-1) on `tr`, launched as one (DeviceTransport::grouped).
template <class Make>
DeviceWork grouped(DeviceTransport& tr, std::size_t n, const Make& make) {
  std::vector<std::function<DeviceWork()>> calls;
  for (std::size_t i = 0; i < n; ++i) calls.push_back([&make, i] { return make(i); });
  return tr.grouped(calls);
}

// Enqueues one device call over `uses` on the route's device: ordered
// after the tensors' last writes and reads there, recorded as their write
// or read. Returns the event that completes when it is done (or fails).
using DeviceBody = std::function<DeviceWork(DeviceTransport&, std::span<std::byte* const>, plugin::Deps, Deadline)>;

// Inside a capture (xylem/capture.hpp): the call, on the data pointers it
// has now, becomes a step of the graph, launched by the library itself.
void record_in_graph(xylem::detail::Recorder& recorder, const DeviceRoute& r, const detail::TensorUses& prepared,
                     Deadline deadline, const std::string& name, const DeviceBody& body) {
  const std::function<DeviceWork()> once = [&] { return body(*r.transport, prepared.data(), {}, deadline); };
  std::function<void(void*)> enqueue;
  try {
    enqueue = r.transport->recorded(std::span(&once, 1));
  } catch (const Error& e) {
    throw recorder.fail(Error(e.code(), "capture: " + name + ": " + e.message()));
  }
  // The transport lives as long as the graph's step.
  recorder.add_native(
      *r.device, [transport = r.transport, enqueue = std::move(enqueue)](void* queue) { enqueue(queue); },
      prepared.recorded_uses(), name);
}

EventPtr submit_device(const detail::Group& group, const DeviceRoute& r, std::span<const TensorUse> uses,
                       const std::string& call, const DeviceBody& body) {
  const std::string name = "dist::" + call;
  detail::TensorUses prepared(*r.device, uses, name.c_str());
  std::vector<EventPtr> deps = prepared.data_deps();
  deps.insert(deps.end(), prepared.order_deps().begin(), prepared.order_deps().end());
  const Deadline deadline = plugin::dist::Clock::now() + group.timeout();
  // Recorded first: a refused call runs on no rank that captures alike.
  if (xylem::detail::Recorder* recorder = xylem::detail::active_recorder())
    record_in_graph(*recorder, r, prepared, deadline, name, body);
  DeviceWork work = body(*r.transport, prepared.data(), deps, deadline);
  prepared.record(work.enqueued);
  return work.done;
}

}  // namespace

Communicator Communicator::world(const Options& options) {
  const auto timeout = timeout_of(options);
  if (!options.device.empty() && options.device != "nccl" && options.device != "host")
    throw Error(ErrorCode::invalid_argument,
                "dist: no device transport '" + options.device + "' (nccl, host, or empty for the best)");
  static std::mutex mutex;
  static std::shared_ptr<detail::Link> link;
  std::shared_ptr<detail::Link> mine;
  {
    std::lock_guard lock(mutex);
    if (!link) {
      // Started on the work queue's thread, which makes every later call:
      // MPI must be finalised by the thread that initialised it.
      std::unique_ptr<Transport> started;
      detail::enqueue([&] { started = detail::start_world(options.transport, plugin::dist::Clock::now() + timeout); })
          ->wait();
      link = std::make_shared<detail::Link>(std::shared_ptr<Transport>(std::move(started)));
    } else if (!options.transport.empty() && options.transport != link->transport->name()) {
      throw Error(ErrorCode::invalid_argument, "dist: the world already runs on '" +
                                                   std::string(link->transport->name()) +
                                                   "'; a process has one world transport, not also '" +
                                                   options.transport + "'");
    }
    mine = link;
  }
  return Communicator(std::make_shared<detail::Group>(mine, timeout, options.checked, options.device));
}

std::vector<Communicator> Communicator::local(std::span<const Backend> backends, const Options& options) {
  if (!options.transport.empty())
    throw Error(ErrorCode::invalid_argument, "dist::Communicator::local: a local group has no host transport to choose ('" +
                                                 options.transport + "' given); leave Options::transport empty");
  if (!options.device.empty() && options.device != "nccl" && options.device != "host")
    throw Error(ErrorCode::invalid_argument,
                "dist: no device transport '" + options.device + "' (nccl, host, or empty for the best)");
  const auto timeout = timeout_of(options);
  std::vector<plugin::Device*> devices;
  for (const Backend& b : backends) devices.push_back(&plugin::device_of(b));
  auto group = std::make_shared<detail::LocalGroup>(std::move(devices), timeout, options.device);
  std::vector<Communicator> ranks;
  for (int r = 0; r < group->size(); ++r) ranks.push_back(Communicator(std::make_shared<detail::Group>(group, r, timeout)));
  return ranks;
}

namespace {

// A local group's rank: its part of a collective, the event its future holds.
EventPtr submit_local(const detail::Group& g, Kind kind, Signature signature, std::vector<TensorUse> uses,
                      ReduceOp op = ReduceOp::sum, int root = 0) {
  return g.local()->submit(g.local_rank(), LocalCall{kind, std::move(signature), op, root, std::move(uses)});
}

}  // namespace

detail::Group& Communicator::group() const {
  if (!group_)
    throw Error(ErrorCode::invalid_argument,
                "dist: this communicator has no group (a split with a negative color); use one that has");
  return *group_;
}

int Communicator::rank() const { return group().local() ? group().local_rank() : group().transport().rank(); }
int Communicator::size() const { return group().local() ? group().local()->size() : group().transport().size(); }
std::string_view Communicator::transport() const {
  return group().local() ? group().local()->transport() : group().transport().name();
}
std::chrono::milliseconds Communicator::timeout() const { return group().timeout(); }

Communicator Communicator::split(int color, int key) const {
  detail::Group& g = group();
  if (g.local()) throw unsupported_locally("split");
  auto result = std::make_shared<std::unique_ptr<Transport>>();
  const Signature signature{"split", {}, DType::f32};
  auto parent = group_;
  auto done = detail::enqueue([parent, result, signature, color, key] {
    parent->run(signature, [&](Transport& t, Deadline deadline) { *result = t.split(color, key, deadline); });
  });
  done->wait();
  if (!*result) return Communicator(nullptr);
  auto link = std::make_shared<detail::Link>(std::shared_ptr<Transport>(std::move(*result)));
  return Communicator(std::make_shared<detail::Group>(std::move(link), g.timeout(), g.checked(), g.device()));
}

Future<Tensor> Communicator::all_reduce(const Tensor& t, ReduceOp op) const {
  // Named once: a small call's whole cost is a microsecond.
  static const std::string calls[] = {with("all_reduce", op_name(ReduceOp::sum)),
                                      with("all_reduce", op_name(ReduceOp::avg)),
                                      with("all_reduce", op_name(ReduceOp::max)),
                                      with("all_reduce", op_name(ReduceOp::min))};
  const auto index = static_cast<std::size_t>(op);
  const std::string call = index < std::size(calls) ? calls[index] : with("all_reduce", op_name(op));
  require_dense(t, call);
  require_reducible(t.dtype(), op, call);
  const Signature signature = signature_of(group(), call, t);
  if (!group().local()) {
    // A small call on ready host data, here and now (run_small_here).
    const std::size_t count = count_of(t);
    const DType dtype = t.dtype();
    const detail::Group& g = *group_;
    EventPtr done = detail::run_small_here(t, true, true, [&](std::byte* data) {
      g.run(signature, [&](Transport& tr, Deadline d) { reduce_in_place(tr, data, count, dtype, op, d); });
    });
    if (done) return tensor_future(std::move(done), t);
  }
  const std::vector<TensorUse> uses{{t, true, true}};
  if (group().local()) return tensor_future(submit_local(group(), Kind::all_reduce, signature, uses, op), t);
  if (const DeviceRoute r = route(group_, t, signature))
    return tensor_future(submit_device(*group_, r, uses, call,
                                       [count = count_of(t), dtype = t.dtype(), op](auto& tr, auto data, auto deps,
                                                                                    auto d) {
                                         return tr.all_reduce(data[0], count, dtype, reduction_of(op), deps, d);
                                       }),
                         t);
  EventPtr done = submit(group_, uses, signature,
                         [count = count_of(t), dtype = t.dtype(), op](Transport& tr, Deadline d, auto data) {
                           reduce_in_place(tr, data[0], count, dtype, op, d);
                         });
  return tensor_future(std::move(done), t);
}

Future<std::vector<Tensor>> Communicator::all_reduce(std::vector<Tensor> tensors, ReduceOp op) const {
  const std::string call = with("all_reduce", std::string(op_name(op)) + ", bucket");
  std::vector<TensorUse> uses;
  std::string shapes;
  for (const Tensor& t : tensors) {
    require_dense(t, call);
    require_reducible(t.dtype(), op, call);
    uses.push_back({t, true, true});
    if (group().checked()) shapes += (shapes.empty() ? "" : ", ") + describe(t);
  }
  const Signature signature{call, shapes, tensors.empty() ? DType::f32 : tensors.front().dtype()};
  if (group().local()) {
    auto state = std::make_shared<xylem::detail::FutureState<std::vector<Tensor>>>();
    state->value = std::move(tensors);
    return Future<std::vector<Tensor>>(submit_local(group(), Kind::all_reduce, signature, std::move(uses), op),
                                       std::move(state));
  }
  if (const DeviceRoute r = bucket_route(group_, tensors, signature)) {
    // A call per tensor, launched as one (the library's group).
    std::vector<std::size_t> counts;
    std::vector<DType> dtypes;
    for (const Tensor& t : tensors) {
      counts.push_back(count_of(t));
      dtypes.push_back(t.dtype());
    }
    EventPtr done = submit_device(*group_, r, uses, call, [&](auto& tr, auto data, auto deps, auto d) {
      return grouped(tr, tensors.size(), [&](std::size_t i) {
        return tr.all_reduce(data[i], counts[i], dtypes[i], reduction_of(op), deps, d);
      });
    });
    auto state = std::make_shared<xylem::detail::FutureState<std::vector<Tensor>>>();
    state->value = std::move(tensors);
    return Future<std::vector<Tensor>>(std::move(done), std::move(state));
  }
  // One exchange per dtype: same-dtype tensors are packed into one buffer.
  std::vector<DType> dtypes;
  std::vector<std::size_t> counts;
  for (const Tensor& t : tensors) {
    dtypes.push_back(t.dtype());
    counts.push_back(count_of(t));
  }
  EventPtr done = submit(
      group_, std::move(uses), signature,
      [dtypes, counts, op](Transport& tr, Deadline d, std::span<std::byte* const> data) {
        std::map<DType, std::vector<std::size_t>> by_dtype;
        for (std::size_t i = 0; i < dtypes.size(); ++i) by_dtype[dtypes[i]].push_back(i);
        for (const auto& [dtype, members] : by_dtype) {
          const std::size_t element = size_of(dtype);
          if (members.size() == 1) {
            reduce_in_place(tr, data[members[0]], counts[members[0]], dtype, op, d);
            continue;
          }
          std::size_t total = 0;
          for (auto i : members) total += counts[i];
          std::vector<std::byte> packed(total * element);
          std::size_t at = 0;
          for (auto i : members) {
            if (counts[i]) std::memcpy(packed.data() + at, data[i], counts[i] * element);
            at += counts[i] * element;
          }
          reduce_in_place(tr, packed.data(), total, dtype, op, d);
          at = 0;
          for (auto i : members) {
            if (counts[i]) std::memcpy(data[i], packed.data() + at, counts[i] * element);
            at += counts[i] * element;
          }
        }
      });
  auto state = std::make_shared<xylem::detail::FutureState<std::vector<Tensor>>>();
  state->value = std::move(tensors);
  return Future<std::vector<Tensor>>(std::move(done), std::move(state));
}

Future<Tensor> Communicator::broadcast(const Tensor& t, int root) const {
  const std::string call = with("broadcast", "root " + std::to_string(root));
  require_dense(t, call);
  require_rank(root, size(), "root", call);
  const bool is_root = rank() == root;
  const std::vector<TensorUse> uses{{t, is_root, !is_root}};
  const Signature signature = signature_of(group(), call, t);
  if (group().local())
    return tensor_future(submit_local(group(), Kind::broadcast, signature, uses, ReduceOp::sum, root), t);
  if (const DeviceRoute r = route(group_, t, signature))
    return tensor_future(
        submit_device(*group_, r, uses, call,
                      [bytes = count_of(t) * size_of(t.dtype()), root](auto& tr, auto data, auto deps, auto d) {
                        return tr.broadcast(data[0], bytes, root, deps, d);
                      }),
        t);
  EventPtr done = submit(group_, uses, signature,
                         [bytes = count_of(t) * size_of(t.dtype()), root](Transport& tr, Deadline d, auto data) {
                           tr.broadcast(data[0], bytes, root, d);
                         });
  return tensor_future(std::move(done), t);
}

Future<std::vector<Tensor>> Communicator::broadcast(std::vector<Tensor> tensors, int root) const {
  const std::string call = with("broadcast", "root " + std::to_string(root) + ", bucket");
  require_rank(root, size(), "root", call);
  const bool is_root = rank() == root;
  std::vector<TensorUse> uses;
  std::vector<std::size_t> bytes;
  std::string shapes;
  for (const Tensor& t : tensors) {
    require_dense(t, call);
    uses.push_back({t, is_root, !is_root});
    bytes.push_back(count_of(t) * size_of(t.dtype()));
    if (group().checked()) shapes += (shapes.empty() ? "" : ", ") + describe(t);
  }
  const Signature signature{call, shapes, tensors.empty() ? DType::f32 : tensors.front().dtype()};
  auto state = std::make_shared<xylem::detail::FutureState<std::vector<Tensor>>>();
  EventPtr done;
  if (group().local()) {
    done = submit_local(group(), Kind::broadcast, signature, std::move(uses), ReduceOp::sum, root);
  } else if (const DeviceRoute r = bucket_route(group_, tensors, signature)) {
    done = submit_device(*group_, r, uses, call, [&](auto& tr, auto data, auto deps, auto d) {
      return grouped(tr, tensors.size(), [&](std::size_t i) { return tr.broadcast(data[i], bytes[i], root, deps, d); });
    });
  } else {
    done = submit(group_, std::move(uses), signature, [bytes, root](Transport& tr, Deadline d, auto data) {
      for (std::size_t i = 0; i < bytes.size(); ++i) tr.broadcast(data[i], bytes[i], root, d);
    });
  }
  state->value = std::move(tensors);
  return Future<std::vector<Tensor>>(std::move(done), std::move(state));
}

Future<Tensor> Communicator::reduce(const Tensor& t, int root, ReduceOp op) const {
  const std::string call = with("reduce", std::string(op_name(op)) + ", root " + std::to_string(root));
  require_dense(t, call);
  require_reducible(t.dtype(), op, call);
  require_rank(root, size(), "root", call);
  const bool is_root = rank() == root;
  const std::vector<TensorUse> uses{{t, true, is_root}};
  const Signature signature = signature_of(group(), call, t);
  if (group().local()) return tensor_future(submit_local(group(), Kind::reduce, signature, uses, op, root), t);
  if (const DeviceRoute r = route(group_, t, signature))
    return tensor_future(submit_device(*group_, r, uses, call,
                                       [count = count_of(t), dtype = t.dtype(), op, root](auto& tr, auto data,
                                                                                          auto deps, auto d) {
                                         return tr.reduce(data[0], count, dtype, reduction_of(op), root, deps, d);
                                       }),
                         t);
  EventPtr done = submit(group_, uses, signature,
                         [count = count_of(t), dtype = t.dtype(), op, root](Transport& tr, Deadline d, auto data) {
                           tr.reduce(data[0], count, dtype, combine_of(op), root, d);
                           if (op == ReduceOp::avg && tr.rank() == root) detail::divide(data[0], count, dtype, tr.size());
                         });
  return tensor_future(std::move(done), t);
}

namespace {

// What a gather or scatter into a given output asks of it: dense, t's
// dtype, `elements` elements (`how` says why), no memory shared with t.
void require_output(const Tensor& t, const Tensor& out, std::int64_t elements, const char* how,
                    const std::string& call) {
  // An empty output has no memory to be dense in (its layout may say otherwise).
  if (!out.defined() || out.numel() > 0) require_dense(out, call);
  if (out.dtype() != t.dtype())
    throw Error(ErrorCode::dtype_mismatch, "dist::" + call + ": the output is " + describe(out) + ", the input " +
                                               describe(t) + "; they must have one dtype");
  if (out.numel() != elements)
    throw Error(ErrorCode::shape_mismatch, "dist::" + call + ": the output " + describe(out) + " must hold " +
                                               std::to_string(elements) + " elements (" + how + " of the input " +
                                               describe(t) + ")");
  if (out.storage() == t.storage())
    throw Error(ErrorCode::invalid_argument,
                "dist::" + call + ": the output shares its memory with the input; give it memory of its own");
}

}  // namespace

Future<Tensor> Communicator::all_gather(const Tensor& t) const {
  require_dense(t, "all_gather");
  std::vector<std::int64_t> dims{size()};
  dims.insert(dims.end(), t.shape().begin(), t.shape().end());
  return all_gather(t, Tensor(Layout(std::span<const std::int64_t>(dims)), t.dtype()));
}

Future<Tensor> Communicator::all_gather(const Tensor& t, const Tensor& out) const {
  const std::string call = "all_gather";
  require_dense(t, call);
  require_output(t, out, t.numel() * size(), "the group's size times those", call);
  const std::vector<TensorUse> uses{{t, true, false}, {out, false, true}};
  const Signature signature = signature_of(group(), call, t);
  if (group().local()) return tensor_future(submit_local(group(), Kind::all_gather, signature, uses), out);
  if (const DeviceRoute r = route(group_, t, signature))
    return tensor_future(submit_device(*group_, r, uses, call,
                                       [bytes = count_of(t) * size_of(t.dtype())](auto& tr, auto data, auto deps,
                                                                                  auto d) {
                                         return tr.all_gather(data[0], data[1], bytes, deps, d);
                                       }),
                         out);
  EventPtr done = submit(group_, uses, signature,
                         [bytes = count_of(t) * size_of(t.dtype())](Transport& tr, Deadline d, auto data) {
                           tr.all_gather(data[0], data[1], bytes, d);
                         });
  return tensor_future(std::move(done), out);
}

Future<Tensor> Communicator::reduce_scatter(const Tensor& t, ReduceOp op) const {
  const std::string call = with("reduce_scatter", op_name(op));
  require_dense(t, call);
  const int n = size();
  if (t.rank() == 0 || t.shape()[0] % n != 0)
    throw Error(ErrorCode::shape_mismatch, "dist::" + call + ": the first dimension of " + describe(t) +
                                               " must split in " + std::to_string(n) + " equal blocks, one per rank");
  std::vector<std::int64_t> dims(t.shape().begin(), t.shape().end());
  dims[0] /= n;
  return reduce_scatter(t, Tensor(Layout(std::span<const std::int64_t>(dims)), t.dtype()), op);
}

Future<Tensor> Communicator::reduce_scatter(const Tensor& t, const Tensor& out, ReduceOp op) const {
  const std::string call = with("reduce_scatter", op_name(op));
  require_dense(t, call);
  require_reducible(t.dtype(), op, call);
  const int n = size();
  if (t.numel() % n != 0)
    throw Error(ErrorCode::shape_mismatch, "dist::" + call + ": the " + std::to_string(t.numel()) + " elements of " +
                                               describe(t) + " must split in " + std::to_string(n) +
                                               " equal blocks, one per rank");
  require_output(t, out, t.numel() / n, "one block", call);
  const std::vector<TensorUse> uses{{t, true, false}, {out, false, true}};
  const Signature signature = signature_of(group(), call, t);
  if (group().local())
    return tensor_future(submit_local(group(), Kind::reduce_scatter, signature, uses, op), out);
  if (const DeviceRoute r = route(group_, t, signature))
    return tensor_future(submit_device(*group_, r, uses, call,
                                       [count = count_of(out), dtype = t.dtype(), op](auto& tr, auto data, auto deps,
                                                                                      auto d) {
                                         return tr.reduce_scatter(data[0], data[1], count, dtype, reduction_of(op),
                                                                  deps, d);
                                       }),
                         out);
  EventPtr done = submit(group_, uses, signature,
                         [count = count_of(out), dtype = t.dtype(), op](Transport& tr, Deadline d, auto data) {
                           tr.reduce_scatter(data[0], data[1], count, dtype, combine_of(op), d);
                           if (op == ReduceOp::avg) detail::divide(data[1], count, dtype, tr.size());
                         });
  return tensor_future(std::move(done), out);
}

Future<Tensor> Communicator::send(const Tensor& t, int peer, int tag) const { return point_to_point(t, peer, tag, true); }

Future<Tensor> Communicator::recv(const Tensor& t, int peer, int tag) const { return point_to_point(t, peer, tag, false); }

Future<Tensor> Communicator::point_to_point(const Tensor& t, int peer, int tag, bool sending) const {
  const std::string call = sending ? "send" : "recv";
  require_dense(t, call);
  require_rank(peer, size(), "peer", call);
  if (group().local()) throw unsupported_locally(call);
  // Point to point: no group-wide check (only two ranks take part).
  auto g = std::make_shared<detail::Group>(group().link(), group().timeout(), false, group().device());
  const std::vector<TensorUse> uses{{t, sending, !sending}};
  const std::size_t bytes = count_of(t) * size_of(t.dtype());
  if (const DeviceRoute r = route(g, t, signature_of(*g, call, t)))
    return tensor_future(submit_device(*g, r, uses, call,
                                       [bytes, peer, sending](auto& tr, auto data, auto deps, auto d) {
                                         return sending ? tr.send(data[0], bytes, peer, deps, d)
                                                        : tr.recv(data[0], bytes, peer, deps, d);
                                       }),
                         t);
  EventPtr done = submit(g, uses, signature_of(*g, call, t), [bytes, peer, tag, sending](Transport& tr, Deadline d, auto data) {
    if (sending) {
      tr.send(data[0], bytes, peer, tag, d);
    } else {
      tr.recv(data[0], bytes, peer, tag, d);
    }
  });
  return tensor_future(std::move(done), t);
}

EventPtr Communicator::barrier() const {
  auto g = group_;
  if (group().local()) return submit_local(group(), Kind::barrier, Signature{"barrier", {}, DType::f32}, {});
  return detail::enqueue([g] {
    g->run(Signature{"barrier", {}, DType::f32}, [](Transport& t, Deadline deadline) { t.barrier(deadline); });
  });
}

}  // namespace xylem::dist
