// Joining, splitting, padding and reordering (xylem/shaping.hpp) on every
// framework and dtype: the results hold exactly the host reference's
// values, from inputs of any layout; split and chunk are views; bad
// arguments raise before anything changes.
#include "conformance/math_common.hpp"
#include "xylem/shaping.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;

constexpr DType kEvery[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                            DType::i32, DType::i64,  DType::u8,  DType::boolean};

class Shaping : public MathConformance {
 protected:
  Arg data(DType dtype, ViewKind layout, const Dims& dims) {
    std::vector<double> v(static_cast<std::size_t>(numel(dims)));
    std::uniform_int_distribution<int> ints(0, 200);
    std::uniform_real_distribution<double> reals(-1, 1);
    for (auto& x : v)
      x = dtype == DType::boolean ? ints(rng) % 2 : xylem::is_floating(dtype) ? reals(rng) : ints(rng);
    return host_input(dtype, layout, dims, v);
  }
  void expect_values(const Tensor& y, const Dims& dims, const std::vector<double>& expect, const std::string& what) {
    EXPECT_EQ(y.layout().dims_string(), Layout(dims).dims_string()) << what;
    EXPECT_EQ(y.to_doubles(), expect) << what;
  }
};

TEST_P(Shaping, concatenate_stack_every_dtype) {
  for (DType dtype : kEvery) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    // [3, 4] transposed views of [4, 3], a padded one and a strided one.
    auto a = data(dtype, ViewKind::transposed, {5, 4});
    auto b = data(dtype, ViewKind::padded, {2, 4});
    auto c = data(dtype, ViewKind::strided, {0, 4});
    const std::vector<Tensor> parts{a.view, b.view, c.view};
    std::vector<double> e = a.values();
    const auto bv = b.values();
    e.insert(e.end(), bv.begin(), bv.end());
    expect_values(xylem::concatenate(backend, parts, 0), {7, 4}, e, "concatenate axis 0");
    auto p = data(dtype, ViewKind::strided, {5, 3});
    const std::vector<Tensor> columns{a.view, p.view};
    std::vector<double> ec;
    const auto av = a.values(), pv = p.values();
    for (std::size_t r = 0; r < 5; ++r) {
      ec.insert(ec.end(), av.begin() + std::ptrdiff_t(r * 4), av.begin() + std::ptrdiff_t(r * 4 + 4));
      ec.insert(ec.end(), pv.begin() + std::ptrdiff_t(r * 3), pv.begin() + std::ptrdiff_t(r * 3 + 3));
    }
    expect_values(xylem::concatenate(backend, columns, -1), {5, 7}, ec, "concatenate axis -1");
    // stack along each of the three places of the new axis.
    auto s = data(dtype, ViewKind::transposed, {5, 4});
    const std::vector<Tensor> same{a.view, s.view};
    const auto sv = s.values();
    for (int axis : {0, 1, 2}) {
      Dims dims{5, 4};
      dims.insert(dims.begin() + axis, 2);
      std::vector<double> es(40);
      for (std::int64_t k = 0; k < 40; ++k) {
        Dims q = coords_of(dims, k);
        const std::int64_t which = q[std::size_t(axis)];
        q.erase(q.begin() + axis);
        es[std::size_t(k)] = (which == 0 ? av : sv)[std::size_t(flat_of({5, 4}, q))];
      }
      expect_values(xylem::stack(backend, same, axis), dims, es, "stack axis " + std::to_string(axis));
    }
  }
}

TEST_P(Shaping, split_and_chunk_are_views) {
  auto x = data(DType::f32, ViewKind::contiguous, {3, 10});
  const auto xv = x.values();
  const std::int64_t sizes[] = {2, 0, 5, 3};
  const auto parts = xylem::split(x.view, sizes, 1);
  ASSERT_EQ(parts.size(), 4u);
  std::int64_t at = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    EXPECT_TRUE(parts[i].shares_data_with(x.view));
    std::vector<double> e;
    for (std::int64_t r = 0; r < 3; ++r)
      for (std::int64_t j = at; j < at + sizes[i]; ++j) e.push_back(xv[std::size_t(r * 10 + j)]);
    expect_values(parts[i], {3, sizes[i]}, e, "split part " + std::to_string(i));
    at += sizes[i];
  }
  const auto chunks = xylem::chunk(x.view, 4, 1);  // 3, 3, 3, 1
  ASSERT_EQ(chunks.size(), 4u);
  EXPECT_EQ(chunks[3].layout().dims_string(), "[3, 1]");
  EXPECT_EQ(xylem::chunk(x.view, 4, 0).size(), 3u);  // as torch.chunk: 3 rows give 3 pieces
}

