// xylem::dist on whatever group this process belongs to: under
// `mpirun -np N` the MPI world, with XYLEM_WORLD_SIZE the TCP rendezvous,
// else a group of one. Every rank builds every rank's data from a shared
// seed, so each checks the collectives against its own float64 reference.
// Rendezvous.* launches the group itself: N copies of this program joined
// through the environment, as torchrun would start them.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <future>
#include <iostream>
#include <optional>
#include <random>
#include <cstdlib>
#include <thread>

#include "common/support.hpp"
#include "dist/reference.hpp"
#include "unit/child_process.hpp"
#include "xylem/blas.hpp"
#include "xylem/capture.hpp"
#include "xylem/dist.hpp"
#include "xylem/math.hpp"

namespace {

using namespace xylem;
using dist::Communicator;
using dist::ReduceOp;
namespace collectives = xylem_test::collectives;

using collectives::kDtypes;
using collectives::kSizes;
using collectives::nccl_missing;
using collectives::tensor_of;

Communicator& comm() {
  static Communicator c = Communicator::world();
  return c;
}

// One seed for the whole group: rank 0's, broadcast.
std::uint64_t group_seed() {
  static const std::uint64_t seed = [] {
    const auto mine = static_cast<std::int64_t>(xylem_test::fresh_seed() >> 1);
    auto t = Tensor::from(std::vector<std::int64_t>{mine});
    return static_cast<std::uint64_t>(comm().broadcast(t, 0).get().to_vector<std::int64_t>()[0]);
  }();
  return seed;
}

collectives::Reference ref() { return {group_seed()}; }

std::string label(const char* call, DType dtype, std::int64_t n) {
  return std::string(call) + " " + std::string(name(dtype)) + " n=" + std::to_string(n) + " on rank " +
         std::to_string(comm().rank()) + "/" + std::to_string(comm().size()) + " (" +
         std::string(comm().transport()) + ")";
}

TEST(Collectives, AllReduceEveryOpDtypeAndSize) {
  std::uint64_t salt = 0;
  for (DType dtype : kDtypes)
    for (std::int64_t n : kSizes)
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
        ++salt;
        if (op == ReduceOp::avg && dtype == DType::boolean) continue;
        Tensor t = tensor_of(ref().values_of(comm().rank(), n, dtype, salt), dtype);
        Tensor result = comm().all_reduce(t, op).get();
        EXPECT_TRUE(result.shares_data_with(t));
        ref().expect_near(ref().reference(n, dtype, op, salt, comm().size()), t.to_doubles(), dtype, label("all_reduce", dtype, n));
      }
}

TEST(Collectives, AvgOfBoolIsRefused) {
  Tensor t = tensor_of({1, 0}, DType::boolean);
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)comm().all_reduce(t, ReduceOp::avg));
}

TEST(Collectives, BroadcastReduceAllGatherReduceScatter) {
  const int size = comm().size(), rank = comm().rank();
  std::uint64_t salt = 1000;
  for (DType dtype : kDtypes)
    for (std::int64_t n : kSizes) {
      ++salt;
      const int root = size - 1;
      Tensor b = tensor_of(ref().values_of(rank, n, dtype, salt), dtype);
      (void)comm().broadcast(b, root).get();
      ref().expect_near(ref().values_of(root, n, dtype, salt), b.to_doubles(), dtype, label("broadcast", dtype, n));

      const ReduceOp op = dtype == DType::boolean ? ReduceOp::max : ReduceOp::sum;
      Tensor r = tensor_of(ref().values_of(rank, n, dtype, salt), dtype);
      (void)comm().reduce(r, 0, op).get();
      ref().expect_near(rank == 0 ? ref().reference(n, dtype, op, salt, size) : ref().values_of(rank, n, dtype, salt), r.to_doubles(),
                  dtype, label("reduce", dtype, n));

      Tensor g = comm().all_gather(tensor_of(ref().values_of(rank, n, dtype, salt), dtype)).get();
      ASSERT_EQ(g.shape()[0], size);
      ref().expect_near(ref().gathered(n, dtype, salt, size), g.to_doubles(), dtype, label("all_gather", dtype, n));

      // reduce_scatter: n elements per rank.
      const std::int64_t total = n * size;
      Tensor s = comm().reduce_scatter(tensor_of(ref().values_of(rank, total, dtype, salt), dtype, {total}), op).get();
      const auto whole = ref().reference(total, dtype, op, salt, size);
      ref().expect_near(std::vector<double>(whole.begin() + rank * n, whole.begin() + (rank + 1) * n), s.to_doubles(), dtype,
                  label("reduce_scatter", dtype, n));
    }
}

TEST(Collectives, BucketOfMixedDtypes) {
  const int size = comm().size();
  std::vector<Tensor> bucket;
  const DType dtypes[] = {DType::f32, DType::f64, DType::f32, DType::i32};
  for (std::uint64_t i = 0; i < 4; ++i) bucket.push_back(tensor_of(ref().values_of(comm().rank(), 5 + i, dtypes[i], 50 + i), dtypes[i]));
  auto result = comm().all_reduce(bucket, ReduceOp::sum).get();
  ASSERT_EQ(result.size(), 4u);
  for (std::uint64_t i = 0; i < 4; ++i)
    ref().expect_near(ref().reference(5 + i, dtypes[i], ReduceOp::sum, 50 + i, size), bucket[i].to_doubles(), dtypes[i],
                "bucket entry " + std::to_string(i));
}

