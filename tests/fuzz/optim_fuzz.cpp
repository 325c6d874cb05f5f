// libFuzzer target: the optimizer updates (optim::sgd_step, adam_step) on
// the native backend. The input picks the family, then dims, dtypes, views,
// aliasing and settings (ops_optim.hpp); each call must throw xylem::Error
// with nothing changed, or match the float64 reference, else the fuzzer
// aborts with the call described (run.hpp). See CMakeLists.txt for running it.
#include "families.hpp"
#include "ops_optim.hpp"

namespace {

constexpr xylem_fuzz::Family kFamilies[] = {xylem_fuzz::fuzz_sgd, xylem_fuzz::fuzz_adam};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  xylem_fuzz::fuzz_families(data, size, kFamilies);
  return 0;
}
