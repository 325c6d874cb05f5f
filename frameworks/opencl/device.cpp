// One opened OpenCL device: queue, dispatch, host tasks (memory.cpp has
// buffers and transfers).
#include "frameworks/opencl/device.hpp"

#include <string>

#include "frameworks/opencl/ops/launch.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;

// The dtypes an op takes: every dtype the device has (f64 only with fp64),
// save where noted.
enum class Dtypes {
  bits,     // fill and copy_view only move bit patterns: every dtype, f64 too
  every,    // math::cast (kernels/cast.cl)
  numbers,  // every but bool (arange)
  floats,   // f16, bf16, f32, f64; f16 and bf16 computed in f32 (kernels/storage.cl,
            // ops/gemm_half.cpp): no device fp16 needed
  reals,    // f32, f64
};

// The family that implements an op, and the dtypes it takes.
struct OpRoute {
  Family family;
  Dtypes dtypes;
};

OpRoute route(OpId op) noexcept {
  switch (op) {
    case OpId::creation_fill:
      return {Family::creation, Dtypes::bits};
    case OpId::creation_arange:
      return {Family::creation, Dtypes::numbers};
    case OpId::creation_uniform:
    case OpId::creation_normal:
      return {Family::creation, Dtypes::reals};
    case OpId::core_copy_view:
      return {Family::copy, Dtypes::bits};
    case OpId::math_unary:
    case OpId::math_binary:
    case OpId::math_compare:
    case OpId::math_where:
    case OpId::nn_dropout:
    case OpId::nn_dropout_grad:
      return {Family::elementwise, Dtypes::floats};
    case OpId::math_cast:
      return {Family::cast, Dtypes::every};
    case OpId::math_reduce:
      return {Family::reduce, Dtypes::floats};
    case OpId::nn_softmax:
    case OpId::nn_softmax_grad:
    case OpId::nn_cross_entropy:
    case OpId::nn_cross_entropy_grad:
      return {Family::softmax, Dtypes::floats};
    case OpId::blas_gemm:
    case OpId::blas_gemm_batched:
      return {Family::gemm, Dtypes::floats};
    case OpId::nn_layer_norm:
    case OpId::nn_layer_norm_grad_input:
    case OpId::nn_layer_norm_grad_params:
    case OpId::nn_batch_norm_stats:
    case OpId::nn_batch_norm_apply:
    case OpId::nn_batch_norm_grad_params:
    case OpId::nn_batch_norm_grad_input:
      return {Family::norm, Dtypes::floats};
    case OpId::nn_conv2d:
    case OpId::nn_conv2d_grad_data:
    case OpId::nn_conv2d_grad_filter:
      return {Family::conv, Dtypes::floats};
    case OpId::nn_max_pool2d:
    case OpId::nn_max_pool2d_grad:
    case OpId::nn_avg_pool2d:
    case OpId::nn_avg_pool2d_grad:
      return {Family::pool, Dtypes::floats};
    case OpId::nn_lrn:
    case OpId::nn_lrn_grad:
      return {Family::lrn, Dtypes::floats};
    default:
      return {Family::blas, Dtypes::reals};
  }
}

}  // namespace

Device::Device(Hardware hardware, DeviceInfo info, Context context, HostWorker& callbacks, HostWorker& tasks)
    : hardware_(std::move(hardware)), info_(std::move(info)), context_(std::move(context)), callbacks_(&callbacks),
      tasks_(&tasks) {
  cl_int status = CL_SUCCESS;
  queue_ = Queue(clCreateCommandQueue(context_.get(), info_.id, 0, &status));
  check(status, [&] { return "opencl: creating the queue of " + label(); });
}

Device::~Device() {
  if (queue_) clFinish(queue_.get());
}

std::string Device::label() const { return hardware_.id() + " (" + hardware_.name + ")"; }

bool Device::supports(OpId op, DType dtype) const noexcept {
  if (static_cast<std::size_t>(op) >= plugin::kOpCount) return false;
  const Dtypes takes = route(op).dtypes;
  if (takes == Dtypes::bits) return true;
  if (dtype == DType::f64) return info_.fp64;
  switch (takes) {
    case Dtypes::bits:
    case Dtypes::every:
      return true;
    case Dtypes::numbers:
      return dtype != DType::boolean;
    case Dtypes::floats:
      return dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::f32;
    case Dtypes::reals:
      return dtype == DType::f32;
  }
  return false;
}

const ProgramPackage& Device::program(Family family) {
  return packages_.get<ProgramPackage>(static_cast<std::size_t>(family),
                                       [&] { return build_package(family, context_.get(), info_); });
}

