// xylem_bench_multi_gpu: the xylem side of the two-GPU run
// (scripts/gpu_multi.sh; PyTorch's side is bench/torch_multi_gpu.py, which
// prints the same JSON rows).
//
//   peer         one process: a tensor written on <framework>:0 is read on
//                <framework>:1 (--bytes, default 1 GiB); seconds per
//                transfer and GB/s, and the route the coherence took
//                (device to device, or staged through the host copy).
//   collectives  one process per device, ranks from the environment
//                (XYLEM_RANK, XYLEM_WORLD_SIZE, XYLEM_MASTER_ADDR/PORT) or
//                mpirun: all_reduce, all_gather and reduce_scatter of f32
//                on <framework>:<rank>, --min-bytes to --max-bytes by 4x,
//                bus bandwidth by nccl-tests' formula.
//   train        one process per device as above: --net fashion (the
//                Fashion-MNIST CNN of `xylem train`, 1x28x28) or alexnet
//                (3x224x224), --batch images per rank, SGD with momentum,
//                gradients averaged by xylem::parallel::DataParallel;
//                samples/s over all ranks, then --check steps each followed
//                by DataParallel::in_sync (the same weights on every rank).
//                Inputs are random (throughput, not accuracy, is measured).
//                --capture replays the whole step, collectives included,
//                as one captured graph (xylem/capture.hpp).
//
//   xylem_bench_multi_gpu peer|collectives|train [--framework cuda|native]
//       [--bytes N] [--min-bytes N] [--max-bytes N] [--ops a,b,c]
//       [--net fashion|alexnet] [--batch N] [--steps N] [--check N]
//       [--bucket-kib N] [--wrap-one] [--no-buffer-broadcast] [--capture]
//       [--reps N] [--json FILE]
//
// Every row is one JSON line on rank 0's stdout (and in --json FILE), the
// schema scripts/multi_gpu_table.py reads.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_common.hpp"
#include "fashion_mnist.hpp"
#include "xylem/xylem.hpp"

namespace {

using namespace xylem;
using xylem_bench::Clock;
using xylem_bench::median;
using xylem_bench::seconds_since;

struct Options : xylem_bench::CommonOptions {
  std::string mode;
  std::string framework = "cuda";
  std::size_t bytes = std::size_t{1} << 30;
  std::size_t min_bytes = 1024;
  std::size_t max_bytes = std::size_t{4} << 30;
  std::string ops = "all_reduce,all_gather,reduce_scatter";
  std::string net = "fashion";
  std::int64_t batch = 128;
  int steps = 20;
  int check = 3;
  std::size_t bucket_kib = 0;  // 0: DataParallel's default
  bool wrap_one = false;        // DataParallel also over a single rank
  bool broadcast_buffers = true;
  bool capture = false;         // each step a replay of one captured graph
  Options() { reps = 5; }
};

constexpr std::string_view kUsage =
    "xylem_bench_multi_gpu peer|collectives|train [--framework cuda|native] [--bytes N] [--min-bytes N] "
    "[--max-bytes N] [--ops all_reduce,all_gather,reduce_scatter] [--net fashion|alexnet] [--batch N] "
    "[--steps N] [--check N] [--bucket-kib N] [--wrap-one] "
    "[--no-buffer-broadcast] [--capture] [--reps N] [--json FILE]";

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2 || argv[1][0] == '-') {
    std::cerr << "usage: " << kUsage << "\n";
    std::exit(2);
  }
  o.mode = argv[1];
  xylem_bench::parse_options(argc - 1, argv + 1, kUsage, 1, o, [&](std::string_view a, const char* value) {
    if (a == "--wrap-one") {
      o.wrap_one = true;
      return 1;
    }
    if (a == "--no-buffer-broadcast") {
      o.broadcast_buffers = false;
      return 1;
    }
    if (a == "--capture") {
      o.capture = true;
      return 1;
    }
    if (value == nullptr) return 0;
    if (a == "--framework") o.framework = value;
    else if (a == "--bytes") o.bytes = std::strtoull(value, nullptr, 10);
    else if (a == "--min-bytes") o.min_bytes = std::strtoull(value, nullptr, 10);
    else if (a == "--max-bytes") o.max_bytes = std::strtoull(value, nullptr, 10);
    else if (a == "--ops") o.ops = value;
    else if (a == "--net") o.net = value;
    else if (a == "--batch") o.batch = std::atoll(value);
    else if (a == "--steps") o.steps = std::atoi(value);
    else if (a == "--check") o.check = std::atoi(value);
    else if (a == "--bucket-kib") o.bucket_kib = std::strtoull(value, nullptr, 10);
    else return 0;
    return 2;
  });
  return o;
}

