// The public collectives: argument checks on the caller's thread, then one
// piece of host work that runs the transport call on the work queue.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "dist/average.hpp"
#include "dist/group.hpp"
#include "dist/host_work.hpp"
#include "dist/work_queue.hpp"
#include "dist/world.hpp"
#include "xylem/dist.hpp"

namespace xylem::dist {
namespace {

using detail::HostUse;
using detail::Signature;
using plugin::dist::Combine;
using plugin::dist::Deadline;
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

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::avg:
      return "avg";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
  }
  return "?";
}

Combine combine_of(ReduceOp op) {
  return op == ReduceOp::max ? Combine::max : op == ReduceOp::min ? Combine::min : Combine::sum;
}

std::string describe(const Tensor& t) { return std::string(name(t.dtype())) + " " + t.layout().dims_string(); }

std::size_t count_of(const Tensor& t) { return static_cast<std::size_t>(t.numel()); }

// What every collective asks of a tensor.
void require_dense(const Tensor& t, const std::string& call) {
  if (!t.defined()) throw Error(ErrorCode::invalid_argument, "dist::" + call + ": the tensor is empty (undefined)");
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

Future<Tensor> tensor_future(EventPtr done, Tensor value) {
  auto state = std::make_shared<xylem::detail::FutureState<Tensor>>();
  state->value = std::move(value);
  return Future<Tensor>(std::move(done), std::move(state));
}

// Runs `body` on the work queue over the host copies of `uses`.
using Body = std::function<void(Transport&, Deadline, std::span<std::byte* const>)>;
EventPtr submit(const std::shared_ptr<detail::Group>& group, std::vector<HostUse> uses, Signature signature,
                Body body) {
  const std::string name = "dist::" + signature.call;
  return detail::enqueue_host_work(
      uses,
      [group, signature = std::move(signature), body = std::move(body)](std::span<std::byte* const> data) {
        group->run(signature, [&](Transport& t, Deadline deadline) { body(t, deadline, data); });
      },
      name.c_str());
}

Signature signature_of(std::string call, const Tensor& t) { return Signature{std::move(call), describe(t), t.dtype()}; }

}  // namespace

Communicator Communicator::world(const Options& options) {
  const auto timeout = timeout_of(options);
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
  return Communicator(std::make_shared<detail::Group>(mine, timeout, options.checked));
}

detail::Group& Communicator::group() const {
  if (!group_)
    throw Error(ErrorCode::invalid_argument,
                "dist: this communicator has no group (a split with a negative color); use one that has");
  return *group_;
}

int Communicator::rank() const { return group().transport().rank(); }
int Communicator::size() const { return group().transport().size(); }
std::string_view Communicator::transport() const { return group().transport().name(); }
std::chrono::milliseconds Communicator::timeout() const { return group().timeout(); }

Communicator Communicator::split(int color, int key) const {
  detail::Group& g = group();
  auto result = std::make_shared<std::unique_ptr<Transport>>();
  const Signature signature{"split", {}, DType::f32};
  auto parent = group_;
  auto done = detail::enqueue([parent, result, signature, color, key] {
    parent->run(signature, [&](Transport& t, Deadline deadline) { *result = t.split(color, key, deadline); });
  });
  done->wait();
  if (!*result) return Communicator(nullptr);
  auto link = std::make_shared<detail::Link>(std::shared_ptr<Transport>(std::move(*result)));
  return Communicator(std::make_shared<detail::Group>(std::move(link), g.timeout(), g.checked()));
}

Future<Tensor> Communicator::all_reduce(const Tensor& t, ReduceOp op) const {
  const std::string call = with("all_reduce", op_name(op));
  require_dense(t, call);
  require_reducible(t.dtype(), op, call);
  (void)group();
  EventPtr done = submit(group_, {{t, true, true}}, signature_of(call, t),
                         [count = count_of(t), dtype = t.dtype(), op](Transport& tr, Deadline d, auto data) {
                           reduce_in_place(tr, data[0], count, dtype, op, d);
                         });
  return tensor_future(std::move(done), t);
}

