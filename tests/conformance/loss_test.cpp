// xylem::nn cross_entropy's ignore_index and kl_div with every reduction,
// and their gradients, in f16, bf16, f32 and f64 against float64
// references; kl_div's gradient also against finite differences in f64;
// empty batches; bad arguments raise the right error and change nothing.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::nn::LossReduction;

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

const char* name(LossReduction r) {
  switch (r) {
    case LossReduction::none: return "none";
    case LossReduction::mean: return "mean";
    case LossReduction::sum: return "sum";
    case LossReduction::batchmean: return "batchmean";
  }
  return "?";
}

class Loss : public Conformance {
 protected:
  bool runs_all(std::initializer_list<OpId> ops, DType dtype, const std::function<void()>& call) {
    for (OpId op : ops) {
      if (!backend.supports(op, dtype)) return runs(op, dtype, call);
    }
    return true;
  }

  // ---- cross_entropy with ignore_index ----
  void cross_entropy_ignore(DType dtype) {
    // 1500 classes: rows long enough for two work-items a row on PoCL,
    // where a kernel that could return before its barriers hung.
    for (const std::int64_t c : {5, 1500}) cross_entropy_ignore(dtype, c);
  }
  void cross_entropy_ignore(DType dtype, std::int64_t c) {
    SCOPED_TRACE("C " + std::to_string(c));
    const std::int64_t n = 9;
    auto probe = [&] {
      auto x = input(dtype, ViewKind::contiguous, {2, 3});
      (void)xylem::nn::cross_entropy(backend, x.view, Tensor::from(std::vector<std::int64_t>{0, -100}));
      (void)xylem::nn::cross_entropy_grad(backend, x.view, Tensor::from(std::vector<std::int64_t>{0, -100}));
    };
    if (!runs_all({OpId::nn_cross_entropy, OpId::nn_cross_entropy_grad, OpId::math_reduce, OpId::math_binary}, dtype,
                  probe))
      return;
    // The default -100, a class inside [0, C), and every row ignored.
    const std::vector<std::pair<std::int64_t, std::vector<std::int64_t>>> cases = {
        {xylem::nn::kIgnoreIndex, {0, -100, 4, 2, -100, 1, 3, -100, 0}},
        {1, {0, 1, 4, 2, 1, 1, 3, 2, 0}},
        {7, {7, 7, 7, 7, 7, 7, 7, 7, 7}}};
    for (const auto& [ignore, targets] : cases) {
      for (double dloss : {1.0, 2.5}) {
        SCOPED_TRACE("ignore_index " + std::to_string(ignore) + " dloss " + std::to_string(dloss));
        auto x = input(dtype, ViewKind::contiguous, {n, c}, -3, 3);
        const Tensor target_tensor = Tensor::from(targets);
        auto dx = output(dtype, ViewKind::contiguous, {n, c});
        const Tensor loss = xylem::nn::cross_entropy(backend, x.view, target_tensor, ignore);
        xylem::nn::cross_entropy_grad(backend, x.view, target_tensor, dx.view, dloss, ignore);
        const auto xs = x.values();
        double sum = 0, mag = 0;
        std::int64_t counted = 0;
        std::vector<double> edx(xs.size(), 0.0);
        for (std::int64_t i = 0; i < n; ++i) {
          if (targets[idx(i)] == ignore) continue;
          ++counted;
        }
        for (std::int64_t i = 0; i < n; ++i) {
          const std::int64_t t = targets[idx(i)];
          if (t == ignore) continue;
          double m = -std::numeric_limits<double>::infinity(), s = 0;
          for (std::int64_t j = 0; j < c; ++j) m = std::max(m, xs[idx(i * c + j)]);
          for (std::int64_t j = 0; j < c; ++j) s += std::exp(xs[idx(i * c + j)] - m);
          sum += m + std::log(s) - xs[idx(i * c + t)];
          mag += std::abs(m) + std::log(s) + 4;
          for (std::int64_t j = 0; j < c; ++j)
            edx[idx(i * c + j)] = (std::exp(xs[idx(i * c + j)] - m) / s - (j == t ? 1.0 : 0.0)) * dloss / double(counted);
        }
        const double got = loss.to_doubles()[0];
        if (counted == 0) {
          EXPECT_TRUE(std::isnan(got)) << "every target ignored: the mean over nothing, " << got;
        } else {
          const double expect = sum / double(counted);
          EXPECT_NEAR(got, expect, tol(dtype).elem * std::abs(expect) + 4 * acc(dtype, c + n) * mag / double(counted))
              << "cross_entropy";
        }
        expect_result(dx, edx, [&](std::size_t k) {
          return tol(dtype).elem * std::abs(edx[k]) + 4 * acc(dtype, c) * dloss + floor_of(dtype);
        }, "cross_entropy_grad");
      }
    }
  }

