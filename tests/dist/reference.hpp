#pragma once
// What the collectives' tests check against (and whether NCCL is here): each rank's values made from
// one seed the ranks share, so every rank can build every other rank's and
// combine them in float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/support.hpp"
#include "xylem/dist.hpp"
#include "xylem/math.hpp"

namespace xylem_test::collectives {

using xylem::DType;
using xylem::dist::ReduceOp;

// What every collective is tried on.
inline constexpr DType kDtypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                                    DType::i32, DType::i64,  DType::u8,  DType::boolean};
inline constexpr std::int64_t kSizes[] = {0, 1, 7, 65537};

// Rank r's values for one call: small integers, exact in every dtype and
// in every sum of a few ranks.
inline std::vector<double> values_of(std::uint64_t seed, int r, std::int64_t n, DType dtype, std::uint64_t salt) {
  std::mt19937_64 rng(seed ^ (salt * 0x9E3779B97F4A7C15ULL) ^ (std::uint64_t(r) << 40));
  const bool unsigned_ = dtype == DType::u8 || dtype == DType::boolean;
  std::uniform_int_distribution<int> pick(unsigned_ ? 0 : -8, dtype == DType::boolean ? 1 : 8);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = pick(rng);
  return v;
}

inline double combine(double a, double b, ReduceOp op, DType dtype) {
  if (dtype == DType::boolean) return op == ReduceOp::min ? double(a && b) : double(a || b);
  switch (op) {
    case ReduceOp::max:
      return std::max(a, b);
    case ReduceOp::min:
      return std::min(a, b);
    default:
      return a + b;
  }
}

// Every rank's values combined, in float64.
inline std::vector<double> reference(std::uint64_t seed, std::int64_t n, DType dtype, ReduceOp op, std::uint64_t salt,
                                     int size) {
  std::vector<double> acc = values_of(seed, 0, n, dtype, salt);
  for (int r = 1; r < size; ++r) {
    const auto v = values_of(seed, r, n, dtype, salt);
    for (std::size_t i = 0; i < acc.size(); ++i) acc[i] = combine(acc[i], v[i], op, dtype);
  }
  if (op == ReduceOp::avg)
    for (auto& x : acc) x = xylem::is_floating(dtype) ? x / size : std::trunc(x / size);
  return acc;
}

inline void expect_near(std::uint64_t seed, const std::vector<double>& want, const std::vector<double>& got, DType dtype,
                        const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  const double tol = dtype == DType::bf16 ? 1e-2 : dtype == DType::f16 ? 1e-3 : dtype == DType::f32 ? 1e-6 : 1e-12;
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(want[i], got[i], tol * std::max(1.0, std::abs(want[i])))
        << what << " element " << i << ", " << seed_message(seed);
}

// Why NCCL cannot serve CUDA tensors here; empty when it can.
inline std::string nccl_missing() {
  for (const auto& t : xylem::dist::transports())
    if (t.name == "nccl") return t.available ? std::string() : t.reason;
  return "no nccl entry in dist::transports()";
}

// The functions above for one seed.
struct Reference {
  std::uint64_t seed;
  [[nodiscard]] std::vector<double> values_of(int r, std::int64_t n, DType dtype, std::uint64_t salt) const {
    return collectives::values_of(seed, r, n, dtype, salt);
  }
  [[nodiscard]] std::vector<double> reference(std::int64_t n, DType dtype, ReduceOp op, std::uint64_t salt,
                                              int size) const {
    return collectives::reference(seed, n, dtype, op, salt, size);
  }
  // What all_gather gives: ranks 0..size-1's values, one after another.
  [[nodiscard]] std::vector<double> gathered(std::int64_t n, DType dtype, std::uint64_t salt, int size) const {
    std::vector<double> all;
    for (int r = 0; r < size; ++r) {
      const auto v = values_of(r, n, dtype, salt);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  }
  void expect_near(const std::vector<double>& want, const std::vector<double>& got, DType dtype,
                   const std::string& what) const {
    collectives::expect_near(seed, want, got, dtype, what);
  }
};

// `v` as a host tensor of `dtype` (converted from float64 on the host),
// shaped `dims` (default: flat).
inline xylem::Tensor tensor_of(const std::vector<double>& v, DType dtype, std::vector<std::int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<std::int64_t>(v.size())};
  const xylem::Tensor f64 = xylem::Tensor::from(v, xylem::Layout(std::span<const std::int64_t>(dims)));
  return xylem::cast(xylem::Backend::native(), f64, dtype);
}

}  // namespace xylem_test::collectives
