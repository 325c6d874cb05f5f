// Launch helpers shared by the op families (see launch.hpp).
#include "frameworks/opencl/ops/launch.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace xylem::opencl {

Collapsed collapse(std::initializer_list<const Layout*> views) {
  Collapsed out;
  const Layout& first = **views.begin();
  out.numel = first.numel();
  const std::size_t operands = views.size();
  std::size_t rank = 0;
  for (int axis = 0; axis < first.rank(); ++axis) {
    const std::int64_t dim = first.dims()[static_cast<std::size_t>(axis)];
    if (dim == 1) continue;
    std::size_t j = 0;
    bool merges = rank > 0;
    for (const Layout* v : views) {
      const std::int64_t stride = v->strides()[static_cast<std::size_t>(axis)];
      if (merges && out.layout.strides[j][rank - 1] != stride * dim) merges = false;
      ++j;
    }
    j = 0;
    if (merges) {
      out.layout.dims[rank - 1] *= dim;
      for (const Layout* v : views) out.layout.strides[j++][rank - 1] = v->strides()[static_cast<std::size_t>(axis)];
    } else {
      out.layout.dims[rank] = dim;
      for (const Layout* v : views) out.layout.strides[j++][rank] = v->strides()[static_cast<std::size_t>(axis)];
      ++rank;
    }
  }
  std::size_t j = 0;
  for (const Layout* v : views) out.layout.offsets[j++] = v->offset();
  out.layout.rank = static_cast<cl_long>(rank);
  out.contiguous = out.numel <= 1 || rank == 0;
  if (rank == 1) {
    out.contiguous = true;
    for (std::size_t k = 0; k < operands; ++k) out.contiguous = out.contiguous && out.layout.strides[k][0] == 1;
  }
  return out;
}

Collapsed collapse_for_runs(std::initializer_list<const Layout*> views) {
  Collapsed c = collapse(views);
  if (c.layout.rank == 0) {
    c.layout.rank = 1;
    c.layout.dims[0] = 1;
    for (auto& strides : c.layout.strides) strides[0] = 1;
  }
  return c;
}

std::string suffix(DType dtype) { return join({"_", name(dtype)}); }

std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) out += p;
  return out;
}

Mem temporary_buffer(Launcher& launch, std::int64_t elements, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(std::max<std::int64_t>(elements, 1)) * size_of(dtype);
  const DeviceInfo& info = launch.device().info();
  if (info.max_alloc && bytes > info.max_alloc)
    throw Error(ErrorCode::out_of_memory, launch.describe() + ": a temporary buffer of " + std::to_string(bytes) +
                                              " bytes; the device allows at most " + std::to_string(info.max_alloc) +
                                              " in one buffer");
  cl_int status = CL_SUCCESS;
  Mem mem(launch.device().new_buffer(bytes, status));
  check(status, [&] { return launch.describe() + ": a temporary buffer of " + std::to_string(bytes) + " bytes"; });
  if (CommandList* list = launch.collecting()) (void)list->keep(mem);
  return mem;
}

std::string describe(const plugin::OpCall& call, const Device& device) {
  std::string text(plugin::op_name(call.op));
  text += "(";
  // Argument names from the op's signature: "x:r y:w".
  const std::string_view sig = plugin::op_signature(call.op);
  std::size_t at = 0;
  for (std::size_t i = 0; i < call.num_tensors; ++i) {
    std::string arg = "t";
    arg += std::to_string(i);
    if (at < sig.size()) {
      const std::size_t end = sig.find(' ', at);
      const std::string_view token = sig.substr(at, end == std::string_view::npos ? sig.npos : end - at);
      arg = std::string(token.substr(0, token.find(':')));
      at = end == std::string_view::npos ? sig.size() : end + 1;
    }
    const auto& t = call.t[i];
    if (i) text += ", ";
    text += arg + ": " + std::string(name(t.dtype)) + " " + t.view.dims_string();
    if (!t.view.is_contiguous()) text += " strides " + t.view.strides_string();
    if (t.view.offset()) text += " offset " + std::to_string(t.view.offset());
  }
  text += ") on " + device.label();
  return text;
}

void Launcher::set_raw(cl_kernel k, cl_uint i, std::size_t size, const void* value) {
  if (collecting_) {
    KernelArg& arg = args_.emplace_back();
    arg.index = i;
    arg.local = value == nullptr;
    const auto* bytes = static_cast<const unsigned char*>(value);
    arg.bytes = arg.local ? std::vector<unsigned char>(size) : std::vector<unsigned char>(bytes, bytes + size);
    return;
  }
  check(clSetKernelArg(k, i, size, value), [&] { return describe() + ": argument " + std::to_string(i); });
}

