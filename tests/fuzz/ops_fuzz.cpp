// libFuzzer target: every op's argument checking and results on the native
// backend. The input picks an op family, then shapes, dtypes, views,
// aliasing and parameters (args.hpp); each call must throw xylem::Error or
// match the float64 reference (reference.hpp), else the fuzzer aborts with
// the call described (run.hpp). See CMakeLists.txt for running it.
#include "families.hpp"
#include "ops_nn.hpp"

namespace {

constexpr xylem_fuzz::Family kFamilies[] = {
    xylem_fuzz::fuzz_unary,   xylem_fuzz::fuzz_binary, xylem_fuzz::fuzz_where,  xylem_fuzz::fuzz_cast,
    xylem_fuzz::fuzz_reduce,  xylem_fuzz::fuzz_fill,   xylem_fuzz::fuzz_softmax, xylem_fuzz::fuzz_gemm,
    xylem_fuzz::fuzz_gemv,    xylem_fuzz::fuzz_blas1,  xylem_fuzz::fuzz_conv2d, xylem_fuzz::fuzz_pool,
    xylem_fuzz::fuzz_layer_norm,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xylem_fuzz::fuzz_families(data, size, kFamilies);
  return 0;
}
