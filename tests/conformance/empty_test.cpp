// Empty batches and reductions over nothing, on every framework. An op whose
// output has no elements writes it (valid, empty), so the next op reads it
// without uninitialized_read; an output that reduces over nothing holds NumPy's
// and PyTorch's answer: a sum 0, a mean or variance NaN, max/min/argmax/argmin
// and batch_norm training an error. Every output here is handed to a next op (a
// sum on the backend) as a pipeline would. Also: zero-sized windows and
// parameters whose sizes pass int64's range are invalid_argument naming the
// shapes.
#include <climits>

#include "conformance/conformance.hpp"
#include "xylem/blas.hpp"
#include "xylem/math.hpp"
#include "xylem/nn.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::Reduction;
using xylem::blas::Transpose;

class Empty : public Conformance {
 protected:
  // A fresh random input (never zeros), on the host.
  Tensor random(const Dims& dims, DType dtype, double low = -1, double high = 1) {
    const Layout shape(dims);
    if (dtype == DType::f32)
      return Tensor::from(xylem_test::random_vector<float>(rng, shape.numel(), low, high), shape);
    return Tensor::from(xylem_test::random_vector<double>(rng, shape.numel(), low, high), shape);
  }
  // An output with elements, poisoned on the backend so an unwritten
  // element shows.
  Tensor poisoned(const Dims& dims, DType dtype) { return xylem::full(backend, Layout(dims), dtype, kNaN); }

  // `t` was written and holds `expect` (NaN matching NaN), and a next op on
  // the backend reads it: its sum is expect's.
  void expect_written(const Tensor& t, const std::vector<double>& expect, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_GT(t.version(), 0u) << "never written";
    std::vector<double> got;
    try {
      got = t.to_doubles();
      if (xylem::is_floating(t.dtype())) {
        const double total = xylem::sum(backend, t).to_doubles().at(0);
        double want = 0, magnitude = 0;
        for (double e : expect) want += e, magnitude += std::abs(e);
        EXPECT_TRUE(std::abs(total - want) <= tol(t.dtype()).reduce * magnitude ||
                    (std::isnan(total) && std::isnan(want)))
            << "sum " << total << ", expected " << want;
      }
    } catch (const xylem::Error& e) {
      ADD_FAILURE() << "reading the output: " << e.what();
      return;
    }
    ASSERT_EQ(got.size(), expect.size());
    for (std::size_t k = 0; k < got.size(); ++k)
      EXPECT_TRUE(got[k] == expect[k] || (std::isnan(got[k]) && std::isnan(expect[k])))
          << "element " << k << ": " << got[k] << ", expected " << expect[k];
  }
  void expect_empty(const Tensor& t, const std::string& what) { expect_written(t, {}, what); }

  // True when the backend runs every op a test needs in dtype (and the next
  // op's sum); otherwise says so on stdout (a framework that truly lacks an
  // op raises unsupported, tested by each op's own suite).
  bool runs_all(std::initializer_list<OpId> ops, DType dtype) {
    for (OpId op : ops) {
      if (!backend.supports(op, dtype) || !backend.supports(OpId::math_reduce, dtype)) {
        std::cout << "[ UNSUPPORTED ] " << target.spec() << ": " << xylem::op_name(op) << " in "
                  << xylem::name(dtype) << "\n";
        return false;
      }
    }
    return true;
  }
  static std::vector<double> same(std::int64_t n, double v) { return std::vector<double>(std::size_t(n), v); }
};

// ---- reductions -------------------------------------------------------------

