// The test-only fault switch (xylem/testing.hpp, xylem/plugin/fault.hpp).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem {
namespace {

struct Armed {
  std::atomic<bool> on{false};
  std::mutex mutex;  // guards the fields below while armed
  testing::FaultSite site = testing::FaultSite::allocation;
  std::string framework;
  std::uint64_t first = 0;  // the first failing call, 1-based
  std::uint64_t count = 0;  // failing calls from there
  std::uint64_t calls = 0;
  std::uint64_t failures = 0;
  std::uint64_t retries = 0;
};

Armed& armed() {
  static Armed state;
  return state;
}

void arm(testing::FaultSite site, std::uint64_t nth, std::string_view framework, std::uint64_t count) {
  Armed& a = armed();
  std::lock_guard lock(a.mutex);
  a.site = site;
  a.framework = std::string(framework);
  a.first = nth;
  a.count = count;
  a.calls = 0;
  a.failures = 0;
  a.retries = 0;
  a.on.store(true, std::memory_order_release);
}

bool parse_site(std::string_view text, testing::FaultSite& site) {
  for (auto s : {testing::FaultSite::allocation, testing::FaultSite::kernel_build, testing::FaultSite::transfer,
                 testing::FaultSite::library_call}) {
    if (testing::name(s) == text) {
      site = s;
      return true;
    }
  }
  return false;
}

// XYLEM_FAULT=site:nth[:count[:framework]], read at the first fault point.
void arm_from_environment() {
  const char* env = std::getenv("XYLEM_FAULT");
  if (env == nullptr || *env == '\0') return;
  std::string text(env);
  std::string fields[4];
  int n = 0;
  for (std::size_t start = 0; n < 4;) {
    const auto colon = text.find(':', start);
    fields[n++] = text.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  testing::FaultSite site{};
  char* end = nullptr;
  const std::uint64_t nth = n < 2 ? 0 : std::strtoull(fields[1].c_str(), &end, 10);
  const bool nth_ok = n >= 2 && !fields[1].empty() && *end == '\0' && nth > 0;
  if (!nth_ok || !parse_site(fields[0], site))
    throw Error(ErrorCode::invalid_argument,
                "XYLEM_FAULT=\"" + text + "\": expected site:nth[:count[:framework]] with nth counting from 1, "
                "site one of allocation, kernel_build, transfer, library_call");
  const std::uint64_t count = n > 2 && !fields[2].empty() ? std::strtoull(fields[2].c_str(), nullptr, 10) : 1;
  arm(site, nth, n > 3 ? fields[3] : std::string(), count);
}

}  // namespace

namespace testing {

std::string_view name(FaultSite site) noexcept {
  switch (site) {
    case FaultSite::allocation: return "allocation";
    case FaultSite::kernel_build: return "kernel_build";
    case FaultSite::transfer: return "transfer";
    case FaultSite::library_call: return "library_call";
  }
  return "?";
}

FaultInjection::FaultInjection(FaultSite site, std::uint64_t nth, std::string_view framework, std::uint64_t count) {
  if (nth == 0) throw Error(ErrorCode::invalid_argument, "FaultInjection: nth counts from 1");
  arm(site, nth, framework, count);
}

FaultInjection::~FaultInjection() { armed().on.store(false, std::memory_order_release); }

std::uint64_t FaultInjection::calls() const noexcept {
  std::lock_guard lock(armed().mutex);
  return armed().calls;
}

std::uint64_t FaultInjection::failures() const noexcept {
  std::lock_guard lock(armed().mutex);
  return armed().failures;
}

std::uint64_t FaultInjection::retries() const noexcept {
  std::lock_guard lock(armed().mutex);
  return armed().retries;
}

}  // namespace testing

namespace plugin {

bool should_fail(FaultSite site, std::string_view framework) noexcept {
  static const bool from_environment = [] {
    try {
      arm_from_environment();
    } catch (const Error& e) {
      // A test harness typo: better loud than a silent pass.
      std::fprintf(stderr, "%s\n", e.what());
      std::abort();
    }
    return true;
  }();
  (void)from_environment;
  Armed& a = armed();
  if (!a.on.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(a.mutex);
  if (a.site != site || (!a.framework.empty() && a.framework != framework)) return false;
  const std::uint64_t call = ++a.calls;
  if (call < a.first || call - a.first >= a.count) return false;
  ++a.failures;
  return true;
}

void note_allocation_retry(std::string_view framework) noexcept {
  Armed& a = armed();
  if (!a.on.load(std::memory_order_acquire)) return;
  std::lock_guard lock(a.mutex);
  if (a.framework.empty() || a.framework == framework) ++a.retries;
}

}  // namespace plugin
}  // namespace xylem
