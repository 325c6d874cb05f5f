// xylem::nn dropout, linear, cross_entropy and mse_loss with their
// gradients, in f16, bf16, f32 and f64 against float64 references: the
// dropout mask is math.h's Philox stream (the same on every framework for
// one Generator seed), its keep rate near 1-p and the kept values scaled by
// 1/(1-p); linear over any leading axes, with and without bias; losses with
// huge logits; out-of-range targets (invalid_argument naming the target, its
// position and C; outputs untouched); gradients also against finite
// differences of the backend's forward op (f64); bad arguments.
#include "conformance/conformance.hpp"
#include "conformance/gradcheck.hpp"
#include "conformance/nn_common.hpp"
#include "xylem/plugin/math.h"

namespace conformance {
namespace {


// Element k of a dropout with (seed, offset): kept, dropped, or (when the
// f32 uniform falls between float(p) and p) either.
enum class Keep { yes, no, either };
Keep keep(std::uint64_t seed, std::uint64_t offset, std::size_t k, double p) {
  const float u = xy_uniform01_f(xy_philox(seed, offset + k));
  const bool as_double = double(u) >= p, as_float = u >= static_cast<float>(p);
  return as_double == as_float ? (as_double ? Keep::yes : Keep::no) : Keep::either;
}

class Train : public Conformance {
 protected:
  // True when the backend runs every op the call needs; otherwise the call
  // must raise unsupported.
  bool runs_all(std::initializer_list<OpId> ops, DType dtype, const std::function<void()>& call) {
    for (OpId op : ops) {
      if (!backend.supports(op, dtype)) return runs(op, dtype, call);
    }
    return true;
  }

  // ---- dropout ----
  // y (or dx) against the mask: kept elements x/(1-p) (rounded once), dropped 0.
  void expect_dropout(DType dtype, const Arg& out, const std::vector<double>& xs, const xylem::nn::DropoutMask& mask,
                      const std::string& what) {
    const auto got = out.base.to_doubles();
    std::size_t bad = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const double g = got[static_cast<std::size_t>(out.pos[k])];
      const double kept = xs[k] / (1 - mask.p);
      const auto ok_kept = std::abs(g - kept) <= tol(dtype).elem * std::abs(kept) + floor_of(dtype);
      const Keep want = keep(mask.seed, mask.offset, k, mask.p);
      const bool ok = want == Keep::yes ? ok_kept : want == Keep::no ? g == 0 : ok_kept || g == 0;
      if (!ok && ++bad <= 5) {
        ADD_FAILURE() << what << " element " << k << ": got " << g << ", expected "
                      << (want == Keep::no ? 0.0 : kept) << " (p " << mask.p << ", seed " << mask.seed
                      << ", offset " << mask.offset << ")";
      }
    }
    EXPECT_EQ(bad, 0u) << what;
  }