TEST(Collectives, BucketBroadcastOfMixedDtypes) {
  const int size = comm().size();
  const DType dtypes[] = {DType::f32, DType::i64, DType::f64, DType::u8};
  for (int root = 0; root < size; ++root) {
    std::vector<Tensor> bucket;
    for (std::uint64_t i = 0; i < 4; ++i)
      bucket.push_back(tensor_of(ref().values_of(comm().rank(), 3 + 7 * std::int64_t(i), dtypes[i], 60 + i), dtypes[i]));
    const auto result = comm().broadcast(bucket, root).get();
    ASSERT_EQ(result.size(), 4u);
    for (std::uint64_t i = 0; i < 4; ++i) {
      EXPECT_TRUE(result[i].shares_data_with(bucket[i]));
      ref().expect_near(ref().values_of(root, 3 + 7 * std::int64_t(i), dtypes[i], 60 + i), bucket[i].to_doubles(), dtypes[i],
                        "broadcast bucket entry " + std::to_string(i) + " from root " + std::to_string(root));
    }
  }
  EXPECT_TRUE(comm().broadcast(std::vector<Tensor>{}, 0).get().empty());
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)comm().broadcast(std::vector<Tensor>{Tensor::from(std::vector<float>{1})}, size));
}

TEST(Collectives, ResultFeedsTheNextOp) {
  // The all_reduce is enqueued; the op after it waits for it, not the host.
  Tensor t = tensor_of(ref().values_of(comm().rank(), 9, DType::f32, 77), DType::f32);
  (void)comm().all_reduce(t);
  Tensor doubled = add(Backend::native(), t, t);
  auto want = ref().reference(9, DType::f32, ReduceOp::sum, 77, comm().size());
  for (auto& x : want) x *= 2;
  ref().expect_near(want, doubled.to_doubles(), DType::f32, "all_reduce then add");
}

// A small call on host data with nothing pending runs on the caller's
// thread (the queue idle), so its future is done when the call returns.
TEST(Collectives, SmallCallOnAnIdleQueueIsDoneOnReturn) {
  int done_on_return = 0;
  for (int i = 0; i < 8; ++i) {
    Tensor t = tensor_of({1.0, 2.0}, DType::f32);
    auto f = comm().all_reduce(t);
    done_on_return += f.ready() ? 1 : 0;
    EXPECT_EQ(f.get().to_doubles(), (std::vector<double>{double(comm().size()), 2.0 * comm().size()}));
  }
  // The first may meet the queue's thread still finishing earlier work;
  // after a call that ran here the queue is idle.
  EXPECT_GE(done_on_return, 7);
}

// A small call on part of a tensor (a row, its storage shared) takes the
// caller's path too: the row is reduced, the rest of the storage kept.
TEST(Collectives, SmallCallOnARowKeepsTheRest) {
  const int rank = comm().rank(), size = comm().size();
  const std::vector<double> mine = ref().values_of(rank, 12, DType::f32, 620);
  Tensor matrix = tensor_of(mine, DType::f32).reshape({3, 4});
  Tensor row = matrix.slice(0, 1, 2);
  (void)comm().all_reduce(row).get();
  const std::vector<double> want = ref().reference(12, DType::f32, ReduceOp::sum, 620, size);
  const std::vector<double> got = matrix.to_doubles();
  for (int i = 0; i < 12; ++i) {
    const bool reduced = i >= 4 && i < 8;
    EXPECT_NEAR(got[std::size_t(i)], reduced ? want[std::size_t(i)] : mine[std::size_t(i)],
                1e-4 * (1 + std::abs(want[std::size_t(i)])))
        << "element " << i << (reduced ? " of the reduced row" : " outside it");
  }
}

// ... but never ahead of work enqueued before it: a small call made while a
// large one is queued or running completes after it (every rank sees the
// calls in program order), and one on a tensor an op still writes runs
// after that op.
TEST(Collectives, SmallCallsKeepProgramOrder) {
  const int rank = comm().rank(), size = comm().size();
  const std::int64_t large_n = std::int64_t(1) << 20;  // 4 MiB of f32: always the queue's
  for (std::uint64_t salt = 600; salt < 603; ++salt) {
    Tensor large = tensor_of(ref().values_of(rank, large_n, DType::f32, salt), DType::f32);
    Tensor small = tensor_of(ref().values_of(rank, 7, DType::f64, salt), DType::f64);
    auto first = comm().all_reduce(large);
    auto second = comm().all_reduce(small, ReduceOp::max);
    (void)second.get();
    EXPECT_TRUE(first.ready()) << "a small all_reduce overtook the large one called before it";
    ref().expect_near(ref().reference(7, DType::f64, ReduceOp::max, salt, size), small.to_doubles(), DType::f64,
                      label("small all_reduce after a large one", DType::f64, 7));
    ref().expect_near(ref().reference(large_n, DType::f32, ReduceOp::sum, salt, size), first.get().to_doubles(),
                      DType::f32, label("large all_reduce", DType::f32, large_n));
  }
  const Tensor x = tensor_of(ref().values_of(rank, 9, DType::f32, 610), DType::f32);
  Tensor written = add(Backend::native(), x, x);  // maybe still pending
  (void)comm().all_reduce(written).get();
  auto want = ref().reference(9, DType::f32, ReduceOp::sum, 610, size);
  for (auto& v : want) v *= 2;
  ref().expect_near(want, written.to_doubles(), DType::f32, "all_reduce of an op's output");
}