  // ---- kl_div ----
  // Log-probabilities in [-4, 0] and target probabilities in [0, 1], some exactly 0.
  void kl_div(DType dtype) {
    if (!runs_all({OpId::math_binary, OpId::math_reduce}, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          (void)xylem::nn::kl_div(backend, x.view, x.view);
        }))
      return;
    for (const Dims& dims : {Dims{7, 13}, Dims{3, 4, 5}, Dims{1}, Dims{1000}}) {
      for (ViewKind layout : {ViewKind::contiguous, ViewKind::strided}) {
        SCOPED_TRACE(std::string(name(layout)) + " " + dims_text(dims));
        auto x = input(dtype, layout, dims, -4, 0);
        std::vector<double> ts = xylem_test::random_vector<double>(rng, idx(product(dims)), 0, 1);
        for (std::size_t k = 0; k < ts.size(); k += 3) ts[k] = 0;
        auto t = input(dtype, ViewKind::contiguous, dims, 0, 0, &ts);
        const auto xs = x.values(), tv = t.values();
        // t log t and -t x may cancel: errors are relative to their magnitudes.
        std::vector<double> point(xs.size()), terms(xs.size());
        double sum = 0, mag = 0;
        for (std::size_t k = 0; k < xs.size(); ++k) {
          point[k] = tv[k] == 0 ? 0.0 : tv[k] * (std::log(tv[k]) - xs[k]);
          terms[k] = std::abs(tv[k] == 0 ? 0.0 : tv[k] * std::log(tv[k])) + std::abs(tv[k] * xs[k]);
          sum += point[k];
          mag += terms[k];
        }
        const double count = double(xs.size()), batch = double(dims[0]);
        for (LossReduction r : {LossReduction::none, LossReduction::mean, LossReduction::sum, LossReduction::batchmean}) {
          SCOPED_TRACE(name(r));
          const Tensor loss = xylem::nn::kl_div(backend, x.view, t.view, r);
          EXPECT_EQ(loss.dtype(), dtype);
          const double div = r == LossReduction::mean ? count : r == LossReduction::batchmean ? batch : 1.0;
          if (r == LossReduction::none) {
            ASSERT_TRUE(loss.layout().same_dims(shape_of(dims)));
            const auto got = loss.to_doubles();
            for (std::size_t k = 0; k < got.size(); ++k)
              EXPECT_NEAR(got[k], point[k], 4 * tol(dtype).elem * terms[k] + floor_of(dtype))
                  << "element " << k;
          } else {
            ASSERT_EQ(loss.numel(), 1);
            const double expect = sum / div;
            EXPECT_NEAR(loss.to_doubles()[0], expect,
                        4 * tol(dtype).elem * mag / div + 4 * acc(dtype, product(dims)) * mag / div)
                << "kl_div";
          }
          for (double dloss : {1.0, -0.5}) {
            auto dx = output(dtype, layout, dims);
            xylem::nn::kl_div_grad(backend, x.view, t.view, dx.view, r, dloss);
            std::vector<double> edx(xs.size());
            for (std::size_t k = 0; k < xs.size(); ++k) edx[k] = -tv[k] * dloss / div;
            // The scale -dloss/div is rounded to the dtype, then the product.
            expect_result(dx, edx, [&](std::size_t k) { return 3 * tol(dtype).elem * std::abs(edx[k]) + floor_of(dtype); },
                          "kl_div_grad");
          }
        }
      }
    }
  }

  void kl_div_finite_differences() {
    if (!backend.supports(OpId::math_binary, xylem::f64) || !backend.supports(OpId::math_reduce, xylem::f64)) return;
    SCOPED_TRACE("kl_div_grad, finite differences");
    const Layout shape{4, 6};
    const auto xs = xylem_test::random_vector<double>(rng, 24, -3, 0);
    auto ts = xylem_test::random_vector<double>(rng, 24, 0, 1);
    ts[5] = 0;
    for (LossReduction r : {LossReduction::mean, LossReduction::sum, LossReduction::batchmean}) {
      SCOPED_TRACE(name(r));
      const std::vector<double> dys{1.5};
      const Tensor dx = xylem::nn::kl_div_grad(backend, Tensor::from(xs, shape), Tensor::from(ts, shape), r, 1.5);
      const auto adx = dx.to_doubles();
      expect_gradient(adx, xs, shape, dys,
                      [&](const Tensor& x) { return xylem::nn::kl_div(backend, x, Tensor::from(ts, shape), r); },
                      some_coordinates(rng, 24), mean_abs(adx), "kl_div_grad");
    }
  }
};

