#include "device.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "check.hpp"
#include "recording.hpp"
#include "ops/cufft_library.hpp"
#include "ops/nvrtc_library.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

// Below this, asking whether host memory is pinned costs more than the
// driver's own staging of a small pageable copy.
constexpr std::size_t kStagingThreshold = std::size_t{1} << 20;

}  // namespace

CudaDevice::CudaDevice(Hardware hardware, int ordinal)
    : hardware_(std::move(hardware)),
      ordinal_(ordinal),
      compute_(std::make_shared<Timeline>(ordinal, &worker_)),
      transfer_(std::make_shared<Timeline>(ordinal, &worker_)),
      comm_(std::make_shared<Timeline>(ordinal, &worker_)),
      memory_(ordinal, memory_limit_from_env()),
      staging_(ordinal),
      small_reads_(ordinal),
      scratch_(ordinal, Context::kScratchBytes, "reduction scratch"),
      blas_(ordinal, compute_->stream()) {
  context_.device = ordinal;
  context_.stream = compute_->stream();
  context_.multiprocessors = hardware_.compute_units > 0 ? hardware_.compute_units : 1;
  context_.blas = &blas_;
  context_.scratch = scratch_.get();
  context_.memory = &memory_;
  context_.packages = &packages_;
}

CudaDevice::~CudaDevice() {
  // Queued work may still use device memory: let it finish first (errors
  // ignored, see queue.cpp).
  (void)cudaStreamSynchronize(compute_->stream());
  (void)cudaStreamSynchronize(transfer_->stream());
  (void)cudaStreamSynchronize(comm_->stream());
  if (capture_stream_ != nullptr) (void)cudaStreamDestroy(capture_stream_);
  if (side_stream_ != nullptr) (void)cudaStreamDestroy(side_stream_);
}

void CudaDevice::make_current() const {
  // Asking is cheaper than setting; a thread usually stays on one device.
  // Not cached per thread: the application (or another library) may switch
  // the thread's device behind our back.
  int current = -1;
  XY_CUDA(cudaGetDevice(&current), ordinal_, "select device");
  if (current != ordinal_) XY_CUDA(cudaSetDevice(ordinal_), ordinal_, "select device");
}

void CudaDevice::order_stream(cudaStream_t stream, const void* queue, plugin::Deps deps, std::string_view what) {
  for (const EventPtr& e : deps) {
    // The usual case, a dep on the same stream, costs one virtual call.
    if (!e || (queue != nullptr && e->queue() == queue)) continue;
    if (const auto* se = dynamic_cast<const StreamEvent*>(e.get())) {
      // Issued before the op (and outside the stream's lock, so two streams
      // waiting on each other cannot deadlock): the wait precedes it.
      se->timeline().order_before(stream, se->seq(), ordinal_, what);
    } else if (!e->ready()) {
      // A host-side event (native queue, host task): CUDA cannot wait for
      // it on the device, so the host does.
      e->wait();
    }
  }
}

void CudaDevice::fence_transfer(void* dst) {
  std::uint64_t fence = memory_.take_fence(dst);
  if (fence == CachingAllocator::kUnknownFence) fence = compute_->enqueued();
  if (fence > 0) compute_->order_before(transfer_->stream(), fence, ordinal_, "reuse of memory freed by kernels");
}

void CudaDevice::release(void* data, plugin::Deps after) noexcept {
  // Kernels are ordered before any later kernel using the block, and the
  // fence orders them before a later transfer; only events of other queues
  // (the transfer stream among them) hold the block back.
  std::vector<EventPtr> pending;
  for (const EventPtr& e : after) {
    if (!e || e->queue() == compute_.get()) continue;
    try {
      if (e->ready()) continue;
      pending.push_back(e);
    } catch (...) {
      // A failed event no longer uses the memory.
    }
  }
  memory_.release(data, pending, compute_->enqueued());
}

EventPtr CudaDevice::upload(void* dst, const void* host_src, std::size_t bytes, plugin::Deps deps) {
  make_current();
  wait_for(*transfer_, deps, "upload");
  fence_transfer(dst);
  if (bytes >= kStagingThreshold && !is_pinned(host_src, ordinal_)) {
    staging_.upload(transfer_->stream(), dst, host_src, bytes);
  } else if (bytes > 0) {
    XY_CUDA_TRANSFER(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, transfer_->stream()), ordinal_, "upload");
  }
  return transfer_->advance();
}