TEST(Collectives, OpenClTensorsGoThroughTheirHostCopy) {
  std::optional<Backend> cl;
  try {
    cl = Backend::open("opencl");
  } catch (const Error& e) {
    GTEST_SKIP() << "no OpenCL: " << e.what();
  }
  const Tensor x = tensor_of(ref().values_of(comm().rank(), 17, DType::f32, 500), DType::f32);
  Tensor t = add(*cl, x, x);  // written on OpenCL: the host copy is stale
  (void)comm().all_reduce(t).get();
  EXPECT_TRUE(t.is_current_on(Backend::native()));
  EXPECT_FALSE(t.is_current_on(*cl));
  Tensor u = add(*cl, t, t);  // read on OpenCL again: uploaded from the host
  auto want = ref().reference(17, DType::f32, ReduceOp::sum, 500, comm().size());
  for (auto& v : want) v *= 4;
  ref().expect_near(want, u.to_doubles(), DType::f32, "all_reduce of an OpenCL tensor");
}

TEST(Collectives, SendRecv) {
  if (comm().size() < 2) GTEST_SKIP() << "needs two ranks";
  const int rank = comm().rank();
  for (DType dtype : {DType::f32, DType::bf16, DType::i64})
    for (std::int64_t n : kSizes) {
      Tensor t = tensor_of(ref().values_of(rank, n, dtype, 300), dtype);
      if (comm().transport() == "tcp") {
        if (rank < 2) XY_EXPECT_ERROR(ErrorCode::unsupported, (void)comm().send(t, 1 - rank).get());
        continue;
      }
      // 0 -> 1, then 1 -> 0 with another tag.
      if (rank == 0) {
        (void)comm().send(t, 1, 5).get();
        (void)comm().recv(t, 1, 6).get();
        ref().expect_near(ref().values_of(1, n, dtype, 300), t.to_doubles(), dtype, label("recv", dtype, n));
      } else if (rank == 1) {
        (void)comm().recv(t, 0, 5).get();
        ref().expect_near(ref().values_of(0, n, dtype, 300), t.to_doubles(), dtype, label("recv", dtype, n));
        Tensor mine = tensor_of(ref().values_of(1, n, dtype, 300), dtype);
        (void)comm().send(mine, 0, 6).get();
      }
    }
}

TEST(Collectives, SubGroups) {
  const int size = comm().size(), rank = comm().rank();
  // Evens and odds; the last rank of an odd-sized group joins none.
  const int color = (size % 2 == 1 && size > 1 && rank == size - 1) ? -1 : rank % 2;
  Communicator sub = comm().split(color, -rank);  // key reverses the order
  if (color < 0) {
    EXPECT_FALSE(sub.valid());
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)sub.rank());
  } else {
    std::vector<int> members;
    for (int r = size - 1; r >= 0; --r)
      if (r % 2 == color && !(size % 2 == 1 && size > 1 && r == size - 1)) members.push_back(r);
    ASSERT_EQ(sub.size(), int(members.size()));
    EXPECT_EQ(members[std::size_t(sub.rank())], rank);
    Tensor t = tensor_of(ref().values_of(rank, 33, DType::f64, 400), DType::f64);
    (void)sub.all_reduce(t).get();
    std::vector<double> want(33, 0.0);
    for (int m : members) {
      auto v = ref().values_of(m, 33, DType::f64, 400);
      for (std::size_t i = 0; i < want.size(); ++i) want[i] += v[i];
    }
    ref().expect_near(want, t.to_doubles(), DType::f64, "sub-group all_reduce");
  }
  comm().barrier()->wait();
}

TEST(Collectives, MismatchedShapesAndDtypesAreTypedErrors) {
  if (comm().size() < 2) GTEST_SKIP() << "needs two ranks";
  const int rank = comm().rank();
  Tensor shape = tensor_of(std::vector<double>(rank == 0 ? 3 : 4, 1.0), DType::f32);
  const std::string m = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)comm().all_reduce(shape).get());
  EXPECT_TRUE(xylem_test::contains(m, "[3]") && xylem_test::contains(m, "[4]")) << m;
  Tensor dtype = tensor_of({1, 2}, rank == 0 ? DType::f32 : DType::f64);
  const std::string d = XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)comm().all_reduce(dtype).get());
  EXPECT_TRUE(xylem_test::contains(d, "f32") && xylem_test::contains(d, "f64")) << d;
  // The group is still usable: the check ran before any data moved.
  Tensor ok = tensor_of({1.0}, DType::f32);
  EXPECT_EQ(comm().all_reduce(ok).get().to_doubles()[0], double(comm().size()));
}

// all_gather and reduce_scatter into outputs the caller made (any shape of
// the right size), reused call after call; bad outputs are typed errors
// that leave both tensors as they were.
TEST(Collectives, IntoGivenOutputs) {
  const int size = comm().size(), rank = comm().rank();
  for (DType dtype : {DType::f32, DType::i64, DType::bf16}) {
    constexpr std::int64_t n = 6;
    Tensor gathered(Layout{n * size}, dtype);   // flat, not [size, n]
    Tensor scattered(Layout{2, n / 2}, dtype);  // [2, 3], not [6]
    for (std::uint64_t salt = 1500; salt < 1503; ++salt) {
      const Tensor mine = tensor_of(ref().values_of(rank, n, dtype, salt), dtype);
      const Tensor got = comm().all_gather(mine, gathered).get();
      EXPECT_EQ(got.storage(), gathered.storage());
      ref().expect_near(ref().gathered(n, dtype, salt, size), gathered.to_doubles(), dtype,
                        label("all_gather into", dtype, n));

      const std::int64_t total = n * size;
      (void)comm().reduce_scatter(tensor_of(ref().values_of(rank, total, dtype, salt), dtype, {total}), scattered).get();
      const auto whole = ref().reference(total, dtype, ReduceOp::sum, salt, size);
      ref().expect_near(std::vector<double>(whole.begin() + rank * n, whole.begin() + (rank + 1) * n),
                        scattered.to_doubles(), dtype, label("reduce_scatter into", dtype, n));
    }
  }
  // Wrong outputs: nothing runs, nothing changes.
  const Tensor x = tensor_of(ref().values_of(rank, 4, DType::f32, 1600), DType::f32);
  Tensor out = tensor_of(std::vector<double>(std::size_t(4 * size), 7.0), DType::f32);
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  (void)comm().all_gather(x, tensor_of(std::vector<double>(std::size_t(4 * size), 7.0), DType::f64)));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)comm().all_gather(x, out.slice(0, 0, 4 * size - 1)));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)comm().all_gather(out.slice(0, 0, 4), out));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)comm().reduce_scatter(out, x.slice(0, 0, 3)));
  EXPECT_EQ(out.to_doubles(), std::vector<double>(std::size_t(4 * size), 7.0));
  ref().expect_near(ref().values_of(rank, 4, DType::f32, 1600), x.to_doubles(), DType::f32, "input kept");
}