  void dropout(DType dtype) {
    if (!runs(OpId::nn_dropout, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {4});
          auto y = output(dtype, ViewKind::contiguous, {4});
          xylem::Generator gen(1);
          (void)xylem::nn::dropout(backend, x.view, y.view, 0.5, gen);
        })) {
      return;
    }
    struct Case {
      ViewKind in, out;
      Dims dims;
    };
    const Case cases[] = {{ViewKind::contiguous, ViewKind::contiguous, {1}},
                          {ViewKind::contiguous, ViewKind::contiguous, {7}},
                          {ViewKind::contiguous, ViewKind::contiguous, {100003}},
                          {ViewKind::strided, ViewKind::contiguous, {1000}},
                          {ViewKind::transposed, ViewKind::padded, {37, 29}},
                          {ViewKind::contiguous, ViewKind::strided, {3, 5, 7}}};
    for (double p : {0.0, 0.1, 0.5, 0.9}) {
      xylem::Generator gen(seed ^ 0x5eed);
      std::uint64_t offset = 0;
      for (const auto& c : cases) {
        SCOPED_TRACE(std::string(name(c.in)) + " -> " + name(c.out) + " " + dims_text(c.dims) + " p " +
                     std::to_string(p));
        auto x = input(dtype, c.in, c.dims, -2, 2);
        auto y = output(dtype, c.out, c.dims);
        const auto mask = xylem::nn::dropout(backend, x.view, y.view, p, gen);
        EXPECT_EQ(mask.p, p);
        EXPECT_EQ(mask.seed, gen.seed());
        EXPECT_EQ(mask.offset, offset) << "the mask starts where the generator stood";
        offset += static_cast<std::uint64_t>(product(c.dims));
        const auto xs = x.values();
        expect_dropout(dtype, y, xs, mask, "dropout");
        // The keep rate, on the large case: within 6 standard deviations of 1 - p.
        const auto n = static_cast<double>(xs.size());
        if (n > 50000) {
          const auto got = y.base.to_doubles();
          double kept = 0;
          for (std::size_t k = 0; k < xs.size(); ++k) kept += (got[static_cast<std::size_t>(y.pos[k])] != 0 || xs[k] == 0);
          EXPECT_NEAR(kept / n, 1 - p, 6 * std::sqrt(p * (1 - p) / n) + 1e-9) << "keep rate";
        }
      }
      // In place: y the same tensor as x.
      SCOPED_TRACE("in place");
      auto x = input(dtype, ViewKind::contiguous, {999}, -2, 2);
      const auto xs = x.values();
      const auto mask = xylem::nn::dropout(backend, x.view, x.view, p, gen);
      expect_dropout(dtype, x, xs, mask, "dropout in place");
    }
  }

  void dropout_grad(DType dtype) {
    if (!runs(OpId::nn_dropout_grad, dtype, [&] {
          auto dy = input(dtype, ViewKind::contiguous, {4});
          auto dx = output(dtype, ViewKind::contiguous, {4});
          xylem::nn::dropout_grad(backend, dy.view, dx.view, {0.5, 1, 0});
        })) {
      return;
    }
    for (double p : {0.0, 0.3, 0.9}) {
      for (const Dims& dims : {Dims{1}, Dims{1001}, Dims{4, 33}}) {
        SCOPED_TRACE(dims_text(dims) + " p " + std::to_string(p));
        const xylem::nn::DropoutMask mask{p, seed, seed % 1000};
        auto dy = input(dtype, ViewKind::contiguous, dims, -2, 2);
        auto dx = output(dtype, dims.size() > 1 ? ViewKind::transposed : ViewKind::strided, dims);
        xylem::nn::dropout_grad(backend, dy.view, dx.view, mask);
        expect_dropout(dtype, dx, dy.values(), mask, "dropout_grad");
      }
    }
  }

  // ---- linear ----
  struct LinearCase {
    Dims x, w;
    bool bias;
    ViewKind x_layout = ViewKind::contiguous, y_layout = ViewKind::contiguous;
  };
  static std::vector<LinearCase> linear_cases() {
    return {{{5, 7}, {3, 7}, true},
            {{2, 3, 4}, {6, 4}, false},
            {{1, 1}, {1, 1}, true},
            {{7}, {3, 7}, true},
            {{33, 65}, {17, 65}, true},
            {{8, 5}, {4, 5}, true, ViewKind::transposed, ViewKind::padded},
            {{6, 9}, {2, 9}, false, ViewKind::strided, ViewKind::strided}};
  }
  static std::string describe(const LinearCase& c) {
    return "x " + dims_text(c.x) + " (" + name(c.x_layout) + ") w " + dims_text(c.w) +
           (c.bias ? " bias" : " no bias") + ", y " + name(c.y_layout);
  }

  void linear(DType dtype) {
    if (!runs_all({OpId::blas_gemm, OpId::math_binary}, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto w = input(dtype, ViewKind::contiguous, {4, 3});
          auto b = input(dtype, ViewKind::contiguous, {4});
          auto y = output(dtype, ViewKind::contiguous, {2, 4});
          xylem::nn::linear(backend, x.view, w.view, b.view, y.view);
        })) {
      return;
    }
    for (const auto& c : linear_cases()) {
      SCOPED_TRACE(describe(c));
      const std::int64_t in = c.w[1], out = c.w[0], rows = product(c.x) / in;
      Dims ydims = c.x;
      ydims.back() = out;
      auto x = input(dtype, c.x_layout, c.x);
      auto w = input(dtype, ViewKind::contiguous, c.w);
      auto b = input(dtype, ViewKind::contiguous, {out});
      auto y = output(dtype, c.y_layout, ydims);
      xylem::nn::linear(backend, x.view, w.view, c.bias ? b.view : Tensor{}, y.view);
      const auto xs = x.values(), ws = w.values();
      std::vector<double> expect(static_cast<std::size_t>(rows * out)), mag(expect.size());
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t o = 0; o < out; ++o) {
          double s = c.bias ? b.at(static_cast<std::size_t>(o)) : 0.0, a = std::abs(s);
          for (std::int64_t i = 0; i < in; ++i) {
            s += xs[static_cast<std::size_t>(r * in + i)] * ws[static_cast<std::size_t>(o * in + i)];
            a += std::abs(xs[static_cast<std::size_t>(r * in + i)] * ws[static_cast<std::size_t>(o * in + i)]);
          }
          expect[static_cast<std::size_t>(r * out + o)] = s;
          mag[static_cast<std::size_t>(r * out + o)] = a;
        }
      // f16/bf16 may round twice (the product, then the bias sum).
      expect_result(y, expect, [&](std::size_t k) {
        return tol(dtype).elem * (std::abs(expect[k]) + mag[k] * (dtype == DType::f16 || dtype == DType::bf16)) +
               4 * acc(dtype, in) * mag[k] + floor_of(dtype);
      }, "linear");
    }
  }

  void linear_grad(DType dtype) {
    if (!runs_all({OpId::blas_gemm, OpId::math_reduce}, dtype, [&] {
          auto x = input(dtype, ViewKind::contiguous, {2, 3});
          auto w = input(dtype, ViewKind::contiguous, {4, 3});
          auto dy = input(dtype, ViewKind::contiguous, {2, 4});
          auto dx = output(dtype, ViewKind::contiguous, {2, 3});
          auto dw = output(dtype, ViewKind::contiguous, {4, 3});
          auto db = output(dtype, ViewKind::contiguous, {4});
          xylem::nn::linear_grad(backend, x.view, w.view, dy.view, dx.view, dw.view, db.view);
        })) {
      return;
    }
    int variant = 0;
    for (const auto& c : linear_cases()) {
      SCOPED_TRACE(describe(c));
      const std::int64_t in = c.w[1], out = c.w[0], rows = product(c.x) / in;
      Dims ydims = c.x;
      ydims.back() = out;
      auto x = input(dtype, c.x_layout, c.x);
      auto w = input(dtype, ViewKind::contiguous, c.w);
      auto dy = input(dtype, c.y_layout == ViewKind::padded ? ViewKind::contiguous : c.y_layout, ydims);
      auto dx = output(dtype, c.x_layout, c.x);
      auto dw = output(dtype, ViewKind::contiguous, c.w);
      auto db = output(dtype, ViewKind::strided, {out});
      // Leave one of the three out in turn (and none in the first case).
      const int skip = variant++ % 4;
      Tensor dx_arg = skip == 1 ? Tensor{} : dx.view, dw_arg = skip == 2 ? Tensor{} : dw.view,
             db_arg = skip == 3 || !c.bias ? Tensor{} : db.view;
      xylem::nn::linear_grad(backend, x.view, w.view, dy.view, dx_arg, dw_arg, db_arg);
      const auto xs = x.values(), ws = w.values(), dys = dy.values();
      std::vector<double> edx(xs.size(), 0), mdx(edx), edw(ws.size(), 0), mdw(edw),
          edb(static_cast<std::size_t>(out), 0), mdb(edb);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t o = 0; o < out; ++o) {
          const double g = dys[static_cast<std::size_t>(r * out + o)];
          edb[static_cast<std::size_t>(o)] += g, mdb[static_cast<std::size_t>(o)] += std::abs(g);
          for (std::int64_t i = 0; i < in; ++i) {
            const auto xi = static_cast<std::size_t>(r * in + i), wi = static_cast<std::size_t>(o * in + i);
            edx[xi] += g * ws[wi], mdx[xi] += std::abs(g * ws[wi]);
            edw[wi] += g * xs[xi], mdw[wi] += std::abs(g * xs[xi]);
          }
        }
      auto within = [&](const std::vector<double>& e, const std::vector<double>& m, std::int64_t terms) {
        return [&e, &m, dtype, terms](std::size_t k) {
          return tol(dtype).elem * std::abs(e[k]) + 4 * acc(dtype, terms) * m[k] + floor_of(dtype);
        };
      };
      if (dx_arg.defined()) expect_result(dx, edx, within(edx, mdx, out), "linear_grad dx");
      if (dw_arg.defined()) expect_result(dw, edw, within(edw, mdw, rows), "linear_grad dw");
      if (db_arg.defined()) expect_result(db, edb, within(edb, mdb, rows), "linear_grad dbias");
      if (!dx_arg.defined()) {
        EXPECT_EQ(dx.base.version(), 1u) << "dx was not asked for";
      }
    }
  }

  // ---- losses ----
  // Logits [n, c] and targets; `bad` rows get a target outside [0, c).
  struct Logits {
    Arg x;
    std::vector<std::int64_t> target;
    Tensor target_tensor;
  };
  Logits logits(DType dtype, std::int64_t n, std::int64_t c, double offset, ViewKind layout,
                const std::vector<std::size_t>& bad = {}) {
    Logits l{input(dtype, layout, {n, c}, offset - 3, offset + 3), {}, {}};
    std::uniform_int_distribution<std::int64_t> pick(0, c - 1);
    for (std::int64_t i = 0; i < n; ++i) l.target.push_back(pick(rng));
    for (std::size_t i : bad) l.target[i] = i % 2 ? c : -1;
    l.target_tensor = Tensor::from(l.target);
    return l;
  }

  // `call` raises invalid_argument naming the bad target `value`, its
  // position `at` and the class count.
  void expect_bad_target(const std::function<void()>& call, std::size_t at, std::int64_t value, std::int64_t classes) {
    const std::string message = XY_EXPECT_ERROR(xylem::ErrorCode::invalid_argument, call());
    for (const std::string& part : {std::string("cross_entropy"), "target[" + std::to_string(at) + "] is " + std::to_string(value),
                                   "C = " + std::to_string(classes)}) {
      EXPECT_TRUE(xylem_test::contains(message, part)) << "'" << part << "' is missing from: " << message;
    }
  }

  struct CeCase {
    std::int64_t n, c;
    double offset;
    ViewKind layout;
  };
  static std::vector<CeCase> ce_cases() {
    return {{4, 10, 0, ViewKind::contiguous},  {1, 1, 0, ViewKind::contiguous},    {7, 1000, 0, ViewKind::contiguous},
            {64, 3, 0, ViewKind::transposed},   {5, 20, 1e4, ViewKind::contiguous}, {6, 9, -1e4, ViewKind::padded}};
  }

  void cross_entropy(DType dtype) {
    if (!runs_all({OpId::nn_cross_entropy, OpId::math_reduce}, dtype, [&] {
          auto l = logits(dtype, 2, 3, 0, ViewKind::contiguous);
          (void)xylem::nn::cross_entropy(backend, l.x.view, l.target_tensor);
        })) {
      return;
    }
    for (const auto& c : ce_cases()) {
      for (bool with_bad : {false, true}) {
        SCOPED_TRACE(std::to_string(c.n) + " x " + std::to_string(c.c) + " offset " + std::to_string(c.offset) + " " +
                     name(c.layout) + (with_bad ? ", a target out of range" : ""));
        auto l = logits(dtype, c.n, c.c, c.offset, c.layout, with_bad ? std::vector<std::size_t>{0} : std::vector<std::size_t>{});
        if (with_bad) {
          expect_bad_target([&] { (void)xylem::nn::cross_entropy(backend, l.x.view, l.target_tensor); }, 0, -1, c.c);
          continue;
        }
        const Tensor loss = xylem::nn::cross_entropy(backend, l.x.view, l.target_tensor);
        EXPECT_EQ(loss.dtype(), dtype);
        ASSERT_EQ(loss.numel(), 1);
        const double got = loss.to_doubles()[0];
        const auto xs = l.x.values();
        double sum = 0, mag = 0;
        for (std::int64_t i = 0; i < c.n; ++i) {
          double m = -std::numeric_limits<double>::infinity(), s = 0;
          for (std::int64_t j = 0; j < c.c; ++j) m = std::max(m, xs[static_cast<std::size_t>(i * c.c + j)]);
          for (std::int64_t j = 0; j < c.c; ++j) s += std::exp(xs[static_cast<std::size_t>(i * c.c + j)] - m);
          const std::int64_t t = l.target[static_cast<std::size_t>(i)];
          const double row = m + std::log(s) - xs[static_cast<std::size_t>(i * c.c + t)];
          sum += row;
          mag += std::abs(m) + std::log(s) + std::abs(row) + 1;
        }
        const double expect = sum / double(c.n);
        EXPECT_NEAR(got, expect, tol(dtype).elem * std::abs(expect) + 4 * acc(dtype, c.c + c.n) * mag / double(c.n))
            << "cross_entropy";
      }
    }
  }

  void cross_entropy_grad(DType dtype) {
    if (!runs_all({OpId::nn_cross_entropy_grad, OpId::creation_fill}, dtype, [&] {
          auto l = logits(dtype, 2, 3, 0, ViewKind::contiguous);
          auto dx = output(dtype, ViewKind::contiguous, {2, 3});
          xylem::nn::cross_entropy_grad(backend, l.x.view, l.target_tensor, dx.view);
        })) {
      return;
    }
    for (const auto& c : ce_cases()) {
      for (double dloss : {1.0, 2.5}) {
        const bool with_bad = dloss != 1.0 && c.n > 1;
        SCOPED_TRACE(std::to_string(c.n) + " x " + std::to_string(c.c) + " offset " + std::to_string(c.offset) + " " +
                     name(c.layout) + " dloss " + std::to_string(dloss) + (with_bad ? ", a target out of range" : ""));
        auto l = logits(dtype, c.n, c.c, c.offset, c.layout, with_bad ? std::vector<std::size_t>{1} : std::vector<std::size_t>{});
        auto dx = output(dtype, c.layout == ViewKind::padded ? ViewKind::transposed : ViewKind::contiguous, {c.n, c.c});
        if (with_bad) {  // the poisoned dx stays as it was
          const auto before = xylem_test::snapshot(dx.base);
          expect_bad_target([&] { xylem::nn::cross_entropy_grad(backend, l.x.view, l.target_tensor, dx.view, dloss); },
                            1, c.c, c.c);
          XY_EXPECT_UNCHANGED(dx.base, before);
          continue;
        }
        xylem::nn::cross_entropy_grad(backend, l.x.view, l.target_tensor, dx.view, dloss);
        const auto xs = l.x.values();
        std::vector<double> expect(xs.size());
        for (std::int64_t i = 0; i < c.n; ++i) {
          double m = -std::numeric_limits<double>::infinity(), s = 0;
          for (std::int64_t j = 0; j < c.c; ++j) m = std::max(m, xs[static_cast<std::size_t>(i * c.c + j)]);
          for (std::int64_t j = 0; j < c.c; ++j) s += std::exp(xs[static_cast<std::size_t>(i * c.c + j)] - m);
          const std::int64_t t = l.target[static_cast<std::size_t>(i)];
          for (std::int64_t j = 0; j < c.c; ++j) {
            const auto k = static_cast<std::size_t>(i * c.c + j);
            expect[k] = (std::exp(xs[k] - m) / s - (j == t)) * dloss / double(c.n);
          }
        }
        const double unit = dloss / double(c.n);
        expect_result(dx, expect, [&](std::size_t k) {
          return tol(dtype).elem * std::abs(expect[k]) + 8 * tol(dtype).eps * unit * (std::abs(xs[k]) + 10) +
                 floor_of(dtype);
        }, "cross_entropy_grad");
      }
    }
  }

  void mse(DType dtype, bool grad) {
    const bool ok = grad ? runs_all({OpId::math_binary, OpId::creation_fill}, dtype, [&] {
      auto x = input(dtype, ViewKind::contiguous, {3});
      auto dx = output(dtype, ViewKind::contiguous, {3});
      xylem::nn::mse_loss_grad(backend, x.view, x.view, dx.view);
    })
                         : runs_all({OpId::math_binary, OpId::math_reduce}, dtype, [&] {
                             auto x = input(dtype, ViewKind::contiguous, {3});
                             (void)xylem::nn::mse_loss(backend, x.view, x.view);
                           });
    if (!ok) return;
    struct Case {
      Dims dims;
      ViewKind x, t;
    };
    const Case cases[] = {{{1}, ViewKind::contiguous, ViewKind::contiguous},
                          {{7}, ViewKind::strided, ViewKind::contiguous},
                          {{3, 5, 7}, ViewKind::contiguous, ViewKind::strided},
                          {{100003}, ViewKind::contiguous, ViewKind::contiguous},
                          {{9, 4}, ViewKind::transposed, ViewKind::padded}};
    for (const auto& c : cases) {
      for (double dloss : {1.0, -0.5}) {
        SCOPED_TRACE(dims_text(c.dims) + " " + name(c.x) + ", " + name(c.t) + " dloss " + std::to_string(dloss));
        auto x = input(dtype, c.x, c.dims, -2, 2);
        auto t = input(dtype, c.t, c.dims, -2, 2);
        const auto xs = x.values(), ts = t.values();
        const auto n = static_cast<double>(xs.size());
        if (!grad) {
          if (dloss != 1.0) continue;
          const Tensor loss = xylem::nn::mse_loss(backend, x.view, t.view);
          EXPECT_EQ(loss.dtype(), dtype);
          ASSERT_EQ(loss.numel(), 1);
          double sum = 0;
          for (std::size_t k = 0; k < xs.size(); ++k) sum += (xs[k] - ts[k]) * (xs[k] - ts[k]);
          // Each squared difference rounds to the storage type on the way (mul, then mean).
          EXPECT_NEAR(loss.to_doubles()[0], sum / n, (tol(dtype).elem * 2 + 4 * acc(dtype, xs.size())) * sum / n)
              << "mse_loss";
          continue;
        }
        auto dx = output(dtype, c.x, c.dims);
        xylem::nn::mse_loss_grad(backend, x.view, t.view, dx.view, dloss);
        std::vector<double> expect(xs.size());
        for (std::size_t k = 0; k < xs.size(); ++k) expect[k] = 2 * (xs[k] - ts[k]) / n * dloss;
        expect_result(dx, expect, [&](std::size_t k) {
          return tol(dtype).elem * 3 * std::abs(expect[k]) + floor_of(dtype);
        }, "mse_loss_grad");
      }
    }
  }

  // Every gradient against central differences of its forward op, f64.
  void finite_differences() {
    for (OpId op : {OpId::nn_dropout, OpId::nn_dropout_grad, OpId::blas_gemm, OpId::math_binary, OpId::math_reduce,
                    OpId::nn_cross_entropy, OpId::nn_cross_entropy_grad, OpId::creation_fill}) {
      if (!backend.supports(op, xylem::f64)) return;
    }
    SCOPED_TRACE("finite differences");
    {  // dropout: the same Generator seed gives the same mask
      const Layout shape{50};
      const auto xs = xylem_test::random_vector<double>(rng, 50, -2, 2), dys = xylem_test::random_vector<double>(rng, 50);
      auto f = [&](const Tensor& x) {
        xylem::Generator gen(seed);
        Tensor y(shape, xylem::f64);
        (void)xylem::nn::dropout(backend, x, y, 0.4, gen);
        return y;
      };
      Tensor dx(shape, xylem::f64);
      xylem::nn::dropout_grad(backend, Tensor::from(dys), dx, {0.4, seed, 0});
      const auto a = dx.to_doubles();
      expect_gradient(a, xs, shape, dys, f, some_coordinates(rng, 50), 1.0, "dropout_grad");
    }
    {  // linear
      const Layout xshape{4, 5}, wshape{3, 5}, yshape{4, 3}, bshape{3};
      const auto xs = xylem_test::random_vector<double>(rng, 20), ws = xylem_test::random_vector<double>(rng, 15);
      const auto bs = xylem_test::random_vector<double>(rng, 3), dys = xylem_test::random_vector<double>(rng, 12);
      auto run = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
        Tensor y(yshape, xylem::f64);
        xylem::nn::linear(backend, x, w, b, y);
        return y;
      };
      const Tensor x = Tensor::from(xs, xshape), w = Tensor::from(ws, wshape), b = Tensor::from(bs, bshape);
      Tensor dx(xshape, xylem::f64), dw(wshape, xylem::f64), db(bshape, xylem::f64);
      xylem::nn::linear_grad(backend, x, w, Tensor::from(dys, yshape), dx, dw, db);
      const auto adx = dx.to_doubles(), adw = dw.to_doubles(), adb = db.to_doubles();
      expect_gradient(adx, xs, xshape, dys, [&](const Tensor& v) { return run(v, w, b); }, some_coordinates(rng, 20),
                      1.0, "linear_grad dx");
      expect_gradient(adw, ws, wshape, dys, [&](const Tensor& v) { return run(x, v, b); }, some_coordinates(rng, 15),
                      1.0, "linear_grad dw");
      expect_gradient(adb, bs, bshape, dys, [&](const Tensor& v) { return run(x, w, v); }, {0, 1, 2}, 1.0,
                      "linear_grad dbias");
    }
    {  // cross_entropy and mse_loss: scalar objectives
      const Layout shape{5, 7};
      const auto xs = xylem_test::random_vector<double>(rng, 35, -3, 3), ts = xylem_test::random_vector<double>(rng, 35);
      std::vector<std::int64_t> classes{0, 6, 3, 3, 1};
      const Tensor t = Tensor::from(classes);
      Tensor dx(shape, xylem::f64);
      xylem::nn::cross_entropy_grad(backend, Tensor::from(xs, shape), t, dx, 1.5);
      expect_gradient(dx.to_doubles(), xs, shape, {1.5}, [&](const Tensor& x) { return xylem::nn::cross_entropy(backend, x, t); },
                      some_coordinates(rng, 35), 0.05, "cross_entropy_grad");
      const Tensor target_values = Tensor::from(ts, shape);
      xylem::nn::mse_loss_grad(backend, Tensor::from(xs, shape), target_values, dx, 1.5);
      expect_gradient(dx.to_doubles(), xs, shape, {1.5},
                      [&](const Tensor& x) { return xylem::nn::mse_loss(backend, x, target_values); },
                      some_coordinates(rng, 35), 0.05, "mse_loss_grad");
    }
  }
};

