// `xylem tune`: runs a standard list of shapes on every device with tuning
// on, so each op with choices (OpenCL gemm's kernel candidates, cuDNN's
// convolution algorithms, native FFT's FFTW plans) measures them and stores
// the winner in the tuning cache (xylem/plugin/tune.hpp; FFTW's wisdom
// beside it); a progress bar on a terminal, plain lines otherwise; ends
// with what it stored.
#include <chrono>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "progress.hpp"
#include "xylem/plugin/tune.hpp"
#include "xylem/xylem.hpp"

namespace xylem::cli {
namespace {

constexpr std::string_view kHelp = R"(usage: xylem tune [--framework NAME]

Measures the choices of the ops that have them (OpenCL gemm's kernel tiles
and work-group sizes, cuDNN's convolution algorithms, native FFT's FFTW
plans) on a standard list of shapes, on every device of every framework (or
of NAME alone), and stores the fastest in the tuning cache (FFTW's plans as
its wisdom, in fftw-wisdom-*.txt beside it). Later processes use the stored choice for
every shape of the same class; setting XYLEM_TUNE=1 instead measures each
new shape class on its first use. Shows a progress bar on a terminal, one
line per shape otherwise, and ends with the entries it stored.

environment:
  XYLEM_CACHE_DIR   where the tuning cache lives (default: ~/.cache/xylem)
)";

struct Shape {
  std::string label;
  std::function<void(const Backend&)> run;  // one call, read back
  bool native = false;                      // native's choices (FFTW's plans) rather than the others'
};

Tensor random(const Backend& b, const Layout& shape, DType dtype, Generator& gen) {
  return uniform(b, shape, dtype, gen, -1, 1);
}

Shape gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  return {"gemm " + std::string(name(dtype)) + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
              std::to_string(k),
          [=](const Backend& b) {
            Generator gen(1);
            const Tensor a = random(b, Layout{m, k}, dtype, gen), bm = random(b, Layout{k, n}, dtype, gen);
            Tensor c(Layout{m, n}, dtype);
            blas::gemm(b, blas::Transpose::no, blas::Transpose::no, 1.0, a, bm, 0.0, c);
            b.synchronize();
          }};
}

Shape conv_shape(std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t k, std::int64_t r) {
  return {"conv2d f32 N" + std::to_string(n) + " C" + std::to_string(c) + " " + std::to_string(hw) + "x" +
              std::to_string(hw) + " K" + std::to_string(k) + " " + std::to_string(r) + "x" + std::to_string(r),
          [=](const Backend& b) {
            Generator gen(2);
            const Tensor x = random(b, Layout{n, c, hw, hw}, f32, gen), w = random(b, Layout{k, c, r, r}, f32, gen);
            const int pad = static_cast<int>(r / 2);
            (void)nn::conv2d(b, x, w, nn::Conv2d{.pad_h = pad, .pad_w = pad});
            b.synchronize();
          }};
}

// A 1-D transform of n points, batch of them (c64 through fft, or f32 through rfft).
Shape fft_shape(std::int64_t batch, std::int64_t n, bool real) {
  return {std::string(real ? "rfft f32 " : "fft c64 ") + std::to_string(batch) + "x" + std::to_string(n),
          [=](const Backend& b) {
            // FFTW plans on buffers of its own: the values do not matter.
            const Tensor x = real ? Tensor::from(std::vector<float>(std::size_t(batch * n), 0.5f), Layout{batch, n})
                                  : Tensor::from(std::vector<std::complex<float>>(std::size_t(batch * n), {0.5f, -0.25f}),
                                                 Layout{batch, n});
            (void)(real ? fft::rfft(b, x) : fft::fft(b, x)).to_doubles();
          },
          true};
}