TEST(Collectives, BadArgumentsThrowBeforeAnything) {
  Tensor t = tensor_of({1, 2, 3, 4, 5, 6}, DType::f32, {2, 3});
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)comm().broadcast(t, comm().size()));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)comm().all_reduce(t.transpose()));
  XY_EXPECT_ERROR(ErrorCode::uninitialized_read, (void)comm().all_reduce(Tensor(Layout{3}, DType::f32)));
  if (comm().size() > 1)
    XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)comm().reduce_scatter(tensor_of({1}, DType::f32)));
}

// ---- the device road, on the test framework "mirror" -------------------
// Its collectives serve a group of one (tests/plugins/mirror_collectives.*):
// alone, its tensors stay on it; in a larger group every rank falls back
// to the host transport, and the results are the same.

// The mirror test framework, or none with `why` (a build without it).
std::optional<Backend> open_mirror(std::string& why) {
  try {
    return Backend::open("mirror");
  } catch (const Error& e) {
    why = std::string("no mirror test plugin: ") + e.what();
    return std::nullopt;
  }
}

TEST(DeviceRoad, MirrorTensorsStayOnTheirDevice) {
  std::string why;
  const std::optional<Backend> mirror = open_mirror(why);
  if (!mirror) GTEST_SKIP() << why;
  const int size = comm().size(), rank = comm().rank();
  const auto twice = [](std::vector<double> v) {
    for (auto& x : v) x *= 2;
    return v;
  };
  const Tensor x = tensor_of(ref().values_of(rank, 12, DType::f32, 600), DType::f32);
  Tensor t = add(*mirror, x, x);  // written on mirror alone
  (void)comm().all_reduce(t);     // not waited for: the next op is ordered after it
  Tensor u = add(*mirror, t, t);
  EXPECT_EQ(t.is_current_on(Backend::native()), size > 1) << "alone, the collective runs on mirror";
  ref().expect_near(twice(twice(ref().reference(12, DType::f32, ReduceOp::sum, 600, size))), u.to_doubles(), DType::f32,
              "mirror all_reduce then add");

  Tensor g = comm().all_gather(add(*mirror, x, x)).get();
  EXPECT_EQ(g.is_current_on(*mirror), size == 1);
  std::vector<double> gathered;
  for (int q = 0; q < size; ++q) {
    auto v = twice(ref().values_of(q, 12, DType::f32, 600));
    gathered.insert(gathered.end(), v.begin(), v.end());
  }
  ref().expect_near(gathered, g.to_doubles(), DType::f32, "mirror all_gather");
}

// Collectives on a device transport are steps of a captured graph (the core's
// side of what NCCL does on GPUs: tests/dist CudaCollectives.CapturedCollectivesReplay):
// mirror records when MIRROR_RECORDS=1. In a larger group its tensors take
// the host road, which a capture refuses.
TEST(DeviceRoad, CapturedCollectivesOnMirror) {
  std::string why;
  const std::optional<Backend> mirror = open_mirror(why);
  if (!mirror) GTEST_SKIP() << why;
  ::setenv("MIRROR_RECORDS", "1", 1);
  struct Unset {
    ~Unset() { ::unsetenv("MIRROR_RECORDS"); }
  } unset;
  const int size = comm().size(), rank = comm().rank();
  constexpr std::int64_t n = 12;
  const auto on_mirror = [&](std::uint64_t salt) {
    return add(*mirror, tensor_of(ref().values_of(rank, n, DType::f32, salt), DType::f32),
               tensor_of(std::vector<double>(std::size_t(n), 0.0), DType::f32));
  };
  Tensor x = on_mirror(700);
  Tensor gathered(Layout{size * n}, DType::f32);
  Tensor after;
  const auto block = [&] {
    const Tensor doubled = add(*mirror, x, x);
    (void)comm().all_gather(doubled, gathered);
    after = add(*mirror, gathered, gathered);
  };
  if (size > 1) {
    const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(*mirror, block));
    EXPECT_NE(msg.find("host transport"), std::string::npos) << msg;
    return;
  }
  Graph g = capture(*mirror, block);
  ASSERT_EQ(g.size(), 3u);
  for (std::uint64_t salt = 701; salt < 704; ++salt) {
    blas::copy(*mirror, on_mirror(salt), x);
    (void)g.replay();
    auto want = ref().values_of(rank, n, DType::f32, salt);
    for (auto& v : want) v *= 4;
    ref().expect_near(want, after.to_doubles(), DType::f32, "captured mirror all_gather between two ops");
  }
  const auto msg = XY_EXPECT_ERROR(ErrorCode::invalid_argument, g.rebind(gathered, Tensor(Layout{size * n}, DType::f32)));
  EXPECT_NE(msg.find("collective"), std::string::npos) << msg;
  g.rebind(x, on_mirror(710));
}

