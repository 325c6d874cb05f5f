// xylem::dist::Communicator::local: several ranks in this process, one per
// backend. On the host (native given several times) the collectives run on
// the host copies, which tests the local group in CI; on CUDA every visible
// GPU is a rank and NCCL launches each collective over all of them at once.
// The ranks are driven from one thread (each call on every rank, then the
// waits), as a program driving several GPUs does, and from a thread each.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <optional>
#include <thread>

#include "common/support.hpp"
#include "dist/reference.hpp"
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

std::uint64_t seed() {
  static const std::uint64_t s = xylem_test::fresh_seed();
  return s;
}

collectives::Reference ref() { return {seed()}; }

// `v` as `dtype` (converted on the host), written on `b`.
Tensor tensor_on(const Backend& b, const std::vector<double>& v, DType dtype) {
  const Tensor host = collectives::tensor_of(v, dtype);
  return b == Backend::native() ? host : cast(b, host, dtype);
}

std::string label(const char* call, DType dtype, std::int64_t n, int rank) {
  return std::string(call) + " " + std::string(name(dtype)) + " n=" + std::to_string(n) + " on rank " +
         std::to_string(rank);
}

// Every collective, every dtype and size, over `backends` from one thread:
// each call on every rank first, then the results.
void every_collective(const std::vector<Backend>& backends, const dist::Options& options = {}) {
  const auto comms = Communicator::local(backends, options);
  const int size = static_cast<int>(comms.size());
  ASSERT_EQ(size, static_cast<int>(backends.size()));
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(comms[std::size_t(r)].rank(), r);
    EXPECT_EQ(comms[std::size_t(r)].size(), size);
  }
  const bool device_road = comms[0].transport() != "local";
  std::uint64_t salt = 0;
  for (DType dtype : kDtypes)
    for (std::int64_t n : kSizes) {
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg, ReduceOp::max, ReduceOp::min}) {
        ++salt;
        if (op == ReduceOp::avg && dtype == DType::boolean) continue;
        std::vector<Tensor> t;
        for (int r = 0; r < size; ++r) t.push_back(tensor_on(backends[std::size_t(r)], ref().values_of(r, n, dtype, salt), dtype));
        std::vector<Future<Tensor>> done;
        for (int r = 0; r < size; ++r) done.push_back(comms[std::size_t(r)].all_reduce(t[std::size_t(r)], op));
        for (int r = 0; r < size; ++r) {
          EXPECT_TRUE(done[std::size_t(r)].get().shares_data_with(t[std::size_t(r)]));
          if (device_road && n > 0) {
            EXPECT_FALSE(t[std::size_t(r)].is_current_on(Backend::native())) << "the result must stay on the GPU";
          }
          ref().expect_near(ref().reference(n, dtype, op, salt, size), t[std::size_t(r)].to_doubles(), dtype,
                      label("all_reduce", dtype, n, r));
        }
      }
      ++salt;
      const int root = size - 1;
      const ReduceOp op = dtype == DType::boolean ? ReduceOp::max : ReduceOp::sum;
      const std::int64_t total = n * size;
      std::vector<Tensor> b, red;
      std::vector<Future<Tensor>> gathered, scattered;
      for (int r = 0; r < size; ++r) {
        const Backend& on = backends[std::size_t(r)];
        const Communicator& c = comms[std::size_t(r)];
        b.push_back(tensor_on(on, ref().values_of(r, n, dtype, salt), dtype));
        (void)c.broadcast(b.back(), root);
        red.push_back(tensor_on(on, ref().values_of(r, n, dtype, salt), dtype));
        (void)c.reduce(red.back(), 0, op);
        gathered.push_back(c.all_gather(tensor_on(on, ref().values_of(r, n, dtype, salt), dtype)));
        scattered.push_back(c.reduce_scatter(tensor_on(on, ref().values_of(r, total, dtype, salt), dtype), op));
      }
      std::vector<double> all;
      for (int q = 0; q < size; ++q) {
        auto v = ref().values_of(q, n, dtype, salt);
        all.insert(all.end(), v.begin(), v.end());
      }
      const auto whole = ref().reference(total, dtype, op, salt, size);
      for (int r = 0; r < size; ++r) {
        const auto at = std::size_t(r);
        ref().expect_near(ref().values_of(root, n, dtype, salt), b[at].to_doubles(), dtype, label("broadcast", dtype, n, r));
        ref().expect_near(r == 0 ? ref().reference(n, dtype, op, salt, size) : ref().values_of(r, n, dtype, salt), red[at].to_doubles(),
                    dtype, label("reduce", dtype, n, r));
        const Tensor& g = gathered[at].get();
        ASSERT_EQ(g.shape()[0], size);
        ref().expect_near(all, g.to_doubles(), dtype, label("all_gather", dtype, n, r));
        ref().expect_near(std::vector<double>(whole.begin() + r * n, whole.begin() + (r + 1) * n),
                    scattered[at].get().to_doubles(), dtype, label("reduce_scatter", dtype, n, r));
      }
    }
  // A bucket broadcast of mixed dtypes from the last rank.
  {
    const DType mixed[] = {DType::f64, DType::u8, DType::f32};
    std::vector<std::vector<Tensor>> sent(std::size_t(size), std::vector<Tensor>{});
    for (int r = 0; r < size; ++r) {
      for (std::uint64_t i = 0; i < 3; ++i)
        sent[std::size_t(r)].push_back(
            tensor_on(backends[std::size_t(r)], ref().values_of(r, 4 + std::int64_t(i), mixed[i], 90 + i), mixed[i]));
      (void)comms[std::size_t(r)].broadcast(sent[std::size_t(r)], size - 1);
    }
    for (int r = 0; r < size; ++r)
      for (std::uint64_t i = 0; i < 3; ++i)
        ref().expect_near(ref().values_of(size - 1, 4 + std::int64_t(i), mixed[i], 90 + i), sent[std::size_t(r)][i].to_doubles(),
                          mixed[i], "broadcast bucket entry " + std::to_string(i) + " on rank " + std::to_string(r));
  }
  // A bucket of mixed dtypes, a large tensor, then a barrier.
  std::vector<std::vector<Tensor>> buckets(std::size_t(size), std::vector<Tensor>{});
  const DType mixed[] = {DType::f32, DType::f64, DType::f32, DType::i32};
  const std::int64_t large = std::int64_t(1) << 22;
  std::vector<Future<std::vector<Tensor>>> reduced;
  std::vector<Tensor> big;
  for (int r = 0; r < size; ++r) {
    for (std::uint64_t i = 0; i < 4; ++i)
      buckets[std::size_t(r)].push_back(
          tensor_on(backends[std::size_t(r)], ref().values_of(r, 5 + std::int64_t(i), mixed[i], 50 + i), mixed[i]));
    reduced.push_back(comms[std::size_t(r)].all_reduce(buckets[std::size_t(r)], ReduceOp::sum));
    big.push_back(tensor_on(backends[std::size_t(r)], ref().values_of(r, large, DType::f32, 70), DType::f32));
    (void)comms[std::size_t(r)].all_reduce(big.back(), ReduceOp::avg);
  }
  std::vector<EventPtr> barriers;
  for (const auto& c : comms) barriers.push_back(c.barrier());
  for (int r = 0; r < size; ++r) {
    const auto& got = reduced[std::size_t(r)].get();
    ASSERT_EQ(got.size(), 4u);
    for (std::uint64_t i = 0; i < 4; ++i)
      ref().expect_near(ref().reference(5 + std::int64_t(i), mixed[i], ReduceOp::sum, 50 + i, size), got[i].to_doubles(), mixed[i],
                  "bucket entry " + std::to_string(i) + " on rank " + std::to_string(r));
    ref().expect_near(ref().reference(large, DType::f32, ReduceOp::avg, 70, size), big[std::size_t(r)].to_doubles(), DType::f32,
                label("all_reduce(avg)", DType::f32, large, r));
    EXPECT_NO_THROW(barriers[std::size_t(r)]->wait());
  }
}