// One JSON row: to stdout and, when asked, to the --json file.
class Rows {
 public:
  Rows(const std::string& path, bool lead) : lead_(lead) {
    // Appended: one file gathers the rows of several runs (1 and 2 ranks).
    if (lead && !path.empty()) file_.open(path, std::ios::app);
    if (lead && !path.empty() && !file_) throw Error(ErrorCode::io, "cannot write " + path);
    file_.precision(6);
  }
  void add(const std::string& row) {
    if (!lead_) return;
    std::cout << row << std::endl;
    if (file_.is_open()) file_ << row << "\n" << std::flush;
  }

 private:
  bool lead_;
  std::ofstream file_;
};

// The rank's device: <framework>:<rank> for a framework of several devices
// (one GPU per process), the host otherwise.
Backend device_of(const Options& o, int rank) {
  if (o.framework == "native") return Backend::native();
  return Backend::open(o.framework + ":" + std::to_string(rank));
}

int peer(const Options& o) {
  Rows rows(o.json, true);
  std::optional<Backend> first, second;
  try {
    first = Backend::open(o.framework + ":0");
    second = Backend::open(o.framework + ":1");
  } catch (const Error& e) {
    std::cout << "{\"row\": \"peer_copy\", \"skipped\": \"" << o.framework << " has no second device here\"}"
              << std::endl;
    std::cerr << e.what() << "\n";
    return 0;
  }
  const auto n = static_cast<std::int64_t>(o.bytes / sizeof(float));
  Tensor x = zeros(*first, Layout{n}, f32);
  Tensor probe(Layout{1}, f32);
  const TransferRoutes before = x.transfer_routes();
  std::vector<double> times;
  for (int r = 0; r <= o.reps; ++r) {
    // A write on the first device makes its copy the only current one; the
    // one-element read on the second then brings the whole storage over.
    blas::scal(*first, -1.0, x);
    first->synchronize();
    second->synchronize();
    const auto t0 = Clock::now();
    blas::copy(*second, x.slice(0, 0, 1), probe);
    second->synchronize();
    if (r > 0) times.push_back(seconds_since(t0));
  }
  const TransferRoutes after = x.transfer_routes();
  const double t = median(times);
  std::ostringstream row;
  row << "{\"row\": \"peer_copy\", \"impl\": \"xylem\", \"bytes\": " << o.bytes << ", \"seconds\": " << t
      << ", \"gbps\": " << double(o.bytes) / t / 1e9 << ", \"transfers\": " << after.total() - before.total()
      << ", \"device_to_device\": " << after.device_to_device - before.device_to_device
      << ", \"staged\": " << after.staged - before.staged << ", \"route\": \""
      << (after.staged > before.staged ? "staged through the host copy" : "device to device") << "\", \"peer_access\": "
      << (first->hardware().caps.peer_access ? "true" : "false") << "}";
  rows.add(row.str());
  return 0;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream s(list);
  for (std::string item; std::getline(s, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// The slowest rank's seconds: each rank's time, all-reduced by max on the host.
double slowest(const dist::Communicator& host, double seconds) {
  return host.all_reduce(Tensor::from(std::vector<double>{seconds}), dist::ReduceOp::max).get().to_vector<double>()[0];
}

int collectives(const Options& o) {
  dist::Options options;
  options.checked = false;
  options.device = o.framework == "native" ? "host" : "nccl";
  const dist::Communicator comm = dist::Communicator::world(options);
  const dist::Communicator host = dist::Communicator::world({.checked = false, .device = "host"});
  const int n = comm.size();
  const Backend b = device_of(o, comm.rank());
  Rows rows(o.json, comm.rank() == 0);
  for (const std::string& op : split_list(o.ops)) {
    // bytes: the whole buffer nccl-tests sizes by (all_gather's output,
    // reduce_scatter's input), a multiple of the ranks.
    for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
      const auto count = static_cast<std::int64_t>(bytes / sizeof(float));
      const std::int64_t local = op == "all_gather" ? count / n : count;
      Tensor t = zeros(b, Layout{local}, f32);
      // Into one output, as PyTorch's side (all_gather_into_tensor,
      // reduce_scatter_tensor) writes.
      const Tensor out = zeros(b, Layout{op == "all_gather" ? count : count / n}, f32);
      std::function<EventPtr()> call;
      if (op == "all_reduce") call = [&] { return comm.all_reduce(t).event(); };
      else if (op == "all_gather") call = [&] { return comm.all_gather(t, out).event(); };
      else if (op == "reduce_scatter") call = [&] { return comm.reduce_scatter(t, out).event(); };
      else throw Error(ErrorCode::invalid_argument, "--ops: all_reduce, all_gather or reduce_scatter, not " + op);
      // About 50 ms of calls per repetition at 100 GB/s, at least one.
      // (bench/torch_multi_gpu.py counts alike.) Back to back, as nccl-tests
      // times: one call per wait put a host's wake-up into every figure from
      // 4 MiB up, and those points moved by tens of percent between calls.
      const int inner = int(std::clamp<std::size_t>((std::size_t{5} << 30) / bytes, 1, 200));
      call()->wait();
      std::vector<double> times;
      for (int r = 0; r < o.reps; ++r) {
        host.barrier()->wait();
        const auto t0 = Clock::now();
        EventPtr last;
        for (int i = 0; i < inner; ++i) last = call();
        last->wait();
        times.push_back(slowest(host, seconds_since(t0) / inner));
      }
      const double seconds = median(times);
      const double factor = op == "all_reduce" ? 2.0 * (n - 1) / n : double(n - 1) / n;
      std::ostringstream row;
      row << "{\"row\": \"" << op << "\", \"impl\": \"xylem\", \"ranks\": " << n << ", \"transport\": \""
          << comm.transport() << "\", \"bytes\": " << bytes << ", \"seconds\": " << seconds
          << ", \"busbw_gbps\": " << double(bytes) * factor / seconds / 1e9 << "}";
      rows.add(row.str());
    }
  }
  return 0;
}

int train(const Options& o) {
  const dist::Communicator world = dist::Communicator::world(
      {.checked = false, .device = o.framework == "native" ? "host" : "nccl"});
  const int n = world.size();
  const Backend b = device_of(o, world.rank());
  Rows rows(o.json, world.rank() == 0);
  const bool alexnet = o.net == "alexnet";
  if (!alexnet && o.net != "fashion") throw Error(ErrorCode::invalid_argument, "--net: fashion or alexnet, not " + o.net);
  layers::Sequential net = alexnet ? models::alexnet(b, {}, 1) : layers::Sequential(cli::fashion_mnist_layers(b, 1));
  const std::int64_t classes = alexnet ? 1000 : 10;
  const Layout input = alexnet ? Layout{o.batch, 3, 224, 224} : Layout{o.batch, 1, 28, 28};
  // Each rank its own data, as a sampler would give it its own images.
  Generator gen(100 + std::uint64_t(world.rank()));
  const Tensor x = uniform(b, input, f32, gen, -1, 1);
  std::vector<std::int64_t> labels(static_cast<std::size_t>(o.batch));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = std::int64_t((i * 7 + std::size_t(world.rank())) % classes);
  const Tensor y = Tensor::from(labels);
  std::optional<parallel::DataParallel> ddp;
  parallel::DataParallelOptions dp;
  if (o.bucket_kib > 0) dp.bucket_bytes = o.bucket_kib << 10;
  dp.broadcast_buffers = o.broadcast_buffers;
  if (n > 1 || o.wrap_one) ddp.emplace(net, world, dp);
  optim::SGD sgd(net, {.lr = 0.01, .momentum = 0.9});
  // DataParallel takes the global batch's rows and this rank's shard of
  // them: here every rank's batch is its own, the global one n times it.
  const parallel::Shard shard{o.batch * world.rank(), o.batch * (world.rank() + 1), o.batch * n};
  // The host's time in each part of the step (with DataParallel the
  // backward's includes enqueueing its buckets), to tell what the
  // reductions cost the host.
  double forward_host = 0, backward_host = 0, optimizer_host = 0;
  auto step = [&] {
    auto t = Clock::now();
    const Tensor logits = net.forward(b, x);
    const layers::Loss loss = layers::cross_entropy(b, logits, y);
    forward_host += seconds_since(t);
    t = Clock::now();
    if (ddp) ddp->backward(b, loss.grad, shard);
    else net.backward(b, loss.grad);
    backward_host += seconds_since(t);
    t = Clock::now();
    sgd.step(b);
    sgd.zero_grad();
    optimizer_host += seconds_since(t);
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: allocations, cuDNN's choices, NCCL's channels
  // --capture: the whole step (forward, backward with its buckets' reductions
  // and the buffers' broadcast, optimizer) as one graph, captured after the
  // warm-up made the optimizer's momentum: each step is then one launch. The
  // backward writes fresh gradients in the graph (none are left by
  // zero_grad), which the optimizer's step in the graph reads.
  std::optional<Graph> graph;
  if (o.capture) {
    graph = capture(b, [&] {
      const Tensor logits = net.forward(b, x);
      const layers::Loss loss = layers::cross_entropy(b, logits, y);
      if (ddp) ddp->backward(b, loss.grad, shard);
      else net.backward(b, loss.grad);
      sgd.step(b);
    });
    for (int i = 0; i < 2; ++i) (void)graph->replay();  // the first replay makes the CUDA graph
  }
  const auto train_step = [&] {
    if (graph) (void)graph->replay();
    else step();
  };
  b.synchronize();
  world.barrier()->wait();
  const auto t0 = Clock::now();
  forward_host = backward_host = optimizer_host = 0;
  for (int i = 0; i < o.steps; ++i) train_step();
  // The host's time to enqueue the steps: close to the whole when the
  // host, not the GPU, sets the pace.
  const double host_seconds = seconds_since(t0);
  const double forward_seconds = forward_host, backward_seconds = backward_host, optimizer_seconds = optimizer_host;
  if (ddp) ddp->synchronize();
  b.synchronize();
  const double seconds = seconds_since(t0);
  int synced = 0;
  for (int i = 0; i < o.check; ++i) {
    train_step();
    if (ddp) ddp->synchronize();
    synced += ddp ? int(ddp->in_sync()) : 1;
  }
  // Nothing in flight at exit: a native gemm still queued then crashes in
  // oneDNN, whose code is unloaded before the queue's thread stops.
  b.synchronize();
  std::ostringstream row;
  row << "{\"row\": \"train_" << o.net << "\", \"impl\": \"xylem\", \"ranks\": " << n
      << ", \"data_parallel\": " << (ddp ? "true" : "false") << ", \"captured\": " << (graph ? "true" : "false")
      << ", \"buffer_broadcast\": " << (o.broadcast_buffers ? "true" : "false") << ", \"batch_per_rank\": "
      << o.batch << ", \"steps\": " << o.steps << ", \"buckets\": " << (ddp ? ddp->buckets().size() : 0)
      << ", \"seconds\": " << seconds << ", \"host_seconds\": " << host_seconds
      << ", \"forward_host_seconds\": " << forward_seconds << ", \"backward_host_seconds\": " << backward_seconds
      << ", \"optimizer_host_seconds\": " << optimizer_seconds
      << ", \"samples_per_s\": " << double(o.batch) * n * o.steps / seconds << ", \"checked_steps\": " << o.check
      << ", \"in_sync_steps\": " << synced << "}";
  rows.add(row.str());
  return synced == o.check ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.mode == "peer") return peer(o);
    if (o.mode == "collectives") return collectives(o);
    if (o.mode == "train") return train(o);
    std::cerr << "usage: " << kUsage << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "xylem_bench_multi_gpu " << o.mode << ": " << e.what() << "\n";
    return 1;
  }
}
