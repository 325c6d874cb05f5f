// The MPI transport: libxylem_mpi.so, loaded at run time by xylem::dist so
// that libxylem never links MPI. Every call is non-blocking and polled
// against its deadline: a rank that never comes makes the others raise
// Error(timeout) instead of hanging in MPI.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "xylem/error.hpp"
#include "xylem/plugin/dist.hpp"

namespace xylem::mpi {
namespace {

using plugin::dist::Clock;
using plugin::dist::Combine;
using plugin::dist::Deadline;

constexpr int kCombines = 3;

// All-reduces of at most this many bytes exchange point to point
// (recursive doubling, Transport::exchange_all_reduce) instead of calling
// MPI_Iallreduce: libnbc builds and progresses a schedule for each call,
// which made a 1 KiB all_reduce cost 2.5x MPI_Allreduce's time (1.49 us
// against 0.60; the exchange 0.68). Above 16 KiB libnbc's ring caught up.
constexpr std::size_t kExchangeBytes = std::size_t(16) << 10;
// The exchange's messages go in pieces of at most this many bytes: Open
// MPI's shared memory sends up to 4 KiB (its header included) eagerly and
// larger messages after a rendezvous, which made a 4 KiB exchange cost 9x
// a 3 KiB one (11.7 us against 1.2; in 2 KiB pieces 1.45).
constexpr int kPieceBytes = 2048;

std::string mpi_message(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, std::size_t(length));
}

void check(int code, const char* what) {
  if (code != MPI_SUCCESS) throw Error(ErrorCode::communication, std::string("mpi: ") + what + ": " + mpi_message(code));
}

// Reductions MPI has built in; the others (f16, bf16, bool) go through
// xylem's one formula as user ops.
bool builtin(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f64 || dtype == DType::i32 || dtype == DType::i64 ||
         dtype == DType::u8;
}

MPI_Datatype datatype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::f16:
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::u8:
    case DType::boolean:
      return MPI_UINT8_T;
    case DType::c64:
    case DType::c128:
      break;  // refused before any transport (communicator.cpp)
  }
  return MPI_BYTE;
}

template <DType D, Combine C>
void user_op(void* in, void* inout, int* len, MPI_Datatype*) {
  plugin::dist::combine(inout, in, std::size_t(*len), D, C);
}

template <DType D>
MPI_Op make_user_op(Combine op) {
  MPI_Op result = MPI_OP_NULL;
  MPI_User_function* fn = op == Combine::sum   ? &user_op<D, Combine::sum>
                          : op == Combine::max ? &user_op<D, Combine::max>
                                               : &user_op<D, Combine::min>;
  check(MPI_Op_create(fn, 1, &result), "MPI_Op_create");
  return result;
}

MPI_Op mpi_op(DType dtype, Combine op) {
  if (builtin(dtype)) return op == Combine::sum ? MPI_SUM : op == Combine::max ? MPI_MAX : MPI_MIN;
  // Made once, by whoever holds the work queue (one MPI caller at a time).
  static MPI_Op f16[kCombines], bf16[kCombines], boolean[kCombines];
  MPI_Op* table = dtype == DType::f16 ? f16 : dtype == DType::bf16 ? bf16 : boolean;
  MPI_Op& slot = table[int(op)];
  if (slot == MPI_OP_NULL || slot == MPI_Op{}) {
    slot = dtype == DType::f16    ? make_user_op<DType::f16>(op)
           : dtype == DType::bf16 ? make_user_op<DType::bf16>(op)
                                  : make_user_op<DType::boolean>(op);
  }
  return slot;
}

int as_count(std::size_t n, const char* what) {
  if (n > std::size_t(INT_MAX))
    throw Error(ErrorCode::unsupported, std::string("mpi: ") + what + " of " + std::to_string(n) +
                                            " elements is more than one MPI call carries (" + std::to_string(INT_MAX) +
                                            "); split the tensor");
  return int(n);
}

class Transport final : public plugin::dist::Transport {
 public:
  Transport(MPI_Comm comm, bool finalize) : comm_(comm), finalize_(finalize) {
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    // The exchanges' own messages, apart from the program's send/recv tags.
    MPI_Comm_dup(comm_, &exchange_comm_);
    MPI_Comm_set_errhandler(exchange_comm_, MPI_ERRORS_RETURN);
  }
  ~Transport() override {
    // The program may have finalised MPI itself (it initialised it first).
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // A request abandoned at a timeout may never complete: freeing its
    // communicator could wait for it, so it is left to the process's end.
    if (abandoned_ == 0) {
      MPI_Comm_free(&exchange_comm_);
      MPI_Comm_free(&comm_);
    }
    if (finalize_) MPI_Finalize();
  }

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  std::string_view name() const noexcept override { return "mpi"; }

