// xylem_bench_cuda: the CUDA framework against its bounds, driven through
// the public API (Backend::open("cuda:0")), each figure measured in this run.
//
//   copy      device-to-device copy of 1 GiB (Device::copy_from, i.e.
//             cudaMemcpyAsync): the memory-bandwidth bound, read + write
//   sigmoid   nn::sigmoid over 1 GiB f32, read + write bytes per second
//   conv2d    64x64x56x56 3x3 pad 1 f32, library defaults and full f32
//   fusion    y = relu(x*a + b)*c over 1 GiB f32 (a, b, c scalars) as one
//             math::fused kernel (NVRTC) and as its four ops, GB/s of the 8
//             bytes an element the chain must move, beside the copy bound
//             (fusion_bench.hpp); then relu(nn::linear(x, w, bias)) in bf16
//             and f32, auto-fused (the gemm's epilogue) and not
//   softmax   nn::softmax, log_softmax and layer_norm along the rows of 8192 x 8192 f32,
//             read + write bytes per second (a one-pass kernel's bound)
//   bias add  add of a [1,K,1,1] f32 bias over [128,96,55,55] and
//             [128,256,13,13] (odd H*W, AlexNet's) and [128,96,56,56], read +
//             write bytes per second; bias and ReLU fused over 55 and 56
//   gemm      blas::gemm 8192^3 f32: full fp32 (the default), then TF32 with
//             XYLEM_CUDA_TF32=1 (the user's opt-in); then f16 and bf16
//             inputs and output with f32 accumulation (tensor cores)
//   embedding nn::embedding of 64x512 i64 indices into a [50000, 1024] f32
//             table (its range check included), ms and rows read + written
//             per second against the copy bound; and its gradient
//             accumulated into a [50000, 1024] tensor
//   attention nn::scaled_dot_product_attention, bf16 B=8, H=16, S=4096, D=128,
//             forward and forward+backward, causal and not, TFLOP/s counted as
//             PyTorch's flash figures do (forward 4*B*H*S*S*D, half when
//             causal; forward+backward 3.5 times that)
//   small op  host time to enqueue one small op (sigmoid of 1024 elements),
//             in a 20000-op loop (PyTorch's method), then in 100-op batches
//             (a long loop waits for the GPU once its queue is full), with
//             cudaMemsetAsync's cost as the CUDA runtime's own floor
//   overlap   an upload from pinned memory while kernels run: how much of the
//             shorter of the two hides behind the other (transfers have their
//             own stream; 100% is full overlap, 0% none)
//   alloc     one cached Device::allocate + release of 1 MiB
//   h2d/d2h   1 GiB transfers through Device::upload/download, from pinned
//             memory (cudaHostAlloc, looked up in libcudart at run time) and
//             from pageable memory (staged through the plugin's pinned pool)
//
// Checks (printed with the figures, exit status 1 when one fails): nrm2 in f64
// and f32 where a plain sum of squares overflows or underflows.
//
// Each figure is the median of --reps timed batches after a warm-up, or of
// those that fit in about a second (the attention and LSTM rows are heavy);
// a batch is timed on the host from the first enqueue to the end of a
// synchronize. Each row is printed as soon as it is measured.
// --peer FILE reads the same keys measured by another library (PyTorch, by
// scripts/torch_peer.py) and adds a ratio column (above 1: ours is better);
// --json FILE writes ours. --only GROUP,... measures those groups of rows
// alone (copy, fusion, softmax, bias, embedding, tensor-cores: gemm and conv2d, for
// the alternating rounds of scripts/gpu.sh; small-op, overlap, nrm2, alloc,
// transfer; each block names its group).
#include <dlfcn.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "fusion_bench.hpp"
#include "xylem/plugin/math.h"
#include "xylem/plugin/plugin.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem_bench::Clock;
using xylem_bench::median;
using xylem_bench::seconds_since;


struct Options : xylem_bench::CommonOptions {
  std::string peer;
  // --only GROUP[,GROUP...]: those groups of rows alone (each block below
  // names its group; "tensor-cores", the gemm and conv2d rows, is what
  // scripts/gemm_rounds.py repeats). Empty: every row.
  std::vector<std::string> only;
  [[nodiscard]] bool wants(std::string_view group) const {
    return only.empty() || std::find(only.begin(), only.end(), group) != only.end();
  }
};

Options parse(int argc, char** argv) {
  Options o;
  xylem_bench::parse_options(argc, argv, "xylem_bench_cuda [--json FILE] [--peer FILE] [--reps N] [--quick] [--only GROUP,...]",
                             1, o, [&](std::string_view a, const char* value) {
                               if (a == "--peer" && value) {
                                 o.peer = value;
                                 return 2;
                               }
                               if (a == "--only" && value) {
                                 std::stringstream list{std::string(value)};
                                 for (std::string group; std::getline(list, group, ',');) o.only.push_back(group);
                                 return 2;
                               }
                               return 0;
                             });
  return o;
}


// Timed batches stop after this long, whatever --reps asks (one is always
// timed): a heavy row then costs seconds, not minutes.
constexpr double kRowSeconds = 1.0;

// Seconds per call of `op`: median over reps (or those within kRowSeconds)
// of (batch of `iters` calls, then sync) / iters.
double time_per_call(int reps, int iters, const std::function<void()>& op, const std::function<void()>& sync) {
  op();
  sync();  // warm-up: module load, handles, cached memory
  std::vector<double> t;
  const auto first = Clock::now();
  for (int r = 0; r < reps && (r == 0 || seconds_since(first) < kRowSeconds); ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) op();
    sync();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iters);
  }
  return median(t);
}

