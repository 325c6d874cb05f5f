// libxylem_mirror.so: a small but real framework for the tests. Its "device"
// memory is host heap kept apart from native's, with its own in-order queue
// thread, so coherence, events and transfers between two devices can be
// tested on any machine. Its kernels are deliberately naive (one element at
// a time, any strides) and share nothing with the native framework; it runs
// a subset of the ops so that `unsupported` can be tested too.
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mirror_collectives.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/math.h"
#include "xylem/plugin/plugin.hpp"

namespace {

using xylem::DType;
using xylem::Error;
using xylem::ErrorCode;
using xylem::EventPtr;
using xylem::plugin::Deps;
using xylem::plugin::OpCall;
using xylem::plugin::OpId;
using xylem::plugin::TensorArg;

constexpr std::uint64_t kMemoryLimit = std::uint64_t{1} << 30;

// Completion of one task on the mirror queue.
class MirrorEvent final : public xylem::Event {
 public:
  explicit MirrorEvent(const void* queue) : queue_(queue) {}
  bool ready() const override {
    std::lock_guard lock(mutex_);
    return done_;
  }
  void wait() const override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  const void* queue() const noexcept override { return queue_; }
  void complete(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }

 private:
  const void* queue_;
  mutable std::mutex mutex_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// One worker thread running tasks in order; a task first waits for its
// dependencies from other queues.
class Queue {
 public:
  Queue() : worker_([this] { run(); }) {}
  ~Queue() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  EventPtr enqueue(std::function<void()> fn, Deps deps) {
    auto done = std::make_shared<MirrorEvent>(this);
    Task task{std::move(fn), {deps.begin(), deps.end()}, done};
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
    return done;
  }

 private:
  struct Task {
    std::function<void()> fn;
    std::vector<EventPtr> deps;
    std::shared_ptr<MirrorEvent> done;
  };