TEST_P(Train, dropout) {
  for_each_float_dtype([&](DType d) { dropout(d); });
}
TEST_P(Train, dropout_grad) {
  for_each_float_dtype([&](DType d) { dropout_grad(d); });
}
// The mask depends on the seed alone: this backend and native drop the same elements.
TEST_P(Train, dropout_same_mask_as_native) {
  if (!backend.supports(OpId::nn_dropout, xylem::f32)) return;  // reported by the dropout test
  const Backend native = Backend::open("native");
  if (!native.supports(OpId::nn_dropout, xylem::f32)) GTEST_SKIP() << "native has no f32 dropout";
  const auto xs = xylem_test::random_vector<float>(rng, 4099, 0.5, 1.5);
  const Tensor x = Tensor::from(xs);
  Tensor here(Layout{4099}, xylem::f32), there(Layout{4099}, xylem::f32);
  xylem::Generator g1(seed), g2(seed);
  (void)xylem::nn::dropout(backend, x, here, 0.3, g1);
  (void)xylem::nn::dropout(native, x, there, 0.3, g2);
  const auto a = here.to_vector<float>(), b = there.to_vector<float>();
  std::size_t differ = 0;
  for (std::size_t k = 0; k < a.size(); ++k) differ += (a[k] == 0) != (b[k] == 0);
  EXPECT_EQ(differ, 0u) << "elements dropped on one framework and kept on the other";
}
TEST_P(Train, linear) {
  for_each_float_dtype([&](DType d) { linear(d); });
}
TEST_P(Train, linear_grad) {
  for_each_float_dtype([&](DType d) { linear_grad(d); });
}
TEST_P(Train, cross_entropy) {
  for_each_float_dtype([&](DType d) { cross_entropy(d); });
}
TEST_P(Train, cross_entropy_grad) {
  for_each_float_dtype([&](DType d) { cross_entropy_grad(d); });
}
TEST_P(Train, mse_loss) {
  for_each_float_dtype([&](DType d) { mse(d, false); });
}
TEST_P(Train, mse_loss_grad) {
  for_each_float_dtype([&](DType d) { mse(d, true); });
}
TEST_P(Train, finite_differences) { finite_differences(); }