TEST_P(Empty, reductions) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::math_reduce}, dtype)) return;
    const Tensor x = random({0, 5}, dtype);  // rows of nothing
    expect_written(xylem::sum(backend, x, Reduction{{0}}), same(5, 0), "sum over the empty axis");
    expect_written(xylem::sum(backend, x, Reduction{{0}, true}), same(5, 0), "sum keepdim");
    expect_written(xylem::sum(backend, x), {0}, "sum of everything");
    expect_written(xylem::mean(backend, x, Reduction{{0}}), same(5, kNaN), "mean over the empty axis");
    expect_written(xylem::var(backend, x, Reduction{{0}}), same(5, kNaN), "var over the empty axis");
    expect_written(xylem::mean(backend, x), {kNaN}, "mean of everything");
    // Along the full axis: empty results, written.
    for (const char* op : {"sum", "mean", "max", "min", "var"}) {
      const std::string name = op;
      const Reduction r{{1}};
      const Tensor y = name == "sum"    ? xylem::sum(backend, x, r)
                       : name == "mean" ? xylem::mean(backend, x, r)
                       : name == "max"  ? xylem::max(backend, x, r)
                       : name == "min"  ? xylem::min(backend, x, r)
                                        : xylem::var(backend, x, r);
      expect_empty(y, name + " along the full axis");
    }
    expect_empty(xylem::argmax(backend, x, Reduction{{1}}), "argmax along the full axis");
    expect_empty(xylem::argmin(backend, x, Reduction{{-1}}), "argmin along the full axis");
    // Scattered axes, one of them empty: a sum over [3, 0, 4] along 0 and 1.
    const Tensor x3 = random({3, 0, 4}, dtype);
    expect_written(xylem::sum(backend, x3, Reduction{{0, 1}}), same(4, 0), "sum over axes 0 and 1");
    expect_written(xylem::sum(backend, x3, Reduction{{1}}), same(12, 0), "sum over the middle axis");
    // No answer over nothing (PyTorch: "Expected reduction dim to have non-zero size"), even into an empty out.
    Tensor out = poisoned({5}, dtype);
    const auto before = xylem_test::snapshot(out);
    for (const std::string name : {"max", "min"}) {
      const auto message =
          XY_EXPECT_ERROR(ErrorCode::invalid_argument, name == "max" ? xylem::max(backend, x, Reduction{{0}}, out)
                                                                     : xylem::min(backend, x, Reduction{{0}}, out));
      EXPECT_TRUE(xylem_test::contains(message, "[0, 5]")) << message;
      EXPECT_TRUE(xylem_test::contains(message, name)) << message;
    }
    Tensor index(Layout{5}, DType::i64);
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::argmax(backend, x, Reduction{{0}}, index));
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::argmin(backend, x3, Reduction{{1}}));
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::max(backend, random({0, 0}, dtype), Reduction{{0}}));
    XY_EXPECT_UNCHANGED(out, before);
    EXPECT_EQ(index.version(), 0u);
  });
}

// ---- softmax, norms ------------------------------------------------------------

TEST_P(Empty, softmax) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_softmax, OpId::nn_softmax_grad}, dtype)) return;
    for (const Dims& dims : {Dims{0, 5}, Dims{4, 0}, Dims{2, 0, 3}}) {
      for (int axis : {0, -1}) {
        SCOPED_TRACE(Layout(dims).dims_string() + " axis " + std::to_string(axis));
        const Tensor x = random(dims, dtype);
        Tensor y(Layout(dims), dtype), ly(Layout(dims), dtype), dx(Layout(dims), dtype), ldx(Layout(dims), dtype);
        xylem::nn::softmax(backend, x, axis, y);
        xylem::nn::log_softmax(backend, x, axis, ly);
        expect_empty(y, "softmax");
        expect_empty(ly, "log_softmax");
        xylem::nn::softmax_grad(backend, y, random(dims, dtype), axis, dx);
        xylem::nn::log_softmax_grad(backend, ly, random(dims, dtype), axis, ldx);
        expect_empty(dx, "softmax_grad");
        expect_empty(ldx, "log_softmax_grad");
      }
    }
  });
}

