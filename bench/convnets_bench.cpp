// xylem_bench_convnets: the reference networks of the convnet benchmarks
// (AlexNet, Overfeat fast, VGG-A; xylem::models) trained step by step on
// one backend: forward, and forward plus backward, in training mode
// (dropout on), each the median over --reps runs after --warmup runs, timed
// on the wall clock with the backend synchronised after each run; and the
// peak of tensor memory over the forward+backward runs (Backend::memory()).
//
//   xylem_bench_convnets [--backend native|opencl|cuda|best] [--batch N]
//                        [--dtype f32|tf32|bf16] [--nets alexnet,vgg_a]
//                        [--reps N] [--warmup N] [--layers on] [--json FILE]
//
// On CUDA, convolutions run in cuDNN's benchmark mode (XYLEM_CUDA_CUDNN_FIND=1
// unless set), as the PyTorch peer's cudnn.benchmark.
//
// dtype: f32 is full f32 (on CUDA: XYLEM_CUDA_TF32=0 and
// XYLEM_CUDA_CONV_TF32=0); tf32 lets CUDA's gemm and convolutions use TF32
// tensor cores (both switches on; other frameworks have no such switch and
// refuse it); bf16 makes the parameters and the input bf16. A network whose
// ops the backend cannot run in that dtype gets a row saying which, with no
// figures.
//
// The backward computes the input's gradient too (Sequential::backward
// always does); the PyTorch peer (bench/torch_convnets.py) is told to do the
// same. Prints a table, then one JSON line per network (also written to
// --json FILE), the schema scripts/convnets_compare.py reads.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bench_common.hpp"
#include "xylem/xylem.hpp"

namespace {

using xylem_bench::Clock;
using xylem_bench::median;
using xylem_bench::seconds_since;

struct Options : xylem_bench::CommonOptions {
  std::string backend = "best";
  std::string dtype = "f32";
  std::string nets;  // comma-separated; empty: all
  std::int64_t batch = 0;  // 0: each network's benchmark batch
  int warmup = 2;
  bool layers = false;  // --layers on: each layer's forward and backward too
  Options() { reps = 10; }
};

constexpr std::string_view kUsage =
    "xylem_bench_convnets [--backend native|opencl|cuda|best] [--batch N] [--dtype f32|tf32|bf16] "
    "[--nets alexnet,overfeat_fast,vgg_a] [--reps N] [--warmup N] [--layers on] [--json FILE]";

Options parse(int argc, char** argv) {
  Options o;
  xylem_bench::parse_options(argc, argv, kUsage, 1, o, [&](std::string_view a, const char* value) {
    if (value == nullptr) return 0;
    if (a == "--backend") o.backend = value;
    else if (a == "--dtype") o.dtype = value;
    else if (a == "--nets") o.nets = value;
    else if (a == "--batch") o.batch = std::atoll(value);
    else if (a == "--warmup") o.warmup = std::atoi(value);
    else if (a == "--layers") o.layers = value == std::string_view("1") || value == std::string_view("on");
    else return 0;
    return 2;
  });
  if (o.dtype != "f32" && o.dtype != "tf32" && o.dtype != "bf16") {
    std::cerr << "--dtype: f32, tf32 or bf16, not " << o.dtype << "\n";
    std::exit(2);
  }
  return o;
}

bool wanted(const Options& o, std::string_view net) {
  if (o.nets.empty()) return true;
  std::stringstream list(o.nets);
  for (std::string item; std::getline(list, item, ',');)
    if (item == net) return true;
  return false;
}

// The CUDA plugin reads both switches at each call: set before any work.
void set_tf32(bool on) {
  setenv("XYLEM_CUDA_TF32", on ? "1" : "0", 1);
  setenv("XYLEM_CUDA_CONV_TF32", on ? "1" : "0", 1);
}

struct Row {
  std::string net;
  std::int64_t batch = 0;
  std::int64_t params = 0;
  double fwd_ms = 0, fwd_bwd_ms = 0;
  std::uint64_t peak_bytes = 0;
  std::string error;  // why there are no figures
};

// Milliseconds per run of f: warm-up runs, then the median of reps, each
// run ended by synchronising the backend.
template <class F>
double median_ms(const xylem::Backend& b, const Options& o, F&& f) {
  for (int i = 0; i < o.warmup; ++i) {
    f();
    b.synchronize();
  }
  std::vector<double> t;
  for (int r = 0; r < o.reps; ++r) {
    const auto t0 = Clock::now();
    f();
    b.synchronize();
    t.push_back(seconds_since(t0) * 1e3);
  }
  return median(t);
}

// Each layer alone, on the input the layers before it give: its forward,
// and its backward after an untimed forward (backward releases what forward
// saved). Where a whole network loses time to a peer, this says which layer.
void print_layers(const xylem::Backend& b, const Options& o, std::string_view net_name,
                  xylem::layers::Sequential& net, const xylem::Tensor& x) {
  using namespace xylem;
  Generator gen(3);
  std::printf("\n%s, per layer (ms, medians of %d)\n%-4s %-50s %10s %10s\n", std::string(net_name).c_str(), o.reps,
              "#", "layer", "forward", "backward");
  Tensor in = x;
  for (std::size_t i = 0; i < net.size(); ++i) {
    layers::Layer& layer = net[i];
    const double fwd = median_ms(b, o, [&] { (void)layer.forward(b, in); });
    const Tensor out = layer.forward(b, in);
    const Tensor dy = cast(b, uniform(b, out.layout(), f32, gen, -1, 1), out.dtype());
    (void)layer.backward(b, dy);
    std::vector<double> t;
    for (int r = 0; r < o.warmup + o.reps; ++r) {
      (void)layer.forward(b, in);
      b.synchronize();
      const auto t0 = Clock::now();
      (void)layer.backward(b, dy);
      b.synchronize();
      if (r >= o.warmup) t.push_back(seconds_since(t0) * 1e3);
    }
    layer.zero_grad();
    std::printf("%-4zu %-50s %10.3f %10.3f\n", i, layer.describe().c_str(), fwd, median(t));
    in = out;
  }
}

Row measure(const xylem::Backend& b, const Options& o, const xylem::models::Reference& ref, xylem::DType dtype) {
  using namespace xylem;
  Row row{std::string(ref.name), o.batch > 0 ? o.batch : ref.batch};
  std::cerr << ref.name << ", batch " << row.batch << ": building\n";
  layers::Sequential net = ref.make(b, layers::ParameterOptions{.dtype = dtype}, 1);
  for (const layers::Parameter* p : net.parameters()) row.params += p->value.numel();
  Generator gen(2);
  // Drawn in f32 (the generator draws no bf16), then rounded.
  const Tensor x = cast(b, uniform(b, ref.input(row.batch), f32, gen, -1, 1), dtype);
  const Tensor dy = cast(b, uniform(b, net.output_shape(x.layout()), f32, gen, -1, 1), dtype);
  std::cerr << ref.name << ": forward\n";
  row.fwd_ms = median_ms(b, o, [&] { (void)net.forward(b, x); });
  std::cerr << ref.name << ": forward + backward\n";
  // One step first, so that the peak starts where each timed step starts:
  // no saved activations (backward released them), no gradients.
  const auto step = [&] {
    net.zero_grad();
    (void)net.forward(b, x);
    (void)net.backward(b, dy);
  };
  step();
  net.zero_grad();
  b.synchronize();
  b.reset_peak_memory();
  row.fwd_bwd_ms = median_ms(b, o, step);
  row.peak_bytes = b.memory().peak;
  if (o.layers) print_layers(b, o, ref.name, net, x);
  return row;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string json_line(const Row& r, const xylem::Backend& b, const Options& o) {
  std::ostringstream j;
  j.precision(6);
  j << "{\"framework\": \"xylem\", \"net\": " << json_string(r.net) << ", \"backend\": " << json_string(b.id())
    << ", \"device\": " << json_string(b.hardware().name) << ", \"dtype\": " << json_string(o.dtype)
    << ", \"batch\": " << r.batch << ", \"reps\": " << o.reps << ", \"params\": " << r.params;
  if (r.error.empty())
    j << ", \"fwd_ms\": " << r.fwd_ms << ", \"fwd_bwd_ms\": " << r.fwd_bwd_ms << ", \"peak_bytes\": " << r.peak_bytes;
  else
    j << ", \"error\": " << json_string(r.error);
  return j.str() + "}";
}

}  // namespace

// cuDNN's benchmark mode, as the PyTorch peer runs (cudnn.benchmark): each
// convolution's engines are timed at first use and the fastest kept. Left
// alone where the caller set it.
void set_cudnn_find() { setenv("XYLEM_CUDA_CUDNN_FIND", "1", 0); }

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  set_tf32(o.dtype == "tf32");
  set_cudnn_find();
  const xylem::Backend b = o.backend == "best" ? xylem::Backend::best() : xylem::Backend::open(o.backend);
  if (o.dtype == "tf32" && b.framework() != "cuda") {
    std::cerr << "--dtype tf32: only the CUDA framework has a TF32 switch (" << b << " computes f32 in full f32)\n";
    return 2;
  }
  const xylem::DType dtype = o.dtype == "bf16" ? xylem::bf16 : xylem::f32;

