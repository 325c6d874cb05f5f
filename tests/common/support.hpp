#pragma once
// Helpers shared by the tests: expecting a xylem::Error, snapshots of
// tensors (to prove an error changed nothing), random seeds that are printed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "xylem/xylem.hpp"

// gtest prints these by name.
namespace xylem {
inline void PrintTo(ErrorCode code, std::ostream* os) { *os << name(code); }
inline void PrintTo(DType dtype, std::ostream* os) { *os << name(dtype); }
}  // namespace xylem

namespace xylem_test {

// Sets an environment variable for a scope, then restores it (the tests
// that use it run on one thread).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Runs fn; fails (at file:line) unless it throws xylem::Error with `code`.
// Returns the error message ("" when nothing matching was thrown).
template <class F>
std::string expect_error_at(const char* file, int line, xylem::ErrorCode code, F&& fn) {
  try {
    fn();
  } catch (const xylem::Error& e) {
    if (e.code() != code) {
      ADD_FAILURE_AT(file, line) << "expected ErrorCode " << xylem::name(code) << ", got "
                                 << xylem::name(e.code()) << ": " << e.what();
    }
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE_AT(file, line) << "expected xylem::Error " << xylem::name(code) << ", got another exception: "
                               << e.what();
    return {};
  }
  ADD_FAILURE_AT(file, line) << "expected xylem::Error " << xylem::name(code) << ", nothing was thrown";
  return {};
}
#define XY_EXPECT_ERROR(code, ...) ::xylem_test::expect_error_at(__FILE__, __LINE__, code, [&] { __VA_ARGS__; })

// Whether an error message (or any text) holds `part`.
inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// What a tensor holds now, to check later that nothing changed it.
struct Snapshot {
  std::uint64_t version = 0;
  std::vector<double> values;
};
inline Snapshot snapshot(const xylem::Tensor& t) {
  Snapshot s;
  s.version = t.version();
  if (s.version != 0) s.values = t.to_doubles();
  return s;
}
// Same version and the same values, bit for bit (NaN included).
#define XY_EXPECT_UNCHANGED(tensor, snap)                                                             \
  do {                                                                                                \
    const auto& xy_snap_ = (snap);                                                                    \
    EXPECT_EQ((tensor).version(), xy_snap_.version) << #tensor " was written";                       \
    if (xy_snap_.version != 0) {                                                                      \
      auto xy_now_ = (tensor).to_doubles();                                                           \
      ASSERT_EQ(xy_now_.size(), xy_snap_.values.size());                                              \
      /* an empty tensor has nothing to compare (and memcmp no null pointers) */                       \
      EXPECT_TRUE(xy_now_.empty() ||                                                                  \
                  std::memcmp(xy_now_.data(), xy_snap_.values.data(), xy_now_.size() * sizeof(double)) == 0) \
          << #tensor " changed";                                                                      \
    }                                                                                                 \
  } while (0)

// A fresh seed per call (XYLEM_TEST_SEED fixes it to rerun a failure).
inline std::uint64_t fresh_seed() {
  if (const char* s = std::getenv("XYLEM_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  static std::uint64_t counter = 0;
  auto now = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return std::uint64_t{std::random_device{}()} ^ (now * 0x9E3779B97F4A7C15ULL) ^ ++counter;
}
inline std::string seed_message(std::uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with XYLEM_TEST_SEED=" + std::to_string(seed) + ")";
}

template <class T>
std::vector<T> random_vector(std::mt19937_64& rng, std::int64_t n, double low = -1, double high = 1) {
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// 0, 1, 2, ... as T.
template <class T>
std::vector<T> iota_vector(std::int64_t n, double start = 0) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(start + double(i));
  return v;
}

// The test framework loaded from the test plugin directory.
inline xylem::Backend mirror() { return xylem::Backend::open("mirror:0"); }

}  // namespace xylem_test
