// xylem_bench_host_ops2: issue 18's op set 2 on a host framework, one op at a
// time at a mid size (each call ~1-50 ms on 16 cores), for the bar "each new
// op within 2x of the best of NumPy/PyTorch CPU on the same host". Its twin
// is bench/torch_host_ops2.py (the same op names, sizes and dtypes);
// scripts/host_ops2_compare.py prints the ratios; scripts/gpu.sh host_ops2
// runs the three on the GPU machine's 16 cores.
//
//   xylem_bench_host_ops2 [--backend native|opencl|opencl:N] [--threads N]
//                         [--only OP,OP] [--budget S] [--reps N] [--quick]
//                         [--json FILE]
//
// --backend opencl takes the OpenCL framework's CPU device (a host backend;
// opencl:N names one). --threads N sets XYLEM_NATIVE_THREADS before the
// native framework loads. Each figure is synchronised wall time per call:
// one warm-up, then the median of up to --reps timings, stopping once a row
// has spent --budget seconds (at least 3 timings); tiny ops (split) are
// timed over many calls per timing. An op the backend lacks (FFT on OpenCL)
// prints "skipped" with the reason.
//
// Attention at S = 4096 is measured for memory first, before anything else
// has filled the allocators' caches: the peak of tensor storage
// (Backend::memory()) and the growth of the process's peak resident memory
// (VmHWM after resetting it through /proc/self/clear_refs), each against
// one head's S x S f32 score matrix, which a memory-efficient kernel never
// makes.
//
// Output: a table, then one JSON line per op ({"op", "seconds", ...}),
// also written to --json FILE.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem::Layout;
using xylem::Tensor;
using xylem_bench::Clock;
using xylem_bench::seconds_since;

struct Options : xylem_bench::CommonOptions {
  std::string backend = "native";
  int threads = 0;
  std::vector<std::string> only;
  double budget = 0.5;  // seconds of timed calls per row, at most
};

Options parse(int argc, char** argv) {
  Options o;
  xylem_bench::parse_options(
      argc, argv,
      "xylem_bench_host_ops2 [--backend native|opencl|opencl:N] [--threads N] [--only OP,OP] [--budget S] "
      "[--reps N] [--quick] [--json FILE]",
      3, o, [&](std::string_view a, const char* value) {
        if (!value) return 0;
        if (a == "--backend") {
          o.backend = value;
        } else if (a == "--threads") {
          o.threads = std::atoi(value);
        } else if (a == "--budget") {
          o.budget = std::atof(value);
        } else if (a == "--only") {
          std::stringstream list(value);
          for (std::string op; std::getline(list, op, ',');) o.only.push_back(op);
        } else {
          return 0;
        }
        return 2;
      });
  return o;
}

xylem::Backend open_backend(const std::string& spec) {
  if (spec != "opencl") return xylem::Backend::open(spec);
  xylem::BackendConfig config;  // a host backend: the OpenCL CPU device
  config.framework = "opencl";
  config.kind = xylem::HardwareKind::cpu;
  return xylem::Backend(config);
}

// Peak resident memory since the last reset, and its reset (Linux).
std::int64_t status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key, 0) == 0) return std::atoll(line.c_str() + std::string_view(key).size());
  return -1;
}
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

struct Row {
  std::string op, shape;
  double seconds = 0;
  int timings = 0;  // 0: measured for memory only
  std::string extra;  // more JSON fields, ", \"key\": value" each
};

// Runs the rows and keeps their JSON lines, each written to --json FILE as
// soon as it is measured (so a run cut short by a timeout keeps its rows).
class Bench {
 public:
  // `fields`: the JSON fields every line ends with.
  Bench(const Options& o, xylem::Backend be, std::string fields) : o_(o), be_(std::move(be)), fields_(std::move(fields)) {
    if (!o.json.empty()) json_ = xylem_bench::open_json(o.json);
  }

  bool wants(const std::string& op) const {
    return o_.only.empty() || std::find(o_.only.begin(), o_.only.end(), op) != o_.only.end();
  }