Future<std::vector<Tensor>> Communicator::all_reduce(std::vector<Tensor> tensors, ReduceOp op) const {
  const std::string call = with("all_reduce", std::string(op_name(op)) + ", bucket");
  std::vector<HostUse> uses;
  std::string shapes;
  for (const Tensor& t : tensors) {
    require_dense(t, call);
    require_reducible(t.dtype(), op, call);
    uses.push_back({t, true, true});
    shapes += (shapes.empty() ? "" : ", ") + describe(t);
  }
  (void)group();
  // One exchange per dtype: same-dtype tensors are packed into one buffer.
  std::vector<DType> dtypes;
  std::vector<std::size_t> counts;
  for (const Tensor& t : tensors) {
    dtypes.push_back(t.dtype());
    counts.push_back(count_of(t));
  }
  EventPtr done = submit(
      group_, std::move(uses), Signature{call, shapes, tensors.empty() ? DType::f32 : tensors.front().dtype()},
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
  EventPtr done = submit(group_, {{t, is_root, !is_root}}, signature_of(call, t),
                         [bytes = count_of(t) * size_of(t.dtype()), root](Transport& tr, Deadline d, auto data) {
                           tr.broadcast(data[0], bytes, root, d);
                         });
  return tensor_future(std::move(done), t);
}

Future<Tensor> Communicator::reduce(const Tensor& t, int root, ReduceOp op) const {
  const std::string call = with("reduce", std::string(op_name(op)) + ", root " + std::to_string(root));
  require_dense(t, call);
  require_reducible(t.dtype(), op, call);
  require_rank(root, size(), "root", call);
  const bool is_root = rank() == root;
  EventPtr done = submit(group_, {{t, true, is_root}}, signature_of(call, t),
                         [count = count_of(t), dtype = t.dtype(), op, root](Transport& tr, Deadline d, auto data) {
                           tr.reduce(data[0], count, dtype, combine_of(op), root, d);
                           if (op == ReduceOp::avg && tr.rank() == root) detail::divide(data[0], count, dtype, tr.size());
                         });
  return tensor_future(std::move(done), t);
}

Future<Tensor> Communicator::all_gather(const Tensor& t) const {
  const std::string call = "all_gather";
  require_dense(t, call);
  std::vector<std::int64_t> dims{size()};
  dims.insert(dims.end(), t.shape().begin(), t.shape().end());
  Tensor out(Layout(std::span<const std::int64_t>(dims)), t.dtype());
  EventPtr done = submit(group_, {{t, true, false}, {out, false, true}}, signature_of(call, t),
                         [bytes = count_of(t) * size_of(t.dtype())](Transport& tr, Deadline d, auto data) {
                           tr.all_gather(data[0], data[1], bytes, d);
                         });
  return tensor_future(std::move(done), out);
}

Future<Tensor> Communicator::reduce_scatter(const Tensor& t, ReduceOp op) const {
  const std::string call = with("reduce_scatter", op_name(op));
  require_dense(t, call);
  require_reducible(t.dtype(), op, call);
  const int n = size();
  if (t.rank() == 0 || t.shape()[0] % n != 0)
    throw Error(ErrorCode::shape_mismatch, "dist::" + call + ": the first dimension of " + describe(t) +
                                               " must split in " + std::to_string(n) + " equal blocks, one per rank");
  std::vector<std::int64_t> dims(t.shape().begin(), t.shape().end());
  dims[0] /= n;
  Tensor out(Layout(std::span<const std::int64_t>(dims)), t.dtype());
  EventPtr done = submit(group_, {{t, true, false}, {out, false, true}}, signature_of(call, t),
                         [count = count_of(out), dtype = t.dtype(), op](Transport& tr, Deadline d, auto data) {
                           tr.reduce_scatter(data[0], data[1], count, dtype, combine_of(op), d);
                           if (op == ReduceOp::avg) detail::divide(data[1], count, dtype, tr.size());
                         });
  return tensor_future(std::move(done), out);
}

Future<Tensor> Communicator::send(const Tensor& t, int peer, int tag) const {
  const std::string call = "send";
  require_dense(t, call);
  require_rank(peer, size(), "peer", call);
  // Point to point: no group-wide check (only two ranks take part).
  auto g = std::make_shared<detail::Group>(group().link(), group().timeout(), false);
  EventPtr done = submit(g, {{t, true, false}}, signature_of(call, t),
                         [bytes = count_of(t) * size_of(t.dtype()), peer, tag](Transport& tr, Deadline d, auto data) {
                           tr.send(data[0], bytes, peer, tag, d);
                         });
  return tensor_future(std::move(done), t);
}

Future<Tensor> Communicator::recv(const Tensor& t, int peer, int tag) const {
  const std::string call = "recv";
  require_dense(t, call);
  require_rank(peer, size(), "peer", call);
  auto g = std::make_shared<detail::Group>(group().link(), group().timeout(), false);
  EventPtr done = submit(g, {{t, false, true}}, signature_of(call, t),
                         [bytes = count_of(t) * size_of(t.dtype()), peer, tag](Transport& tr, Deadline d, auto data) {
                           tr.recv(data[0], bytes, peer, tag, d);
                         });
  return tensor_future(std::move(done), t);
}

EventPtr Communicator::barrier() const {
  auto g = group_;
  (void)group();
  return detail::enqueue([g] {
    g->run(Signature{"barrier", {}, DType::f32}, [](Transport& t, Deadline deadline) { t.barrier(deadline); });
  });
}

}  // namespace xylem::dist