TEST_P(Shaping, pad_every_dtype) {
  for (DType dtype : kEvery) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    auto x = data(dtype, ViewKind::transposed, {4, 5});
    // A border to fill: where the framework lacks fill for the dtype, pad
    // raises unsupported (without one it is only a copy).
    const std::int64_t one_before[] = {1, 0};
    if (!runs(OpId::creation_fill, dtype, [&] { (void)xylem::pad(backend, x.view, one_before); })) continue;
    const auto xv = x.values();
    // Last axis: 2 before, 1 after; first: 1 removed before, 3 added after.
    const std::int64_t pads[] = {2, 1, -1, 3};
    const Dims yd{6, 8};
    std::vector<double> e(48, 1);
    for (std::int64_t r = 1; r < 4; ++r)
      for (std::int64_t c = 0; c < 5; ++c) e[std::size_t((r - 1) * 8 + c + 2)] = xv[std::size_t(r * 5 + c)];
    expect_values(xylem::pad(backend, x.view, pads, 1), yd, e, "pad");
  }
}

TEST_P(Shaping, permute_and_transpose_every_dtype) {
  for (DType dtype : kEvery) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    const Dims xd{3, 4, 5};
    auto x = data(dtype, ViewKind::strided, xd);
    const auto xv = x.values();
    const int order[] = {2, 0, 1};
    const Dims yd{5, 3, 4};
    std::vector<double> e(60);
    for (std::int64_t k = 0; k < 60; ++k) {
      const Dims q = coords_of(yd, k);
      e[std::size_t(k)] = xv[std::size_t(flat_of(xd, {q[1], q[2], q[0]}))];
    }
    const Tensor y = xylem::permute(backend, x.view, order);
    EXPECT_TRUE(y.layout().is_contiguous());
    expect_values(y, yd, e, "permute");
    std::vector<double> t(60);
    for (std::int64_t k = 0; k < 60; ++k) {
      const Dims q = coords_of({5, 4, 3}, k);
      t[std::size_t(k)] = xv[std::size_t(flat_of(xd, {q[2], q[1], q[0]}))];
    }
    expect_values(xylem::transpose(backend, x.view, 0, -1), {5, 4, 3}, t, "transpose");
  }
}

TEST_P(Shaping, rejects_bad_arguments) {
  auto a = data(DType::f32, ViewKind::contiguous, {2, 3});
  auto b = data(DType::f32, ViewKind::contiguous, {2, 4});
  auto c = data(DType::f64, ViewKind::contiguous, {2, 3});
  const std::vector<Tensor> all{a.base, b.base, c.base};
  const std::vector<Tensor> ab{a.view, b.view}, ac{a.view, c.view};
  expect_rejected(ErrorCode::shape_mismatch, "concatenate", {"[2, 4]", "[2, 3]"}, all,
                  [&] { (void)xylem::concatenate(backend, ab, 0); });
  expect_rejected(ErrorCode::dtype_mismatch, "stack", {"f64"}, all, [&] { (void)xylem::stack(backend, ac, 0); });
  expect_rejected(ErrorCode::invalid_argument, "concatenate", {}, all,
                  [&] { (void)xylem::concatenate(backend, std::span<const Tensor>{}, 0); });
  const std::int64_t sizes[] = {1, 1};
  expect_rejected(ErrorCode::invalid_argument, "split", {"[2, 3]"}, all, [&] { (void)xylem::split(a.view, sizes, 1); });
  const std::int64_t pads[] = {1, 2, 3};
  expect_rejected(ErrorCode::invalid_argument, "pad", {"[2, 3]"}, all, [&] { (void)xylem::pad(backend, a.view, pads); });
  const int order[] = {0, 0};
  expect_rejected(ErrorCode::invalid_argument, "permute", {"[2, 3]"}, all,
                  [&] { (void)xylem::permute(backend, a.view, order); });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Shaping, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