// A group on a device transport cannot be mixed with one on the host: in
// the checked mode that is a mismatch, named, not a hang or garbage.
TEST(DeviceRoad, HostAndDeviceTensorsOfOneCallAreAMismatch) {
  if (comm().size() < 2) GTEST_SKIP() << "needs two ranks";
  std::string why;
  const std::optional<Backend> mirror = open_mirror(why);
  if (!mirror) GTEST_SKIP() << why;
  const Tensor x = tensor_of({1.0, 2.0}, DType::f32);
  Tensor t = comm().rank() == 0 ? add(*mirror, x, x) : add(Backend::native(), x, x);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)comm().all_reduce(t).get());
}

// ---- CUDA tensors: NCCL, enqueued on the GPU's stream -------------------

// This rank's GPU (rank modulo the GPUs), or why there is none.
std::optional<Backend> gpu(std::string& why) {
  for (const auto& f : Backend::frameworks())
    if (f.name == "cuda" && f.available && !f.hardware.empty())
      return Backend::open("cuda:" + std::to_string(comm().rank() % int(f.hardware.size())));
  why = "no CUDA GPU";
  return std::nullopt;
}

int gpu_count() {
  for (const auto& f : Backend::frameworks())
    if (f.name == "cuda" && f.available) return int(f.hardware.size());
  return 0;
}

// NCCL is required (an error fails the test) where it can run: every rank
// on a GPU of its own (NCCL refuses two ranks of one group on one GPU).
// Elsewhere CUDA tensors go through the host transport, and are checked
// the same way.
bool nccl_required() { return nccl_missing().empty() && comm().size() <= gpu_count(); }

Communicator& cuda_comm() {
  static Communicator c = Communicator::world({.device = nccl_required() ? "nccl" : ""});
  return c;
}

// `host`'s values written on `b` (its copy there alone is current).
Tensor on(const Backend& b, const Tensor& host) { return cast(b, host, host.dtype()); }

TEST(CudaCollectives, EveryCollectiveEveryDtype) {
  std::string why;
  const auto cuda = gpu(why);
  if (!cuda) GTEST_SKIP() << why;
  if (!nccl_required())
    std::cout << "CUDA tensors use the host transport here: "
              << (nccl_missing().empty() ? "more ranks than GPUs" : nccl_missing()) << "\n";
  Communicator& c = cuda_comm();
  const int size = c.size(), rank = c.rank();
  std::uint64_t salt = 2000;
  for (DType dtype : kDtypes)
    for (std::int64_t n : kSizes) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
        ++salt;
        if (op == ReduceOp::avg && dtype == DType::boolean) continue;
        Tensor t = on(*cuda, tensor_of(ref().values_of(rank, n, dtype, salt), dtype));
        (void)c.all_reduce(t, op).get();
        if (n > 0 && nccl_required()) {
          EXPECT_FALSE(t.is_current_on(Backend::native())) << "the result must stay on the GPU";
        }
        ref().expect_near(ref().reference(n, dtype, op, salt, size), t.to_doubles(), dtype, label("cuda all_reduce", dtype, n));
      }
      ++salt;
      const int root = size - 1;
      Tensor b = on(*cuda, tensor_of(ref().values_of(rank, n, dtype, salt), dtype));
      (void)c.broadcast(b, root).get();
      ref().expect_near(ref().values_of(root, n, dtype, salt), b.to_doubles(), dtype, label("cuda broadcast", dtype, n));
      const ReduceOp op = dtype == DType::boolean ? ReduceOp::min : ReduceOp::max;
      Tensor r = on(*cuda, tensor_of(ref().values_of(rank, n, dtype, salt), dtype));
      (void)c.reduce(r, 0, op).get();
      ref().expect_near(rank == 0 ? ref().reference(n, dtype, op, salt, size) : ref().values_of(rank, n, dtype, salt), r.to_doubles(),
                  dtype, label("cuda reduce", dtype, n));
      Tensor g = c.all_gather(on(*cuda, tensor_of(ref().values_of(rank, n, dtype, salt), dtype))).get();
      ref().expect_near(ref().gathered(n, dtype, salt, size), g.to_doubles(), dtype, label("cuda all_gather", dtype, n));
      const std::int64_t total = n * size;
      Tensor s = c.reduce_scatter(on(*cuda, tensor_of(ref().values_of(rank, total, dtype, salt), dtype)), op).get();
      const auto whole = ref().reference(total, dtype, op, salt, size);
      ref().expect_near(std::vector<double>(whole.begin() + rank * n, whole.begin() + (rank + 1) * n), s.to_doubles(), dtype,
                  label("cuda reduce_scatter", dtype, n));
    }
  EXPECT_NO_THROW(c.barrier()->wait());
}

TEST(CudaCollectives, ResultFeedsTheNextOpOnTheGpu) {
  std::string why;
  const auto cuda = gpu(why);
  if (!cuda) GTEST_SKIP() << why;
  Communicator& c = cuda_comm();
  Tensor t = on(*cuda, tensor_of(ref().values_of(c.rank(), 4099, DType::f32, 78), DType::f32));
  std::vector<Tensor> bucket{on(*cuda, tensor_of(ref().values_of(c.rank(), 5, DType::f64, 79), DType::f64)), t};
  (void)c.all_reduce(bucket);  // not waited for: the add below is ordered after it on the GPU
  Tensor doubled = add(*cuda, t, t);
  auto want = ref().reference(4099, DType::f32, ReduceOp::sum, 78, c.size());
  for (auto& x : want) x *= 2;
  ref().expect_near(want, doubled.to_doubles(), DType::f32, "cuda all_reduce then add");
  ref().expect_near(ref().reference(5, DType::f64, ReduceOp::sum, 79, c.size()), bucket[0].to_doubles(), DType::f64, "bucket");
}