// The shapes: square gemms of the sizes networks and benchmarks use, a tall
// one, and the convolutions of a small CNN and of a ResNet stage; for
// native, 1-D transforms (its 2-D ones are always measured).
std::vector<Shape> standard_shapes() {
  return {gemm_shape(256, 256, 256, f32),  gemm_shape(512, 512, 512, f32),     gemm_shape(1024, 1024, 1024, f32),
          gemm_shape(2048, 2048, 2048, f32), gemm_shape(4096, 256, 1024, f32), gemm_shape(512, 512, 512, f64),
          conv_shape(64, 32, 28, 64, 3),   conv_shape(32, 64, 56, 64, 3),      fft_shape(1, 1 << 20, false),
          fft_shape(1024, 4096, true)};
}

bool same_entry(const plugin::tune::Entry& a, const plugin::tune::Entry& b) {
  return a.key.device == b.key.device && a.key.driver == b.key.driver && a.key.op == b.key.op &&
         a.key.shape == b.key.shape && a.key.candidates == b.key.candidates && a.winner.choice == b.winner.choice &&
         a.winner.seconds == b.winner.seconds;
}

}  // namespace

int tune(std::span<const std::string_view> args) {
  if (wants_help(args, kHelp)) return 0;
  std::string only;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--framework" && i + 1 < args.size()) {
      only = std::string(args[++i]);
      continue;
    }
    std::cerr << "xylem tune: unknown argument '" << args[i] << "'\n" << kHelp;
    return 1;
  }
  std::vector<Backend> backends;
  for (const auto& framework : Backend::frameworks()) {
    if (!framework.available || (!only.empty() && framework.name != only)) continue;
    for (std::size_t i = 0; i < framework.hardware.size(); ++i)
      backends.emplace_back(BackendConfig{.framework = framework.name, .device = static_cast<int>(i)});
  }
  if (backends.empty()) {
    std::cout << "tune: no " << (only.empty() ? "framework with choices" : only) << " device here; nothing to do\n";
    return only.empty() ? 0 : 2;
  }
  const auto before = plugin::tune::entries();
  plugin::tune::set_enabled(true);
  const std::vector<Shape> shapes = standard_shapes();
  const auto applies = [](const Backend& b, const Shape& shape) { return shape.native == (b.framework() == "native"); };
  ProgressBar bar(std::cout, ProgressBar::stdout_is_terminal(), "tune");
  std::int64_t total = 0;
  for (const Backend& b : backends)
    for (const Shape& shape : shapes) total += applies(b, shape) ? 1 : 0;
  std::int64_t done = 0;
  int status = 0;
  for (const Backend& b : backends) {
    for (const Shape& shape : shapes) {
      if (!applies(b, shape)) continue;
      const auto start = std::chrono::steady_clock::now();
      std::string note;
      try {
        shape.run(b);
      } catch (const Error& e) {
        note = std::string(" failed: ") + e.what();
        status = 2;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char line[160];
      std::snprintf(line, sizeof line, " (%.1f s)", seconds);
      bar.update(++done, total, b.id() + " " + shape.label + line + note);
    }
  }
  const auto path = plugin::tune::path();
  std::cout << "tune: cache " << (path.empty() ? "(none: set XYLEM_CACHE_DIR)" : path.string()) << "\n";
  int stored = 0;
  for (const auto& entry : plugin::tune::entries()) {
    bool known = false;
    for (const auto& old : before) known = known || same_entry(old, entry);
    if (known) continue;
    ++stored;
    std::printf("tune: %s | %s | %s -> %s (%.3f ms)\n", entry.key.device.c_str(), entry.key.op.c_str(),
                entry.key.shape.c_str(), entry.winner.choice.c_str(), entry.winner.seconds * 1e3);
  }
  std::printf("tune: %d entries stored\n", stored);
  for (const char* precision : {"f32", "f64"}) {
    const auto wisdom = plugin::tune::cache_directory() / (std::string("fftw-wisdom-") + precision + ".txt");
    std::error_code ec;
    if (!plugin::tune::cache_directory().empty() && std::filesystem::exists(wisdom, ec))
      std::printf("tune: native FFT plans (FFTW's wisdom) in %s\n", wisdom.c_str());
  }
  return status;
}

}  // namespace xylem::cli
