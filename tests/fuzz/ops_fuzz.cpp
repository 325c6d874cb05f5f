// libFuzzer target: every op's argument checking and results on the native
// backend. The input picks an op family, then shapes, dtypes, views,
// aliasing and parameters (args.hpp); each call must throw xylem::Error or
// match the float64 reference (reference.hpp), else the fuzzer aborts with
// the call described (run.hpp). See CMakeLists.txt for running it.
#include <fuzzer/FuzzedDataProvider.h>

#include "ops_nn.hpp"

namespace {

using Family = void (*)(xylem_fuzz::Ctx&);
constexpr Family kFamilies[] = {
    xylem_fuzz::fuzz_unary,   xylem_fuzz::fuzz_binary, xylem_fuzz::fuzz_where,  xylem_fuzz::fuzz_cast,
    xylem_fuzz::fuzz_reduce,  xylem_fuzz::fuzz_fill,   xylem_fuzz::fuzz_softmax, xylem_fuzz::fuzz_gemm,
    xylem_fuzz::fuzz_gemv,    xylem_fuzz::fuzz_blas1,  xylem_fuzz::fuzz_conv2d, xylem_fuzz::fuzz_pool,
    xylem_fuzz::fuzz_layer_norm,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const xylem::Backend backend = xylem::Backend::native();
  FuzzedDataProvider in(data, size);
  const auto family = in.ConsumeIntegral<std::uint8_t>() % std::size(kFamilies);
  const auto seed = in.ConsumeIntegral<std::uint32_t>();
  xylem_fuzz::Picker picker([&in](std::uint32_t n) { return in.ConsumeIntegralInRange<std::uint32_t>(0, n - 1); },
                            seed);
  xylem_fuzz::Ctx ctx{backend, picker};
  kFamilies[family](ctx);
  return 0;
}