EventPtr CudaDevice::download(void* host_dst, const void* src, std::size_t bytes, plugin::Deps deps) {
  make_current();
  wait_for(*transfer_, deps, "download");
  if (bytes >= kStagingThreshold && !is_pinned(host_dst, ordinal_)) {
    staging_.download(transfer_->stream(), host_dst, src, bytes);
  } else if (bytes <= SmallReads::kSlot && !is_pinned(host_dst, ordinal_) &&
             small_reads_.download(transfer_->stream(), host_dst, src, bytes)) {
    // Queued without blocking (small_reads.hpp).
  } else if (bytes > 0) {
    XY_CUDA_TRANSFER(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, transfer_->stream()), ordinal_,
            "download");
  }
  return transfer_->advance();
}

bool peer_access_allowed() noexcept {
  static const bool allowed = [] {
    const char* v = std::getenv("XYLEM_CUDA_PEER_ACCESS");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return allowed;
}

bool CudaDevice::enable_peer(int src_ordinal) {
  if (src_ordinal < 0 || src_ordinal >= 64 || !peer_access_allowed()) return false;
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
  if (from == this) {
    // On the compute stream: it competes with kernels for the same memory
    // bandwidth, so a second stream would gain nothing.
    wait_for(*compute_, deps, "copy");
    if (bytes > 0)
      XY_CUDA_TRANSFER(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute_->stream()), ordinal_, "copy");
    return compute_->advance();
  }
  if (!enable_peer(from->ordinal_)) return nullptr;  // the core stages through the host
  wait_for(*transfer_, deps, "peer copy");
  fence_transfer(dst);
  if (bytes > 0)
    XY_CUDA_TRANSFER(cudaMemcpyPeerAsync(dst, ordinal_, src, from->ordinal_, bytes, transfer_->stream()), ordinal_,
            "peer copy");
  return transfer_->advance();
}

namespace {
// The ops whose kernels (or fallback tails) NVRTC compiles.
bool needs_nvrtc(plugin::OpId op) noexcept {
  return op == plugin::OpId::math_fused || op == plugin::OpId::blas_gemm_epilogue ||
         op == plugin::OpId::nn_conv2d_epilogue;
}
}  // namespace

bool CudaDevice::supports(plugin::OpId op, DType dtype) const noexcept {
  if (static_cast<std::size_t>(op) >= plugin::kOpCount || kernels().get(op, dtype) == nullptr) return false;
  // The transforms need cuFFT, loaded on this first question about one;
  // fused chains and the epilogues' tails NVRTC.
  if (needs_nvrtc(op)) return nvrtc_library() != nullptr;
  return !is_fft(op) || cufft_library() != nullptr;
}

std::string CudaDevice::unsupported_reason(plugin::OpId op, DType dtype) const {
  std::string why;
  if (static_cast<std::size_t>(op) < plugin::kOpCount && kernels().get(op, dtype) != nullptr && is_fft(op))
    (void)cufft_library(&why);
  if (needs_nvrtc(op)) (void)nvrtc_library(&why);
  return why;
}

Kernel CudaDevice::kernel_of(const plugin::OpCall& call) const {
  const DType dtype = dispatch_dtype(call);
  const Kernel kernel = static_cast<std::size_t>(call.op) < plugin::kOpCount ? kernels().get(call.op, dtype) : nullptr;
  if (kernel == nullptr)
    throw Error(ErrorCode::unsupported, hardware_.id() + ": " + std::string(plugin::op_name(call.op)) +
                                            " has no CUDA kernel for " + std::string(name(dtype)));
  return kernel;
}

EventPtr CudaDevice::launch(const plugin::OpCall& call, plugin::Deps deps) {
  const Kernel kernel = kernel_of(call);
  const std::string_view what = plugin::op_name(call.op);
  make_current();
  wait_for(*compute_, deps, what);
  // Held across the kernel's launches: multi-kernel ops share the scratch
  // buffer and the cuBLAS handle, and their sequence number must follow them.
  std::lock_guard lock(compute_->mutex());
  context_.op_seq = compute_->enqueued() + 1;  // the number advance_locked gives this op
  kernel(call, context_);
  return compute_->advance_locked();
}

std::unique_ptr<plugin::Recording> CudaDevice::record() { return std::make_unique<CudaRecording>(*this); }

namespace {

// XYLEM_CUDA_GRAPH_OVERLAP=0 keeps a graph's collectives in line with its
// ops (to measure what running them beside the ops gains).
bool overlap_collectives() {
  static const bool on = [] {
    const char* v = std::getenv("XYLEM_CUDA_GRAPH_OVERLAP");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

// Events made before a capture begins (creating one inside it is not
// allowed in every mode) and destroyed after it, whatever happens.
class CaptureEvents {
 public:
  CaptureEvents(std::size_t n, int device) : events_(n, nullptr) {
    for (cudaEvent_t& e : events_)
      XY_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), device, "capture event");
  }
  ~CaptureEvents() {
    for (cudaEvent_t e : events_)
      if (e != nullptr) (void)cudaEventDestroy(e);
  }
  CaptureEvents(const CaptureEvents&) = delete;
  CaptureEvents& operator=(const CaptureEvents&) = delete;
  [[nodiscard]] std::size_t size() const noexcept { return events_.size(); }
  [[nodiscard]] cudaEvent_t at(std::size_t i) const { return events_.at(i); }

 private:
  std::vector<cudaEvent_t> events_;
};

}  // namespace

