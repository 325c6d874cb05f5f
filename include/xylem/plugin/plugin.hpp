#pragma once
// What a framework implements, and the one versioned C entry point a plugin
// exports. The core owns policy (coherence, argument checks, fallback); a
// framework supplies only the mechanism: memory, copies, kernels, events.
//
// Lifetime: a Framework is created once per process and never destroyed
// before exit (plugins are never unloaded); it owns its Devices.
// Threads: every Device method may be called from several host threads.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "xylem/dtype.hpp"
#include "xylem/error.hpp"
#include "xylem/future.hpp"
#include "xylem/hardware.hpp"
#include "xylem/layout.hpp"
#include "xylem/plugin/abi_digest.hpp"
#include "xylem/plugin/args.hpp"
#include "xylem/plugin/ops.hpp"

namespace xylem {
class Backend;
}  // namespace xylem

namespace xylem::plugin {

namespace dist {
class DeviceCollectives;
}

// The layout of XylemPluginInfo below; the loader reads nothing else of a
// plugin whose api_version differs.
inline constexpr std::uint32_t kApiVersion = 3;

// A digest of the text of every header this boundary uses (this folder,
// op.hpp, dtype, layout, hardware, future, error, testing), computed when the
// build is configured (cmake/abi_digest.cmake). Core and plugin must carry
// the same one: any change to those headers refuses plugins built before it.
inline constexpr const char* kAbiDigest = XYLEM_ABI_DIGEST;

using Deps = std::span<const EventPtr>;

struct MemoryStats {
  std::uint64_t allocated = 0;      // bytes handed to tensors now
  std::uint64_t reserved = 0;       // bytes held from the driver (allocated + cached)
  std::uint64_t peak = 0;           // most bytes allocated at once
  std::uint64_t device_allocations = 0;  // calls into the driver's allocator
};

// The per-device state of an op set: compiled programs, library handles,
// tuned parameters. Built at first use by a PackageCache, then kept.
class Package {
 public:
  virtual ~Package() = default;
};

// A sequence of calls recorded once and run again as one unit of work
// (xylem/capture.hpp). The framework resolves each call when it is added
// (its kernel, say), so a replay does no per-call dispatch; the core binds
// the calls' data pointers afresh for every replay.
class Recording {
 public:
  virtual ~Recording() = default;
  // Prepares one more call; throws Error{unsupported} for a call this
  // framework cannot replay.
  virtual void add(const OpCall& call) = 0;
  // Prepares a step that is not an op (a collective: DeviceTransport::recorded):
  // `enqueue` puts its work on the native queue it is given, after the
  // steps added before it. Its data pointers are those of the capture, so
  // replay passes a default OpCall in its place. The steps added after it
  // may run beside it until join_native names it (native steps among
  // themselves keep their order). Throws Error{unsupported} where the
  // framework cannot replay one (the default).
  virtual void add_native(std::function<void(void* native_queue)> enqueue) {
    (void)enqueue;
    throw Error(ErrorCode::unsupported, "this framework's graphs cannot hold a library's own launches (collectives)");
  }
  // Step `step` (counted among every step added, ops and native ones) and
  // those after it run after native step `native` (counted among the native
  // steps) is complete: it touches that step's data. A replay's event
  // covers every step.
  virtual void join_native(std::size_t native, std::size_t step) { (void)native, (void)step; }
  // Runs the added calls, in order, after deps; `calls` are those calls,
  // with their data pointers bound for this run.
  [[nodiscard]] virtual EventPtr replay(std::vector<OpCall> calls, Deps deps) = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  [[nodiscard]] virtual const Hardware& hardware() const noexcept = 0;

  // Memory. allocate throws Error{out_of_memory} (after freeing caches).
  // release frees once `after` and all work queued so far are complete.
  [[nodiscard]] virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* data, Deps after) noexcept = 0;

  // Transfers of whole allocations, asynchronous; the returned event marks
  // completion. Host memory passed here stays valid until then.
  [[nodiscard]] virtual EventPtr upload(void* dst, const void* host_src, std::size_t bytes, Deps deps) = 0;
  [[nodiscard]] virtual EventPtr download(void* host_dst, const void* src, std::size_t bytes, Deps deps) = 0;
  // Device-to-device from another device of this framework (or this one).
  // Returns nullptr when no direct route exists; the core then stages
  // through host memory.
  [[nodiscard]] virtual EventPtr copy_from(Device& src_device, const void* src, void* dst, std::size_t bytes,
                                           Deps deps) {
    (void)src_device, (void)src, (void)dst, (void)bytes, (void)deps;
    return nullptr;
  }