// The few runtime calls the benchmark needs (pinned memory, a floor for the
// cost of a tiny op), from the shared CUDA runtime if there is one (the
// plugin links its own statically).
struct CudaRuntime {
  void* lib = nullptr;
  int (*host_alloc)(void**, std::size_t, unsigned) = nullptr;
  int (*host_free)(void*) = nullptr;
  int (*malloc)(void**, std::size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memset_async)(void*, int, std::size_t, void*) = nullptr;
  int (*device_sync)() = nullptr;
  CudaRuntime() {
    for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    if (!lib) return;
    const auto get = [&](auto& fn, const char* symbol) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol)); };
    get(host_alloc, "cudaHostAlloc");
    get(host_free, "cudaFreeHost");
    get(malloc, "cudaMalloc");
    get(free, "cudaFree");
    get(memset_async, "cudaMemsetAsync");
    get(device_sync, "cudaDeviceSynchronize");
  }
  [[nodiscard]] bool pinned_ok() const { return host_alloc && host_free; }
  [[nodiscard]] bool ok() const { return pinned_ok() && malloc && free && memset_async && device_sync; }
};

struct EnqueueTimes {
  double loop;     // seconds per op: the enqueue loop of `iters` ops
  double drained;  // the same loop plus the synchronize after it
  double batched;  // enqueue loops of kBatch ops, synchronized between (untimed)
};
constexpr int kBatch = 100;

EnqueueTimes time_enqueue(int reps, int iters, const std::function<void()>& op, const std::function<void()>& sync) {
  op();
  sync();
  std::vector<double> loop, drained, batched;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) op();
    const auto end = Clock::now();
    sync();
    loop.push_back(std::chrono::duration<double>(end - start).count() / iters);
    drained.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iters);
    double in_batches = 0;
    for (int b = 0; b < iters / kBatch; ++b) {
      const auto s0 = Clock::now();
      for (int i = 0; i < kBatch; ++i) op();
      in_batches += std::chrono::duration<double>(Clock::now() - s0).count();
      sync();
    }
    batched.push_back(in_batches / double(iters / kBatch * kBatch));
  }
  return {median(loop), median(drained), median(batched)};
}

struct Row {
  std::string key, what, unit;
  double value;
  bool higher_is_better;
};

std::map<std::string, double> read_peer(const std::string& path) {
  // A flat JSON object of "key": number; nothing else is needed here.
  std::map<std::string, double> out;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  for (std::size_t i = 0; (i = s.find('"', i)) != std::string::npos;) {
    const std::size_t end = s.find('"', i + 1);
    if (end == std::string::npos) break;
    const std::string key = s.substr(i + 1, end - i - 1);
    std::size_t colon = s.find(':', end);
    i = end + 1;
    if (colon == std::string::npos) break;
    char* stop = nullptr;
    const double v = std::strtod(s.c_str() + colon + 1, &stop);
    if (stop != s.c_str() + colon + 1) out[key] = v;
  }
  return out;
}

// The rows measured so far, each printed (beside the peer's figure, when
// --peer gave one) and flushed as soon as it is measured, so that a slow row
// shows what came before it.
class Table {
 public:
  explicit Table(std::map<std::string, double> peer) : peer_(std::move(peer)) {
    std::printf("\n%-26s %16s %16s %8s\n", "xylem cuda", "ours", peer_.empty() ? "" : "peer",
                peer_.empty() ? "" : "ratio");
    std::fflush(stdout);
  }
  void push_back(Row r) {
    const auto p = peer_.find(r.key);
    if (p != peer_.end() && p->second > 0) {
      const double ratio = r.higher_is_better ? r.value / p->second : p->second / r.value;
      std::printf("%-26s %8.2f %-7s %8.2f %-7s %7.2fx\n", r.what.c_str(), r.value, r.unit.c_str(), p->second,
                  r.unit.c_str(), ratio);
    } else {
      std::printf("%-26s %8.2f %-7s\n", r.what.c_str(), r.value, r.unit.c_str());
    }
    std::fflush(stdout);
    rows_.push_back(std::move(r));
  }
  [[nodiscard]] auto begin() const { return rows_.begin(); }
  [[nodiscard]] auto end() const { return rows_.end(); }

 private:
  std::map<std::string, double> peer_;
  std::vector<Row> rows_;
};

// nrm2 of values around `scale` (and, with `mixed`, every 7th around 1),
// against a long double reference, where squares of 1e200 and 1e-200 fit.
template <class T>
bool check_nrm2(const xylem::Backend& be, double scale, bool mixed, std::vector<std::string>& report) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<T> v(100003);
  long double sq = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double r = u(rng);
    v[i] = static_cast<T>(mixed && i % 7 == 0 ? r : r * scale);
    sq += static_cast<long double>(v[i]) * static_cast<long double>(v[i]);
  }
  const double ref = static_cast<double>(std::sqrt(sq));
  const double got = xylem::blas::nrm2(be, xylem::Tensor::from(v)).get();
  const double rel = std::fabs(got - ref) / ref;
  const bool ok = std::isfinite(got) && rel < (sizeof(T) == 4 ? 1e-5 : 1e-12);
  char line[160];
  std::snprintf(line, sizeof line, "check nrm2 %s x%-8.0e%s rel err %.1e (got %.6e, want %.6e) %s",
                sizeof(T) == 4 ? "f32" : "f64", scale, mixed ? " +1s" : "    ", rel, got, ref, ok ? "ok" : "FAIL");
  report.push_back(line);
  return ok;
}