TEST_P(Loss, cross_entropy_ignore_index) {
  for_each_float_dtype([&](DType d) { cross_entropy_ignore(d); });
}
TEST_P(Loss, kl_div) {
  for_each_float_dtype([&](DType d) { kl_div(d); });
  kl_div_finite_differences();
}

TEST_P(Loss, empty) {
  if (!backend.supports(OpId::math_reduce, xylem::f32) || !backend.supports(OpId::nn_cross_entropy, xylem::f32)) return;
  const auto x = Tensor::from(std::vector<float>{}, Layout{0, 3});
  EXPECT_TRUE(std::isnan(xylem::nn::kl_div(backend, x, x).to_doubles()[0])) << "the mean over nothing";
  EXPECT_TRUE(std::isnan(xylem::nn::kl_div(backend, x, x, LossReduction::batchmean).to_doubles()[0]));
  EXPECT_EQ(xylem::nn::kl_div(backend, x, x, LossReduction::sum).to_doubles(), std::vector<double>{0.0});
  EXPECT_EQ(xylem::nn::kl_div(backend, x, x, LossReduction::none).numel(), 0);
  EXPECT_EQ(xylem::nn::kl_div_grad(backend, x, x).numel(), 0);
  const auto none = Tensor::from(std::vector<std::int64_t>{});
  EXPECT_TRUE(std::isnan(xylem::nn::cross_entropy(backend, x, none, 0).to_doubles()[0]));
  EXPECT_EQ(xylem::nn::cross_entropy_grad(backend, x, none, 1.0, 0).numel(), 0);
}

TEST_P(Loss, errors) {
  auto x = Tensor::from(std::vector<float>(12, 0.5f), Layout{4, 3});
  auto t = Tensor::from(std::vector<float>(12, 0.25f), Layout{4, 3});
  auto t_bad = Tensor::from(std::vector<float>(12, 0.25f), Layout{3, 4});
  auto t64 = Tensor::from(std::vector<double>(12, 0.25), Layout{4, 3});
  auto dx = Tensor::from(std::vector<float>(12, 7.0f), Layout{4, 3});
  auto dx_bad = Tensor::from(std::vector<float>(12, 7.0f), Layout{12});
  const auto sdx = xylem_test::snapshot(dx), st = xylem_test::snapshot(t);
  auto message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::kl_div(backend, x, t_bad));
  EXPECT_NE(message.find("kl_div"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::kl_div(backend, x, t64));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::kl_div(backend, x, t, static_cast<LossReduction>(9)));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::kl_div_grad(backend, x, t, dx_bad));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::kl_div_grad(backend, x, t_bad, dx));
  // A target outside [0, C) that is not ignore_index; the ignored value itself passes.
  const auto targets = Tensor::from(std::vector<std::int64_t>{0, -100, 3, 2});
  message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::cross_entropy(backend, x, targets));
  EXPECT_NE(message.find("target[2]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::cross_entropy_grad(backend, x, targets, dx));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::cross_entropy(backend, x, targets, 3));
  XY_EXPECT_UNCHANGED(dx, sdx);
  XY_EXPECT_UNCHANGED(t, st);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Loss, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