std::unique_ptr<GraphExec> CudaDevice::capture_graph(std::span<const plugin::OpCall> calls,
                                                     std::span<const RecordedStep> steps) {
  make_current();
  // Under the compute lock: the kernel functions share the scratch buffer
  // and the library handles, which follow the capture stream meanwhile.
  std::lock_guard lock(compute_->mutex());
  if (capture_stream_ == nullptr)
    XY_CUDA(cudaStreamCreateWithFlags(&capture_stream_, cudaStreamNonBlocking), ordinal_, "capture stream");
  Context ctx = context_;
  ctx.stream = capture_stream_;
  ctx.capturing = true;
  // Collectives go on a second stream forked from the capture (see
  // recording.hpp), each followed by its event for the steps that join it;
  // one more event forks.
  if (side_stream_ == nullptr)
    XY_CUDA(cudaStreamCreateWithFlags(&side_stream_, cudaStreamNonBlocking), ordinal_, "capture side stream");
  const auto collectives =
      std::count_if(steps.begin(), steps.end(), [](const RecordedStep& s) { return bool(s.native); });
  CaptureEvents events(static_cast<std::size_t>(collectives) + 1, ordinal_);
  cudaEvent_t fork = events.at(events.size() - 1);
  std::size_t natives = 0;
  // Thread-local mode: a call of this thread that is unsafe in a capture
  // (cudaMalloc, a synchronous copy) fails instead of running, and the op
  // making it is refused below.
  XY_CUDA(cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal), ordinal_, "begin capture");
  const auto abandon = [&] {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(capture_stream_, &partial);
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
    (void)cudaGetLastError();  // the capture's error is reported below, not by the next launch
  };
  const auto capturing = [&] {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return cudaStreamIsCapturing(capture_stream_, &status) == cudaSuccess && status == cudaStreamCaptureStatusActive;
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string op = steps[i].native ? "a collective" : std::string(plugin::op_name(calls[i].op));
    const std::string what = hardware_.id() + ": " + op;
    const std::string refused = what + " cannot be captured into a CUDA graph: ";
    try {
      for (std::size_t native : steps[i].joins)
        XY_CUDA(cudaStreamWaitEvent(capture_stream_, events.at(native), 0), ordinal_, "join of a collective");
      if (steps[i].native) {
        cudaStream_t on = capture_stream_;
        if (overlap_collectives()) {
          on = side_stream_;
          XY_CUDA(cudaEventRecord(fork, capture_stream_), ordinal_, "fork of a collective");
          XY_CUDA(cudaStreamWaitEvent(on, fork, 0), ordinal_, "fork of a collective");
        }
        steps[i].native(on);
        XY_CUDA(cudaEventRecord(events.at(natives++), on), ordinal_, "end of a collective");
      } else {
        steps[i].kernel(calls[i], ctx);
      }
    } catch (const Error& e) {
      // A call the capture cannot hold broke it; anything else (out of
      // memory) keeps its code.
      const bool broke = !capturing();
      abandon();
      throw Error(broke ? ErrorCode::unsupported : e.code(), (broke ? refused : what + ": ") + e.message());
    }
    if (!capturing()) {
      abandon();
      throw Error(ErrorCode::unsupported, refused + "a call it made broke the capture");
    }
  }
  // The capture ends joined: the graph's end waits for the last collective
  // (the side stream runs them in order).
  if (natives > 0) {
    const cudaError_t joined = cudaStreamWaitEvent(capture_stream_, events.at(natives - 1), 0);
    if (joined != cudaSuccess) {
      abandon();
      throw Error(ErrorCode::unsupported, hardware_.id() + ": joining the captured collectives failed: " +
                                              cudaGetErrorString(joined));
    }
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture_stream_, &graph);
  if (ended != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    throw Error(ErrorCode::unsupported,
                hardware_.id() + ": the captured ops do not form a CUDA graph: " + cudaGetErrorString(ended));
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiateWithFlags(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  XY_CUDA(made, ordinal_, "instantiating a captured graph");
  return std::make_unique<GraphExec>(exec, ordinal_);
}

EventPtr CudaDevice::launch_graph(const GraphExec& graph, plugin::Deps deps) {
  make_current();
  wait_for(*compute_, deps, "replay");
  std::lock_guard lock(compute_->mutex());
  XY_CUDA(cudaGraphLaunch(graph.get(), compute_->stream()), ordinal_, "replay of a captured graph");
  return compute_->advance_locked();
}

EventPtr CudaDevice::enqueue(std::string_view what, plugin::Deps deps,
                             const std::function<void(cudaStream_t)>& commands) {
  make_current();
  wait_for(*comm_, deps, what);
  // After every kernel so far, not only the deps: a buffer the op writes
  // may have been freed by one of them (as fence_transfer does for copies).
  if (const std::uint64_t so_far = compute_->enqueued(); so_far > 0)
    compute_->order_before(comm_->stream(), so_far, ordinal_, what);
  std::lock_guard lock(comm_->mutex());
  commands(comm_->stream());
  return comm_->advance_locked();
}

std::vector<EventPtr> CudaDevice::enqueue_together(std::span<CudaDevice* const> devices,
                                                   std::span<const std::vector<EventPtr>> deps, std::string_view what,
                                                   const std::function<void(std::span<const cudaStream_t>)>& commands) {
  for (std::size_t i = 0; i < devices.size(); ++i) {
    devices[i]->make_current();
    devices[i]->wait_for(*devices[i]->compute_, deps[i], what);
  }
  // Locked in ordinal order, as every caller does: two groups over the same
  // GPUs cannot each hold one stream the other waits for.
  std::vector<CudaDevice*> by_ordinal(devices.begin(), devices.end());
  std::sort(by_ordinal.begin(), by_ordinal.end(), [](auto* a, auto* b) { return a->ordinal_ < b->ordinal_; });
  std::vector<std::unique_lock<std::mutex>> locks;
  for (CudaDevice* d : by_ordinal) locks.emplace_back(d->compute_->mutex());
  std::vector<cudaStream_t> streams;
  for (CudaDevice* d : devices) streams.push_back(d->compute_->stream());
  commands(streams);
  std::vector<EventPtr> events;
  for (CudaDevice* d : devices) events.push_back(d->compute_->advance_locked());
  return events;
}

EventPtr CudaDevice::host_task(std::function<void()> fn, plugin::Deps deps) {
  std::vector<EventPtr> waits(deps.begin(), deps.end());
  // Queue order: after everything enqueued so far on either stream,
  // recorded now so that the task does not also wait for later work.
  RecordedPtr kernels_so_far = compute_->resolve_all();
  RecordedPtr transfers_so_far = transfer_->resolve_all();
  RecordedPtr collectives_so_far = comm_->resolve_all();
  auto done = std::make_shared<HostEvent>(&worker_);
  worker_.post([this, waits = std::move(waits), kernels_so_far = std::move(kernels_so_far),
                transfers_so_far = std::move(transfers_so_far), collectives_so_far = std::move(collectives_so_far),
                fn = std::move(fn), done] {
    try {
      for (const EventPtr& e : waits)
        if (e) e->wait();
      compute_->wait(kernels_so_far);
      transfer_->wait(transfers_so_far);
      comm_->wait(collectives_so_far);
      fn();
      done->finish(nullptr);
    } catch (...) {
      done->finish(std::current_exception());
    }
  });
  return done;
}

void CudaDevice::export_to_queue(void* consumer, plugin::Deps deps) {
  make_current();
  order_stream(static_cast<cudaStream_t>(consumer), nullptr, deps, "interop::export_to");
}

EventPtr CudaDevice::import_from_queue(void* producer, plugin::Deps deps) {
  make_current();
  wait_for(*compute_, deps, "interop::import_from");
  // A one-off event: cudaStreamWaitEvent takes the work recorded so far,
  // so the event may be destroyed right after (CUDA frees it once done).
  cudaEvent_t event = nullptr;
  XY_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), ordinal_, "interop::import_from");
  const cudaError_t recorded = cudaEventRecord(event, static_cast<cudaStream_t>(producer));
  const cudaError_t waited =
      recorded == cudaSuccess ? cudaStreamWaitEvent(compute_->stream(), event, 0) : cudaSuccess;
  (void)cudaEventDestroy(event);
  check_cuda(recorded, "cudaEventRecord(producer stream)", ordinal_, "interop::import_from");
  check_cuda(waited, "cudaStreamWaitEvent", ordinal_, "interop::import_from");
  return compute_->advance();
}

void CudaDevice::synchronize() {
  make_current();
  compute_->synchronize();
  transfer_->synchronize();
  comm_->synchronize();
  worker_.drain();
}

}  // namespace xylem::cuda