  void all_reduce(void* data, std::size_t count, DType dtype, Combine op, Deadline deadline) override {
    if (count * size_of(dtype) <= kExchangeBytes) return exchange_all_reduce(data, count, dtype, op, deadline);
    MPI_Request r;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, as_count(count, "all_reduce"), datatype(dtype), mpi_op(dtype, op), comm_, &r),
          "MPI_Iallreduce");
    wait(r, deadline, "all_reduce");
  }

  void broadcast(void* data, std::size_t bytes, int root, Deadline deadline) override {
    MPI_Request r;
    check(MPI_Ibcast(data, as_count(bytes, "broadcast"), MPI_BYTE, root, comm_, &r), "MPI_Ibcast");
    wait(r, deadline, "broadcast");
  }

  void reduce(void* data, std::size_t count, DType dtype, Combine op, int root, Deadline deadline) override {
    MPI_Request r;
    const int n = as_count(count, "reduce");
    // Non-roots' data stays as it was: MPI only reads their send buffer.
    check(MPI_Ireduce(rank_ == root ? MPI_IN_PLACE : data, rank_ == root ? data : nullptr, n, datatype(dtype),
                      mpi_op(dtype, op), root, comm_, &r),
          "MPI_Ireduce");
    wait(r, deadline, "reduce");
  }

  void all_gather(const void* in, void* out, std::size_t bytes, Deadline deadline) override {
    MPI_Request r;
    const int n = as_count(bytes, "all_gather");
    check(MPI_Iallgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_, &r), "MPI_Iallgather");
    wait(r, deadline, "all_gather");
  }

  void reduce_scatter(const void* in, void* out, std::size_t count, DType dtype, Combine op,
                      Deadline deadline) override {
    MPI_Request r;
    check(MPI_Ireduce_scatter_block(in, out, as_count(count, "reduce_scatter"), datatype(dtype), mpi_op(dtype, op),
                                    comm_, &r),
          "MPI_Ireduce_scatter_block");
    wait(r, deadline, "reduce_scatter");
  }

  void send(const void* data, std::size_t bytes, int peer, int tag, Deadline deadline) override {
    MPI_Request r;
    check(MPI_Isend(data, as_count(bytes, "send"), MPI_BYTE, peer, tag, comm_, &r), "MPI_Isend");
    wait(r, deadline, "send to", peer);
  }

  void recv(void* data, std::size_t bytes, int peer, int tag, Deadline deadline) override {
    MPI_Request r;
    check(MPI_Irecv(data, as_count(bytes, "recv"), MPI_BYTE, peer, tag, comm_, &r), "MPI_Irecv");
    wait(r, deadline, "recv from", peer);
  }

  void barrier(Deadline deadline) override {
    MPI_Request r;
    check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
    wait(r, deadline, "barrier");
  }

  std::unique_ptr<plugin::dist::Transport> split(int color, int key, Deadline deadline) override {
    // MPI_Comm_split blocks: first make sure every rank is here (a
    // non-blocking exchange under the deadline), then it cannot hang.
    barrier(deadline);
    MPI_Comm sub = MPI_COMM_NULL;
    check(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &sub), "MPI_Comm_split");
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<Transport>(sub, false);
  }

 private:
  // Polls `request` until done or the deadline. MPI cannot cancel a
  // collective: one left behind at the deadline is never tested again, and
  // the group refuses every later call (Link in src/dist/group.hpp), so
  // only a late peer's arrival while this process still calls MPI on
  // another group could complete it into the tensor's memory.
  //
  // Polling spins only briefly, then yields the core between tests: this
  // thread shares its rank's cores with the compute, and a rank bound to
  // one core that spun while its peer was still computing took half of
  // that core from its own backward pass (two ranks trained 1.18x as fast
  // as one). Where the core is otherwise idle, yield returns at once, so
  // polling is as quick as spinning (Open MPI's mpi_yield_when_idle).
  //
  // The clock is read every 64th test, not at each: a small exchange is
  // done within a few tests, and a read costs a fair part of one.
  // `what` names the call; `peer`, when not negative, the rank it waits on.
  void wait(MPI_Request& request, Deadline deadline, const char* what, int peer = -1) {
    wait(&request, 1, deadline, what, peer);
  }
  void wait(MPI_Request* requests, int n, Deadline deadline, const char* what, int peer = -1) {
    constexpr unsigned kSpins = 256;  // about 20 us of MPI_Test before yielding
    int done = 0;
    for (unsigned spins = 1;; ++spins) {
      check(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE), what);
      if (done) return;
      if ((spins & 63) == 0 && Clock::now() >= deadline) break;
      if (spins >= kSpins) std::this_thread::yield();
    }
    ++abandoned_;
    const std::string call = peer < 0 ? std::string(what) : std::string(what) + " rank " + std::to_string(peer);
    throw Error(ErrorCode::timeout, "mpi: " + call + " on rank " + std::to_string(rank_) + " of " +
                                        std::to_string(size_) +
                                        ": not every rank joined before the timeout (XYLEM_DIST_TIMEOUT or "
                                        "dist::Options::timeout); did a rank fail, exit or skip this call?");
  }

  // Posts a send of `bytes` at `data` to `peer` (or a receive from it) on
  // the exchange communicator, in pieces of kPieceBytes, into `requests`.
  void post(bool sending, void* data, int bytes, int peer) {
    for (int at = 0; at < bytes; at += kPieceBytes) {
      MPI_Request& r = requests_[std::size_t(posted_++)];
      void* piece = static_cast<std::byte*>(data) + at;
      const int n = std::min(kPieceBytes, bytes - at);
      check(sending ? MPI_Isend(piece, n, MPI_BYTE, peer, 0, exchange_comm_, &r)
                    : MPI_Irecv(piece, n, MPI_BYTE, peer, 0, exchange_comm_, &r),
            sending ? "MPI_Isend" : "MPI_Irecv");
    }
  }

  // A small all_reduce as point-to-point exchanges (MPICH's recursive
  // doubling): ranks beyond the largest power of two first hand their data
  // to a partner and get the result back at the end. Both sides of each
  // exchange combine the same two operands, which every Combine treats
  // alike in either order, so every rank ends with the same bits.
  void exchange_all_reduce(void* data, std::size_t count, DType dtype, Combine op, Deadline deadline) {
    const int bytes = as_count(count * size_of(dtype), "all_reduce");
    int pof2 = 1;
    while (pof2 * 2 <= size_) pof2 *= 2;
    const int extra = size_ - pof2;  // ranks 0..2*extra-1 pair up first: the odd ones go on
    const bool paired = rank_ < 2 * extra;
    const int vrank = paired ? (rank_ % 2 == 0 ? -1 : rank_ / 2) : rank_ - extra;
    std::byte* theirs = theirs_;
    const auto complete = [&] {
      const int n = posted_;
      posted_ = 0;
      wait(requests_.data(), n, deadline, "all_reduce");
    };
    if (paired) {
      if (vrank < 0) {
        post(true, data, bytes, rank_ + 1);
      } else {
        post(false, theirs, bytes, rank_ - 1);
      }
      complete();
      if (vrank >= 0) plugin::dist::combine(data, theirs, count, dtype, op);
    }
    if (vrank >= 0)
      for (int mask = 1; mask < pof2; mask *= 2) {
        const int vpeer = vrank ^ mask;
        const int peer = vpeer < extra ? vpeer * 2 + 1 : vpeer + extra;
        post(false, theirs, bytes, peer);
        post(true, data, bytes, peer);
        complete();
        plugin::dist::combine(data, theirs, count, dtype, op);
      }
    if (paired) {
      post(vrank >= 0, data, bytes, vrank < 0 ? rank_ + 1 : rank_ - 1);
      complete();
    }
  }

  MPI_Comm comm_;
  MPI_Comm exchange_comm_ = MPI_COMM_NULL;
  // The exchange's room, made once: the peer's data of one step, and the
  // requests of one step (a receive and a send of each piece). On the heap
  // per call they were a tenth of a 1 KiB all_reduce.
  alignas(64) std::byte theirs_[kExchangeBytes];
  std::array<MPI_Request, 2 * kExchangeBytes / kPieceBytes> requests_{};
  int posted_ = 0;  // requests_ posted and not yet waited for
  bool finalize_;
  int rank_ = 0;
  int size_ = 1;
  int abandoned_ = 0;
};