TEST_P(Train, errors) {
  using xylem::ErrorCode;
  auto x = Tensor::from(std::vector<float>(12, 1.0f), Layout{3, 4});
  auto y = Tensor::from(std::vector<float>(12, 0.0f), Layout{3, 4});
  auto y_bad = Tensor::from(std::vector<float>(12, 0.0f), Layout{4, 3});
  auto y64 = Tensor::from(std::vector<double>(12, 0.0), Layout{3, 4});
  const auto sy = xylem_test::snapshot(y), sbad = xylem_test::snapshot(y_bad), s64 = xylem_test::snapshot(y64);
  xylem::Generator gen(7);
  // dropout: p outside [0, 1), shapes, dtypes
  for (double p : {1.0, -0.1, 1.5, kNaN}) {
    const auto message = XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)xylem::nn::dropout(backend, x, y, p, gen));
    EXPECT_NE(message.find("dropout"), std::string::npos) << message;
  }
  auto message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::dropout(backend, x, y_bad, 0.5, gen));
  EXPECT_NE(message.find("dropout"), std::string::npos) << message;
  EXPECT_NE(message.find("[3, 4]"), std::string::npos) << message;
  EXPECT_NE(message.find("[4, 3]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::dropout(backend, x, y64, 0.5, gen));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, xylem::nn::dropout_grad(backend, x, y, {1.0, 1, 0}));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::dropout_grad(backend, x, y_bad, {0.5, 1, 0}));
  // linear: w [out, in] must match x's last axis; bias [out]; y [..., out]
  auto w = Tensor::from(std::vector<float>(8, 1.0f), Layout{2, 4});
  auto w_bad = Tensor::from(std::vector<float>(6, 1.0f), Layout{2, 3});
  auto w64 = Tensor::from(std::vector<double>(8, 1.0), Layout{2, 4});
  auto bias3 = Tensor::from(std::vector<float>(3, 1.0f));
  auto out = Tensor::from(std::vector<float>(6, 0.0f), Layout{3, 2});
  const auto sout = xylem_test::snapshot(out);
  message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::linear(backend, x, w_bad, Tensor{}, out));
  EXPECT_NE(message.find("linear"), std::string::npos) << message;
  EXPECT_NE(message.find("[2, 3]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::linear(backend, x, w64, Tensor{}, out));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::linear(backend, x, w, bias3, out));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::linear(backend, x, w, Tensor{}, y));
  {
    Tensor none;
    XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::linear_grad(backend, x, w, y, y_bad, none, none));
  }
  // losses
  auto classes = Tensor::from(std::vector<std::int64_t>{0, 1, 2});
  auto target4 = Tensor::from(std::vector<std::int64_t>{0, 1, 2, 3});
  auto target_f = Tensor::from(std::vector<float>{0, 1, 2});
  message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::cross_entropy(backend, x, target4));
  EXPECT_NE(message.find("cross_entropy"), std::string::npos) << message;
  EXPECT_NE(message.find("[4]"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::cross_entropy(backend, x, target_f));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch,
                  (void)xylem::nn::cross_entropy(backend, Tensor::from(std::vector<float>(8, 1.0f), Layout{2, 2, 2}),
                                                 Tensor::from(std::vector<std::int64_t>{0, 1})));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::cross_entropy_grad(backend, x, classes, y_bad));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, xylem::nn::cross_entropy_grad(backend, x, classes, y64));
  message = XY_EXPECT_ERROR(ErrorCode::shape_mismatch, (void)xylem::nn::mse_loss(backend, x, y_bad));
  EXPECT_NE(message.find("mse_loss"), std::string::npos) << message;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, (void)xylem::nn::mse_loss(backend, x, y64));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, xylem::nn::mse_loss_grad(backend, x, y, y_bad));
  XY_EXPECT_UNCHANGED(y, sy);
  XY_EXPECT_UNCHANGED(y_bad, sbad);
  XY_EXPECT_UNCHANGED(y64, s64);
  XY_EXPECT_UNCHANGED(out, sout);
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Train, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
