// What the conformance suite runs on: every hardware of every available
// framework; every absent framework is reported as skipped, with the reason.
#include <cctype>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "conformance/conformance.hpp"

namespace conformance {

std::vector<Target> available_targets() {
  std::vector<Target> out;
  for (const auto& s : Backend::frameworks()) {
    if (!s.available) continue;
    for (const auto& hw : s.hardware) out.push_back({s.name, hw.index, true, {}});
  }
  return out;
}

std::vector<Target> unavailable_targets() {
  std::vector<Target> out;
  for (const auto& s : Backend::frameworks()) {
    if (!s.available) out.push_back({s.name, 0, false, s.reason});
  }
  return out;
}

std::string target_label(const ::testing::TestParamInfo<Target>& info) {
  std::string label = info.param.framework;
  for (auto& c : label) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return info.param.available ? label + "_" + std::to_string(info.param.index) : label;
}

void PrintTo(const Target& t, std::ostream* os) { *os << (t.available ? t.spec() : t.framework); }

const char* name(ViewKind layout) {
  switch (layout) {
    case ViewKind::contiguous:
      return "contiguous";
    case ViewKind::strided:
      return "strided";
    case ViewKind::transposed:
      return "transposed";
    case ViewKind::padded:
      return "padded";
    case ViewKind::shifted:
      return "shifted";
  }
  return "?";
}

std::vector<std::int64_t> positions(const Layout& view) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(view.numel()));
  const auto dims = view.dims();
  const auto strides = view.strides();
  for (std::size_t k = 0; k < out.size(); ++k) {
    auto rest = static_cast<std::int64_t>(k);
    std::int64_t off = view.offset();
    for (int a = view.rank() - 1; a >= 0; --a) {
      off += (rest % dims[a]) * strides[a];
      rest /= dims[a];
    }
    out[k] = off;
  }
  return out;
}

std::vector<double> Arg::values() const {
  std::vector<double> v(pos.size());
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = at(k);
  return v;
}

namespace detail {

Layout base_shape(ViewKind layout, const Dims& dims) {
  Dims d = dims;
  switch (layout) {
    case ViewKind::contiguous:
      break;
    case ViewKind::strided:
      d.back() = 2 * d.back() + 1;
      break;
    case ViewKind::transposed:
      std::swap(d[0], d[1]);
      break;
    case ViewKind::padded:
      d[1] += 3;
      break;
    case ViewKind::shifted:
      return Layout{Layout(std::span<const std::int64_t>(dims)).numel() + 1};
  }
  return Layout(std::span<const std::int64_t>(d));
}

Layout view_shape(ViewKind layout, const Dims& dims) {
  const Layout base = base_shape(layout, dims);
  const int last = static_cast<int>(dims.size()) - 1;
  switch (layout) {
    case ViewKind::contiguous:
      return base;
    case ViewKind::strided:
      return base.slice(last, 1, base.dim(last), 2);
    case ViewKind::transposed:
      return base.transpose(0, 1);
    case ViewKind::padded:
      return base.slice(1, 1, dims[1] + 1);
    case ViewKind::shifted:
      return base.slice(0, 1, base.dim(0)).reshape(std::span<const std::int64_t>(dims));
  }
  return base;
}

Tensor view_of(const Tensor& base, ViewKind layout, const Dims& dims) {
  const int last = static_cast<int>(dims.size()) - 1;
  switch (layout) {
    case ViewKind::contiguous:
      return base;
    case ViewKind::strided:
      return base.slice(last, 1, base.layout().dim(last), 2);
    case ViewKind::transposed:
      return base.transpose(0, 1);
    case ViewKind::padded:
      return base.slice(1, 1, dims[1] + 1);
    case ViewKind::shifted:
      return base.slice(0, 1, base.layout().dim(0)).reshape(std::span<const std::int64_t>(dims));
  }
  return base;
}

}  // namespace detail

Conformance::Conformance() : backend(Backend::open(GetParam().spec())) {}

bool Conformance::runs(OpId op, DType dtype, const std::function<void()>& call) {
  if (backend.supports(op, dtype)) return true;
  std::cout << "[ UNSUPPORTED ] " << target.spec() << ": " << xylem::op_name(op) << " in "
            << xylem::name(dtype) << "\n";
  XY_EXPECT_ERROR(xylem::ErrorCode::unsupported, call());
  return false;
}

namespace {

// XYLEM_TEST_REQUIRE="opencl cuda": frameworks that must be present. The
// test script names OpenCL, which CI runs on PoCL, so a plugin that stops
// loading (an undefined symbol, a missing library) fails the suite instead
// of skipping it.
bool required(const std::string& framework) {
  const char* env = std::getenv("XYLEM_TEST_REQUIRE");
  if (env == nullptr) return false;
  std::istringstream names(env);
  for (std::string name; names >> name;)
    if (name == framework) return true;
  return false;
}

}  // namespace

// Unavailable frameworks: one skipped test each, named after the framework
// (a failure when XYLEM_TEST_REQUIRE names it).
class Presence : public ::testing::TestWithParam<Target> {};

TEST_P(Presence, report) {
  const auto& t = GetParam();
  if (required(t.framework)) FAIL() << t.framework << " is required (XYLEM_TEST_REQUIRE) but unavailable: " << t.reason;
  std::cout << "[  SKIPPED ] " << t.framework << ": " << t.reason << std::endl;
  GTEST_SKIP() << t.framework << ": " << t.reason;
}

INSTANTIATE_TEST_SUITE_P(Unavailable, Presence, ::testing::ValuesIn(unavailable_targets()), target_label);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Presence);

}  // namespace conformance
