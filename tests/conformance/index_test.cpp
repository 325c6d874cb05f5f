// Indexing along an axis (xylem/index.hpp) on every framework and dtype,
// against host references: gather, index_select, embedding and scatter
// move values exactly; scatter_add and the embedding gradient sum small
// integers, which every dtype holds exactly whatever the order of the sums
// (so the GPUs' atomics must give the exact answer too). The gradients of
// gather, index_select and embedding are the scatter-adds of the incoming
// gradient, checked exactly here against the host's scatter-add. Empty
// index lists, repeated indices, views, and out-of-range or negative
// indices (index_out_of_range at the next host wait, every tensor but the
// output intact).
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <tuple>

#include "conformance/math_common.hpp"
#include "xylem/index.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;

constexpr DType kEvery[] = {DType::f16, DType::bf16, DType::f32, DType::f64,
                            DType::i32, DType::i64,  DType::u8,  DType::boolean};
constexpr DType kFloats[] = {DType::f16, DType::bf16, DType::f32, DType::f64};
constexpr DType kIndexTypes[] = {DType::i32, DType::i64};

class Index : public MathConformance {
 protected:
  // n values exact in dtype: floats in [-1, 1] (rounded by host_input),
  // integers of the dtype's range, or small integers (exact sums).
  std::vector<double> values(DType dtype, std::int64_t n, bool small = false) {
    std::vector<double> v(static_cast<std::size_t>(n));
    std::uniform_int_distribution<int> ints(dtype == DType::u8 ? 0 : -100, dtype == DType::u8 ? 255 : 100);
    std::uniform_int_distribution<int> smalls(-4, 4);
    std::uniform_real_distribution<double> reals(-1, 1);
    for (auto& x : v) {
      if (dtype == DType::boolean) {
        x = ints(rng) > 0 ? 1 : 0;
      } else if (small) {
        x = smalls(rng);
      } else {
        x = xylem::is_floating(dtype) ? reals(rng) : ints(rng);
      }
    }
    return v;
  }
  std::vector<double> indices(std::int64_t count, std::int64_t n) {
    std::vector<double> v(static_cast<std::size_t>(count));
    std::uniform_int_distribution<std::int64_t> pick(0, std::max<std::int64_t>(n - 1, 0));
    for (auto& x : v) x = double(pick(rng));
    return v;
  }
  Arg data(DType dtype, ViewKind layout, const Dims& dims, bool small = false) {
    return host_input(dtype, layout, dims, values(dtype, numel(dims), small));
  }
  Arg index_arg(DType dtype, ViewKind layout, const Dims& dims, std::int64_t n) {
    return host_input(dtype, layout, dims, indices(numel(dims), n));
  }

  // Whether the backend has the indexing ops (the mirror test framework
  // has not: they must then raise unsupported).
  bool indexes() {
    return runs(OpId::index_check, DType::i64, [&] {
      auto i = index_arg(DType::i64, ViewKind::contiguous, {2}, 3);
      (void)xylem::one_hot(backend, i.view, 3);
    });
  }

  void expect_values(const Tensor& y, const Dims& dims, const std::vector<double>& expect, const std::string& what) {
    EXPECT_EQ(y.layout().dims_string(), xylem::Layout(dims).dims_string()) << what;
    const auto got = y.to_doubles();
    ASSERT_EQ(got.size(), expect.size()) << what;
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (std::isnan(expect[k]) && std::isnan(got[k])) continue;
      ASSERT_EQ(got[k], expect[k]) << what << ": element " << k;
    }
  }
};

// gather's host reference: y[p] = x[p with p[axis] = index[p]].
std::vector<double> gather_ref(const Arg& x, const Dims& xd, const Arg& index, const Dims& id, int axis) {
  const auto xv = x.values(), iv = index.values();
  std::vector<double> y(iv.size());
  for (std::size_t k = 0; k < y.size(); ++k) {
    Dims c = coords_of(id, std::int64_t(k));
    c[std::size_t(axis)] = std::int64_t(iv[k]);
    y[k] = xv[std::size_t(flat_of(xd, c))];
  }
  return y;
}