TEST_P(Empty, layer_norm) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_layer_norm, OpId::nn_layer_norm_grad_input, OpId::nn_layer_norm_grad_params}, dtype))
      return;
    {  // no rows: every output empty; the parameter gradients sum over no rows
      const Tensor x = random({0, 6}, dtype), gamma = random({6}, dtype), beta = random({6}, dtype);
      Tensor y(Layout{0, 6}, dtype);
      const auto stats = xylem::nn::layer_norm(backend, x, 1, gamma, beta, 1e-5, y);
      expect_empty(y, "layer_norm y");
      expect_empty(stats.mean, "layer_norm mean");
      expect_empty(stats.rstd, "layer_norm rstd");
      Tensor dx(Layout{0, 6}, dtype);
      Tensor dgamma = poisoned({6}, dtype), dbeta = poisoned({6}, dtype);
      xylem::nn::layer_norm_grad(backend, x, 1, gamma, stats, random({0, 6}, dtype), dx, dgamma, dbeta);
      expect_empty(dx, "layer_norm_grad dx");
      expect_written(dgamma, same(6, 0), "layer_norm_grad dgamma");
      expect_written(dbeta, same(6, 0), "layer_norm_grad dbeta");
    }
    {  // rows of length 0: y empty, each row's mean and rstd those of no values (NaN)
      const Tensor x = random({4, 0}, dtype);
      Tensor y(Layout{4, 0}, dtype);
      const auto stats = xylem::nn::layer_norm(backend, x, 1, Tensor{}, Tensor{}, 1e-5, y);
      expect_empty(y, "layer_norm y, n = 0");
      expect_written(stats.mean, same(4, kNaN), "layer_norm mean, n = 0");
      expect_written(stats.rstd, same(4, kNaN), "layer_norm rstd, n = 0");
      Tensor dx(Layout{4, 0}, dtype), dgamma(Layout{0}, dtype), dbeta(Layout{0}, dtype);
      xylem::nn::layer_norm_grad(backend, x, 1, Tensor{}, stats, random({4, 0}, dtype), dx, dgamma, dbeta);
      expect_empty(dx, "layer_norm_grad dx, n = 0");
      expect_empty(dgamma, "layer_norm_grad dgamma, n = 0");
      expect_empty(dbeta, "layer_norm_grad dbeta, n = 0");
    }
  });
}

TEST_P(Empty, batch_norm) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_batch_norm_stats, OpId::nn_batch_norm_apply, OpId::nn_batch_norm_grad_params,
                   OpId::nn_batch_norm_grad_input, OpId::blas_scal, OpId::blas_axpy},
                  dtype))
      return;
    const Tensor x = random({0, 3, 4}, dtype), gamma = random({3}, dtype), beta = random({3}, dtype);
    Tensor running_mean = random({3}, dtype), running_var = random({3}, dtype, 0.5, 2);
    const auto mean_before = xylem_test::snapshot(running_mean), var_before = xylem_test::snapshot(running_var);
    {  // training on no values: no batch statistics (as PyTorch)
      Tensor y(Layout{0, 3, 4}, dtype);
      const auto message = XY_EXPECT_ERROR(
          ErrorCode::invalid_argument,
          (void)xylem::nn::batch_norm(backend, x, gamma, beta, running_mean, running_var, true, 0.1, 1e-5, y));
      EXPECT_TRUE(xylem_test::contains(message, "[0, 3, 4]")) << message;
      XY_EXPECT_UNCHANGED(running_mean, mean_before);
      XY_EXPECT_UNCHANGED(running_var, var_before);
      Tensor dx(Layout{0, 3, 4}, dtype), dg, db;
      XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                      xylem::nn::batch_norm_grad(backend, x, gamma, {running_mean, running_var}, true, 1e-5,
                                                 random({0, 3, 4}, dtype), dx, dg, db));
      EXPECT_EQ(dx.version(), 0u);
    }
    {  // inference on an empty batch: y empty; gradients of gamma and beta 0
      Tensor y(Layout{0, 3, 4}, dtype);
      const auto stats = xylem::nn::batch_norm(backend, x, gamma, beta, running_mean, running_var, false, 0.1, 1e-5, y);
      expect_empty(y, "batch_norm inference y");
      Tensor dx(Layout{0, 3, 4}, dtype), dgamma = poisoned({3}, dtype), dbeta = poisoned({3}, dtype);
      xylem::nn::batch_norm_grad(backend, x, gamma, stats, false, 1e-5, random({0, 3, 4}, dtype), dx, dgamma, dbeta);
      expect_empty(dx, "batch_norm_grad dx");
      expect_written(dgamma, same(3, 0), "batch_norm_grad dgamma");
      expect_written(dbeta, same(3, 0), "batch_norm_grad dbeta");
      XY_EXPECT_UNCHANGED(running_mean, mean_before);
    }
    {  // no channels, training: every output empty
      Tensor rm(Layout{0}, dtype), rv(Layout{0}, dtype), y(Layout{4, 0, 5}, dtype);
      xylem::fill(backend, rm, 0);
      xylem::fill(backend, rv, 1);
      const auto stats =
          xylem::nn::batch_norm(backend, random({4, 0, 5}, dtype), Tensor{}, Tensor{}, rm, rv, true, 0.1, 1e-5, y);
      expect_empty(y, "batch_norm C = 0 y");
      expect_empty(stats.mean, "batch_norm C = 0 mean");
      expect_empty(stats.var, "batch_norm C = 0 var");
    }
  });
}

