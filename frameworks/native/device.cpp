#include "frameworks/native/device.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "frameworks/native/ops/gemm_onednn.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/recording.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::native {

namespace {

// Every native device made. Never freed, as the devices are not: the
// registry that owns them lives to the end of the process.
std::mutex& devices_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::vector<NativeDevice*>& devices() {
  static auto* v = new std::vector<NativeDevice*>;
  return *v;
}

// At exit: let the work still queued finish before the libraries it calls
// are torn down.
void drain_at_exit() noexcept {
  // exit() destroys this thread's thread_local objects before it runs the
  // handlers: the queued work runs on the workers only (a kernel run here
  // crashed in oneDNN on a destroyed thread_local stream).
  NativeQueue::stop_helping();
  std::lock_guard lock(devices_mutex());
  for (NativeDevice* d : devices()) {
    try {
      d->synchronize();
    } catch (...) {
      // A failed task's error has nobody left to reach.
    }
  }
}

// Whether a kernel is short enough to run on the launching thread when the
// queue is idle (NativeQueue::enqueue): about as long as the hand-off to
// the worker takes, so the caller waits no longer than it would have for
// the hand-off. A longer kernel is better left to the worker, which runs
// it while the caller issues the next op, when a core is free: exp of
// 2048 f32 from Python took 0.60 us per op queued and 0.86 us run here
// then (0.97 and 0.83 us with the cores busy); exp of 1024 took 0.61-0.94
// queued and 0.58-0.72 run here. By the largest tensor, for ops whose work
// grows with their tensors; gemm and convolutions do more work per element
// the larger they are, so they stay queued.
bool runs_here(const plugin::OpCall& call) noexcept {
  using plugin::OpId;
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 10;
  switch (call.op) {
    case OpId::blas_gemm:
    case OpId::blas_gemm_batched:
    case OpId::nn_conv2d:
    case OpId::nn_conv2d_grad_data:
    case OpId::nn_conv2d_grad_filter:
      return false;
    default:
      break;
  }
  for (std::size_t k = 0; k < call.num_tensors; ++k)
    if (call.t[k].view.numel() > kMaxElements) return false;
  return true;
}

}  // namespace

void wait_at_exit_before_new_state() {
  // A program makes a few plans of many shapes at most; past that, the
  // state of later plans was built by earlier ones.
  constexpr int kMostRegistrations = 64;
  static std::atomic<int> registered{0};
  if (registered.fetch_add(1, std::memory_order_relaxed) < kMostRegistrations) std::atexit(drain_at_exit);
}

// Nothing joins a native queue at exit (the registry owning the device is
// never destroyed), so a program returning from main with work queued has
// the worker still running kernels while exit tears down static state.
// oneTBB creates its scheduler's state at first use and destroys it at exit
// in reverse order of creation: a kernel inside tbb::parallel_for then calls
// into destroyed objects ("pure virtual method called"). So oneTBB is started
// here, before the exit handler is registered: exit runs the handler, which
// waits for the queue, before it destroys oneTBB's state. oneDNN's kernels
// likewise.
NativeDevice::NativeDevice(Hardware hardware) : hardware_(std::move(hardware)) {
  tbb::parallel_for(0, 2, [](int) {});
#if XYLEM_HAVE_ONEDNN
  start_onednn();  // the same for oneDNN's kernels (gemm_onednn.hpp)
#endif
  std::lock_guard lock(devices_mutex());
  if (devices().empty()) std::atexit(drain_at_exit);
  devices().push_back(this);
}

void* NativeDevice::allocate(std::size_t bytes) {
  try {
    return memory_.allocate(bytes);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::out_of_memory) throw;
  }
  // Native's cache is the frees queued behind pending work (release()):
  // run them, then retry once; a second failure reaches the caller.
  queue_.drain();
  plugin::note_allocation_retry("native");
  return memory_.allocate(bytes);
}

void NativeDevice::release(void* data, plugin::Deps after) noexcept {
  // Every use done already (a small op runs on the caller's thread): free
  // now. A free task made the queue busy, so the next small op went to
  // the worker too, and the two threads then met in malloc's lock: a
  // small op returning a new tensor took ~3 us against 0.5 us into an
  // existing one.
  const bool idle = std::all_of(after.begin(), after.end(), [](const EventPtr& e) {
    try {
      return !e || e->ready();
    } catch (...) {
      return false;  // left to the queued task, which frees after failed deps too
    }
  });
  if (idle) {
    memory_.free(data);
    return;
  }
  try {
    (void)queue_.enqueue([this, data] { memory_.free(data); }, after, NativeQueue::OnFailedDep::run);
  } catch (...) {
    // Could not queue the free (out of memory for the task itself): wait
    // for everything, then free now.
    queue_.drain();
    memory_.free(data);
  }
}

EventPtr NativeDevice::copy_bytes(void* dst, const void* src, std::size_t bytes, plugin::Deps deps) {
  // A host memcpy cannot fail; an injected fault stands for a broken device.
  if (plugin::should_fail(plugin::FaultSite::transfer, "native"))
    throw Error(ErrorCode::device_lost, "native: copying " + std::to_string(bytes) + " bytes failed (injected fault)");
  return queue_.enqueue(
      [dst, src, bytes] {
        // Large copies in parallel chunks: one core cannot saturate memory.
        constexpr std::size_t kChunk = std::size_t(1) << 20;
        if (bytes <= kChunk) {
          std::memcpy(dst, src, bytes);
          return;
        }
        tbb::parallel_for(std::size_t(0), (bytes + kChunk - 1) / kChunk, [&](std::size_t c) {
          const std::size_t begin = c * kChunk;
          std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                      std::min(kChunk, bytes - begin));
        });
      },
      deps);
}

EventPtr NativeDevice::upload(void* dst, const void* host_src, std::size_t bytes, plugin::Deps deps) {
  return copy_bytes(dst, host_src, bytes, deps);
}

EventPtr NativeDevice::download(void* host_dst, const void* src, std::size_t bytes, plugin::Deps deps) {
  return copy_bytes(host_dst, src, bytes, deps);
}

EventPtr NativeDevice::copy_from(plugin::Device& src_device, const void* src, void* dst, std::size_t bytes,
                                 plugin::Deps deps) {
  if (&src_device != this) return nullptr;
  return copy_bytes(dst, src, bytes, deps);
}

bool NativeDevice::supports(plugin::OpId op, DType dtype) const noexcept {
  return kernels().get(op, dtype) != nullptr;
}

EventPtr NativeDevice::launch(const plugin::OpCall& call, plugin::Deps deps) {
  return queue_.enqueue(kernel_of(call), call, deps, runs_here(call));
}

EventPtr NativeDevice::host_task(std::function<void()> fn, plugin::Deps deps) {
  return queue_.enqueue(std::move(fn), deps);
}

std::unique_ptr<plugin::Recording> NativeDevice::record() { return std::make_unique<NativeRecording>(queue_); }

}  // namespace xylem::native