// scatter's: y (yd) updated by src at index (id), adding or assigning in
// order (the last of a repeated position wins).
void scatter_ref(std::vector<double>& y, const Dims& yd, const std::vector<double>& src, const Dims& sd,
                 const std::vector<double>& index, const Dims& id, int axis, bool add, std::int64_t skip = -1) {
  for (std::size_t k = 0; k < index.size(); ++k) {
    const Dims p = coords_of(id, std::int64_t(k));
    if (std::int64_t(index[k]) == skip) continue;
    Dims q = p;
    q[std::size_t(axis)] = std::int64_t(index[k]);
    double& to = y[std::size_t(flat_of(yd, q))];
    const double v = src[std::size_t(flat_of(sd, p))];
    to = add ? to + v : v;
  }
}

TEST_P(Index, gather_every_dtype) {
  if (!indexes()) return;
  const Dims xd{6, 5, 4};
  for (DType dtype : kEvery) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    for (DType it : kIndexTypes) {
      SCOPED_TRACE(std::string(xylem::name(it)));
      auto x = data(dtype, ViewKind::strided, xd);
      const std::pair<int, Dims> cases[] = {{0, {9, 5, 4}}, {1, {3, 2, 4}}, {2, {6, 5, 11}}, {-1, {2, 3, 1}},
                                            {1, {6, 0, 4}}};
      for (const auto& [axis, id] : cases) {
        SCOPED_TRACE("axis " + std::to_string(axis) + " index " + dims_string(id));
        const int a = axis < 0 ? axis + 3 : axis;
        auto index = index_arg(it, ViewKind::strided, id, xd[std::size_t(a)]);
        if (!runs(OpId::index_gather, dtype, [&] { (void)xylem::gather(backend, x.view, axis, index.view); }))
          break;
        expect_values(xylem::gather(backend, x.view, axis, index.view), id, gather_ref(x, xd, index, id, a),
                      "gather");
      }
    }
  }
}

TEST_P(Index, index_select_and_embedding_every_dtype) {
  if (!indexes()) return;
  for (DType dtype : kEvery) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    if (!runs(OpId::index_gather, dtype, [&] {
          auto x = data(dtype, ViewKind::contiguous, {3, 2});
          auto i = index_arg(DType::i64, ViewKind::contiguous, {2}, 3);
          (void)xylem::index_select(backend, x.view, 0, i.view);
        }))
      continue;
    for (DType it : kIndexTypes) {
      SCOPED_TRACE(std::string(xylem::name(it)));
      // index_select of a transposed matrix along each axis, with repeats.
      const Dims xd{7, 9};
      auto x = data(dtype, ViewKind::transposed, xd);
      const auto xv = x.values();
      for (int axis : {0, 1}) {
        for (std::int64_t k : {0, 1, 13}) {
          auto index = index_arg(it, ViewKind::strided, {k}, xd[std::size_t(axis)]);
          const auto iv = index.values();
          Dims yd = xd;
          yd[std::size_t(axis)] = k;
          std::vector<double> e(std::size_t(numel(yd)));
          for (std::size_t q = 0; q < e.size(); ++q) {
            Dims c = coords_of(yd, std::int64_t(q));
            c[std::size_t(axis)] = std::int64_t(iv[std::size_t(c[std::size_t(axis)])]);
            e[q] = xv[std::size_t(flat_of(xd, c))];
          }
          expect_values(xylem::index_select(backend, x.view, axis, index.view), yd, e,
                        "index_select axis " + std::to_string(axis) + " of " + std::to_string(k));
        }
      }
      // embedding: rows of a [V, D] table at [2, 3, 5] indices (D odd and
      // even, so the GPU row copies take each path: element, 16-byte word,
      // a warp a row of 2 KiB and more, in one round, two, and a part).
      for (std::int64_t d : {5, 64, 1000, 2048}) {
        const std::int64_t v = 37;
        auto weight = data(dtype, ViewKind::contiguous, {v, d});
        auto index = index_arg(it, ViewKind::contiguous, {2, 3, 5}, v);
        const auto wv = weight.values(), iv = index.values();
        std::vector<double> e;
        for (double i : iv)
          for (std::int64_t j = 0; j < d; ++j) e.push_back(wv[std::size_t(std::int64_t(i) * d + j)]);
        expect_values(xylem::nn::embedding(backend, weight.view, index.view), {2, 3, 5, d}, e, "embedding");
      }
    }
  }
}