// Open MPI opens its own components, which need libmpi's symbols global;
// this module was loaded with local symbols, so promote libmpi first.
void make_mpi_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) != 0 && info.dli_fname != nullptr)
    (void)dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

// Open MPI's libnbc runs every in-place MPI_Iallreduce (the call xylem
// makes) as a binomial reduce then broadcast, which moves each byte twice
// in sequence: about half of MPI_Allreduce's bandwidth from 256 KiB up.
// Its ring algorithm matches MPI_Allreduce there (docs/BENCHMARKS.md).
// Environment MCA settings are read at MPI_Init; a choice the user made
// (mpirun --mca or the variable) is kept.
void prefer_ring_iallreduce() {
#ifdef OMPI_MAJOR_VERSION
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "ring", 0);
#endif
}

plugin::dist::Transport* create_world(const char** error) {
  static std::string reason;
  int initialized = 0;
  MPI_Initialized(&initialized);
  bool finalize = false;
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    make_mpi_global();
    prefer_ring_iallreduce();
    int argc = 0;
    char** argv = nullptr;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
      *error = "MPI_Init_thread failed";
      return nullptr;
    }
    finalize = true;
  } else {
    MPI_Query_thread(&provided);
  }
  // xylem calls MPI from its work queue's thread, or from a caller that holds
  // the idle queue for a small call, one call at a time.
  if (provided < MPI_THREAD_SERIALIZED) {
    reason = "MPI was initialised with thread level " + std::to_string(provided) +
             "; xylem::dist needs MPI_THREAD_SERIALIZED (call MPI_Init_thread with it)";
    *error = reason.c_str();
    return nullptr;
  }
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  return new Transport(world, finalize);
}

}  // namespace
}  // namespace xylem::mpi

XYLEM_PLUGIN_EXPORT const XylemDistInfo* xylem_dist_entry(void) {
  static const XylemDistInfo info{xylem::plugin::kApiVersion, "mpi", &xylem::mpi::create_world};
  return &info;
}