EventPtr Device::launch(const plugin::OpCall& call, Deps deps) {
  if (call.num_tensors == 0 || !supports(call.op, call.t[0].dtype)) {
    throw Error(ErrorCode::unsupported,
                describe(call, *this) + ": not supported on this device" +
                    (call.num_tensors && call.t[0].dtype == DType::f64 && !info_.fp64 ? " (no fp64)" : ""));
  }
  // Build (or load) the program before taking the launch lock: a first
  // compile must not stall other families' launches.
  (void)program(route(call.op).family);
  if ((call.op == OpId::blas_gemm || call.op == OpId::blas_gemm_batched) && (call.t[0].dtype == DType::f16 || call.t[0].dtype == DType::bf16))
    (void)program(Family::convert);
  std::lock_guard lock(launch_mutex_);
  Launcher launcher(*this, call, deps);
  switch (route(call.op).family) {
    case Family::creation:
      return launch_creation(launcher);
    case Family::copy:
      return launch_copy(launcher);
    case Family::elementwise:
      return launch_elementwise(launcher);
    case Family::cast:
      return launch_cast(launcher);
    case Family::reduce:
      return launch_reduce(launcher);
    case Family::softmax:
      return launch_softmax(launcher);
    case Family::blas:
      return launch_blas(launcher);
    case Family::gemm:
      return launch_gemm(launcher);
    case Family::norm:
      return launch_norm(launcher);
    case Family::conv:
      return launch_conv(launcher);
    case Family::pool:
      return launch_pool(launcher);
    case Family::lrn:
      return launch_lrn(launcher);
    case Family::convert:
      break;  // no op routes here: blas::gemm of f16 and bf16 uses it
  }
  throw Error(ErrorCode::internal, describe(call, *this) + ": no family");
}

EventPtr Device::wrap(cl_event event) const {
  return std::make_shared<ClEvent>(ClEventHandle(event), context_.get(), queue_.get(), *callbacks_);
}

EventPtr Device::marker(const WaitList& waits, std::string_view what) const {
  cl_event event = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_.get(), waits.size(), waits.data(), &event),
        [&] { return "opencl: " + std::string(what) + " on " + label(); });
  return wrap(event);
}

cl_mem Device::scratch(std::size_t slot, std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 64);
  if (scratch_bytes_[slot] < bytes) {
    // During a launch: the scratch buffers stay (the launch may hold one).
    cl_int status = CL_SUCCESS;
    Mem mem(create_buffer(bytes, /*drop_scratch=*/false, status));
    check(status, [&] { return "opencl: scratch buffer of " + std::to_string(bytes) + " bytes on " + label(); });
    scratch_[slot] = std::move(mem);
    scratch_bytes_[slot] = bytes;
  }
  return scratch_[slot].get();
}

EventPtr Device::host_task(std::function<void()> fn, Deps deps) {
  // A marker after the deps (and, the queue being in order, after all work
  // queued so far); when it completes, fn runs on the task thread, then a
  // user event completes. That event is not on our queue: later commands
  // that depend on it wait for it explicitly.
  const WaitList waits(deps, context_.get(), queue_.get());
  cl_event raw_marker = nullptr;
  check(clEnqueueMarkerWithWaitList(queue_.get(), waits.size(), waits.data(), &raw_marker),
        [&] { return "opencl: host task on " + label(); });
  const ClEventHandle marker_event(raw_marker);
  cl_int status = CL_SUCCESS;
  ClEventHandle done(clCreateUserEvent(context_.get(), &status));
  check(status, [&] { return "opencl: host task on " + label() + ": clCreateUserEvent"; });
  auto error = std::make_shared<std::exception_ptr>();
  auto result = std::make_shared<ClEvent>(done, context_.get(), static_cast<const void*>(tasks_), *callbacks_, error);
  {
    std::lock_guard lock(host_tasks_mutex_);
    ++host_tasks_pending_;
  }
  when_complete(
      marker_event.get(), *tasks_,
      [this, fn = std::move(fn), done, error](cl_int marker_status) {
        if (marker_status < 0) {
          *error = std::make_exception_ptr(Error(ErrorCode::device_lost, "opencl: a host task's dependency failed on " +
                                                                             label() + ": " +
                                                                             cl_error_name(marker_status)));
        } else {
          try {
            fn();
          } catch (...) {
            *error = std::current_exception();
          }
        }
        clSetUserEventStatus(done.get(), CL_COMPLETE);
        {
          std::lock_guard lock(host_tasks_mutex_);
          --host_tasks_pending_;
        }
        host_tasks_cv_.notify_all();
      },
      "host task");
  return result;
}

void Device::synchronize() {
  check(clFinish(queue_.get()), [&] { return "opencl: synchronize " + label(); });
  std::unique_lock lock(host_tasks_mutex_);
  host_tasks_cv_.wait(lock, [&] { return host_tasks_pending_ == 0; });
}

}  // namespace xylem::opencl