// ---- blas -------------------------------------------------------------------------

TEST_P(Empty, blas_level1) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::blas_asum, OpId::blas_nrm2, OpId::blas_dot, OpId::blas_iamax, OpId::blas_copy}, dtype)) return;
    const Tensor x = random({0}, dtype), y = random({0}, dtype);
    EXPECT_EQ(xylem::blas::asum(backend, x).get(), 0.0);
    EXPECT_EQ(xylem::blas::nrm2(backend, x).get(), 0.0);
    EXPECT_EQ(xylem::blas::dot(backend, x, y).get(), 0.0);
    Tensor result = poisoned({1}, dtype);
    xylem::blas::asum(backend, x, result);
    expect_written(result, {0}, "asum into a tensor");
    xylem::blas::dot(backend, x, y, result);
    expect_written(result, {0}, "dot into a tensor");
    // iamax: an empty vector has no index (BLAS's "none"), an error as argmax's.
    Tensor index = xylem::full(backend, Layout{1}, DType::i64, 7);
    const auto before = xylem_test::snapshot(index);
    const auto message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::blas::iamax(backend, x, index));
    EXPECT_TRUE(xylem_test::contains(message, "iamax")) << message;
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::blas::iamax(backend, x).get());
    XY_EXPECT_UNCHANGED(index, before);
    Tensor copied(Layout{0}, dtype);
    xylem::blas::copy(backend, x, copied);
    expect_empty(copied, "copy");
  });
}

TEST_P(Empty, gemv) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::blas_gemv, OpId::blas_scal}, dtype)) return;
    Tensor y0(Layout{0}, dtype);  // rows = 0: y is empty
    xylem::blas::gemv(backend, Transpose::no, 1.5, random({0, 4}, dtype), random({4}, dtype), 0.0, y0);
    expect_empty(y0, "gemv m = 0");
    for (double beta : {0.0, 2.0, -0.5}) {  // cols = 0: y = beta y
      SCOPED_TRACE("beta " + std::to_string(beta));
      for (Transpose t : {Transpose::no, Transpose::yes}) {
        const Tensor a = t == Transpose::no ? random({3, 0}, dtype) : random({0, 3}, dtype);
        Tensor y = beta == 0 ? poisoned({3}, dtype) : random({3}, dtype);
        std::vector<double> expect = y.to_doubles();
        for (double& e : expect) e = beta == 0 ? 0 : beta * e;
        xylem::blas::gemv(backend, t, 1.5, a, random({0}, dtype), beta, y);
        expect_written(y, expect, "gemv n = 0");
      }
    }
  });
}

TEST_P(Empty, gemm) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::blas_gemm, OpId::blas_gemm_batched, OpId::math_binary}, dtype)) return;
    Tensor c(Layout{0, 3}, dtype);
    xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1.0, random({0, 4}, dtype), random({4, 3}, dtype), 0.0, c);
    expect_empty(c, "gemm m = 0");
    Tensor cn(Layout{3, 0}, dtype);
    xylem::blas::gemm(backend, Transpose::no, Transpose::yes, 1.0, random({3, 4}, dtype), random({0, 4}, dtype), 1.0,
                      cn);
    expect_empty(cn, "gemm n = 0, beta 1");
    Tensor cb(Layout{0, 2, 3}, dtype);
    xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1.0, random({0, 2, 4}, dtype), random({0, 4, 3}, dtype),
                      0.0, cb);
    expect_empty(cb, "batched gemm, batch 0");
    for (double beta : {0.0, 2.0}) {  // k = 0: c = beta c, plain and batched
      SCOPED_TRACE("k = 0, beta " + std::to_string(beta));
      Tensor ck = beta == 0 ? poisoned({2, 3}, dtype) : random({2, 3}, dtype);
      std::vector<double> expect = ck.to_doubles();
      for (double& e : expect) e = beta == 0 ? 0 : beta * e;
      xylem::blas::gemm(backend, Transpose::no, Transpose::no, 1.0, random({2, 0}, dtype), random({0, 3}, dtype), beta,
                        ck);
      expect_written(ck, expect, "gemm k = 0");
      Tensor ckb = beta == 0 ? poisoned({2, 2, 3}, dtype) : random({2, 2, 3}, dtype);
      expect = ckb.to_doubles();
      for (double& e : expect) e = beta == 0 ? 0 : beta * e;
      xylem::blas::gemm(backend, Transpose::yes, Transpose::no, 1.0, random({2, 0, 2}, dtype), random({1, 0, 3}, dtype),
                        beta, ckb);
      expect_written(ckb, expect, "batched gemm k = 0");
    }
  });
}