// A bucket is one NCCL group launch: every tensor right, every dtype.
TEST(CudaCollectives, BucketsAreOneLaunch) {
  std::string why;
  const auto cuda = gpu(why);
  if (!cuda) GTEST_SKIP() << why;
  Communicator& c = cuda_comm();
  const int size = c.size(), rank = c.rank();
  std::vector<Tensor> reduced, broadcast;
  std::uint64_t salt = 3000;
  for (DType dtype : kDtypes) {
    const std::int64_t n = 17 + std::int64_t(salt % 5) * 1000;
    if (dtype != DType::boolean) reduced.push_back(on(*cuda, tensor_of(ref().values_of(rank, n, dtype, salt), dtype)));
    broadcast.push_back(on(*cuda, tensor_of(ref().values_of(rank, n, dtype, salt + 100), dtype)));
    ++salt;
  }
  (void)c.all_reduce(reduced, ReduceOp::sum);
  const auto sent = c.broadcast(broadcast, size - 1).get();
  ASSERT_EQ(sent.size(), broadcast.size());
  salt = 3000;
  std::size_t i = 0, j = 0;
  for (DType dtype : kDtypes) {
    const std::int64_t n = 17 + std::int64_t(salt % 5) * 1000;
    if (dtype != DType::boolean)
      ref().expect_near(ref().reference(n, dtype, ReduceOp::sum, salt, size), reduced[i++].to_doubles(), dtype,
                        label("cuda bucket all_reduce", dtype, n));
    ref().expect_near(ref().values_of(size - 1, n, dtype, salt + 100), broadcast[j++].to_doubles(), dtype,
                      label("cuda bucket broadcast", dtype, n));
    ++salt;
  }
}

// Collectives on the GPU inside a capture are steps of the graph: each
// replay reduces and broadcasts the data the tensors hold then, ordered
// with the ops around them, on every rank. The host road refuses instead.
TEST(CudaCollectives, CapturedCollectivesReplay) {
  std::string why;
  const auto cuda = gpu(why);
  if (!cuda) GTEST_SKIP() << why;
  Communicator& c = cuda_comm();
  const int size = c.size(), rank = c.rank(), root = size - 1;
  constexpr std::int64_t n = 4099, m = 7;
  const auto values = [&](int r, std::int64_t count, DType dtype, std::uint64_t salt) {
    return on(*cuda, tensor_of(ref().values_of(r, count, dtype, salt), dtype));
  };
  Tensor x = values(rank, n, DType::f32, 500);
  Tensor y = values(rank, m, DType::f64, 501);
  Tensor shared = values(rank, m, DType::f32, 502);
  Tensor doubled, after;
  const auto block = [&] {
    doubled = add(*cuda, x, x);
    (void)c.all_reduce(std::vector<Tensor>{doubled, y});
    (void)c.broadcast(std::vector<Tensor>{shared}, root);
    after = add(*cuda, doubled, doubled);
  };
  if (!nccl_required()) {
    const auto msg = XY_EXPECT_ERROR(ErrorCode::unsupported, (void)capture(*cuda, block));
    EXPECT_NE(msg.find("collective"), std::string::npos) << msg;
    return;
  }
  Graph g = capture(*cuda, block);
  for (std::uint64_t round = 0; round < 3; ++round) {
    const std::uint64_t salt = 510 + 10 * round;
    blas::copy(*cuda, values(rank, n, DType::f32, salt), x);
    blas::copy(*cuda, values(rank, m, DType::f64, salt + 1), y);
    blas::copy(*cuda, values(rank, m, DType::f32, salt + 2), shared);
    (void)g.replay();
    auto want = ref().reference(n, DType::f32, ReduceOp::sum, salt, size);
    for (auto& v : want) v *= 4;  // (2 x) summed, then doubled
    const std::string what = "replay " + std::to_string(round) + " on rank " + std::to_string(rank);
    ref().expect_near(want, after.to_doubles(), DType::f32, what + ": all_reduce between two ops");
    ref().expect_near(ref().reference(m, DType::f64, ReduceOp::sum, salt + 1, size), y.to_doubles(), DType::f64,
                      what + ": the bucket's second tensor");
    ref().expect_near(ref().values_of(root, m, DType::f32, salt + 2), shared.to_doubles(), DType::f32,
                      what + ": broadcast");
  }
  // A collective's tensor is fixed in the graph; an op's input is not.
  const auto msg = XY_EXPECT_ERROR(ErrorCode::invalid_argument, g.rebind(y, values(rank, m, DType::f64, 600)));
  EXPECT_NE(msg.find("collective"), std::string::npos) << msg;
  g.rebind(x, values(rank, n, DType::f32, 601));
}