  // Times f (calls per timing) and records it; a refusal by the backend
  // (unsupported, say) records the reason instead.
  void time(const std::string& op, const std::string& shape, const std::function<void()>& f, int calls = 1,
            const std::string& extra = "") {
    if (!wants(op)) return;
    try {
      const auto run = [&] {
        for (int i = 0; i < calls; ++i) f();
        be_.synchronize();
      };
      run();
      std::vector<double> t;
      const auto start = Clock::now();
      while (int(t.size()) < o_.reps && (t.size() < 3 || seconds_since(start) < o_.budget)) {
        const auto t0 = Clock::now();
        run();
        t.push_back(seconds_since(t0) / calls);
      }
      add({op, shape, xylem_bench::median(t), int(t.size()), extra});
    } catch (const xylem::Error& e) {
      std::printf("%-22s %-40s skipped: %s\n", op.c_str(), shape.c_str(), e.what());
      std::fflush(stdout);
    }
  }

  void add(const Row& row) {
    if (row.timings > 0)
      std::printf("%-22s %-40s %10.4g ms  (%d timings)\n", row.op.c_str(), row.shape.c_str(), row.seconds * 1e3,
                  row.timings);
    std::fflush(stdout);
    std::ostringstream line;
    line.precision(6);
    line << "{\"op\": \"" << row.op << "\", \"seconds\": ";
    if (row.timings > 0)
      line << row.seconds;
    else
      line << "null";
    line << ", \"shape\": \"" << row.shape << "\", \"timings\": " << row.timings << row.extra << fields_ << "}";
    lines_.push_back(line.str());
    if (json_.is_open()) json_ << lines_.back() << std::endl;
  }

  [[nodiscard]] const std::vector<std::string>& lines() const { return lines_; }

 private:
  const Options& o_;
  xylem::Backend be_;
  std::string fields_;
  std::ofstream json_;
  std::vector<std::string> lines_;
};

std::string dims(std::initializer_list<std::int64_t> d) {
  std::string s = "[";
  for (const std::int64_t v : d) s += (s.size() > 1 ? "," : "") + std::to_string(v);
  return s + "]";
}

// Random indices in [0, n) (and, with ignore > 0, that fraction of them
// replaced by nn::kIgnoreIndex), as i64.
Tensor indices(std::mt19937_64& rng, const Layout& shape, std::int64_t n, double ignore = 0) {
  std::vector<std::int64_t> v(std::size_t(shape.numel()));
  std::uniform_int_distribution<std::int64_t> pick(0, n - 1);
  std::uniform_real_distribution<double> coin(0, 1);
  for (auto& x : v) x = ignore > 0 && coin(rng) < ignore ? xylem::nn::kIgnoreIndex : pick(rng);
  return Tensor::from(v, shape);
}

Tensor complex_uniform(std::mt19937_64& rng, const Layout& shape) {
  std::vector<std::complex<float>> v(std::size_t(shape.numel()));
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& x : v) x = {u(rng), u(rng)};
  return Tensor::from_bytes(v.data(), v.size() * sizeof(v[0]), shape, xylem::c64);
}