TEST_P(Empty, linear) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::blas_gemm, OpId::math_binary}, dtype)) return;
    const Tensor x = random({0, 5}, dtype), w = random({3, 5}, dtype), bias = random({3}, dtype);
    Tensor y(Layout{0, 3}, dtype);
    xylem::nn::linear(backend, x, w, bias, y);
    expect_empty(y, "linear y");
    Tensor dx(Layout{0, 5}, dtype), dw = poisoned({3, 5}, dtype), dbias = poisoned({3}, dtype);
    xylem::nn::linear_grad(backend, x, w, random({0, 3}, dtype), dx, dw, dbias);
    expect_empty(dx, "linear_grad dx");
    expect_written(dw, same(15, 0), "linear_grad dw");
    expect_written(dbias, same(3, 0), "linear_grad dbias");
  });
}

// ---- convolution, pooling, lrn ---------------------------------------------------

TEST_P(Empty, conv2d) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_conv2d, OpId::nn_conv2d_grad_data, OpId::nn_conv2d_grad_filter}, dtype)) return;
    const xylem::nn::Conv2d p{1, 1, 1, 1, 1, 1, 1};
    {  // N = 0: y and dx empty, dw a sum over no images: 0
      const Tensor x = random({0, 3, 5, 5}, dtype), w = random({4, 3, 3, 3}, dtype);
      Tensor y(Layout{0, 4, 5, 5}, dtype);
      xylem::nn::conv2d(backend, x, w, y, p);
      expect_empty(y, "conv2d N = 0");
      Tensor dx(Layout{0, 3, 5, 5}, dtype), dw = poisoned({4, 3, 3, 3}, dtype);
      xylem::nn::conv2d_grad_data(backend, y, w, dx, p);
      xylem::nn::conv2d_grad_filter(backend, x, y, dw, p);
      expect_empty(dx, "conv2d_grad_data N = 0");
      expect_written(dw, same(4 * 3 * 3 * 3, 0), "conv2d_grad_filter N = 0");
    }
    for (int groups : {1, 2}) {  // C = 0: y sums over no channels: 0
      SCOPED_TRACE("groups " + std::to_string(groups));
      xylem::nn::Conv2d pg = p;
      pg.groups = groups;
      const Tensor x = random({2, 0, 5, 5}, dtype), w = random({4, 0, 3, 3}, dtype);
      Tensor y = poisoned({2, 4, 5, 5}, dtype);
      xylem::nn::conv2d(backend, x, w, y, pg);
      expect_written(y, same(2 * 4 * 25, 0), "conv2d C = 0");
      Tensor dx(Layout{2, 0, 5, 5}, dtype), dw(Layout{4, 0, 3, 3}, dtype);
      xylem::nn::conv2d_grad_data(backend, random({2, 4, 5, 5}, dtype), w, dx, pg);
      xylem::nn::conv2d_grad_filter(backend, x, random({2, 4, 5, 5}, dtype), dw, pg);
      expect_empty(dx, "conv2d_grad_data C = 0");
      expect_empty(dw, "conv2d_grad_filter C = 0");
    }
    {  // K = 0: y empty; dx a sum over no output channels: 0
      const Tensor x = random({2, 3, 5, 5}, dtype), w = random({0, 3, 3, 3}, dtype);
      Tensor y(Layout{2, 0, 5, 5}, dtype);
      xylem::nn::conv2d(backend, x, w, y, p);
      expect_empty(y, "conv2d K = 0");
      Tensor dx = poisoned({2, 3, 5, 5}, dtype);
      xylem::nn::conv2d_grad_data(backend, y, w, dx, p);
      expect_written(dx, same(2 * 3 * 25, 0), "conv2d_grad_data K = 0");
    }
    {  // an empty plane inside padding: every term is padding, 0
      Tensor y = poisoned({1, 3, 2, 6}, dtype);
      xylem::nn::conv2d(backend, random({1, 2, 0, 4}, dtype), random({3, 2, 1, 1}, dtype), y, p);
      expect_written(y, same(3 * 2 * 6, 0), "conv2d H = 0 with padding");
    }
    // A filter window of zero size: invalid_argument naming the shapes; y untouched.
    Tensor y = poisoned({1, 2, 5, 5}, dtype);
    const auto before = xylem_test::snapshot(y);
    for (const Dims& wd : {Dims{2, 3, 0, 3}, Dims{2, 3, 3, 0}}) {
      const auto message =
          XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                          xylem::nn::conv2d(backend, random({1, 3, 5, 5}, dtype), random(wd, dtype), y, p));
      EXPECT_TRUE(xylem_test::contains(message, Layout(wd).dims_string())) << message;
      EXPECT_TRUE(xylem_test::contains(message, "[1, 3, 5, 5]")) << message;
    }
    XY_EXPECT_UNCHANGED(y, before);
  });
}

