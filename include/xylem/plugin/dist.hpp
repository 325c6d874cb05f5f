#pragma once
// What a communication transport implements: the collectives of
// xylem::dist on raw memory of one device, each finished by a deadline.
// The core (src/dist/) owns the policy: argument and cross-rank checks,
// ordering against other work, `avg`, buckets; a transport only moves and
// combines bytes. Host transports (MPI, the TCP fallback) take host
// memory; a device transport (NCCL) would take that framework's memory.
//
// A transport module is a shared library libxylem_<name>.so exporting
// xylem_dist_entry(); it is not a framework, and the framework loader
// passes it over.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/dtype.hpp"
#include "xylem/error.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::plugin::dist {

using Clock = std::chrono::steady_clock;
// When a call must be done by. A transport that passes it raises
// Error(timeout) naming the call; one that loses a peer raises
// Error(communication).
using Deadline = Clock::time_point;

// How values combine. `avg` is not here: the core divides a sum.
enum class Combine { sum, max, min };

// One group of ranks. Every call is collective over the group unless it
// says otherwise, is made from one thread at a time, and takes `count`
// elements of `dtype` (or `bytes`) in the memory the transport serves.
class Transport {
 public:
  virtual ~Transport() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  // "mpi", "tcp": what `xylem::dist::Communicator::transport()` shows.
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;

  // In place: every rank ends with the combination of all ranks' data.
  virtual void all_reduce(void* data, std::size_t count, DType dtype, Combine op, Deadline deadline) = 0;
  // `root`'s bytes to every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root, Deadline deadline) = 0;
  // The combination lands in `root`'s `data`; other ranks' data is unchanged.
  virtual void reduce(void* data, std::size_t count, DType dtype, Combine op, int root, Deadline deadline) = 0;
  // `out` (size() * bytes) holds every rank's `in` in rank order.
  virtual void all_gather(const void* in, void* out, std::size_t bytes, Deadline deadline) = 0;
  // `in` holds size() blocks of `count` elements; block r of the
  // combination lands in rank r's `out`.
  virtual void reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Combine op,
                              Deadline deadline) = 0;
  // Point to point (only the two ranks take part); messages between two
  // ranks with one tag arrive in order.
  virtual void send(const void* data, std::size_t bytes, int peer, int tag, Deadline deadline) = 0;
  virtual void recv(void* data, std::size_t bytes, int peer, int tag, Deadline deadline) = 0;
  virtual void barrier(Deadline deadline) = 0;
  // The ranks that give the same `color` form a new group, ordered by
  // `key`, then by rank here. A negative color joins no group: null.
  [[nodiscard]] virtual std::unique_ptr<Transport> split(int color, int key, Deadline deadline) = 0;
};

// How a device transport combines: the device library averages itself
// (NCCL's ncclAvg), which the core cannot do on device memory.
enum class Reduction { sum, avg, max, min };

// A device collective in flight: `enqueued` orders it on the device like an
// op (the tensors' coherence records it as their write or read, so later
// ops wait for it on the device, not on the host); `done` completes when
// it has finished there, or fails with Error(timeout) once its deadline
// passes (the group is then aborted) or Error(communication) when a peer
// fails. The caller's future holds `done`.
struct DeviceWork {
  EventPtr enqueued;
  EventPtr done;
};

// A group of ranks over one device's memory (NCCL on CUDA). Each call is
// enqueued on the device's queue after `deps`, without waiting on the host
// for the device, collective over the group, in the same order on every
// rank. Thread-safe. `count` elements of `dtype`, or `bytes`.
class DeviceTransport {
 public:
  virtual ~DeviceTransport() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  // "nccl"
  // The same calls as Transport's, for every dtype, bool combined as
  // there (sum and max "or", min "and"); point to point has no tag
  // (messages between two ranks arrive in order).
  virtual DeviceWork all_reduce(void* data, std::size_t count, DType dtype, Reduction op, Deps deps,
                                Deadline deadline) = 0;
  virtual DeviceWork broadcast(void* data, std::size_t bytes, int root, Deps deps, Deadline deadline) = 0;
  virtual DeviceWork reduce(void* data, std::size_t count, DType dtype, Reduction op, int root, Deps deps,
                            Deadline deadline) = 0;
  virtual DeviceWork all_gather(const void* in, void* out, std::size_t bytes, Deps deps, Deadline deadline) = 0;
  virtual DeviceWork reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Reduction op,
                                    Deps deps, Deadline deadline) = 0;
  virtual DeviceWork send(const void* data, std::size_t bytes, int peer, Deps deps, Deadline deadline) = 0;
  virtual DeviceWork recv(void* data, std::size_t bytes, int peer, Deps deps, Deadline deadline) = 0;
  // Several calls as one: each of `calls` makes one call above on this
  // transport; a library that can launch them together does (NCCL's
  // group: one kernel for a bucket's tensors, not one each). The work
  // returned completes when every call has. The default makes them one
  // after another: a transport's calls complete in the order made.
  virtual DeviceWork grouped(std::span<const std::function<DeviceWork()>> calls);
  // `calls` (as for grouped) as a step of a captured graph (xylem/capture.hpp):
  // returns a function that puts them, as one launch, on the native queue
  // it is given (the stream a CUDA graph is being captured from, by
  // Recording::add_native), with the data pointers of the calls, and no
  // ordering of its own (the graph orders its steps). Called while the
  // calls also run at once (a capture runs its block): nothing of theirs
  // is made here. Throws Error{unsupported} where the library cannot be
  // captured (the default).
  [[nodiscard]] virtual std::function<void(void* native_queue)> recorded(
      std::span<const std::function<DeviceWork()>> calls);
};

