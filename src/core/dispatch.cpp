#include "core/dispatch.hpp"

#include "core/fusion.hpp"
#include <algorithm>
#include <functional>
#include <span>
#include <string>

#include "core/overlap.hpp"
#include "core/storage.hpp"
#include "graph/recorder.hpp"
#include "xylem/error.hpp"

namespace xylem::detail {
namespace {

// One storage an op touches (several arguments may share one).
struct StorageUse {
  Storage* storage = nullptr;
  bool reads = false;
  bool writes = false;
  int first_arg = 0;
  DeviceCopy* copy = nullptr;
};

// Ops whose kernels compute each output element from the input elements at
// the same logical position only, so an input may be the output itself
// (the same elements, in place).
bool elementwise(plugin::OpId op) {
  using plugin::OpId;
  switch (op) {
    case OpId::core_copy_view:
    case OpId::blas_axpy:
    case OpId::blas_copy:
    case OpId::math_unary:
    case OpId::math_binary:
    case OpId::math_compare:
    case OpId::math_where:
    case OpId::math_fused:
    case OpId::math_cast:
    case OpId::nn_dropout:
    case OpId::nn_dropout_grad:
      return true;
    default:
      return false;
  }
}

std::string describe_arg(plugin::OpId op, int index) {
  const auto params = plugin::tensor_params(op);
  return static_cast<std::size_t>(index) < params.size() ? std::string(params[index].name) : "?";
}

// A launch that failed may have run part of its work (a framework queues
// several commands for one op): an output copy on the device is no longer
// trusted where another copy holds the same version.
void forget_partial_writes(std::span<StorageUse> uses) {
  for (StorageUse& use : uses) {
    if (!use.writes || use.copy->version != use.storage->latest()) continue;
    if (use.storage->current_elsewhere(*use.copy)) use.copy->version = 0;
  }
}

}  // namespace

bool covers_whole_storage(const Tensor& t) {
  const Layout& v = t.layout();
  return v.offset() == 0 && v.is_contiguous() &&
         static_cast<std::size_t>(v.numel()) * size_of(t.dtype()) == t.storage()->bytes();
}

void OpLaunch::arg(const Tensor& t, const plugin::TensorParam& param, Access access) {
  const int index = call_.num_tensors++;
  if (!t.defined()) {
    if (!param.optional)
      throw Error(ErrorCode::invalid_argument,
                  std::string(name_) + ": argument '" + std::string(param.name) + "' is required, not an empty tensor");
    tensors_[index] = nullptr;
    return;
  }
  tensors_[index] = &t;
  access_[index] = access;
  call_.t[index].view = t.layout();
  call_.t[index].dtype = t.dtype();
}

EventPtr OpLaunch::launch() {
  // An elementwise call joins the pending chain (core/fusion.hpp); any other
  // call runs that chain first where it depends on it.
  if (defer_elementwise(backend_, call_, tensors_, access_, name_)) return ready_event();
  try {
    const InputsToCopy to_copy = check_overlaps();
    const Backend& target = choose_backend();
    copy_inputs(target, to_copy);
    if (writes_nothing()) return mark_empty_outputs_written();
    return launch_on(target);
  } catch (const Error& e) {
    // Inside a capture, a failed op refuses the graph even where the block
    // catches the error: the graph would miss the op's work.
    if (Recorder* recorder = active_recorder()) throw recorder->fail(e);
    throw;
  }
}

const Backend& OpLaunch::choose_backend() {
  plugin::Device& device = plugin::device_of(backend_);
  DType dtype = call_.t[0].dtype;
  bool supported = device.supports(call_.op, dtype);
  // A cast needs both of its dtypes (a device without fp64 has neither end).
  if (supported && call_.op == plugin::OpId::math_cast && !device.supports(call_.op, call_.t[1].dtype)) {
    supported = false;
    dtype = call_.t[1].dtype;
  }
  if (!supported) {
    if (backend_.config().fallback == Fallback::native && backend_.framework() != "native") {
      fallback_ = Backend::native();
      return *fallback_;
    }
    const std::string reason = device.unsupported_reason(call_.op, dtype);
    throw Error(ErrorCode::unsupported, std::string(name_) + " is not available for " +
                                            std::string(name(dtype)) + " on " + backend_.id() + " (" +
                                            backend_.hardware().name + ")" + (reason.empty() ? "" : ": " + reason) +
                                            "; use another backend or BackendConfig::fallback = Fallback::native");
  }
  return backend_;
}

OpLaunch::InputsToCopy OpLaunch::check_overlaps() const {
  const int n = call_.num_tensors;
  InputsToCopy copy{};
  for (int w = 0; w < n; ++w) {
    if (tensors_[w] == nullptr || access_[w] == Access::read) continue;
    const Tensor& out = *tensors_[w];
    if (may_self_overlap(out.layout()))
      throw Error(ErrorCode::invalid_argument,
                  std::string(name_) + ": output '" + describe_arg(call_.op, w) + "' (shape " +
                      out.layout().dims_string() + ", strides " + out.layout().strides_string() +
                      ") names some elements more than once; write into a tensor of its own and copy from it");
    for (int r = 0; r < n; ++r) {
      if (r == w || tensors_[r] == nullptr || !tensors_[r]->shares_data_with(out)) continue;
      const Layout& in = tensors_[r]->layout();
      if (!may_overlap(out.layout(), in)) continue;
      if (access_[r] != Access::read)
        throw Error(ErrorCode::invalid_argument,
                    std::string(name_) + ": outputs '" + describe_arg(call_.op, std::min(r, w)) + "' and '" +
                        describe_arg(call_.op, std::max(r, w)) +
                        "' share memory; give each output a tensor of its own");
      if (elementwise(call_.op) && same_elements(out.layout(), in)) continue;  // in place
      copy[r] = true;
    }
  }
  return copy;
}

void OpLaunch::copy_inputs(const Backend& backend, const InputsToCopy& copy) {
  // Inputs that overlap an output are read, through a copy, before the op
  // writes anything.
  for (int r = 0; r < call_.num_tensors; ++r) {
    if (!copy[r]) continue;
    const Tensor& input = *tensors_[r];
    if (!copies_) copies_ = std::make_unique<std::array<Tensor, plugin::kMaxOpTensors>>();
    Tensor& copy_of_input = (*copies_)[r];
    copy_of_input = Tensor(Layout(input.layout().dims()), input.dtype());
    OpLaunch(backend, args::core_copy_view<Tensor>{.x = input, .y = copy_of_input}, name_).launch_on(backend);
    tensors_[r] = &copy_of_input;
    call_.t[r].view = copy_of_input.layout();
  }
}

bool OpLaunch::writes_nothing() const {
  bool any_output = false;
  for (int i = 0; i < call_.num_tensors; ++i) {
    if (tensors_[i] == nullptr || access_[i] == Access::read) continue;
    if (tensors_[i]->numel() > 0) return false;
    any_output = true;
  }
  return any_output;
}

EventPtr OpLaunch::mark_empty_outputs_written() {
  // An output with no elements is complete as it is. Its storage counts as
  // written when it has no bytes at all; a larger storage seen through an
  // empty view is left as it was.
  for (int i = 0; i < call_.num_tensors; ++i) {
    if (tensors_[i] == nullptr || access_[i] == Access::read) continue;
    Storage& storage = *tensors_[i]->storage();
    std::lock_guard lock(storage.mutex);
    if (storage.bytes() == 0 && !storage.written())
      storage.mark_written(storage.allocated_copy(host_device()), nullptr);
  }
  return ready_event();
}

EventPtr OpLaunch::launch_on(const Backend& backend) {
  plugin::Device& device = plugin::device_of(backend);
  const int n = call_.num_tensors;
  Recorder* const recorder = active_recorder();
  if (recorder) recorder->admit(device, call_, name_);

  std::array<StorageUse, plugin::kMaxOpTensors> uses{};
  std::array<int, plugin::kMaxOpTensors> use_of{};
  int num_uses = 0;
  for (int i = 0; i < n; ++i) {
    use_of[i] = -1;
    if (!tensors_[i]) continue;  // an absent optional argument
    Storage* s = tensors_[i]->storage().get();
    int u = 0;
    while (u < num_uses && uses[u].storage != s) ++u;
    if (u == num_uses) uses[num_uses++] = StorageUse{s, false, false, i, nullptr};
    const Access a = access_[i];
    // Reading no elements needs no data (an empty batch that was never written).
    const bool empty = tensors_[i]->numel() == 0;
    uses[u].reads |= !empty && (a != Access::write || !covers_whole_storage(*tensors_[i]));
    uses[u].writes |= a != Access::read;
    use_of[i] = u;
  }

  // Lock every storage, in address order so two ops never deadlock.
  std::array<StorageUse*, plugin::kMaxOpTensors> order{};
  for (int u = 0; u < num_uses; ++u) order[u] = &uses[u];
  for (int u = 1; u < num_uses; ++u)  // insertion sort: at most kMaxOpTensors entries
    for (int v = u; v > 0 && std::less<>()(order[v]->storage, order[v - 1]->storage); --v)
      std::swap(order[v], order[v - 1]);
  std::array<std::unique_lock<std::mutex>, plugin::kMaxOpTensors> locks;
  for (int u = 0; u < num_uses; ++u) locks[u] = std::unique_lock(order[u]->storage->mutex);

  // Everything that can fail happens before any tensor is changed.
  for (int u = 0; u < num_uses; ++u) {
    StorageUse& use = uses[u];
    // Only arguments the op reads must hold data; a partial write into a
    // fresh tensor is fine (the rest stays unset, as with new memory).
    if (use.reads && !use.storage->written()) {
      for (int i = 0; i < n; ++i) {
        if (use_of[i] == u && access_[i] != Access::write && tensors_[i]->numel() > 0)
          throw Error(ErrorCode::uninitialized_read,
                      std::string(name_) + ": argument '" + describe_arg(call_.op, i) +
                          "' (shape " + tensors_[i]->layout().dims_string() + ", " +
                          std::string(name(tensors_[i]->dtype())) +
                          ") was never written; initialise it first (xylem::fill, Tensor::from, or an op)");
      }
    }
    try {
      use.copy = &use.storage->allocated_copy(device);
    } catch (const Error& e) {
      // Name the op and the argument, so the user knows which tensor did not fit.
      const int i = use.first_arg;
      throw Error(e.code(), std::string(name_) + ": argument '" + describe_arg(call_.op, i) +
                                "' (shape " + tensors_[i]->layout().dims_string() + ", " +
                                std::string(name(tensors_[i]->dtype())) + ") on " + backend.id() + ": " + e.message());
    }
  }
  for (int u = 0; u < num_uses; ++u) {
    if (!uses[u].reads) continue;
    if (recorder && uses[u].copy->version != uses[u].storage->latest())
      recorder->refuse_transfer(name_, describe_arg(call_.op, uses[u].first_arg));
    uses[u].storage->make_current(*uses[u].copy);
  }

  // Data dependencies carry their writer's failure into this op (its input
  // would be garbage); a dependency kept only for order (an earlier read,
  // the last write of data this op overwrites whole) is dropped once done,
  // so a tensor whose writer failed can be written afresh.
  EventList deps;
  const auto for_order = [&deps](const EventPtr& event) {
    if (event && !event->ready()) deps.push(event);
  };
  for (int u = 0; u < num_uses; ++u) {
    const DeviceCopy& copy = *uses[u].copy;
    if (uses[u].reads) {
      deps.push(copy.last_write);
    } else {
      for_order(copy.last_write);
    }
    if (uses[u].writes)
      for (const EventPtr& read : copy.reads) for_order(read);
  }
  for (int i = 0; i < n; ++i) call_.t[i].data = use_of[i] < 0 ? nullptr : uses[use_of[i]].copy->data;

  EventPtr done;
  try {
    done = device.launch(call_, deps.span());
  } catch (...) {
    forget_partial_writes(std::span(uses.data(), static_cast<std::size_t>(num_uses)));
    throw;
  }

  for (int u = 0; u < num_uses; ++u) {
    if (uses[u].writes) {
      uses[u].storage->mark_written(*uses[u].copy, done);
    } else {
      uses[u].copy->add_read(done);
    }
  }
  if (recorder) {
    std::array<RecordedUse, plugin::kMaxOpTensors> recorded{};
    for (int u = 0; u < num_uses; ++u)
      recorded[u] = {&tensors_[uses[u].first_arg]->storage(), uses[u].reads, uses[u].writes};
    recorder->add(call_, std::span(recorded.data(), static_cast<std::size_t>(num_uses)),
                  std::span(use_of.data(), static_cast<std::size_t>(n)));
  }
  return done;
}

}  // namespace xylem::detail