TEST(CudaCollectives, SendRecv) {
  std::string why;
  const auto cuda = gpu(why);
  if (!cuda) GTEST_SKIP() << why;
  Communicator& c = cuda_comm();
  // NCCL pairs a send to oneself only inside a group call, which one
  // enqueued call is not.
  if (c.size() < 2) GTEST_SKIP() << "needs two ranks";
  // Where CUDA tensors take the host road (more ranks than GPUs) over the
  // rendezvous's tcp transport, send/recv is refused: that transport has none.
  if (!nccl_required() && c.transport() == "tcp") GTEST_SKIP() << "the tcp transport has no send/recv";
  const int next = (c.rank() + 1) % c.size(), prev = (c.rank() + c.size() - 1) % c.size();
  Tensor mine = on(*cuda, tensor_of(ref().values_of(c.rank(), 33, DType::f32, 90), DType::f32));
  Tensor got = on(*cuda, tensor_of(std::vector<double>(33, 0.0), DType::f32));
  if (c.rank() % 2 == 0) {
    (void)c.send(mine, next).get();
    (void)c.recv(got, prev).get();
  } else {
    (void)c.recv(got, prev).get();
    (void)c.send(mine, next).get();
  }
  ref().expect_near(ref().values_of(prev, 33, DType::f32, 90), got.to_doubles(), DType::f32, "cuda send/recv");
}

// Run by Rendezvous.CudaRankNeverJoinsNcclTimesOut: rank 0 starts NCCL;
// rank 1 answers the host side of the start (the agreement and the id,
// through the same host calls the library makes, unchecked) but never
// joins the NCCL group, as a rank that hangs before NCCL would. Rank 0 must
// get Error(timeout) by its deadline, not hang in ncclCommInitRankConfig.
TEST(CudaFailure, RankNeverJoinsNccl) {
  if (!xylem_test::is_child("nccl_missing_rank")) GTEST_SKIP() << "run by Rendezvous.CudaRankNeverJoinsNcclTimesOut";
  Communicator c = Communicator::world({.checked = false, .device = "nccl"});
  const auto limit = c.timeout();
  if (c.rank() == 1) {
    (void)c.all_reduce(Tensor::from(std::vector<std::int32_t>{1}), ReduceOp::min).get();
    (void)c.broadcast(Tensor::from(std::vector<std::int64_t>{0}), 0).get();
    (void)c.broadcast(tensor_of(std::vector<double>(128, 0.0), DType::u8), 0).get();
    std::this_thread::sleep_for(limit + std::chrono::seconds(2));
    return;
  }
  std::string why;
  const auto cuda = gpu(why);
  ASSERT_TRUE(cuda) << why;
  Tensor t = on(*cuda, tensor_of({1.0, 2.0}, DType::f32));
  const auto start = std::chrono::steady_clock::now();
  XY_EXPECT_ERROR(ErrorCode::timeout, (void)c.all_reduce(t).get());
  EXPECT_LT(std::chrono::steady_clock::now() - start, limit + std::chrono::seconds(5));
}

TEST(CudaFailure, SharedGpu) {
  if (!xylem_test::is_child("nccl_shared_gpu")) GTEST_SKIP() << "run by Rendezvous.CudaTwoProcessesOnOneGpu";
  Communicator c = Communicator::world({.device = "nccl"});
  const Backend cuda = Backend::open("cuda:0");
  Tensor t = on(cuda, tensor_of({1.0, 2.0}, DType::f32));
  try {
    (void)c.all_reduce(t).get();
    ref().expect_near({2.0, 4.0}, t.to_doubles(), DType::f32, "all_reduce of two ranks on one GPU");
    std::cout << "NCCL accepts two ranks on one GPU\n";
  } catch (const Error& e) {
    std::cout << "NCCL refuses two ranks on one GPU: " << e.what() << "\n";
    EXPECT_TRUE(e.code() == ErrorCode::communication || e.code() == ErrorCode::timeout ||
                e.code() == ErrorCode::plugin_unavailable)
        << e.what();
  }
}

// Run on its own (a failed group cannot be used again): the last rank
// skips a collective; the others must get Error(timeout) within the
// timeout (XYLEM_DIST_TIMEOUT, set short by the test's command), then
// Error(communication) on the next call.
TEST(Failure, SkippedCollectiveTimesOut) {
  if (comm().size() < 2) GTEST_SKIP() << "needs two ranks";
  const auto limit = comm().timeout();
  if (comm().rank() == comm().size() - 1) {
    // Alive but elsewhere: leaving at once would be a lost peer, which
    // the tcp transport reports sooner, as Error(communication).
    std::this_thread::sleep_for(limit + std::chrono::seconds(1));
    return;
  }
  Tensor t = tensor_of({1.0, 2.0}, DType::f32);
  const auto start = std::chrono::steady_clock::now();
  // Small and idle, so it runs on this thread: the call itself returns
  // (at the deadline), and its future carries the typed error.
  auto f = comm().all_reduce(t);
  EXPECT_TRUE(f.ready());
  XY_EXPECT_ERROR(ErrorCode::timeout, (void)f.get());
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, limit);
  EXPECT_LT(took, limit + std::chrono::seconds(5));
  // t's last writer failed, so t carries that error; a fresh tensor meets
  // the failed group.
  Tensor fresh = tensor_of({1.0}, DType::f32);
  XY_EXPECT_ERROR(ErrorCode::communication, (void)comm().all_reduce(fresh).get());
}

// Run by Rendezvous.DeadRankIsACommunicationError only: the last rank
// exits at once (as a crash would); the others learn it from the closed
// connection, long before the timeout.
TEST(Dying, LastRankExits) {
  if (!xylem_test::is_child("dying")) GTEST_SKIP() << "run by Rendezvous.DeadRankIsACommunicationError";
  if (comm().rank() == comm().size() - 1) ::_exit(0);
  Tensor t = tensor_of({1.0}, DType::f32);
  const auto start = std::chrono::steady_clock::now();
  XY_EXPECT_ERROR(ErrorCode::communication, (void)comm().all_reduce(t).get());
  EXPECT_LT(std::chrono::steady_clock::now() - start, comm().timeout() / 2);
}