std::vector<Backend> natives(int n) { return std::vector<Backend>(std::size_t(n), Backend::native()); }

TEST(LocalGroup, EveryCollectiveOnTheHostFromOneThread) {
  for (int n : {1, 2, 3}) every_collective(natives(n));
}

// The host ranks share the native queue, so the threads give them data
// the host wrote and read it without an op: a rank's op waiting there for
// a collective would hold up the ops of a rank that has yet to call it.
TEST(LocalGroup, AThreadPerRank) {
  const int size = 3;
  const auto comms = Communicator::local(natives(size));
  std::vector<std::thread> threads;
  std::vector<std::vector<double>> results(size);
  for (int r = 0; r < size; ++r)
    threads.emplace_back([&, r] {
      const auto v = ref().values_of(r, 1000, DType::f64, 90);
      Tensor t = Tensor::from(v);
      for (int step = 0; step < 20; ++step) (void)comms[std::size_t(r)].all_reduce(t, ReduceOp::avg);
      results[std::size_t(r)] = t.to_vector<double>();
    });
  for (auto& t : threads) t.join();
  const auto want = ref().reference(1000, DType::f64, ReduceOp::avg, 90, size);
  for (int r = 0; r < size; ++r) ref().expect_near(want, results[std::size_t(r)], DType::f64, "20 averages on rank " + std::to_string(r));
}