TEST_P(Index, scatter_every_dtype) {
  if (!indexes()) return;
  for (DType dtype : kEvery) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    for (DType it : kIndexTypes) {
      SCOPED_TRACE(std::string(xylem::name(it)));
      const Dims yd{5, 6, 3}, id{5, 4, 2}, sd{6, 4, 3};
      auto y = data(dtype, ViewKind::strided, yd);
      auto src = data(dtype, ViewKind::strided, sd);
      auto index = index_arg(it, ViewKind::contiguous, id, yd[1]);  // repeats: the last wins
      if (!runs(OpId::index_scatter, dtype,
                [&] { (void)xylem::scatter(backend, y.view, 1, index.view, src.view); }))
        break;
      std::vector<double> e = y.values();
      scatter_ref(e, yd, src.values(), sd, index.values(), id, 1, false);
      const auto before = y.values();
      expect_values(xylem::scatter(backend, y.view, 1, index.view, src.view), yd, e, "scatter");
      expect_values(y.view, yd, before, "scatter leaves x as it was");
      xylem::scatter_into(backend, 1, index.view, src.view, y.view);
      expect_values(y.view, yd, e, "scatter_into");
    }
  }
}

TEST_P(Index, scatter_add_sums_repeats_exactly) {
  if (!indexes()) return;
  for (DType dtype : kFloats) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    if (!runs(OpId::index_scatter, dtype, [&] {
          auto y = data(dtype, ViewKind::contiguous, {3});
          auto i = index_arg(DType::i64, ViewKind::contiguous, {2}, 3);
          (void)xylem::scatter_add(backend, y.view, 0, i.view, y.view);
        }))
      continue;
    for (DType it : kIndexTypes) {
      SCOPED_TRACE(std::string(xylem::name(it)));
      // Few targets, many repeats (up to 40 per position, |sum| <= 160).
      for (const auto& [yd, id, axis] : {std::tuple<Dims, Dims, int>{{4, 3}, {40, 3}, 0},
                                         std::tuple<Dims, Dims, int>{{2, 5, 3}, {2, 60, 3}, 1},
                                         std::tuple<Dims, Dims, int>{{3, 4}, {3, 0}, 1}}) {
        SCOPED_TRACE("index " + dims_string(id) + " axis " + std::to_string(axis));
        auto y = data(dtype, ViewKind::contiguous, yd, true);
        auto src = data(dtype, ViewKind::strided, id, true);
        auto index = index_arg(it, ViewKind::strided, id, yd[std::size_t(axis)]);
        std::vector<double> e = y.values();
        scatter_ref(e, yd, src.values(), id, index.values(), id, axis, true);
        expect_values(xylem::scatter_add(backend, y.view, axis, index.view, src.view), yd, e, "scatter_add");
        // The gradient of gather: scatter_add of dy into zeros, the
        // adjoint of gather (the same reference).
        Tensor dx = xylem::zeros(backend, Layout(yd), dtype);
        xylem::scatter_add_into(backend, axis, index.view, src.view, dx);
        std::vector<double> g(std::size_t(numel(yd)), 0.0);
        scatter_ref(g, yd, src.values(), id, index.values(), id, axis, true);
        expect_values(dx, yd, g, "gather's gradient");
      }
    }
  }
}

TEST_P(Index, embedding_backward_exact_with_padding) {
  if (!indexes()) return;
  for (DType dtype : kFloats) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    if (!runs(OpId::index_scatter, dtype, [&] {
          auto dy = data(dtype, ViewKind::contiguous, {2, 3});
          auto i = index_arg(DType::i64, ViewKind::contiguous, {2}, 3);
          (void)xylem::nn::embedding_backward(backend, dy.view, i.view, 3);
        }))
      continue;
    for (DType it : kIndexTypes) {
      SCOPED_TRACE(std::string(xylem::name(it)));
      const std::int64_t v = 11, d = 7;
      for (const std::optional<std::int64_t> padding : {std::optional<std::int64_t>{}, std::optional<std::int64_t>{-2}}) {
        SCOPED_TRACE(padding ? "padding_idx -2" : "no padding_idx");
        const Dims id{6, 9};
        auto index = index_arg(it, ViewKind::strided, id, v);
        auto dy = data(dtype, ViewKind::strided, {6, 9, d}, true);
        const auto iv = index.values(), gv = dy.values();
        const std::int64_t skip = padding ? *padding + v : -1;
        std::vector<double> e(std::size_t(v * d), 0.0);
        for (std::size_t k = 0; k < iv.size(); ++k)
          if (std::int64_t(iv[k]) != skip)
            for (std::int64_t j = 0; j < d; ++j) e[std::size_t(std::int64_t(iv[k]) * d + j)] += gv[k * std::size_t(d) + std::size_t(j)];
        expect_values(xylem::nn::embedding_backward(backend, dy.view, index.view, v, padding), {v, d}, e,
                      "embedding_backward");
        // Accumulating into an existing gradient.
        auto acc = data(dtype, ViewKind::contiguous, {v, d}, true);
        std::vector<double> sum = acc.values();
        for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += e[k];
        xylem::nn::embedding_backward_into(backend, dy.view, index.view, acc.view, padding);
        expect_values(acc.view, {v, d}, sum, "embedding_backward_into");
      }
      // No indices: a zero gradient.
      auto none = index_arg(it, ViewKind::contiguous, {0}, v);
      auto dy = data(dtype, ViewKind::contiguous, {0, d});
      expect_values(xylem::nn::embedding_backward(backend, dy.view, none.view, v), {v, d},
                    std::vector<double>(std::size_t(v * d), 0.0), "embedding_backward of nothing");
    }
  }
}