// A framework's collective library (NCCL for CUDA), loaded at run time.
// A group starts from an id one rank makes and the host transport gives
// to the others.
class DeviceCollectives {
 public:
  virtual ~DeviceCollectives() = default;
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;  // "nccl"
  // "NCCL 2.21.5 (/usr/lib/x86_64-linux-gnu/libnccl.so.2)".
  [[nodiscard]] virtual std::string description() const = 0;
  // A new group's id (ncclGetUniqueId), made on one rank.
  [[nodiscard]] virtual std::vector<std::byte> new_group_id() = 0;
  // This process's rank `rank` of the `size` ranks sharing `id`, on
  // `device`. Collective: every rank joins, each by `deadline`
  // (Error(timeout) after it, the half-made group aborted).
  [[nodiscard]] virtual std::unique_ptr<DeviceTransport> join(std::span<const std::byte> id, Device& device,
                                                              int rank, int size, Deadline deadline) = 0;

  // Every rank of a new group, all in this process: rank i on devices[i]
  // (distinct devices; ncclCommInitAll). By `deadline`.
  [[nodiscard]] virtual std::vector<std::unique_ptr<DeviceTransport>> join_local(std::span<Device* const> devices,
                                                                                Deadline deadline);
  // One collective over the ranks of a local group: calls[i] makes rank
  // i's call on its transport (of join_local); their works, in order. A
  // library whose calls block until every rank of the group has called
  // (NCCL, with one thread driving several devices) launches them
  // together here; the default makes them one after another.
  [[nodiscard]] virtual std::vector<DeviceWork> together(std::span<const std::function<DeviceWork()>> calls);
};

// The one reduction formula every host transport uses: into[i] =
// op(into[i], from[i]) for `count` elements (f16 and bf16 combined in f32
// and rounded back; bool: sum and max are "or", min is "and").
void combine(void* into, const void* from, std::size_t count, DType dtype, Combine op);

inline std::vector<std::unique_ptr<DeviceTransport>> DeviceCollectives::join_local(std::span<Device* const>,
                                                                                   Deadline) {
  throw Error(ErrorCode::unsupported, std::string(name()) + " cannot make a group of several devices in one process");
}

inline DeviceWork DeviceTransport::grouped(std::span<const std::function<DeviceWork()>> calls) {
  DeviceWork last;
  for (const auto& call : calls) last = call();
  return last;
}

inline std::function<void(void*)> DeviceTransport::recorded(std::span<const std::function<DeviceWork()>>) {
  throw Error(ErrorCode::unsupported, std::string(name()) + " collectives cannot be part of a captured graph");
}

inline std::vector<DeviceWork> DeviceCollectives::together(std::span<const std::function<DeviceWork()>> calls) {
  std::vector<DeviceWork> works;
  for (const auto& call : calls) works.push_back(call());
  return works;
}

}  // namespace xylem::plugin::dist

extern "C" {
// What a transport module's entry point returns. `create_world` starts the
// transport over every rank of the job, or returns null with `*error`
// saying why (not launched by its launcher, a library missing...).
struct XylemDistInfo {
  std::uint32_t api_version;  // xylem::plugin::kApiVersion, checked first
  const char* name;           // the transport: "mpi"
  xylem::plugin::dist::Transport* (*create_world)(const char** error);
  const char* abi_digest = xylem::plugin::kAbiDigest;  // read only when api_version matches
};
typedef const XylemDistInfo* (*XylemDistEntryFn)(void);
}

#define XYLEM_DIST_ENTRY_NAME "xylem_dist_entry"