// Round to nearest even, for the finite values of magnitude at most 1 the
// benchmark draws (no overflow, Inf or NaN to handle).
std::uint16_t f16_bits(float v) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t mag = u & 0x7fffffffu;
  if (mag < 0x38800000u)  // below 2^-14: a subnormal half, a multiple of 2^-24 (exact scaling, RNE rint)
    return static_cast<std::uint16_t>(sign | std::uint16_t(std::nearbyint(std::bit_cast<float>(mag) * 16777216.0f)));
  const std::uint32_t r = mag + 0xfffu + ((mag >> 13) & 1u);  // carries into the exponent as rounding should
  return static_cast<std::uint16_t>(sign | ((r >> 13) - ((127u - 15u) << 10)));
}
std::uint16_t bf16_bits(float v) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  return static_cast<std::uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// An n x n tensor of 16-bit floats uniform in [-1, 1], built on the host
// (there is no cast op yet); the first use moves it to the device.
xylem::Tensor random_16bit(std::int64_t n, xylem::DType dtype, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::uint16_t> bits(std::size_t(n * n));
  for (auto& b : bits) b = dtype == xylem::f16 ? f16_bits(u(rng)) : bf16_bits(u(rng));
  return xylem::Tensor::from_bytes(bits.data(), bits.size() * sizeof(std::uint16_t), xylem::Layout{n, n}, dtype);
}

}  // namespace