  std::vector<Row> rows;
  for (const auto& ref : xylem::models::references()) {
    if (!wanted(o, ref.name)) continue;
    try {
      rows.push_back(measure(b, o, ref, dtype));
    } catch (const xylem::Error& e) {
      // Unsupported ops (bf16 on a framework lacking it) and out of memory
      // end this network only, with the reason in its row.
      std::cerr << ref.name << ": " << e.what() << "\n";
      Row row{std::string(ref.name), o.batch > 0 ? o.batch : ref.batch};
      row.error = std::string(name(e.code())) + ": " + e.message();
      rows.push_back(row);
    }
  }

  std::printf("\nxylem %s (%s), %s, medians of %d runs after %d warm-up\n", b.id().c_str(),
              b.hardware().name.c_str(), o.dtype.c_str(), o.reps, o.warmup);
  std::printf("%-14s %6s %12s %14s %12s\n", "network", "batch", "forward ms", "fwd+bwd ms", "peak MiB");
  for (const Row& r : rows) {
    if (r.error.empty())
      std::printf("%-14s %6lld %12.2f %14.2f %12.1f\n", r.net.c_str(), static_cast<long long>(r.batch), r.fwd_ms,
                  r.fwd_bwd_ms, double(r.peak_bytes) / double(1 << 20));
    else
      std::printf("%-14s %6lld  not run: %s\n", r.net.c_str(), static_cast<long long>(r.batch), r.error.c_str());
  }
  std::ofstream json;
  if (!o.json.empty()) json = xylem_bench::open_json(o.json);
  for (const Row& r : rows) {
    const std::string line = json_line(r, b, o);
    std::printf("%s\n", line.c_str());
    if (json.is_open()) json << line << "\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "xylem_bench_convnets: " << e.what() << "\n";
  return 1;
}