// ---- the environment rendezvous, with the group launched here ----------

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Runs `filter` in `n` copies of this program joined as one group.
std::vector<xylem_test::ChildResult> launch_group(int n, const std::string& filter, const std::string& timeout,
                                                  const std::string& role = "") {
  const std::string port = std::to_string(free_port());
  std::vector<std::future<xylem_test::ChildResult>> children;
  for (int r = 0; r < n; ++r)
    children.push_back(std::async(std::launch::async, [=] {
      return xylem_test::run_this_test(filter, {{"XYLEM_RANK", std::to_string(r)},
                                                {"XYLEM_WORLD_SIZE", std::to_string(n)},
                                                {"XYLEM_MASTER_ADDR", "127.0.0.1"},
                                                {"XYLEM_MASTER_PORT", port},
                                                {"XYLEM_DIST_TIMEOUT", timeout},
                                                {"XYLEM_TEST_CHILD", role}});
    }));
  std::vector<xylem_test::ChildResult> results;
  for (auto& c : children) results.push_back(c.get());
  return results;
}

bool launched() { return std::getenv("XYLEM_WORLD_SIZE") != nullptr || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

TEST(Rendezvous, ThreeProcessesRunEveryCollective) {
  if (launched()) GTEST_SKIP() << "already in a group";
  for (const auto& child : launch_group(3, "Collectives.*", "30"))
    EXPECT_TRUE(child.passed()) << child.describe();
}

TEST(Rendezvous, MissingRankTimesOut) {
  if (launched()) GTEST_SKIP() << "already in a group";
  for (const auto& child : launch_group(2, "Failure.*", "1")) EXPECT_TRUE(child.passed()) << child.describe();
}

TEST(Rendezvous, DeadRankIsACommunicationError) {
  if (launched()) GTEST_SKIP() << "already in a group";
  const auto children = launch_group(2, "Dying.*", "30", "dying");
  EXPECT_TRUE(children[0].passed()) << children[0].describe();
}

// 1..4 processes of CUDA tensors: NCCL where each has a GPU of its own, the
// host transport otherwise (then the test prints why).
TEST(Rendezvous, CudaGroupsOfOneToFour) {
  if (launched()) GTEST_SKIP() << "already in a group";
  std::string why;
  if (!gpu(why)) GTEST_SKIP() << why;
  for (int n = 1; n <= 4; ++n)
    for (const auto& child : launch_group(n, "CudaCollectives.*", "60")) {
      EXPECT_TRUE(child.passed()) << n << " processes: " << child.describe();
      if (const auto at = child.output.find("host transport here"); at != std::string::npos)
        std::cout << n << " processes: CUDA tensors use the " << child.output.substr(at, child.output.find('\n', at) - at) << "\n";
    }
}

// Two processes on one GPU with NCCL required: NCCL either forms the
// group or refuses it (two ranks on one GPU), which must be a typed error
// on both ranks, by the deadline, not a hang.
TEST(Rendezvous, CudaTwoProcessesOnOneGpu) {
  if (launched()) GTEST_SKIP() << "already in a group";
  std::string why;
  if (!gpu(why)) GTEST_SKIP() << why;
  if (!nccl_missing().empty()) GTEST_SKIP() << nccl_missing();
  for (const auto& child : launch_group(2, "CudaFailure.SharedGpu", "30", "nccl_shared_gpu")) {
    EXPECT_TRUE(child.passed()) << child.describe();
    // What NCCL said, for the log.
    for (const char* said : {"NCCL accepts", "NCCL refuses"})
      if (const auto at = child.output.find(said); at != std::string::npos)
        std::cout << child.output.substr(at, child.output.find('\n', at) - at) << "\n";
  }
}

TEST(Rendezvous, CudaRankNeverJoinsNcclTimesOut) {
  if (launched()) GTEST_SKIP() << "already in a group";
  std::string why;
  if (!gpu(why)) GTEST_SKIP() << why;
  if (!nccl_missing().empty()) GTEST_SKIP() << nccl_missing();
  for (const auto& child : launch_group(2, "CudaFailure.RankNeverJoinsNccl", "3", "nccl_missing_rank"))
    EXPECT_TRUE(child.passed()) << child.describe();
}

TEST(Rendezvous, DeviceRoadFallsBackInAGroupOfThree) {
  if (launched()) GTEST_SKIP() << "already in a group";
  for (const auto& child : launch_group(3, "DeviceRoad.*", "30")) EXPECT_TRUE(child.passed()) << child.describe();
}

TEST(Rendezvous, NobodyListeningTimesOut) {
  if (launched()) GTEST_SKIP() << "already in a group";
  // Rank 1 of 2 alone: no rank 0 ever listens.
  const auto child = xylem_test::run_this_test(
      "Rendezvous.Alone", {{"XYLEM_RANK", "1"}, {"XYLEM_WORLD_SIZE", "2"}, {"XYLEM_MASTER_PORT", std::to_string(free_port())},
                           {"XYLEM_DIST_TIMEOUT", "0.5"}, {"XYLEM_TEST_CHILD", "alone"}});
  EXPECT_TRUE(child.passed()) << child.describe();
}

TEST(Rendezvous, Alone) {
  if (!xylem_test::is_child("alone")) GTEST_SKIP() << "run by NobodyListeningTimesOut";
  const auto start = std::chrono::steady_clock::now();
  XY_EXPECT_ERROR(ErrorCode::timeout, (void)Communicator::world());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