TEST_P(Index, one_hot_dtypes) {
  if (!indexes()) return;
  for (DType dtype : {DType::i64, DType::f32, DType::bf16, DType::u8, DType::boolean}) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    for (DType it : kIndexTypes) {
      auto index = index_arg(it, ViewKind::strided, {3, 4}, 6);
      const auto iv = index.values();
      std::vector<double> e(3 * 4 * 6, 0.0);
      for (std::size_t k = 0; k < iv.size(); ++k) e[k * 6 + std::size_t(iv[k])] = 1;
      expect_values(xylem::one_hot(backend, index.view, 6, dtype), {3, 4, 6}, e, "one_hot");
    }
  }
}

// An out-of-range index: the call returns; the next host wait raises
// index_out_of_range naming the op and the index, once; the op's output is
// unspecified and every other tensor intact.
void expect_raised_later(const std::string& op, const std::string& value, const std::vector<Tensor>& untouched,
                         const std::function<Tensor()>& call) {
  SCOPED_TRACE(op);
  std::vector<xylem_test::Snapshot> before;
  for (const auto& t : untouched) before.push_back(xylem_test::snapshot(t));
  Tensor out;
  ASSERT_NO_THROW(out = call());
  const std::string message = XY_EXPECT_ERROR(ErrorCode::index_out_of_range, (void)out.to_doubles());
  EXPECT_TRUE(xylem_test::contains(message, op)) << message;
  EXPECT_TRUE(xylem_test::contains(message, value)) << message;
  EXPECT_TRUE(xylem_test::contains(message, "[0, ")) << message;
  (void)out.to_doubles();  // raised once: the next read answers
  for (std::size_t i = 0; i < untouched.size(); ++i) XY_EXPECT_UNCHANGED(untouched[i], before[i]);
}

TEST_P(Index, out_of_range_and_negative_indices_raise_at_the_next_wait) {
  if (!indexes()) return;
  auto x = data(DType::f32, ViewKind::contiguous, {4, 3});
  for (DType it : kIndexTypes) {
    SCOPED_TRACE(std::string(xylem::name(it)));
    // A strided index too: the check walks it by its stride (OpenCL's CPU
    // kernel has a loop for each).
    for (const auto& [bad, layout] : {std::pair{4.0, ViewKind::contiguous}, {-1.0, ViewKind::contiguous},
                                      {1e6, ViewKind::contiguous}, {4.0, ViewKind::strided}, {-1.0, ViewKind::strided}}) {
      SCOPED_TRACE("index " + std::to_string(bad) + ", " + name(layout));
      auto index = host_input(it, layout, {5}, {0, 3, bad, 1, 2});
      auto y = data(DType::f32, ViewKind::contiguous, {4, 3});
      auto src = data(DType::f32, ViewKind::contiguous, {5, 3});
      auto index2 = host_input(it, ViewKind::contiguous, {5, 1}, {0, 3, bad, 1, 2});
      const std::vector<Tensor> inputs{x.base, index.base, src.base, index2.base};
      std::vector<Tensor> all = inputs;
      all.push_back(y.base);
      const std::string value = "index " + std::to_string(std::int64_t(bad));
      expect_raised_later("index_select", value, all, [&] { return xylem::index_select(backend, x.view, 0, index.view); });
      expect_raised_later("nn::embedding", value, all, [&] { return xylem::nn::embedding(backend, x.view, index.view); });
      expect_raised_later("gather", value, all, [&] { return xylem::gather(backend, x.view, 0, index2.view); });
      expect_raised_later("scatter", value, all, [&] { return xylem::scatter(backend, y.view, 0, index2.view, src.view); });
      expect_raised_later("one_hot", value, all, [&] { return xylem::one_hot(backend, index.view, 4); });
      // The _into forms: y is the output, its values unspecified.
      expect_raised_later("scatter_add", value, inputs, [&] {
        xylem::scatter_add_into(backend, 0, index2.view, src.view, y.view);
        return y.view;
      });
      expect_raised_later("scatter", value, inputs, [&] {
        xylem::scatter_into(backend, 0, index2.view, src.view, y.view);
        return y.view;
      });
      expect_raised_later("nn::embedding_backward", value, inputs, [&] {
        xylem::nn::embedding_backward_into(backend, src.view, index.view, y.view);
        return y.view;
      });
    }
  }
}