TEST(LocalGroup, ResultFeedsTheNextOp) {
  const auto comms = Communicator::local(natives(2));
  std::vector<Tensor> t, u;
  for (int r = 0; r < 2; ++r) t.push_back(tensor_on(Backend::native(), ref().values_of(r, 9, DType::f32, 95), DType::f32));
  for (int r = 0; r < 2; ++r) (void)comms[std::size_t(r)].all_reduce(t[std::size_t(r)]);
  for (int r = 0; r < 2; ++r) u.push_back(add(Backend::native(), t[std::size_t(r)], t[std::size_t(r)]));
  auto want = ref().reference(9, DType::f32, ReduceOp::sum, 95, 2);
  for (auto& x : want) x *= 2;
  for (int r = 0; r < 2; ++r) ref().expect_near(want, u[std::size_t(r)].to_doubles(), DType::f32, "all_reduce then add");
}

TEST(LocalGroup, BadGroupsAreTypedErrors) {
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Communicator::local(std::vector<Backend>{}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Communicator::local(natives(2), {.transport = "mpi"}));
  std::optional<Backend> mirror;
  try {
    mirror = Backend::open("mirror");
  } catch (const Error& e) {
    GTEST_SKIP() << "no mirror test plugin (the duplicate and mixed cases need a second framework): " << e.what();
  }
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Communicator::local(std::vector<Backend>{*mirror, *mirror}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  (void)Communicator::local(std::vector<Backend>{Backend::native(), *mirror}));
  // A device whose library cannot make a group in this process: the host
  // copies serve it.
  const auto one = Communicator::local(std::vector<Backend>{*mirror});
  EXPECT_EQ(one[0].transport(), "local");
  Tensor t = add(*mirror, Tensor::from(std::vector<float>{1, 2}), Tensor::from(std::vector<float>{1, 2}));
  EXPECT_EQ(one[0].all_reduce(t).get().to_vector<float>(), (std::vector<float>{2, 4}));
}

TEST(LocalGroup, MismatchedCallsFailEveryRank) {
  const auto comms = Communicator::local(natives(2));
  Tensor a = Tensor::from(std::vector<float>{1, 2, 3}), b = Tensor::from(std::vector<float>{1, 2, 3, 4});
  auto fa = comms[0].all_reduce(a), fb = comms[1].all_reduce(b);
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, fa.wait());
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, fb.wait());
  Tensor c = Tensor::from(std::vector<double>{1, 2, 3});
  auto fc = comms[0].all_reduce(a), fd = comms[1].all_reduce(c);
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, fc.wait());
  // The group goes on: the next calls match.
  Tensor x = Tensor::from(std::vector<float>{1}), y = Tensor::from(std::vector<float>{2});
  (void)comms[0].all_reduce(x);
  EXPECT_EQ(comms[1].all_reduce(y).get().to_vector<float>(), std::vector<float>{3});
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>{3});
}

TEST(LocalGroup, WaitingBeforeTheOtherRanksCallTimesOut) {
  const auto comms = Communicator::local(natives(2), {.timeout = std::chrono::milliseconds(300)});
  Tensor t = Tensor::from(std::vector<float>{1, 2});
  XY_EXPECT_ERROR(ErrorCode::timeout, comms[0].all_reduce(t).wait());
}

TEST(LocalGroup, PointToPointAndSplitAreUnsupported) {
  const auto comms = Communicator::local(natives(2));
  Tensor t = Tensor::from(std::vector<float>{1});
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)comms[0].send(t, 1));
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)comms[1].recv(t, 0));
  XY_EXPECT_ERROR(ErrorCode::unsupported, (void)comms[0].split(0));
}

// ---- CUDA: every visible GPU a rank ----------------------------------

std::vector<Backend> every_gpu(std::string& why) {
  std::vector<Backend> gpus;
  for (const auto& f : Backend::frameworks())
    if (f.name == "cuda") {
      if (!f.available) why = "the cuda framework is unavailable: " + f.reason;
      for (std::size_t i = 0; f.available && i < f.hardware.size(); ++i)
        gpus.push_back(Backend::open("cuda:" + std::to_string(i)));
    }
  if (gpus.empty() && why.empty()) why = "no CUDA GPU";
  return gpus;
}

TEST(LocalCuda, EveryCollectiveOverEveryVisibleGpu) {
  std::string why;
  const auto gpus = every_gpu(why);
  if (gpus.empty()) GTEST_SKIP() << why;
  const std::string missing = nccl_missing();
  std::cout << "a local group of " << gpus.size() << " GPU(s), "
            << (missing.empty() ? "NCCL required" : "through the host copies: " + missing) << "\n";
  every_collective(gpus, {.device = missing.empty() ? "nccl" : ""});
}

TEST(LocalCuda, SameGpuTwiceIsAnError) {
  std::string why;
  const auto gpus = every_gpu(why);
  if (gpus.empty()) GTEST_SKIP() << why;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)Communicator::local(std::vector<Backend>{gpus[0], gpus[0]}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  (void)Communicator::local(std::vector<Backend>{gpus[0], Backend::native()}));
}

}  // namespace