void Launcher::enqueue_range(const KernelInfo& kernel, std::size_t global, std::size_t local) {
  if (collecting_) {
    collecting_->add_kernel(kernel, args_, global, local, describe());
    args_.clear();
    first_ = false;
    return;
  }
  cl_event event = nullptr;
  check(clEnqueueNDRangeKernel(device_.queue(), kernel.kernel.get(), 1, nullptr, &global, &local, wait_count(),
                               wait_list(), &event),
        [&] {
          return describe() + ": enqueuing " + kernel.name + " (global " + std::to_string(global) + ", local " +
                 std::to_string(local) + ")";
        });
  enqueued(event);
}

Launcher::ChunkShape Launcher::chunk_shape(const KernelInfo& kernel, std::size_t n, std::size_t element_bytes) const {
  const DeviceInfo& info = device_.info();
  const std::size_t per = std::max<std::size_t>(info.chunk, 1);
  const std::size_t items = std::max<std::size_t>((n + per - 1) / per, 1);
  // Outputs larger than a typical last-level cache go out through
  // streaming stores (CPU devices only; the native framework does the same
  // from the same size): they would leave the cache before the next op
  // reads them anyway.
  constexpr std::size_t kStreamBytes = std::size_t{32} << 20;
  const cl_int stream = (info.type & CL_DEVICE_TYPE_CPU) && n * element_bytes > kStreamBytes ? 1 : 0;
  if (per > 1) {
    // One item per group: PoCL runs a group as a loop over its items, and a
    // chunk is already enough work to amortise a group's start; many
    // groups of one chunk let the pool's threads balance a loaded machine.
    return {items, 1, stream, static_cast<cl_long>(per)};
  }
  const std::size_t local = kernel.local;
  return {(items + local - 1) / local * local, local, stream, 1};
}

std::size_t Launcher::local_for(const KernelInfo& kernel, std::size_t items) const {
  const DeviceInfo& info = device_.info();
  std::size_t local = kernel.local;
  if (!(info.type & CL_DEVICE_TYPE_CPU)) return local;
  // A CPU device runs each work-group on one of its threads, and its groups
  // are large (1024 items: a group is a loop over its items, so size
  // amortises its start). A kernel of a few thousand items then ran on a
  // few of them: a [4096, 4096] ger's 4096 rows were 4 groups, 4 of 16
  // threads, and an LSTM cell's 512 items one. Halve the group until every
  // thread has 4 (PoCL hands groups out as threads ask: the spare ones
  // balance a loaded machine), down to 16 items, which the compiler still
  // runs as one vector of 16 floats.
  constexpr std::size_t kGroupsPerThread = 4, kLeastLocal = 16;
  const std::size_t wanted = kGroupsPerThread * std::size_t(std::max(info.compute_units, 1));
  while (local > kLeastLocal && local % 2 == 0 && (items + local - 1) / local < wanted) local /= 2;
  return local;
}

void Launcher::wait_for_deps() {
  if (collecting_ || !first_ || waits_.empty()) return;
  cl_event event = nullptr;
  check(clEnqueueBarrierWithWaitList(device_.queue(), waits_.size(), waits_.data(), &event),
        [&] { return describe() + ": waiting for its inputs"; });
  enqueued(event);
}

void Launcher::run_step(const plugin::OpCall& step, EventPtr (*launch_step)(Launcher&)) {
  // The steps go on the same in-order queue, so waiting for the call's
  // dependencies once, before the first, orders all of them.
  wait_for_deps();
  Launcher step_launch(device_, step, Deps{});
  const EventPtr done = launch_step(step_launch);
  if (!done) return;  // collected into a recording: nothing was enqueued
  // Its last command becomes this launcher's last, which finish() returns.
  const cl_event event = static_cast<const ClEvent&>(*done).raw();
  check(clRetainEvent(event), [&] { return describe() + ": a step's event"; });
  enqueued(event);
}

EventPtr Launcher::finish() {
  if (collecting_) return nullptr;
  if (!last_) {
    cl_event event = nullptr;
    check(clEnqueueMarkerWithWaitList(device_.queue(), waits_.size(), waits_.data(), &event),
          [&] { return describe() + ": marker"; });
    last_ = ClEventHandle(event);
  }
  return device_.wrap(last_.release());
}

}  // namespace xylem::opencl