TEST_P(Empty, pooling) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_max_pool2d, OpId::nn_avg_pool2d, OpId::nn_max_pool2d_grad, OpId::nn_avg_pool2d_grad},
                  dtype))
      return;
    const xylem::nn::Pool2d p{2, 2, 2, 2, 0, 0, true};
    for (const Dims& dims : {Dims{0, 3, 4, 4}, Dims{2, 0, 4, 4}}) {
      SCOPED_TRACE(Layout(dims).dims_string());
      const Tensor x = random(dims, dtype);
      const Dims out{dims[0], dims[1], 2, 2};
      Tensor ymax(Layout(out), dtype), yavg(Layout(out), dtype), dxmax(Layout(dims), dtype), dxavg(Layout(dims), dtype);
      xylem::nn::max_pool2d(backend, x, ymax, p);
      xylem::nn::avg_pool2d(backend, x, yavg, p);
      expect_empty(ymax, "max_pool2d");
      expect_empty(yavg, "avg_pool2d");
      xylem::nn::max_pool2d_grad(backend, x, ymax, dxmax, p);
      xylem::nn::avg_pool2d_grad(backend, yavg, dxavg, p);
      expect_empty(dxmax, "max_pool2d_grad");
      expect_empty(dxavg, "avg_pool2d_grad");
    }
    // Zero-sized windows and image planes: invalid_argument naming the shape.
    Tensor y = poisoned({1, 2, 2, 2}, dtype);
    const auto before = xylem_test::snapshot(y);
    for (const xylem::nn::Pool2d& bad :
         {xylem::nn::Pool2d{0, 2, 1, 1, 0, 0, true}, xylem::nn::Pool2d{2, 0, 1, 1, 0, 0, true}}) {
      const auto message = XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                                           xylem::nn::max_pool2d(backend, random({1, 2, 4, 4}, dtype), y, bad));
      EXPECT_TRUE(xylem_test::contains(message, "[1, 2, 4, 4]")) << message;
    }
    const auto message =
        XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                        xylem::nn::avg_pool2d(backend, random({1, 2, 0, 3}, dtype), y, {2, 2, 1, 1, 1, 1, true}));
    EXPECT_TRUE(xylem_test::contains(message, "[1, 2, 0, 3]")) << message;
    XY_EXPECT_UNCHANGED(y, before);
  });
}

TEST_P(Empty, lrn_dropout) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_lrn, OpId::nn_lrn_grad, OpId::nn_dropout, OpId::nn_dropout_grad}, dtype)) return;
    const Tensor x = random({0, 4, 3}, dtype);
    Tensor y(Layout{0, 4, 3}, dtype), dx(Layout{0, 4, 3}, dtype);
    xylem::nn::lrn(backend, x, y);
    expect_empty(y, "lrn");
    xylem::nn::lrn_grad(backend, x, y, random({0, 4, 3}, dtype), dx);
    expect_empty(dx, "lrn_grad");
    xylem::Generator gen(seed);
    Tensor yd(Layout{0, 4, 3}, dtype), dxd(Layout{0, 4, 3}, dtype);
    const auto mask = xylem::nn::dropout(backend, x, yd, 0.3, gen);
    expect_empty(yd, "dropout");
    xylem::nn::dropout_grad(backend, yd, dxd, mask);
    expect_empty(dxd, "dropout_grad");
  });
}

// ---- losses ---------------------------------------------------------------------

