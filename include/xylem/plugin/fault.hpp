#pragma once
// Fault points: where a framework asks the test-only fault switch whether
// this call should fail. Each framework calls should_fail() at the top of
// every device allocation, kernel/program build, transfer and vendor
// library call, and on `true` raises exactly the Error it raises for a real
// failure of that kind (out_of_memory for an allocation, compile_failed for
// a build, device_lost or internal for a transfer or a library call).
//
// The switch is armed by xylem::testing::FaultInjection or by the
// environment (XYLEM_FAULT, read once): costs one relaxed atomic load when
// nothing is armed.
#include <string_view>

#include "xylem/testing.hpp"

namespace xylem::plugin {

using testing::FaultSite;

// `framework` is the caller's framework name ("native", "opencl", "cuda").
[[nodiscard]] bool should_fail(FaultSite site, std::string_view framework) noexcept;

// Called by a framework's allocator when an allocation failed and it has
// flushed its cache and is about to retry (once): counted, while a
// FaultInjection is armed, for its retries().
void note_allocation_retry(std::string_view framework) noexcept;

}  // namespace xylem::plugin
