#include "device.hpp"

#include <string>
#include <vector>

#include "check.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

// Below this, asking whether host memory is pinned costs more than the
// driver's own staging of a small pageable copy.
constexpr std::size_t kStagingThreshold = std::size_t{1} << 20;

[[nodiscard]] const CudaEvent* as_cuda(const EventPtr& e) noexcept { return dynamic_cast<const CudaEvent*>(e.get()); }

}  // namespace

CudaDevice::CudaDevice(Hardware hardware, int ordinal)
    : hardware_(std::move(hardware)),
      ordinal_(ordinal),
      stream_(ordinal),
      events_(std::make_shared<EventPool>(ordinal)),
      memory_(ordinal, memory_limit_from_env()),
      staging_(ordinal),
      scratch_(ordinal, Context::kScratchBytes, "reduction scratch"),
      blas_(ordinal, stream_.get()) {
  context_.device = ordinal;
  context_.stream = stream_.get();
  context_.multiprocessors = hardware_.compute_units > 0 ? hardware_.compute_units : 1;
  context_.blas = &blas_;
  context_.scratch = scratch_.get();
}

CudaDevice::~CudaDevice() {
  // Queued work may still use device memory: let it finish first (errors
  // ignored, see queue.cpp).
  (void)cudaStreamSynchronize(stream_.get());
}

void CudaDevice::make_current() const {
  // Asking is cheaper than setting; a thread usually stays on one device.
  int current = -1;
  XY_CUDA(cudaGetDevice(&current), ordinal_, "select device");
  if (current != ordinal_) XY_CUDA(cudaSetDevice(ordinal_), ordinal_, "select device");
}

void CudaDevice::wait_for(plugin::Deps deps, std::string_view what) {
  for (const EventPtr& e : deps) {
    if (!e) continue;
    if (const CudaEvent* ce = as_cuda(e)) {
      if (ce->queue() != &stream_) XY_CUDA(cudaStreamWaitEvent(stream_.get(), ce->get(), 0), ordinal_, what);
    } else if (!e->ready()) {
      // A host-side event (native queue, host task): CUDA cannot wait for
      // it on the device, so the host does.
      e->wait();
    }
  }
}

EventPtr CudaDevice::record(std::string_view what) {
  cudaEvent_t e = events_->acquire();
  const cudaError_t err = cudaEventRecord(e, stream_.get());
  if (err != cudaSuccess) {
    events_->put(e);
    throw_cuda(err, "cudaEventRecord", ordinal_, what);
  }
  return std::make_shared<CudaEvent>(events_, e, &stream_, &worker_);
}

void CudaDevice::release(void* data, plugin::Deps after) noexcept {
  // Work on this stream is ordered before any later use of the block; only
  // events of other queues hold it back.
  std::vector<EventPtr> pending;
  for (const EventPtr& e : after) {
    if (!e) continue;
    const CudaEvent* ce = as_cuda(e);
    if (ce != nullptr && ce->queue() == &stream_) continue;
    try {
      if (e->ready()) continue;
      pending.push_back(e);
    } catch (...) {
      // A failed event no longer uses the memory.
    }
  }
  memory_.release(data, pending);
}

EventPtr CudaDevice::upload(void* dst, const void* host_src, std::size_t bytes, plugin::Deps deps) {
  make_current();
  wait_for(deps, "upload");
  if (bytes >= kStagingThreshold && !is_pinned(host_src, ordinal_)) {
    staging_.upload(stream_.get(), dst, host_src, bytes);
  } else if (bytes > 0) {
    XY_CUDA(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_.get()), ordinal_, "upload");
  }
  return record("upload");
}

EventPtr CudaDevice::download(void* host_dst, const void* src, std::size_t bytes, plugin::Deps deps) {
  make_current();
  wait_for(deps, "download");
  if (bytes >= kStagingThreshold && !is_pinned(host_dst, ordinal_)) {
    staging_.download(stream_.get(), host_dst, src, bytes);
  } else if (bytes > 0) {
    XY_CUDA(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_.get()), ordinal_, "download");
  }
  return record("download");
}

bool CudaDevice::enable_peer(int src_ordinal) {
  if (src_ordinal < 0 || src_ordinal >= 64) return false;
  std::lock_guard lock(peer_mutex_);
  const std::uint64_t bit = std::uint64_t{1} << src_ordinal;
  if (peers_enabled_ & bit) return true;
  int can = 0;
  XY_CUDA(cudaDeviceCanAccessPeer(&can, ordinal_, src_ordinal), ordinal_, "peer copy");
  if (!can) return false;
  const cudaError_t err = cudaDeviceEnablePeerAccess(src_ordinal, 0);
  if (err == cudaErrorPeerAccessAlreadyEnabled)
    (void)cudaGetLastError();  // enabled earlier (by another library): fine
  else
    XY_CUDA(err, ordinal_, "peer copy");
  peers_enabled_ |= bit;
  return true;
}

EventPtr CudaDevice::copy_from(plugin::Device& src_device, const void* src, void* dst, std::size_t bytes,
                               plugin::Deps deps) {
  auto* from = dynamic_cast<CudaDevice*>(&src_device);
  if (from == nullptr) return nullptr;
  make_current();
  if (from != this && !enable_peer(from->ordinal_)) return nullptr;  // the core stages through the host
  wait_for(deps, "copy");
  if (bytes > 0) {
    if (from == this)
      XY_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_.get()), ordinal_, "copy");
    else
      XY_CUDA(cudaMemcpyPeerAsync(dst, ordinal_, src, from->ordinal_, bytes, stream_.get()), ordinal_, "peer copy");
  }
  return record("copy");
}

bool CudaDevice::supports(plugin::OpId op, DType dtype) const noexcept {
  return static_cast<std::size_t>(op) < plugin::kOpCount && kernels().get(op, dtype) != nullptr;
}

EventPtr CudaDevice::launch(const plugin::OpCall& call, plugin::Deps deps) {
  const std::string_view what = plugin::op_name(call.op);
  if (!supports(call.op, dispatch_dtype(call)))
    throw Error(ErrorCode::unsupported, hardware_.id() + ": " + std::string(what) + " has no CUDA kernel for " +
                                            std::string(name(dispatch_dtype(call))));
  std::lock_guard lock(launch_mutex_);
  make_current();
  wait_for(deps, what);
  kernels().get(call.op, dispatch_dtype(call))(call, context_);
  return record(what);
}

EventPtr CudaDevice::host_task(std::function<void()> fn, plugin::Deps deps) {
  std::vector<EventPtr> waits(deps.begin(), deps.end());
  make_current();
  waits.push_back(record("host task"));  // queue order: after everything enqueued so far
  auto done = std::make_shared<HostEvent>(&worker_);
  worker_.post([waits = std::move(waits), fn = std::move(fn), done] {
    try {
      for (const EventPtr& e : waits)
        if (e) e->wait();
      fn();
      done->finish(nullptr);
    } catch (...) {
      done->finish(std::current_exception());
    }
  });
  return done;
}

void CudaDevice::synchronize() {
  make_current();
  XY_CUDA(cudaStreamSynchronize(stream_.get()), ordinal_, "synchronize");
  worker_.drain();
}

}  // namespace xylem::cuda