// The error of an op is raised by the next wait of any kind, even one that
// reads another tensor or synchronizes, and the backend goes on working.
TEST_P(Index, out_of_range_error_surfaces_at_the_next_wait) {
  if (!indexes()) return;
  auto x = data(DType::f32, ViewKind::contiguous, {4, 3});
  auto good = host_input(DType::i64, ViewKind::contiguous, {2}, {1, 3});
  auto bad = host_input(DType::i64, ViewKind::contiguous, {3}, {0, 7, 1});
  const Tensor before = xylem::index_select(backend, x.view, 0, good.view);
  // Nothing raised yet: the call does not wait for its check.
  Tensor wrong;
  ASSERT_NO_THROW(wrong = xylem::index_select(backend, x.view, 0, bad.view));
  // A read of another tensor, issued after the op, raises its error.
  const std::string message = XY_EXPECT_ERROR(ErrorCode::index_out_of_range, (void)before.to_doubles());
  EXPECT_TRUE(xylem_test::contains(message, "index_select: index 7 (element 1")) << message;
  // Raised once; the backend stays usable and right.
  const auto x64 = x.base.to_doubles();
  const auto got = before.to_doubles();
  ASSERT_EQ(got.size(), 6u);
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_EQ(got[c], x64[3 + c]);
    EXPECT_EQ(got[3 + c], x64[9 + c]);
  }
  // Backend::synchronize and a future's get raise as a read does.
  (void)xylem::gather(backend, x.view, 0, host_input(DType::i32, ViewKind::contiguous, {1, 3}, {0, -2, 0}).view);
  XY_EXPECT_ERROR(ErrorCode::index_out_of_range, backend.synchronize());
  (void)xylem::one_hot(backend, bad.view, 4);
  const auto future = before.read<float>();
  XY_EXPECT_ERROR(ErrorCode::index_out_of_range, (void)future.get());
  EXPECT_NO_THROW(backend.synchronize());
}

TEST_P(Index, rejects_bad_arguments) {
  auto x = data(DType::f32, ViewKind::contiguous, {4, 3});
  auto findex = data(DType::f32, ViewKind::contiguous, {2});
  auto index = index_arg(DType::i64, ViewKind::contiguous, {5, 4}, 3);
  auto src = data(DType::f64, ViewKind::contiguous, {5, 4});
  auto ints = data(DType::i32, ViewKind::contiguous, {4, 3});
  const std::vector<Tensor> all{x.base, findex.base, index.base, src.base, ints.base};
  expect_rejected(ErrorCode::dtype_mismatch, "index_select", {"[2] f32"}, all,
                  [&] { (void)xylem::index_select(backend, x.view, 0, findex.view); });
  expect_rejected(ErrorCode::shape_mismatch, "gather", {"[5, 4]", "[4, 3]"}, all,
                  [&] { (void)xylem::gather(backend, x.view, 0, index.view); });
  expect_rejected(ErrorCode::invalid_argument, "gather", {"[4, 3]"}, all,
                  [&] { (void)xylem::gather(backend, x.view, 2, index.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "scatter", {"f64", "f32"}, all,
                  [&] { (void)xylem::scatter(backend, x.view, 0, index.view, src.view); });
  expect_rejected(ErrorCode::dtype_mismatch, "scatter_add", {"i32"}, all,
                  [&] { (void)xylem::scatter_add(backend, ints.view, 0, index.view, ints.view); });
  auto one = index_arg(DType::i64, ViewKind::contiguous, {4}, 3);
  expect_rejected(ErrorCode::invalid_argument, "nn::embedding_backward", {"padding_idx 3"}, all,
                  [&] { (void)xylem::nn::embedding_backward(backend, x.view, one.view, 3, 3); });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Index, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