  // Operations.
  [[nodiscard]] virtual bool supports(OpId op, DType dtype) const noexcept = 0;
  // Why supports(op, dtype) is false where the reason is more than "no
  // kernel" (a vendor library that could not be loaded); empty otherwise.
  // The core adds it to the unsupported error.
  [[nodiscard]] virtual std::string unsupported_reason(OpId op, DType dtype) const {
    (void)op, (void)dtype;
    return {};
  }
  [[nodiscard]] virtual EventPtr launch(const OpCall& call, Deps deps) = 0;

  // Runs fn on a host thread in queue order, after deps. Used for host reads
  // and tests; frameworks without host callbacks may run it after waiting.
  [[nodiscard]] virtual EventPtr host_task(std::function<void()> fn, Deps deps) = 0;

  virtual void synchronize() = 0;

  // A new, empty recording of calls on this device; null where the
  // framework cannot replay recorded work (the core then says so, naming it).
  [[nodiscard]] virtual std::unique_ptr<Recording> record() { return nullptr; }

  // Interop with memory and queues made outside xylem (xylem/interop.hpp).
  // True where an allocation is an address (host or device pointer) that
  // may be offset by bytes; false where it is an opaque handle (cl_mem).
  [[nodiscard]] virtual bool addressable_memory() const noexcept { return false; }
  // The native handle of the queue ops run on (a cudaStream_t, a
  // cl_command_queue).
  [[nodiscard]] virtual void* native_queue() { throw unsupported_interop("native_queue"); }
  // Makes the external queue `consumer` wait, on the device, for deps.
  virtual void export_to_queue(void* consumer, Deps deps) {
    (void)consumer, (void)deps;
    throw unsupported_interop("export_to");
  }
  // An event of this device's queues that completes after deps and after
  // everything queued on the external queue `producer` so far.
  [[nodiscard]] virtual EventPtr import_from_queue(void* producer, Deps deps) {
    (void)producer, (void)deps;
    throw unsupported_interop("import_from");
  }
  [[nodiscard]] virtual MemoryStats memory_stats() const { return {}; }
  // Caps the bytes this device may hand out (BackendConfig::memory_limit);
  // returns false where the framework cannot enforce a limit.
  [[nodiscard]] virtual bool set_memory_limit(std::uint64_t bytes) {
    (void)bytes;
    return false;
  }

 private:
  [[nodiscard]] Error unsupported_interop(const char* what) const {
    return Error(ErrorCode::unsupported, "interop::" + std::string(what) + " on " + hardware().id() +
                                             ": this framework does not exchange queues with other libraries");
  }
};

class Framework {
 public:
  virtual ~Framework() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  // Hardware found; empty when none (then unavailable_reason says why).
  [[nodiscard]] virtual const std::vector<Hardware>& hardware() const noexcept = 0;
  [[nodiscard]] virtual std::string unavailable_reason() const { return {}; }
  // Opens hardware()[index] on first call; the framework keeps it.
  [[nodiscard]] virtual Device& device(std::size_t index) = 0;
  // Collectives between processes on this framework's devices (NCCL for
  // CUDA; plugin/dist.hpp), loaded on first call; null with `why` where the
  // framework or the machine has none.
  [[nodiscard]] virtual dist::DeviceCollectives* collectives(std::string& why) {
    why = name() + " has no device collectives";
    return nullptr;
  }
};

// Builds each op set's Package once per device, on first use, thread-safe.
template <std::size_t N>
class PackageCache {
 public:
  template <class P, class Build>
  P& get(std::size_t slot, Build&& build) {
    std::call_once(once_[slot], [&] { packages_[slot] = build(); });
    return static_cast<P&>(*packages_[slot]);
  }

 private:
  std::array<std::once_flag, N> once_;
  std::array<std::unique_ptr<Package>, N> packages_;
};

// The device a backend runs on (for frameworks' tests and benchmarks; users
// see only the Backend).
[[nodiscard]] Device& device_of(const Backend& backend) noexcept;

}  // namespace xylem::plugin

// The entry point: a plugin exports exactly this C function.
extern "C" {
struct XylemPluginInfo {
  std::uint32_t api_version;  // xylem::plugin::kApiVersion the plugin was built with
  const char* name;           // framework name: "opencl", "cuda"
  // Creates the framework; on failure returns null and sets *error to a
  // static or heap string that explains why (the framework is then unavailable).
  xylem::plugin::Framework* (*create)(const char** error);
  // xylem::plugin::kAbiDigest of the headers the plugin was compiled with,
  // filled in by itself: read only when api_version matches.
  const char* abi_digest = xylem::plugin::kAbiDigest;
};
#define XYLEM_PLUGIN_ENTRY_NAME "xylem_plugin_entry"
typedef const XylemPluginInfo* (*XylemPluginEntryFn)(void);
}

#if defined(_WIN32)
#define XYLEM_PLUGIN_EXPORT extern "C" __declspec(dllexport)
#else
#define XYLEM_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#endif
