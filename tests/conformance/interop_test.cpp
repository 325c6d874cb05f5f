// Interop (xylem/interop.hpp) on every framework: host memory wrapped on
// native and used by the framework under test, host writes announced with
// mark_modified reaching it, and the framework's own memory (a device
// pointer, a cl_mem) handed out by data_pointer and wrapped again as a
// second tensor, whose writes the first sees once marked.
#include <algorithm>
#include <atomic>
#include <vector>

#include "conformance/conformance.hpp"
#include "xylem/interop.hpp"
#include "xylem/math.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
namespace interop = xylem::interop;

class Interop : public Conformance {};

std::vector<float> negated(std::vector<float> v) {
  for (float& x : v) x = -x;
  return v;
}

TEST_P(Interop, host_memory_used_on_the_device) {
  auto host = xylem_test::random_vector<float>(rng, 1000, -1, 1);
  std::atomic<int> releases{0};
  {
    Tensor t = interop::wrap(Backend::native(), host.data(), Layout{1000}, DType::f32, [&] { releases.fetch_add(1); });
    EXPECT_EQ(xylem::neg(backend, t).to_vector<float>(), negated(host));
    interop::synchronize(t, Backend::native());  // the device's upload has read it
    const auto fresh = xylem_test::random_vector<float>(rng, 1000, -1, 1);
    std::copy(fresh.begin(), fresh.end(), host.begin());  // into the same memory
    interop::mark_modified(t, Backend::native());
    EXPECT_EQ(xylem::neg(backend, t).to_vector<float>(), negated(host));
    const auto before = host;
    xylem::neg(backend, t, t);  // written on the device, then back into the memory
    EXPECT_EQ(interop::data_pointer(t, Backend::native()), host.data());
    interop::synchronize(t, Backend::native());
    EXPECT_EQ(host, negated(before));
  }
  Backend::native().synchronize();
  backend.synchronize();
  EXPECT_EQ(releases.load(), 1);
}

TEST_P(Interop, device_memory_wrapped_again) {
  const auto values = xylem_test::random_vector<float>(rng, 257, -1, 1);
  Tensor a = xylem::neg(backend, Tensor::from(values));  // current on the device only
  void* memory = interop::data_pointer(a, backend);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(interop::data_pointer(a, backend), memory) << "the address must stay while the tensor lives";
  std::atomic<int> releases{0};
  {
    Tensor w = interop::wrap(backend, memory, Layout{257}, DType::f32, [&] { releases.fetch_add(1); });
    EXPECT_EQ(interop::data_pointer(w, backend), memory);
    EXPECT_EQ(w.to_vector<float>(), negated(values));
    xylem::neg(backend, w, w);  // writes a's memory behind a's back
    interop::synchronize(w, backend);
  }
  backend.synchronize();
  EXPECT_EQ(releases.load(), 1);
  // Told that its device copy changed, a reads the new data from it.
  interop::mark_modified(a, backend);
  EXPECT_EQ(a.to_vector<float>(), values);
}

TEST_P(Interop, native_queue) {
  if (target.framework == "native" || target.framework == "mirror") {
    XY_EXPECT_ERROR(ErrorCode::unsupported, (void)interop::native_queue(backend));
  } else {
    EXPECT_NE(interop::native_queue(backend), nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Interop, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