// Attention at the long length, for memory: the growth of tensor storage and
// of resident memory over one forward and one forward+backward.
void attention_memory(const xylem::Backend& be, const Options& o, Bench& bench, xylem::Generator& gen) {
  if (!bench.wants("sdpa_long_fwd") && !bench.wants("sdpa_long_fwdbwd")) return;
  const std::int64_t B = 1, H = o.quick ? 1 : 8, S = o.quick ? 2048 : 4096, D = 64;
  const Layout shape{B, H, S, D};
  const std::string label = dims({B, H, S, D}) + " f32";
  const Tensor q = xylem::uniform(be, shape, xylem::f32, gen, -1, 1), k = xylem::uniform(be, shape, xylem::f32, gen, -1, 1),
               v = xylem::uniform(be, shape, xylem::f32, gen, -1, 1), dout = xylem::uniform(be, shape, xylem::f32, gen, -1, 1);
  const double sxs = double(S) * double(S) * 4;  // one head's score matrix
  const auto measure = [&](const char* what, const std::function<void()>& f) {
    be.synchronize();
    be.reset_peak_memory();
    const auto before = be.memory().in_use;
    const std::int64_t rss0 = status_kib("VmRSS:");
    reset_peak_rss();
    f();
    be.synchronize();
    const double tensor_peak = double(be.memory().peak - before);
    const double rss_growth = double(status_kib("VmHWM:") - rss0) * 1024;
    const bool efficient = tensor_peak < sxs && rss_growth < sxs;
    std::printf("%s at S=%lld: peak tensor memory +%.1f MiB, peak resident +%.1f MiB; one head's SxS f32: %.1f MiB"
                " -> %s\n",
                what, static_cast<long long>(S), tensor_peak / 1048576, rss_growth / 1048576, sxs / 1048576,
                efficient ? "no SxS buffer" : "AN SxS-SIZED BUFFER");
    std::ostringstream extra;
    extra << ", \"peak_tensor_bytes\": " << tensor_peak << ", \"peak_rss_growth_bytes\": " << rss_growth
          << ", \"sxs_bytes\": " << sxs << ", \"memory_efficient\": " << (efficient ? "true" : "false");
    return extra.str();
  };
  try {
    std::string fwd_extra, fwdbwd_extra;
    if (bench.wants("sdpa_long_fwd"))
      fwd_extra = measure("attention forward", [&] { (void)xylem::nn::scaled_dot_product_attention(be, q, k, v); });
    if (bench.wants("sdpa_long_fwdbwd"))
      fwdbwd_extra = measure("attention forward+backward", [&] {
        const auto f = xylem::nn::scaled_dot_product_attention_forward(be, q, k, v);
        (void)xylem::nn::scaled_dot_product_attention_grad(be, q, k, v, f, dout);
      });
    // Timed too: the forward only (the backward is timed at S = 1024).
    bench.time("sdpa_long_fwd", label, [&] { (void)xylem::nn::scaled_dot_product_attention(be, q, k, v); }, 1,
               fwd_extra);
    if (bench.wants("sdpa_long_fwdbwd")) bench.add({"sdpa_long_fwdbwd", label + " (memory only)", 0, 0, fwdbwd_extra});
  } catch (const xylem::Error& e) {
    std::printf("sdpa_long: skipped: %s\n", e.what());
  }
}