TEST_P(Empty, losses) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::nn_cross_entropy, OpId::nn_cross_entropy_grad, OpId::math_binary}, dtype)) return;
    // The mean over an empty batch is NaN, as PyTorch's.
    const Tensor x = random({0, 5}, dtype), classes = Tensor::from(std::vector<std::int64_t>{});
    expect_written(xylem::nn::cross_entropy(backend, x, classes), {kNaN}, "cross_entropy N = 0");
    Tensor dx(Layout{0, 5}, dtype);
    xylem::nn::cross_entropy_grad(backend, x, classes, dx);
    expect_empty(dx, "cross_entropy_grad N = 0");
    expect_written(xylem::nn::mse_loss(backend, x, random({0, 5}, dtype)), {kNaN}, "mse_loss of nothing");
    Tensor dxm(Layout{0, 5}, dtype);
    xylem::nn::mse_loss_grad(backend, x, random({0, 5}, dtype), dxm);
    expect_empty(dxm, "mse_loss_grad of nothing");
  });
}

// ---- elementwise, creation (the dispatcher writes empty outputs) ----------------

TEST_P(Empty, elementwise_and_creation) {
  for_each_dtype([&](auto tag) {
    const DType dtype = xylem::dtype_of_v<decltype(tag)>;
    if (!runs_all({OpId::math_unary, OpId::math_binary, OpId::math_cast, OpId::creation_uniform, OpId::creation_arange},
                  dtype))
      return;
    const Tensor x = random({0, 3}, dtype);
    expect_empty(xylem::exp(backend, x), "exp");
    expect_empty(xylem::add(backend, x, random({3}, dtype)), "add, broadcast");
    expect_empty(xylem::cast(backend, x, dtype), "cast");  // f64 is not everywhere (opencl_no_fp64)
    Tensor r(Layout{0, 3}, dtype);
    xylem::nn::relu(backend, x, r);
    expect_empty(r, "relu");
    expect_empty(xylem::zeros(backend, Layout{4, 0}, dtype), "zeros");
    expect_empty(xylem::arange(backend, 0, dtype), "arange");
    xylem::Generator gen(seed);
    expect_empty(xylem::uniform(backend, Layout{0}, dtype, gen), "uniform");
    expect_empty(xylem::contiguous(backend, random({3, 0}, dtype).transpose()), "contiguous");
  });
}

// ---- sizes past int64 from parameters ---------------------------------------------

TEST_P(Empty, conv_pool_sizes_overflow) {
  // Shapes only: nothing is allocated.
  constexpr std::int64_t big = std::int64_t{1} << 20;
  xylem::nn::Conv2d dilated;
  dilated.dilation_h = INT_MAX;
  auto message = XY_EXPECT_ERROR(
      ErrorCode::invalid_argument,
      (void)xylem::nn::conv2d_output_shape(Layout{1, 1, big * big, 1}, Layout{1, 1, std::int64_t{1} << 34, 1}, dilated));
  EXPECT_TRUE(xylem_test::contains(message, "overflows int64")) << message;
  EXPECT_TRUE(xylem_test::contains(message, "dilation 2147483647x1")) << message;
  // The output [2^21, 2^21, ~2^31, ~2^31] has more elements than int64 counts.
  xylem::nn::Conv2d padded;
  padded.pad_h = padded.pad_w = 1 << 30;
  message =
      XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                      (void)xylem::nn::conv2d_output_shape(Layout{2 * big, 1, big, 1}, Layout{2 * big, 1, 1, 1}, padded));
  EXPECT_TRUE(xylem_test::contains(message, "y's size")) << message;
  EXPECT_TRUE(xylem_test::contains(message, "[2097152, 1, 1048576, 1]")) << message;
  // One image's im2col matrix [2^20, 2^40] of f64 is 2^63 bytes.
  message = XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                            (void)xylem::nn::conv2d_output_shape(Layout{1, big, big, big}, Layout{1, big, 1, 1}, {}));
  EXPECT_TRUE(xylem_test::contains(message, "im2col")) << message;
  // Pooling: a window larger than the padded plane, the shape named.
  message = XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                            (void)xylem::nn::pool2d_output_shape(Layout{1, 1, 3, 3}, {INT_MAX, 1, 1, 1, 0, 0, true}));
  EXPECT_TRUE(xylem_test::contains(message, "[1, 1, 3, 3]")) << message;
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Empty, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