  void run() {
    for (;;) {
      Task task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      std::exception_ptr error;
      try {
        for (const auto& dep : task.deps) {
          if (dep && dep->queue() != this) dep->wait();
        }
        if (task.fn) task.fn();
      } catch (...) {
        error = std::current_exception();
      }
      task.done->complete(std::move(error));
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::thread worker_;  // last: starts after the members above exist
};

// ---- kernels: element k of a view, in row-major logical order -------------
std::int64_t element_offset(const xylem::Layout& s, std::int64_t k) {
  auto dims = s.dims();
  auto strides = s.strides();
  std::int64_t off = s.offset();
  for (int a = s.rank() - 1; a >= 0; --a) {
    off += (k % dims[a]) * strides[a];
    k /= dims[a];
  }
  return off;
}

template <class T>
T& at(const TensorArg& t, std::int64_t k) {
  return static_cast<T*>(t.data)[element_offset(t.view, k)];
}

// math.h's formulas, by element type.
float unary(int code, float x, float p0, float p1) { return xy_unary_f(code, x, p0, p1); }
double unary(int code, double x, double p0, double p1) { return xy_unary_d(code, x, p0, p1); }
float binary(int code, float a, float b, float p0, float p1) { return xy_binary_f(code, a, b, p0, p1); }
double binary(int code, double a, double b, double p0, double p1) { return xy_binary_d(code, a, b, p0, p1); }

template <class T, class F>
void map1(const OpCall& c, F f) {  // t1[k] = f(t0[k])
  const auto n = c.t[1].view.numel();
  for (std::int64_t k = 0; k < n; ++k) at<T>(c.t[1], k) = f(at<T>(c.t[0], k));
}

template <class T, class F>
void map2(const OpCall& c, F f) {  // t2[k] = f(t0[k], t1[k])
  const auto n = c.t[2].view.numel();
  for (std::int64_t k = 0; k < n; ++k) at<T>(c.t[2], k) = f(at<T>(c.t[0], k), at<T>(c.t[1], k));
}

template <class T>
void run_typed(const OpCall& c) {
  namespace args = xylem::plugin::args;
  using xylem::plugin::unpack;
  switch (c.op) {
    case OpId::creation_fill: {
      const auto a = unpack<args::creation_fill>(c);
      for (std::int64_t k = 0; k < a.y.view.numel(); ++k) at<T>(a.y, k) = static_cast<T>(a.value);
      return;
    }
    case OpId::creation_arange: {
      const auto a = unpack<args::creation_arange>(c);
      for (std::int64_t k = 0; k < a.y.view.numel(); ++k) at<T>(a.y, k) = static_cast<T>(a.start + double(k) * a.step);
      return;
    }
    case OpId::blas_copy:
      return map1<T>(c, [](T x) { return x; });
    case OpId::blas_scal: {
      const auto a = unpack<args::blas_scal>(c);
      for (std::int64_t k = 0; k < a.x.view.numel(); ++k) at<T>(a.x, k) *= static_cast<T>(a.alpha);
      return;
    }
    case OpId::blas_axpy: {
      const auto a = unpack<args::blas_axpy>(c);
      for (std::int64_t k = 0; k < a.x.view.numel(); ++k) at<T>(a.y, k) += static_cast<T>(a.alpha) * at<T>(a.x, k);
      return;
    }
    case OpId::math_unary: {
      const auto a = unpack<args::math_unary>(c);
      return map1<T>(c, [&a](T x) { return unary(int(a.code), x, T(a.param0), T(a.param1)); });
    }
    case OpId::math_binary: {
      const auto a = unpack<args::math_binary>(c);
      return map2<T>(c, [&a](T x, T y) { return binary(int(a.code), x, y, T(a.param0), T(a.param1)); });
    }
    default:
      throw Error(ErrorCode::unsupported, std::string("mirror: no kernel for ") +
                                              std::string(xylem::plugin::op_name(c.op)));
  }
}

// Any dtype: elements are moved as bytes.
void copy_view(const OpCall& c) {
  const auto size = xylem::size_of(c.t[0].dtype);
  const auto n = c.t[1].view.numel();
  const auto* src = static_cast<const unsigned char*>(c.t[0].data);
  auto* dst = static_cast<unsigned char*>(c.t[1].data);
  for (std::int64_t k = 0; k < n; ++k) {
    std::memcpy(dst + element_offset(c.t[1].view, k) * size, src + element_offset(c.t[0].view, k) * size, size);
  }
}

bool runs(OpId op) {
  switch (op) {
    case OpId::creation_fill:
    case OpId::creation_arange:
    case OpId::blas_copy:
    case OpId::blas_scal:
    case OpId::blas_axpy:
    case OpId::math_unary:
    case OpId::math_binary:
      return true;
    default:
      return false;
  }
}

class MirrorDevice final : public xylem::plugin::Device {
 public:
  explicit MirrorDevice(const xylem::Hardware& hw) : hardware_(hw) {}

  const xylem::Hardware& hardware() const noexcept override { return hardware_; }

  void* allocate(std::size_t bytes) override {
    std::lock_guard lock(stats_mutex_);
    if (bytes > kMemoryLimit - stats_.allocated) {
      throw Error(ErrorCode::out_of_memory, "mirror:0: cannot allocate " + std::to_string(bytes) + " bytes (" +
                                                std::to_string(kMemoryLimit - stats_.allocated) + " free)");
    }
    void* p = std::malloc(bytes == 0 ? 1 : bytes);
    if (!p) throw Error(ErrorCode::out_of_memory, "mirror:0: malloc of " + std::to_string(bytes) + " bytes failed");
    stats_.allocated += bytes;
    stats_.reserved = stats_.allocated;
    stats_.peak = std::max(stats_.peak, stats_.allocated);
    ++stats_.device_allocations;
    sizes_.emplace_back(p, bytes);
    return p;
  }

  void release(void* data, Deps after) noexcept override {
    try {
      (void)queue_.enqueue([this, data] { free_now(data); }, after);
    } catch (...) {  // could not enqueue: wait here instead
      for (const auto& e : after) {
        try {
          if (e) e->wait();
        } catch (...) {
        }
      }
      synchronize_noexcept();
      free_now(data);
    }
  }

  EventPtr upload(void* dst, const void* host_src, std::size_t bytes, Deps deps) override {
    return queue_.enqueue([=] { std::memcpy(dst, host_src, bytes); }, deps);
  }
  EventPtr download(void* host_dst, const void* src, std::size_t bytes, Deps deps) override {
    return queue_.enqueue([=] { std::memcpy(host_dst, src, bytes); }, deps);
  }
  EventPtr copy_from(xylem::plugin::Device& src_device, const void* src, void* dst, std::size_t bytes,
                     Deps deps) override {
    if (&src_device != this) return nullptr;  // other frameworks: staged through the host by the core
    return queue_.enqueue([=] { std::memmove(dst, src, bytes); }, deps);
  }

  bool supports(OpId op, DType dtype) const noexcept override {
    if (op == OpId::core_copy_view) return true;
    return runs(op) && (dtype == DType::f32 || dtype == DType::f64);
  }

  EventPtr launch(const OpCall& call, Deps deps) override {
    require_supported(call);
    return queue_.enqueue([call] { run(call); }, deps);
  }

  // Without MIRROR_RECORDS=1 in the environment, the framework that cannot
  // replay (what tests/unit/capture_test.cpp refuses); with it, a recording
  // that replays its ops and collectives in order on the queue, so the
  // core's side of captured collectives runs on any machine
  // (tests/dist/dist_test.cpp).
  std::unique_ptr<xylem::plugin::Recording> record() override;

  void require_supported(const OpCall& call) const {
    const DType dtype = call.t[0].dtype;
    if (!supports(call.op, dtype)) {
      throw Error(ErrorCode::unsupported, "mirror:0 does not run " + std::string(xylem::plugin::op_name(call.op)) +
                                              " in " + std::string(xylem::name(dtype)));
    }
  }
  static void run(const OpCall& call) {
    if (call.op == OpId::core_copy_view) return copy_view(call);
    if (call.t[0].dtype == DType::f32) return run_typed<float>(call);
    return run_typed<double>(call);
  }

  EventPtr host_task(std::function<void()> fn, Deps deps) override { return queue_.enqueue(std::move(fn), deps); }

  void synchronize() override { queue_.enqueue({}, {})->wait(); }

  xylem::plugin::MemoryStats memory_stats() const override {
    std::lock_guard lock(stats_mutex_);
    return stats_;
  }

 private:
  void synchronize_noexcept() noexcept {
    try {
      synchronize();
    } catch (...) {
    }
  }
  void free_now(void* data) noexcept {
    {
      std::lock_guard lock(stats_mutex_);
      for (auto it = sizes_.begin(); it != sizes_.end(); ++it) {
        if (it->first == data) {
          stats_.allocated -= it->second;
          stats_.reserved = stats_.allocated;
          sizes_.erase(it);
          break;
        }
      }
    }
    std::free(data);
  }

  xylem::Hardware hardware_;
  mutable std::mutex stats_mutex_;
  xylem::plugin::MemoryStats stats_;
  std::vector<std::pair<void*, std::size_t>> sizes_;
  Queue queue_;  // last: its thread stops (draining) before the rest goes
};

// Each replay is one task on the queue: the ops' kernels and the
// collectives' own functions (given the queue, which they do not need:
// they run where the task runs) in order.
class MirrorRecording final : public xylem::plugin::Recording {
 public:
  explicit MirrorRecording(MirrorDevice& device, Queue& queue) : device_(device), queue_(queue) {}
  void add(const OpCall& call) override {
    device_.require_supported(call);
    steps_->emplace_back();
  }
  void add_native(std::function<void(void*)> enqueue) override { steps_->push_back(std::move(enqueue)); }
  EventPtr replay(std::vector<OpCall> calls, Deps deps) override {
    return queue_.enqueue(
        [steps = steps_, calls = std::move(calls), queue = &queue_] {
          for (std::size_t i = 0; i < calls.size(); ++i) {
            if ((*steps)[i]) {
              (*steps)[i](queue);
            } else {
              MirrorDevice::run(calls[i]);
            }
          }
        },
        deps);
  }

 private:
  MirrorDevice& device_;
  Queue& queue_;
  // Empty for an op; shared with replays in flight.
  std::shared_ptr<std::vector<std::function<void(void*)>>> steps_ =
      std::make_shared<std::vector<std::function<void(void*)>>>();
};

std::unique_ptr<xylem::plugin::Recording> MirrorDevice::record() {
  const char* on = std::getenv("MIRROR_RECORDS");
  if (on == nullptr || std::string(on) != "1") return nullptr;
  return std::make_unique<MirrorRecording>(*this, queue_);
}

class MirrorFramework final : public xylem::plugin::Framework {
 public:
  MirrorFramework() {
    // Aggregate initialisation (rather than assigning fields one by one)
    // also avoids a GCC 12 -Wrestrict false positive on string assignment.
    hardware_.push_back(xylem::Hardware{
        .framework = "mirror",
        .index = 0,
        .name = "mirror host heap",
        .vendor = "xylem tests",
        .driver = "1",
        .kind = xylem::HardwareKind::other,
        .compute_units = 1,
        .memory_bytes = kMemoryLimit,
        .caps = {.fp64 = true},
        .details = "test framework: host memory apart from native, one queue thread",
    });
  }
  std::string name() const override { return "mirror"; }
  const std::vector<xylem::Hardware>& hardware() const noexcept override { return hardware_; }
  xylem::plugin::Device& device(std::size_t index) override {
    if (index >= hardware_.size()) {
      throw Error(ErrorCode::invalid_argument,
                  "mirror:" + std::to_string(index) + ": no such device (mirror has 1)");
    }
    std::call_once(once_, [&] { device_ = std::make_unique<MirrorDevice>(hardware_[0]); });
    return *device_;
  }
  xylem::plugin::dist::DeviceCollectives* collectives(std::string&) override { return &mirror::collectives(); }

 private:
  std::vector<xylem::Hardware> hardware_;
  std::once_flag once_;
  std::unique_ptr<MirrorDevice> device_;
};

xylem::plugin::Framework* create(const char** error) {
  try {
    return new MirrorFramework();
  } catch (const std::exception& e) {
    static std::string message;
    message = e.what();
    *error = message.c_str();
    return nullptr;
  }
}

}  // namespace

XYLEM_PLUGIN_EXPORT const XylemPluginInfo* xylem_plugin_entry() {
  static const XylemPluginInfo info{xylem::plugin::kApiVersion, "mirror", &create};
  return &info;
}