void run_all(const xylem::Backend& be, const Options& o, Bench& bench) {
  namespace nn = xylem::nn;
  namespace blas = xylem::blas;
  using blas::Transpose;
  using xylem::f32;
  const bool q = o.quick;
  xylem::Generator gen(18);
  std::mt19937_64 rng(18);
  const auto uniform = [&](const Layout& s) { return xylem::uniform(be, s, f32, gen, -1, 1); };

  attention_memory(be, o, bench, gen);

  {  // attention, f32 [1, 8, 1024, 64]
    const std::int64_t B = 1, H = q ? 2 : 8, S = q ? 256 : 1024, D = 64;
    const Layout s{B, H, S, D};
    const Tensor qt = uniform(s), k = uniform(s), v = uniform(s), dout = uniform(s);
    const std::string label = dims({B, H, S, D}) + " f32";
    bench.time("sdpa_fwd", label, [&] { (void)nn::scaled_dot_product_attention(be, qt, k, v); });
    bench.time("sdpa_fwdbwd", label, [&] {
      const auto f = nn::scaled_dot_product_attention_forward(be, qt, k, v);
      (void)nn::scaled_dot_product_attention_grad(be, qt, k, v, f, dout);
    });
  }

  {  // LSTM and GRU: 1 layer, input and hidden 256, T 50, batch 32
    const std::int64_t T = q ? 10 : 50, N = 32, I = 256, H = 256;
    const Tensor x = uniform(Layout{T, N, I}), dy = uniform(Layout{T, N, H});
    const std::string label = "T" + std::to_string(T) + " N32 I256 H256 f32";
    xylem::layers::LSTM lstm(be, gen, I, H);
    xylem::layers::GRU gru(be, gen, I, H);
    bench.time("lstm_fwd", label, [&] { (void)lstm.forward(be, x); });
    bench.time("lstm_fwdbwd", label, [&] {
      (void)lstm.forward(be, x);
      (void)lstm.backward(be, dy);
    });
    bench.time("gru_fwd", label, [&] { (void)gru.forward(be, x); });
    bench.time("gru_fwdbwd", label, [&] {
      (void)gru.forward(be, x);
      (void)gru.backward(be, dy);
    });
  }

  {  // embedding: 64x128 rows of a 50000x512 f32 table, and its gradient
    const std::int64_t V = q ? 5000 : 50000, D = q ? 128 : 512, N = q ? 16 : 64, L = 128;
    const Tensor w = uniform(Layout{V, D}), idx = indices(rng, Layout{N, L}, V), dy = uniform(Layout{N, L, D});
    const std::string label = dims({N, L}) + " of " + dims({V, D}) + " f32";
    bench.time("embedding", label, [&] { (void)nn::embedding(be, w, idx); });
    bench.time("embedding_backward", label, [&] { (void)nn::embedding_backward(be, dy, idx, V); });
  }

  {  // one_hot: 4096 i64 indices, 1000 classes, i64
    const std::int64_t n = q ? 1024 : 4096, C = 1000;
    const Tensor idx = indices(rng, Layout{n}, C);
    bench.time("one_hot", dims({n}) + " -> " + dims({n, C}) + " i64", [&] { (void)xylem::one_hot(be, idx, C); });
  }

  {  // gather, scatter, scatter_add along axis 1 of [4096, 1024] f32, 256 indices a row
    const std::int64_t R = q ? 1024 : 4096, C = 1024, K = 256;
    const Tensor x = uniform(Layout{R, C}), idx = indices(rng, Layout{R, K}, C), src = uniform(Layout{R, K});
    const std::string label = dims({R, C}) + " f32, index " + dims({R, K}) + " axis 1";
    bench.time("gather", label, [&] { (void)xylem::gather(be, x, 1, idx); });
    bench.time("scatter", label, [&] { (void)xylem::scatter(be, x, 1, idx, src); });
    bench.time("scatter_add", label, [&] { (void)xylem::scatter_add(be, x, 1, idx, src); });
  }

  {  // index_select: 8192 rows of [16384, 512] f32
    const std::int64_t R = q ? 4096 : 16384, C = 512, K = R / 2;
    const Tensor x = uniform(Layout{R, C}), idx = indices(rng, Layout{K}, R);
    bench.time("index_select", dims({K}) + " rows of " + dims({R, C}) + " f32",
               [&] { (void)xylem::index_select(be, x, 0, idx); });
  }

  {  // concatenate (axis 1), stack (new axis 0): 4 x [2048, 512] f32; split: 8 views
    const std::int64_t R = q ? 512 : 2048, C = 512;
    const std::vector<Tensor> parts{uniform(Layout{R, C}), uniform(Layout{R, C}), uniform(Layout{R, C}),
                                    uniform(Layout{R, C})};
    const std::string label = "4 x " + dims({R, C}) + " f32";
    bench.time("concatenate", label + " axis 1", [&] { (void)xylem::concatenate(be, parts, 1); });
    bench.time("stack", label + " axis 0", [&] { (void)xylem::stack(be, parts, 0); });
    const Tensor big = uniform(Layout{8 * R, C});
    const std::vector<std::int64_t> sizes(8, R);
    bench.time("split", dims({8 * R, C}) + " f32 into 8 views", [&] { (void)xylem::split(big, sizes, 0); }, 1000);
  }

  {  // pad: [8, 64, 128, 128] f32 by 1 on H and W
    const std::int64_t N = q ? 2 : 8, C = 64, H = 128, W = 128;
    const Tensor x = uniform(Layout{N, C, H, W});
    const std::vector<std::int64_t> pads{1, 1, 1, 1};
    bench.time("pad", dims({N, C, H, W}) + " f32, (1,1,1,1)", [&] { (void)xylem::pad(be, x, pads); });
  }

  {  // permute NCHW -> NHWC of [16, 64, 64, 64] f32; 2-D transpose of [2048, 4096] f32
    const std::int64_t N = q ? 4 : 16;
    const Tensor x = uniform(Layout{N, 64, 64, 64});
    const std::vector<int> order{0, 2, 3, 1};
    bench.time("permute", dims({N, 64, 64, 64}) + " f32 (0,2,3,1)", [&] { (void)xylem::permute(be, x, order); });
    const std::int64_t R = q ? 1024 : 2048, C = 4096;
    const Tensor m = uniform(Layout{R, C});
    bench.time("transpose", dims({R, C}) + " f32", [&] { (void)xylem::transpose(be, m, 0, 1); });
  }

  {  // group_norm (32 groups) and instance_norm of [32, 256, 32, 32] f32; rms_norm of [8192, 1024] f32
    const std::int64_t N = q ? 8 : 32, C = 256, HW = 32;
    const Tensor x = uniform(Layout{N, C, HW, HW}), w = uniform(Layout{C}), bias = uniform(Layout{C});
    const std::string label = dims({N, C, HW, HW}) + " f32";
    bench.time("group_norm", label + ", 32 groups", [&] { (void)nn::group_norm(be, x, 32, w, bias, 1e-5); });
    bench.time("instance_norm", label, [&] { (void)nn::instance_norm(be, x, w, bias, 1e-5); });
    const std::int64_t R = q ? 2048 : 8192, D = 1024;
    const Tensor r = uniform(Layout{R, D}), rw = uniform(Layout{D});
    bench.time("rms_norm", dims({R, D}) + " f32", [&] { (void)nn::rms_norm(be, r, 1, rw, 1e-6); });
  }

  {  // BLAS: ger 4096^2, syrk [2048, 1024], trsm 2048 x 512, geam 2048^2 (b transposed), iamin 4M
    const std::int64_t n = q ? 1024 : 4096;
    const Tensor x = uniform(Layout{n}), y = uniform(Layout{n});
    Tensor a = uniform(Layout{n, n});
    bench.time("ger", dims({n, n}) + " f32", [&] { blas::ger(be, 1e-3, x, y, a); });

    const std::int64_t m = q ? 512 : 2048, k = m / 2;
    const Tensor sa = uniform(Layout{m, k});
    Tensor c = xylem::zeros(be, Layout{m, m}, f32);
    bench.time("syrk", "a " + dims({m, k}) + " f32, c = a a^T upper",
               [&] { blas::syrk(be, blas::Uplo::upper, Transpose::no, 1, sa, 0, c); });

    // A well-conditioned lower triangle: small off-diagonal values, ones on the diagonal.
    std::vector<float> tri(std::size_t(m * m), 0.f);
    std::uniform_real_distribution<float> u(-1, 1);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j <= i; ++j) tri[std::size_t(i * m + j)] = i == j ? 1.f : u(rng) / float(m);
    const Tensor ta = Tensor::from(tri, Layout{m, m}), rhs = uniform(Layout{m, 512});
    Tensor sol(Layout{m, 512}, f32);
    const Tensor rhs_flat = rhs.reshape({m * 512});
    Tensor sol_flat = sol.reshape({m * 512});
    bench.time("trsm", "a " + dims({m, m}) + " lower, b " + dims({m, 512}) + " f32", [&] {
      blas::copy(be, rhs_flat, sol_flat);  // trsm solves in place: each call starts from the same b
      blas::trsm(be, blas::Side::left, blas::Uplo::lower, Transpose::no, blas::Diag::non_unit, 1, ta, sol);
    });

    const Tensor ga = uniform(Layout{m, m}), gb = uniform(Layout{m, m});
    Tensor gc(Layout{m, m}, f32);
    bench.time("geam", dims({m, m}) + " f32, c = a + 0.5 b^T",
               [&] { blas::geam(be, Transpose::no, Transpose::yes, 1, ga, 0.5, gb, gc); });

    const std::int64_t len = q ? (1 << 20) : (1 << 22);
    const Tensor v = uniform(Layout{len});
    Tensor idx(Layout{1}, xylem::i64);
    bench.time("iamin", dims({len}) + " f32", [&] { blas::iamin(be, v, idx); });
  }

  {  // batched gemm: 64 x [256, 256] @ [256, 256] f32, slices of one batch
    const std::int64_t batch = q ? 16 : 64, n = 256;
    const Tensor a = uniform(Layout{batch, n, n}), b = uniform(Layout{batch, n, n});
    const Tensor c = xylem::zeros(be, Layout{batch, n, n}, f32);
    std::vector<Tensor> as, bs, cs;
    for (std::int64_t i = 0; i < batch; ++i) {
      as.push_back(a.slice(0, i, i + 1).reshape({n, n}));
      bs.push_back(b.slice(0, i, i + 1).reshape({n, n}));
      cs.push_back(c.slice(0, i, i + 1).reshape({n, n}));
    }
    bench.time("gemm_batched", std::to_string(batch) + " x " + dims({n, n}) + " f32",
               [&] { blas::gemm_batched(be, Transpose::no, Transpose::no, 1, as, bs, 0, cs); });
  }

  {  // FFT: c64 1-D 2^20, c64 2-D 2048^2, f32 rfft of 1024 rows of 4096
    const std::int64_t n1 = q ? (1 << 18) : (1 << 20), n2 = q ? 512 : 2048, rows = q ? 256 : 1024;
    const Tensor x1 = complex_uniform(rng, Layout{n1}), x2 = complex_uniform(rng, Layout{n2, n2});
    const Tensor xr = uniform(Layout{rows, 4096});
    bench.time("fft_c64", dims({n1}) + " c64", [&] { (void)xylem::fft::fft(be, x1); });
    bench.time("fft2_c64", dims({n2, n2}) + " c64", [&] { (void)xylem::fft::fft2(be, x2); });
    bench.time("rfft_f32", dims({rows, 4096}) + " f32", [&] { (void)xylem::fft::rfft(be, xr); });
  }

  {  // activations: 8M f32 into an existing y
    const std::int64_t n = q ? (1 << 21) : (1 << 23);
    const Tensor x = uniform(Layout{n});
    Tensor y(Layout{n}, f32);
    bench.time("silu", dims({n}) + " f32", [&] { nn::silu(be, x, y); });
    bench.time("gelu_tanh", dims({n}) + " f32", [&] { nn::gelu_tanh(be, x, y); });
  }

  {  // losses: cross_entropy on [1024, 8192] f32 logits (10% ignored), kl_div [2048, 4096] batchmean
    const std::int64_t N = q ? 256 : 1024, C = 8192;
    const Tensor logits = uniform(Layout{N, C}), target = indices(rng, Layout{N}, C, 0.1);
    const std::string label = dims({N, C}) + " f32, 10% ignore_index";
    bench.time("cross_entropy", label, [&] { (void)nn::cross_entropy(be, logits, target); });
    bench.time("cross_entropy_fwdbwd", label, [&] {
      (void)nn::cross_entropy(be, logits, target);
      (void)nn::cross_entropy_grad(be, logits, target);
    });
    const std::int64_t R = q ? 512 : 2048, K = 4096;
    Tensor input(Layout{R, K}, f32), prob(Layout{R, K}, f32);
    nn::log_softmax(be, uniform(Layout{R, K}), 1, input);
    nn::softmax(be, uniform(Layout{R, K}), 1, prob);
    bench.time("kl_div", dims({R, K}) + " f32 batchmean",
               [&] { (void)nn::kl_div(be, input, prob, nn::LossReduction::batchmean); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (o.threads > 0) ::setenv("XYLEM_NATIVE_THREADS", std::to_string(o.threads).c_str(), 1);
  const char* threads_env = std::getenv("XYLEM_NATIVE_THREADS");
  const std::string threads = threads_env ? threads_env : "all";
  try {
    const xylem::Backend be = open_backend(o.backend);
    std::printf("xylem %s host ops (op set 2): %s, XYLEM_NATIVE_THREADS=%s, %s sizes, median of up to %d\n",
                be.framework().c_str(), be.hardware().name.c_str(), threads.c_str(), o.quick ? "quick" : "full",
                o.reps);
    std::printf("%-22s %-40s %13s\n", "op", "shape", "per call");
    Bench bench(o, be,
                ", \"library\": \"xylem\", \"backend\": \"" + be.framework() + "\", \"threads\": \"" + threads +
                    "\", \"quick\": " + (o.quick ? "true" : "false"));
    run_all(be, o, bench);
    for (const std::string& line : bench.lines()) std::cout << line << "\n";
  } catch (const std::exception& e) {
    std::cerr << "xylem_bench_host_ops2: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