int main(int argc, char** argv) try {
  // Each row times single ops: automatic fusion would merge (and drop) the
  // repeated calls of a timing loop. The fusion row turns it on itself.
  xylem::set_fusion(false);
  const Options o = parse(argc, argv);
  const xylem::Backend be = xylem::Backend::open("cuda:0");
  xylem::plugin::Device& dev = xylem::plugin::device_of(be);
  const auto sync = [&] { be.synchronize(); };
  std::cout << "device: " << be.hardware().name << " (" << be.hardware().details << ")\n";

  const std::int64_t gib_floats = o.quick ? (std::int64_t{1} << 22) : (std::int64_t{1} << 28);  // 1 GiB of f32
  const std::size_t bytes = std::size_t(gib_floats) * sizeof(float);
  Table rows(o.peer.empty() ? std::map<std::string, double>{} : read_peer(o.peer));
  xylem::Generator gen(42);

  // The memory-bandwidth bound: a device-to-device copy of 1 GiB, read + write bytes per second.
  const auto copy_bound_gbs = [&] {
    void* src = dev.allocate(bytes);
    void* dst = dev.allocate(bytes);
    const double t_copy = time_per_call(o.reps, 10, [&] { (void)dev.copy_from(dev, src, dst, bytes, {}); },
                                        [&] { dev.synchronize(); });
    dev.release(src, {});
    dev.release(dst, {});
    return 2.0 * double(bytes) / t_copy / 1e9;
  };

  if (o.wants("copy")) {  // copy bound and sigmoid
    rows.push_back({"copy_gbs", "device copy 1 GiB", "GB/s", copy_bound_gbs(), true});

    xylem::Tensor x = xylem::uniform(be, xylem::Layout{gib_floats}, xylem::f32, gen, -4, 4);
    xylem::Tensor y(xylem::Layout{gib_floats}, xylem::f32);
    const double t = time_per_call(o.reps, 10, [&] { xylem::nn::sigmoid(be, x, y); }, sync);
    rows.push_back({"sigmoid_gbs", "sigmoid 1 GiB f32", "GB/s", 2.0 * double(bytes) / t / 1e9, true});
    // Our own elementwise kernel with no arithmetic: separates the kernel's
    // structure from sigmoid's math.
    const double tc = time_per_call(o.reps, 10, [&] { xylem::blas::copy(be, x, y); }, sync);
    rows.push_back({"copy_kernel_gbs", "blas::copy 1 GiB f32", "GB/s", 2.0 * double(bytes) / tc / 1e9, true});
  }

  if (o.wants("fusion")) {  // the 4-op chain fused and unfused, against the copy bound measured beside them
    const double copy_gbs = copy_bound_gbs();
    const xylem_bench::FusionFigures f = xylem_bench::bench_fusion(be, gib_floats, o.reps);
    rows.push_back({"fusion_copy_gbs", "device copy 1 GiB (fusion's bound)", "GB/s", copy_gbs, true});
    rows.push_back({"fusion_fused_gbs", "fused relu(x*a+b)*c 1 GiB f32", "GB/s", f.fused_gbps, true});
    rows.push_back({"fusion_unfused_gbs", "the same as four ops", "GB/s", f.unfused_gbps, true});
    rows.push_back({"fusion_auto_gbs", "the same as eager calls, auto-fused", "GB/s", f.auto_gbps, true});
    rows.push_back({"fusion_fused_of_copy", "fused / copy bound (needed >= 0.95)", "ratio", f.fused_gbps / copy_gbs, true});
    // A linear layer and its ReLU: the gemm's epilogue (cuBLASLt) against
    // the gemm and one fused kernel, and against three ops.
    for (const auto& [dtype, key] : {std::pair{xylem::bf16, "bf16"}, std::pair{xylem::f32, "f32"}}) {
      const std::int64_t m = o.quick ? 1024 : 16384, n = 4096, k = 1024;
      const xylem_bench::EpilogueFigures e = xylem_bench::bench_epilogue(be, m, n, k, dtype, o.reps);
      const std::string shape = " [" + std::to_string(m) + ",1024]x[4096,1024]^T " + key;
      const std::string prefix = std::string("epilogue_") + key;
      rows.push_back({prefix + "_auto_ms", "relu(linear) auto-fused" + shape, "ms", e.auto_ms, false});
      rows.push_back({prefix + "_two_ms", "  gemm, then fused bias+relu", "ms", e.gemm_then_fused_ms, false});
      rows.push_back({prefix + "_unfused_ms", "  gemm, add, relu (fusion off)", "ms", e.unfused_ms, false});
    }
    // A convolution, its bias and ReLU: cuDNN's fused graph against the
    // convolution and one fused kernel, and against three ops.
    for (const auto& [dtype, key] : {std::pair{xylem::bf16, "bf16"}, std::pair{xylem::f32, "f32"}}) {
      const std::int64_t batch = o.quick ? 8 : 64;
      const xylem_bench::EpilogueFigures e = xylem_bench::bench_conv_epilogue(be, batch, 64, 56, dtype, o.reps);
      const std::string shape = std::string(" [") + std::to_string(batch) + ",64,56,56] 3x3 " + key;
      const std::string prefix = std::string("conv_epilogue_") + key;
      rows.push_back({prefix + "_auto_ms", "relu(conv2d + bias) auto-fused" + shape, "ms", e.auto_ms, false});
      rows.push_back({prefix + "_two_ms", "  conv2d, then fused bias+relu", "ms", e.gemm_then_fused_ms, false});
      rows.push_back({prefix + "_unfused_ms", "  conv2d, add, relu (fusion off)", "ms", e.unfused_ms, false});
    }
    // A softmax and its tail: one kernel (nn::softmax_epilogue) against the
    // softmax and one fused kernel, and against three ops.
    for (const auto& [dtype, key] : {std::pair{xylem::bf16, "bf16"}, std::pair{xylem::f32, "f32"}}) {
      const std::int64_t rows_n = o.quick ? 1024 : 16384, cols = 4096;
      const xylem_bench::EpilogueFigures e = xylem_bench::bench_softmax_epilogue(be, rows_n, cols, dtype, o.reps);
      const std::string shape = " [" + std::to_string(rows_n) + ",4096] " + key;
      const std::string prefix = std::string("softmax_epilogue_") + key;
      rows.push_back({prefix + "_auto_ms", "tanh(softmax * m) auto-fused" + shape, "ms", e.auto_ms, false});
      rows.push_back({prefix + "_two_ms", "  softmax, then fused mul+tanh", "ms", e.gemm_then_fused_ms, false});
      rows.push_back({prefix + "_unfused_ms", "  softmax, mul, tanh (fusion off)", "ms", e.unfused_ms, false});
    }
    // A reduction and its tail: CUDA runs no reduction epilogue (the head,
    // then one fused kernel for the tail); these rows tell what the tail
    // costs beside the head, large and small.
    for (const auto& [rows_n, cols] : {std::pair<std::int64_t, std::int64_t>{16384, 4096}, {64, 1024}}) {
      const xylem_bench::EpilogueFigures e = xylem_bench::bench_reduce_epilogue(be, rows_n, cols, xylem::f32, o.reps);
      const std::string shape = " [" + std::to_string(rows_n) + "," + std::to_string(cols) + "] f32";
      const std::string prefix = "reduce_epilogue_" + std::to_string(rows_n) + "x" + std::to_string(cols);
      rows.push_back({prefix + "_auto_ms", "tanh(mean * m) auto-fused" + shape, "ms", e.auto_ms, false});
      rows.push_back({prefix + "_two_ms", "  mean, then fused mul+tanh", "ms", e.gemm_then_fused_ms, false});
      rows.push_back({prefix + "_unfused_ms", "  mean, mul, tanh (fusion off)", "ms", e.unfused_ms, false});
      const xylem::Tensor x = xylem::uniform(be, xylem::Layout{rows_n, cols}, xylem::f32, gen, -1, 1);
      xylem::Tensor head(xylem::Layout{rows_n}, xylem::f32);
      const double alone = time_per_call(o.reps, 10, [&] { xylem::mean(be, x, xylem::Reduction{{1}}, head); }, sync);
      rows.push_back({prefix + "_head_ms", "  mean alone", "ms", alone * 1e3, false});
    }
  }

  if (o.wants("softmax")) {  // softmax along the rows of 8192 x 8192 f32 (256 MiB): read + write bytes per second
    const std::int64_t n = o.quick ? 1024 : 8192;
    xylem::Tensor x = xylem::uniform(be, xylem::Layout{n, n}, xylem::f32, gen, -8, 8);
    xylem::Tensor y(xylem::Layout{n, n}, xylem::f32);
    const double moved = 2.0 * double(n) * double(n) * sizeof(float);
    const double t = time_per_call(o.reps, 10, [&] { xylem::nn::softmax(be, x, -1, y); }, sync);
    rows.push_back({"softmax_gbs", "softmax 8192x8192 f32", "GB/s", moved / t / 1e9, true});
    const double tl = time_per_call(o.reps, 10, [&] { xylem::nn::log_softmax(be, x, -1, y); }, sync);
    rows.push_back({"log_softmax_gbs", "log_softmax 8192x8192 f32", "GB/s", moved / tl / 1e9, true});
    // layer_norm over the same rows (gamma 1, beta 0, as PyTorch's figure).
    const xylem::Tensor gamma = xylem::ones(be, xylem::Layout{n}, xylem::f32);
    const xylem::Tensor beta = xylem::zeros(be, xylem::Layout{n}, xylem::f32);
    const double tn =
        time_per_call(o.reps, 10, [&] { (void)xylem::nn::layer_norm(be, x, 1, gamma, beta, 1e-5, y); }, sync);
    rows.push_back({"layer_norm_gbs", "layer_norm 8192x8192 f32", "GB/s", moved / tn / 1e9, true});
  }

  if (o.wants("bias")) {  // a convolution's bias over an odd H*W (AlexNet's conv1 and conv5 outputs): read + write bytes
    struct Bias {
      const char* key;
      const char* what;
      std::int64_t channels, side;
      int iters;  // the smaller one takes ~15 us: enough calls per batch to hide the host
    };
    for (const Bias& c : {Bias{"bias_add_55_gbs", "bias add 128x96x55x55 f32", 96, 55, 20},
                          Bias{"bias_add_13_gbs", "bias add 128x256x13x13", 256, 13, 200},
                          Bias{"bias_add_56_gbs", "bias add 128x96x56x56 f32", 96, 56, 20}}) {
      const std::int64_t batch = o.quick ? 8 : 128;
      const xylem::Tensor x = xylem::uniform(be, xylem::Layout{batch, c.channels, c.side, c.side}, xylem::f32, gen, -1, 1);
      const xylem::Tensor bias = xylem::uniform(be, xylem::Layout{1, c.channels, 1, 1}, xylem::f32, gen, -1, 1);
      xylem::Tensor y(x.layout(), xylem::f32);
      const double moved = 2.0 * double(x.numel()) * sizeof(float);
      const double t = time_per_call(o.reps, c.iters, [&] { xylem::add(be, x, bias, y); }, sync);
      rows.push_back({c.key, c.what, "GB/s", moved / t / 1e9, true});
      if (c.side == 13) continue;
      // The bias and the ReLU after it as one fused kernel: a broadcast over
      // a rank-3 collapsed layout, the fused kernel's general path for an
      // odd H*W (55), its broadcast vector kernel for whole vectors (56).
      xylem::FusedProgram p;
      p.output(0, p.unary(XY_UN_RELU, p.binary(XY_BIN_ADD, p.input(0), p.input(1))));
      const double tf = time_per_call(o.reps, c.iters, [&] { xylem::fused(be, p, {x, bias}, {y}); }, sync);
      const std::string side = std::to_string(c.side);
      rows.push_back({"bias_relu_" + side + "_gbs", "fused bias + relu 128x96x" + side + "x" + side, "GB/s",
                      moved / tf / 1e9, true});
    }
  }

  if (o.wants("embedding")) {  // embedding: 64 x 512 i64 indices into a [50000, 1024] f32 table (PyTorch: 0.12 ms on an H100)
    const std::int64_t vocab = 50000, dim = 1024, batch = 64, seq = o.quick ? 64 : 512;
    const xylem::Tensor table = xylem::uniform(be, xylem::Layout{vocab, dim}, xylem::f32, gen, -1, 1);
    std::vector<std::int64_t> ids(std::size_t(batch * seq));
    std::mt19937_64 pick(7);
    for (auto& i : ids) i = std::int64_t(pick() % std::uint64_t(vocab));
    const xylem::Tensor indices = xylem::contiguous(be, xylem::Tensor::from(ids, xylem::Layout{batch, seq}));
    // Rows read plus rows written; the indices are noise next to them.
    const double moved = 2.0 * double(batch * seq * dim) * sizeof(float);
    // Each call includes its range check on the device and the read of the
    // check's flag (xylem/index.hpp says why), so it waits for its own check.
    const double t = time_per_call(o.reps, 10, [&] { (void)xylem::nn::embedding(be, table, indices); }, sync);
    rows.push_back({"embedding_ms", "embedding 64x512 of 50000x1024", "ms", t * 1e3, false});
    rows.push_back({"embedding_gbs", "embedding rows moved", "GB/s", moved / t / 1e9, true});
    // The gradient, accumulated into one [vocab, dim] tensor (f32 atomics).
    const xylem::Tensor dy = xylem::uniform(be, xylem::Layout{batch, seq, dim}, xylem::f32, gen, -1, 1);
    xylem::Tensor dweight = xylem::zeros(be, xylem::Layout{vocab, dim}, xylem::f32);
    const double tb =
        time_per_call(o.reps, 10, [&] { xylem::nn::embedding_backward_into(be, dy, indices, dweight); }, sync);
    rows.push_back({"embedding_backward_ms", "embedding_backward (accum)", "ms", tb * 1e3, false});
  }

  if (o.wants("fft")) {  // fft: one c64 transform of 2^24 points (cuFFT), as torch.fft.fft
    const std::int64_t n = o.quick ? (std::int64_t{1} << 20) : (std::int64_t{1} << 24);
    const xylem::Tensor parts = xylem::uniform(be, xylem::Layout{2 * n}, xylem::f32, gen, -1, 1);
    // The uniform pairs as complex numbers: the same bytes, read back as c64.
    const std::vector<float> host = parts.to_vector<float>();
    const xylem::Tensor x = xylem::Tensor::from_bytes(host.data(), host.size() * sizeof(float), xylem::Layout{n}, xylem::c64);
    const double t = time_per_call(o.reps, 10, [&] { (void)xylem::fft::fft(be, x); }, sync);
    rows.push_back({"fft_c64_2p24_ms", "fft c64 2^24 points", "ms", t * 1e3, false});
  }

  if (o.wants("tensor-cores")) {  // conv2d 64x64x56x56, 3x3, padding 1, f32 with the library defaults (cuDNN:
     // TF32 allowed, as PyTorch's conv); and full f32 (XYLEM_CUDA_CONV_TF32=0)
    const std::int64_t batch = o.quick ? 8 : 64;
    xylem::Tensor x = xylem::uniform(be, xylem::Layout{batch, 64, 56, 56}, xylem::f32, gen, -1, 1);
    xylem::Tensor w = xylem::uniform(be, xylem::Layout{64, 64, 3, 3}, xylem::f32, gen, -1, 1);
    xylem::Tensor y(xylem::Layout{batch, 64, 56, 56}, xylem::f32);
    xylem::nn::Conv2d p;
    p.pad_h = p.pad_w = 1;
    const double flop = 2.0 * double(batch) * 64 * 56 * 56 * 64 * 9;
    const auto conv = [&] { xylem::nn::conv2d(be, x, w, y, p); };
    rows.push_back({"conv2d_tflops", "conv2d 64x64x56x56 3x3", "TFLOP/s", flop / time_per_call(o.reps, 10, conv, sync) / 1e12,
                    true});
    ::setenv("XYLEM_CUDA_CONV_TF32", "0", 1);
    rows.push_back({"conv2d_fp32_tflops", "conv2d ... full fp32", "TFLOP/s",
                    flop / time_per_call(o.reps, 10, conv, sync) / 1e12, true});
    ::unsetenv("XYLEM_CUDA_CONV_TF32");
    // The same convolution through cuDNN's legacy API (the engine before
    // the graph API's), and with the graph API's candidates timed
    // (torch.backends.cudnn.benchmark = True): against PyTorch's default.
    ::setenv("XYLEM_CUDA_CUDNN_API", "legacy", 1);
    rows.push_back({"conv2d_legacy_tflops", "conv2d ... legacy cuDNN API", "TFLOP/s",
                    flop / time_per_call(o.reps, 10, conv, sync) / 1e12, true});
    ::unsetenv("XYLEM_CUDA_CUDNN_API");
    ::setenv("XYLEM_CUDA_CUDNN_FIND", "1", 1);
    rows.push_back({"conv2d_timed_tflops", "conv2d ... engines timed", "TFLOP/s",
                    flop / time_per_call(o.reps, 10, conv, sync) / 1e12, true});
    ::unsetenv("XYLEM_CUDA_CUDNN_FIND");
  }

  if (o.wants("tensor-cores")) {  // gemm
    const std::int64_t n = o.quick ? 1024 : 8192;
    xylem::Tensor a = xylem::uniform(be, xylem::Layout{n, n}, xylem::f32, gen, -1, 1);
    xylem::Tensor b = xylem::uniform(be, xylem::Layout{n, n}, xylem::f32, gen, -1, 1);
    xylem::Tensor c(xylem::Layout{n, n}, xylem::f32);
    const auto gemm = [&] { xylem::blas::gemm(be, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1, a, b, 0, c); };
    const double flop = 2.0 * double(n) * double(n) * double(n);
    ::unsetenv("XYLEM_CUDA_TF32");
    rows.push_back({"gemm_fp32_tflops", "gemm 8192 fp32", "TFLOP/s", flop / time_per_call(o.reps, 5, gemm, sync) / 1e12, true});
    ::setenv("XYLEM_CUDA_TF32", "1", 1);
    rows.push_back({"gemm_tf32_tflops", "gemm 8192 tf32", "TFLOP/s", flop / time_per_call(o.reps, 5, gemm, sync) / 1e12, true});
    ::unsetenv("XYLEM_CUDA_TF32");
  }

  if (o.wants("tensor-cores")) {  // gemm in f16 and bf16: f32 accumulation, 16-bit output
    const std::int64_t n = o.quick ? 1024 : 8192;
    const double flop = 2.0 * double(n) * double(n) * double(n);
    for (const xylem::DType dtype : {xylem::f16, xylem::bf16}) {
      const bool half = dtype == xylem::f16;
      xylem::Tensor a = random_16bit(n, dtype, half ? 1 : 3);
      xylem::Tensor b = random_16bit(n, dtype, half ? 2 : 4);
      xylem::Tensor c(xylem::Layout{n, n}, dtype);
      const auto gemm = [&] { xylem::blas::gemm(be, xylem::blas::Transpose::no, xylem::blas::Transpose::no, 1, a, b, 0, c); };
      try {  // a refusal (a build without 16-bit gemm) skips the row, not the rest of the benchmark
        rows.push_back({half ? "gemm_fp16_tflops" : "gemm_bf16_tflops", half ? "gemm 8192 fp16" : "gemm 8192 bf16",
                        "TFLOP/s", flop / time_per_call(o.reps, 5, gemm, sync) / 1e12, true});
      } catch (const xylem::Error& e) {
        std::cout << "(gemm " << (half ? "fp16" : "bf16") << " skipped: " << e.what() << ")\n";
      }
    }
  }

  if (o.wants("attention")) {  // attention, bf16 [8, 16, 4096, 128] (PyTorch flash on an H100: 660 / 516 TFLOP/s)
    const std::int64_t B = 8, H = 16, S = o.quick ? 1024 : 4096, D = 128;
    const xylem::Layout shape{B, H, S, D};
    const auto make = [&] { return xylem::cast(be, xylem::uniform(be, shape, xylem::f32, gen, -1, 1), xylem::bf16); };
    const xylem::Tensor q = make(), k = make(), v = make(), dout = make();
    for (const bool causal : {false, true}) {
      xylem::nn::Attention options;
      options.causal = causal;
      const double flop = 4.0 * double(B * H) * double(S) * double(S) * double(D) * (causal ? 0.5 : 1.0);
      const auto forward = [&] { (void)xylem::nn::scaled_dot_product_attention(be, q, k, v, options); };
      const auto both = [&] {
        const auto f = xylem::nn::scaled_dot_product_attention_forward(be, q, k, v, options);
        (void)xylem::nn::scaled_dot_product_attention_grad(be, q, k, v, f, dout, options);
      };
      const std::string tag = causal ? "attention_causal" : "attention";
      // Five calls per timing, as scripts/torch_peer.py times PyTorch's: one
      // call per sync would add the wait for the host's next launch.
      rows.push_back({tag + "_fwd_tflops", std::string(causal ? "sdpa causal" : "sdpa") + " bf16 fwd", "TFLOP/s",
                      flop / time_per_call(o.reps, 5, forward, sync) / 1e12, true});
      rows.push_back({tag + "_fwdbwd_tflops", std::string(causal ? "sdpa causal" : "sdpa") + " bf16 fwd+bwd",
                      "TFLOP/s", 3.5 * flop / time_per_call(o.reps, 5, both, sync) / 1e12, true});
    }
  }

  if (o.wants("rnn")) {  // LSTM f32, 2 layers, hidden 1024, seq 100, batch 64 (PyTorch/cuDNN on an H100: 4.7 / 11.8 ms)
    const std::int64_t T = o.quick ? 20 : 100, N = 64, H = 1024;
    xylem::layers::LSTM lstm(be, gen, H, H, 2);
    const xylem::Tensor x = xylem::uniform(be, xylem::Layout{T, N, H}, xylem::f32, gen, -1, 1);
    const xylem::Tensor dy = xylem::uniform(be, xylem::Layout{T, N, H}, xylem::f32, gen, -1, 1);
    const auto forward = [&] { (void)lstm.forward(be, x); };
    const auto both = [&] {
      (void)lstm.forward(be, x);
      (void)lstm.backward(be, dy);
    };
    rows.push_back({"lstm_fwd_ms", "LSTM 2x1024 T100 N64 f32 fwd", "ms", time_per_call(o.reps, 3, forward, sync) * 1e3,
                    false});
    rows.push_back({"lstm_fwdbwd_ms", "LSTM 2x1024 T100 N64 f32 fwd+bwd", "ms",
                    time_per_call(o.reps, 3, both, sync) * 1e3, false});
  }

  if (o.wants("small-op")) {  // host time per small op: the enqueue loop alone
    xylem::Tensor x = xylem::uniform(be, xylem::Layout{1024}, xylem::f32, gen, -1, 1);
    xylem::Tensor y(xylem::Layout{1024}, xylem::f32);
    const int iters = o.quick ? 2000 : 20000;
    const auto sigmoid = [&] { xylem::nn::sigmoid(be, x, y); };
    const EnqueueTimes op = time_enqueue(o.reps, iters, sigmoid, sync);
    rows.push_back({"small_op_us", "host time per small op", "us", op.loop * 1e6, false});

    // The plugin's share: Device::launch called directly, without the core.
    void* px = dev.allocate(4096);
    void* py = dev.allocate(4096);
    xylem::plugin::OpCall call;
    call.op = xylem::plugin::OpId::math_unary;
    call.i[0] = XY_UN_SIGMOID;
    call.num_tensors = 2;
    call.t[0] = {px, xylem::Layout{1024}, xylem::f32};
    call.t[1] = {py, xylem::Layout{1024}, xylem::f32};
    const auto launch = [&] { (void)dev.launch(call, {}); };
    const auto dsync = [&] { dev.synchronize(); };
    const EnqueueTimes raw = time_enqueue(o.reps, iters, launch, dsync);
    rows.push_back({"launch_us", "  of which Device::launch", "us", raw.loop * 1e6, false});
    // A long loop stops measuring the host once the GPU's queue is full: it
    // then waits for the GPU to drain. Short batches (synchronized between,
    // untimed) and the loop plus its drain tell the two apart.
    rows.push_back({"small_op_batch_us", "  same, 100-op batches", "us", op.batched * 1e6, false});
    rows.push_back({"launch_batch_us", "  launch, 100-op batches", "us", raw.batched * 1e6, false});
    rows.push_back({"small_op_drained_us", "  loop + drain per op", "us", op.drained * 1e6, false});
    dev.release(px, {});
    dev.release(py, {});

    // The CUDA runtime's own floor for a tiny op, without xylem.
    CudaRuntime rt;
    void* p = nullptr;
    if (rt.ok() && rt.malloc(&p, 4096) == 0) {
      const EnqueueTimes floor = time_enqueue(
          o.reps, iters, [&] { (void)rt.memset_async(p, 0, 4096, nullptr); }, [&] { (void)rt.device_sync(); });
      rows.push_back({"memset_batch_us", "  cudaMemsetAsync, batches", "us", floor.batched * 1e6, false});
      rt.free(p);
    }
  }

  if (o.wants("overlap")) {  // upload overlapped with kernels (Device API: the plugin's streams alone)
    CudaRuntime pinned;
    void* host = nullptr;
    const std::size_t up_bytes = bytes / 4;
    if (pinned.pinned_ok() && pinned.host_alloc(&host, up_bytes, 0) == 0) {
      std::memset(host, 1, up_bytes);
      void* d_up = dev.allocate(up_bytes);
      void* px = dev.allocate(bytes);
      void* py = dev.allocate(bytes);
      (void)dev.upload(px, host, up_bytes, {});  // some data in x; the rest is whatever memory held
      xylem::plugin::OpCall call;
      call.op = xylem::plugin::OpId::math_unary;
      call.i[0] = XY_UN_SIGMOID;
      call.num_tensors = 2;
      call.t[0] = {px, xylem::Layout{gib_floats}, xylem::f32};
      call.t[1] = {py, xylem::Layout{gib_floats}, xylem::f32};
      // Kernels for about as long as the upload takes, so either could hide the other.
      const auto kernels = [&] {
        for (int i = 0; i < 8; ++i) (void)dev.launch(call, {});
      };
      const auto upload = [&] { (void)dev.upload(d_up, host, up_bytes, {}); };
      const auto dsync = [&] { dev.synchronize(); };
      const double tk = time_per_call(o.reps, 1, kernels, dsync);
      const double tu = time_per_call(o.reps, 1, upload, dsync);
      const double tb = time_per_call(o.reps, 1, [&] { kernels(), upload(); }, dsync);
      rows.push_back({"overlap_pct", "upload || kernels overlap", "%", 100.0 * (tk + tu - tb) / std::min(tk, tu), true});
      dev.release(d_up, {});
      dev.release(px, {});
      dev.release(py, {});
      pinned.host_free(host);
    }
  }

  std::vector<std::string> checks;
  bool checks_ok = true;
  if (o.wants("nrm2")) {  // nrm2 over and under the float range
    for (const double scale : {1e200, 1e-200, 1.0})
      for (const bool mixed : {false, true}) checks_ok = check_nrm2<double>(be, scale, mixed, checks) && checks_ok;
    for (const double scale : {1e30, 1e-30})
      for (const bool mixed : {false, true}) checks_ok = check_nrm2<float>(be, scale, mixed, checks) && checks_ok;
  }

  if (o.wants("alloc")) {  // cached allocation and free
    const int iters = 100000;
    std::vector<double> t;
    dev.release(dev.allocate(1 << 20), {});
    for (int r = 0; r < o.reps; ++r) {
      const auto start = Clock::now();
      for (int i = 0; i < iters; ++i) dev.release(dev.allocate(1 << 20), {});
      t.push_back(std::chrono::duration<double>(Clock::now() - start).count() / iters);
    }
    rows.push_back({"alloc_free_us", "cached alloc + free", "us", median(t) * 1e6, false});
  }

  if (o.wants("transfer")) {  // host <-> device
    void* d = dev.allocate(bytes);
    const auto wait = [](const xylem::EventPtr& e) { e->wait(); };
    CudaRuntime pinned;
    void* host = nullptr;
    if (pinned.pinned_ok() && pinned.host_alloc(&host, bytes, 0) == 0) {
      std::memset(host, 1, bytes);
      const double t = time_per_call(o.reps, 3, [&] { wait(dev.upload(d, host, bytes, {})); }, [] {});
      rows.push_back({"h2d_pinned_gbs", "host to device, pinned", "GB/s", double(bytes) / t / 1e9, true});
      pinned.host_free(host);
    } else {
      std::cout << "(no libcudart.so to allocate pinned memory: pinned row skipped)\n";
    }
    std::unique_ptr<char[]> pageable(new char[bytes]);
    std::memset(pageable.get(), 1, bytes);  // touched: no page faults in the timing
    const double tu = time_per_call(o.reps, 3, [&] { wait(dev.upload(d, pageable.get(), bytes, {})); }, [] {});
    rows.push_back({"h2d_pageable_gbs", "host to device, pageable", "GB/s", double(bytes) / tu / 1e9, true});
    const double td = time_per_call(o.reps, 3, [&] { wait(dev.download(pageable.get(), d, bytes, {})); }, [] {});
    rows.push_back({"d2h_pageable_gbs", "device to host, pageable", "GB/s", double(bytes) / td / 1e9, true});
    dev.release(d, {});
  }

  const auto stats = dev.memory_stats();
  for (const Row& r : rows)
    for (const char* key : {"sigmoid_gbs", "softmax_gbs", "log_softmax_gbs", "layer_norm_gbs", "bias_add_55_gbs",
                            "bias_add_13_gbs", "bias_add_56_gbs", "bias_relu_55_gbs", "bias_relu_56_gbs",
                            "embedding_gbs"})
      if (r.key == key)
        for (const Row& c : rows)
          if (c.key == "copy_gbs")
            std::printf("%-26s %9.1f %%\n", (r.key.substr(0, r.key.size() - 4) + " / copy bound").c_str(),
                        100.0 * r.value / c.value);
  std::printf("memory: peak %.2f GiB, reserved %.2f GiB, %llu device allocations\n",
              double(stats.peak) / double(1 << 30), double(stats.reserved) / double(1 << 30),
              static_cast<unsigned long long>(stats.device_allocations));

  for (const std::string& line : checks) std::printf("%s\n", line.c_str());

  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "{\n  \"device\": \"" << be.hardware().name << "\"";
    for (const Row& r : rows) out << ",\n  \"" << r.key << "\": " << r.value;
    out << "\n}\n";
  }
  return checks_ok ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "xylem_bench_cuda: " << e.what() << "\n";
  return 1;
}
