// xylem::optim: several steps of SGD (plain, momentum with dampening,
// Nesterov, weight decay), Adam and AdamW on the backend under test, f32 and
// f64, against a float64 host transcription of PyTorch's torch.optim
// algorithms (their documentation's pseudocode, written here independently
// of math.h); parameters without a gradient skipped; bad gradients, options
// and views raising typed errors with nothing changed.
#include "xylem/optim.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "conformance/conformance.hpp"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::layers::Parameter;
namespace optim = xylem::optim;

// PyTorch's SGD on one parameter, in float64.
struct SgdReference {
  optim::SgdOptions o;
  std::vector<double> buf;
  void step(std::vector<double>& p, const std::vector<double>& grad) {
    const bool first = buf.empty();
    if (first && o.momentum != 0) buf.assign(p.size(), 0);
    for (std::size_t k = 0; k < p.size(); ++k) {
      double g = grad[k];
      if (o.weight_decay != 0) g += o.weight_decay * p[k];
      if (o.momentum != 0) {
        buf[k] = first ? g : o.momentum * buf[k] + (1 - o.dampening) * g;
        g = o.nesterov ? g + o.momentum * buf[k] : buf[k];
      }
      p[k] -= o.lr * g;
    }
  }
};

// PyTorch's Adam (decoupled: AdamW) on one parameter, in float64.
struct AdamReference {
  optim::AdamOptions o;
  std::vector<double> m, v;
  int t = 0;
  void step(std::vector<double>& p, const std::vector<double>& grad) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    ++t;
    const double bc1 = 1 - std::pow(o.beta1, t), bc2 = 1 - std::pow(o.beta2, t);
    for (std::size_t k = 0; k < p.size(); ++k) {
      double g = grad[k];
      if (o.decoupled)
        p[k] *= 1 - o.lr * o.weight_decay;
      else
        g += o.weight_decay * p[k];
      m[k] = o.beta1 * m[k] + (1 - o.beta1) * g;
      v[k] = o.beta2 * v[k] + (1 - o.beta2) * g * g;
      const double m_hat = m[k] / bc1, v_hat = v[k] / bc2;
      p[k] -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    }
  }
};

class Optim : public Conformance {
 protected:
  static constexpr int kSteps = 5;

  // Parameters of these shapes with random values in [-1, 1], in dtype T.
  template <class T>
  std::vector<Parameter> make_params(const std::vector<Dims>& shapes) {
    std::vector<Parameter> params;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      Arg a = input<T>(ViewKind::contiguous, shapes[i]);
      params.push_back(Parameter{std::to_string(i), a.view, Tensor()});
    }
    return params;
  }

  static std::vector<Parameter*> pointers(std::vector<Parameter>& params) {
    std::vector<Parameter*> out;
    for (Parameter& p : params) out.push_back(&p);
    return out;
  }

  // Runs kSteps of `opt` against `reference` (one per parameter), with fresh
  // gradients each step; parameter `skip` (if any) never gets one. Checks
  // every parameter after each step, within a tolerance that grows with
  // the steps taken.
  template <class T, class Opt, class Ref>
  void run_steps(Opt& opt, std::vector<Parameter>& params, std::vector<Ref>& reference, const std::string& what,
                 std::size_t skip = std::size_t(-1)) {
    std::vector<std::vector<double>> expect;
    for (Parameter& p : params) expect.push_back(p.value.to_doubles());
    for (int s = 1; s <= kSteps; ++s) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        if (i == skip) continue;
        const auto dims = params[i].value.layout().dims();
        Arg g = input<T>(ViewKind::contiguous, Dims(dims.begin(), dims.end()));
        params[i].grad = g.view;
        reference[i].step(expect[i], g.values());
      }
      opt.step(backend);
      for (std::size_t i = 0; i < params.size(); ++i) {
        const auto got = params[i].value.to_doubles();
        ASSERT_EQ(got.size(), expect[i].size());
        std::size_t bad = 0;
        for (std::size_t k = 0; k < got.size(); ++k) {
          const double allowed = 64 * Tol<T>::eps * s * (std::abs(expect[i][k]) + 1);
          if (!(std::abs(got[k] - expect[i][k]) <= allowed) && ++bad <= 5)
            ADD_FAILURE() << what << " step " << s << " parameter " << i << " element " << k << ": got " << got[k]
                          << ", expected " << expect[i][k];
        }
        EXPECT_EQ(bad, 0u) << what;
      }
      opt.zero_grad();
      for (const Parameter& p : params) EXPECT_FALSE(p.grad.defined());
    }
  }

  template <class T>
  void sgd(const optim::SgdOptions& o, const std::string& what) {
    auto params = make_params<T>({{1}, {7}, {1000}, {33, 17}});
    optim::SGD opt(pointers(params), o);
    std::vector<SgdReference> ref(params.size(), SgdReference{o, {}});
    run_steps<T>(opt, params, ref, what, 1);
    EXPECT_FALSE(opt.momentum_buffer(1).defined()) << "a parameter without a gradient has no state";
    EXPECT_EQ(opt.momentum_buffer(0).defined(), o.momentum != 0);
  }

  template <class T>
  void adam(const optim::AdamOptions& o, const std::string& what) {
    auto params = make_params<T>({{1}, {7}, {1000}, {33, 17}});
    const auto check = [&](auto& opt) {
      std::vector<AdamReference> ref(params.size(), AdamReference{o, {}, {}, 0});
      run_steps<T>(opt, params, ref, what, 1);
      EXPECT_EQ(opt.steps(0), kSteps);
      EXPECT_EQ(opt.steps(1), 0);
      EXPECT_FALSE(opt.exp_avg(1).defined());
    };
    if (o.decoupled) {
      optim::AdamW opt(pointers(params), o);
      check(opt);
    } else {
      optim::Adam opt(pointers(params), o);
      check(opt);
    }
  }

  bool runs_optim(DType dtype) {
    const auto one_parameter = [&] {
      return Parameter{"w", input(dtype, ViewKind::contiguous, {3}).view, input(dtype, ViewKind::contiguous, {3}).view};
    };
    return runs(OpId::optim_sgd_step, dtype,
                [&] {
                  Parameter p = one_parameter();
                  optim::SGD({&p}, optim::SgdOptions{}).step(backend);
                }) &&
           runs(OpId::optim_adam_step, dtype, [&] {
             Parameter p = one_parameter();
             optim::Adam({&p}, optim::AdamOptions{}).step(backend);
           });
  }
};

TEST_P(Optim, sgd) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if (!runs_optim(xylem::dtype_of<T>::value)) return;
    sgd<T>(optim::SgdOptions{.lr = 0.1}, "plain");
    sgd<T>(optim::SgdOptions{.lr = 0.05, .weight_decay = 0.01}, "weight decay");
    sgd<T>(optim::SgdOptions{.lr = 0.1, .momentum = 0.9}, "momentum");
    sgd<T>(optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.02},
           "momentum, dampening, weight decay");
    sgd<T>(optim::SgdOptions{.lr = 0.1, .momentum = 0.8, .nesterov = true}, "nesterov");
    sgd<T>(optim::SgdOptions{.lr = 0.03, .momentum = 0.5, .weight_decay = 0.1, .nesterov = true},
           "nesterov, weight decay");
  });
}

TEST_P(Optim, adam) {
  for_each_dtype([&](auto t) {
    using T = decltype(t);
    if (!runs_optim(xylem::dtype_of<T>::value)) return;
    adam<T>(optim::AdamOptions{}, "adam defaults");
    adam<T>(optim::AdamOptions{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1},
            "adam, weight decay");
    adam<T>(optim::AdamOptions{.lr = 0.01, .beta1 = 0.3, .beta2 = 0.5, .eps = 1e-3}, "adam, small betas");
    adam<T>(optim::AdamW::defaults(), "adamw defaults");
    adam<T>(optim::AdamOptions{.lr = 0.02, .weight_decay = 0.5, .decoupled = true}, "adamw, strong decay");
  });
}

// A learning rate changed between steps applies from the next one.
TEST_P(Optim, learning_rate) {
  if (!runs_optim(DType::f64)) return;
  auto params = make_params<double>({{5}});
  optim::SGD opt(pointers(params), optim::SgdOptions{.lr = 0.1, .momentum = 0.9});
  EXPECT_EQ(opt.learning_rate(), 0.1);
  std::vector<SgdReference> ref{SgdReference{opt.options(), {}}};
  run_steps<double>(opt, params, ref, "lr 0.1");
  opt.set_learning_rate(0.5);
  ref[0].o.lr = 0.5;
  run_steps<double>(opt, params, ref, "lr 0.5");
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, opt.set_learning_rate(-1));
  EXPECT_EQ(opt.learning_rate(), 0.5);
}

// Bad gradients raise before any parameter changes, state included.
TEST_P(Optim, bad_gradients_change_nothing) {
  if (!runs_optim(DType::f32)) return;
  auto params = make_params<float>({{4}, {2, 3}});
  const auto before0 = params[0].value.to_doubles(), before1 = params[1].value.to_doubles();
  optim::SGD sgd(pointers(params), optim::SgdOptions{.lr = 0.1, .momentum = 0.9});
  optim::Adam adam(pointers(params), optim::AdamOptions{});
  params[0].grad = input<float>(ViewKind::contiguous, {4}).view;
  params[1].grad = input<float>(ViewKind::contiguous, {3, 2}).view;
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, sgd.step(backend));
  XY_EXPECT_ERROR(ErrorCode::shape_mismatch, adam.step(backend));
  params[1].grad = input<double>(ViewKind::contiguous, {2, 3}).view;
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, sgd.step(backend));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch, adam.step(backend));
  EXPECT_EQ(params[0].value.to_doubles(), before0);
  EXPECT_EQ(params[1].value.to_doubles(), before1);
  EXPECT_FALSE(sgd.momentum_buffer(0).defined());
  EXPECT_EQ(adam.steps(0), 0);

  // The ops themselves: a non-contiguous view, a missing or extra momentum
  // buffer, a bad step count, an f16 parameter.
  Arg p = input<float>(ViewKind::strided, {6});
  Arg g = input<float>(ViewKind::contiguous, {6});
  Tensor none;
  const auto p_before = p.base.to_doubles();
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::sgd_step(backend, p.view, g.view, none, optim::SgdOptions{}, false));
  Arg q = input<float>(ViewKind::contiguous, {6});
  const auto q_before = q.base.to_doubles();
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::sgd_step(backend, q.view, g.view, none, optim::SgdOptions{.lr = 0.1, .momentum = 0.9}, true));
  Tensor extra = input<float>(ViewKind::contiguous, {6}).view;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::sgd_step(backend, q.view, g.view, extra, optim::SgdOptions{}, false));
  Tensor m = input<float>(ViewKind::contiguous, {6}).view, v = input<float>(ViewKind::contiguous, {6}).view;
  Tensor m_wrong = input<double>(ViewKind::contiguous, {6}).view;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::adam_step(backend, q.view, g.view, m, v, optim::AdamOptions{}, 0));
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  optim::adam_step(backend, q.view, g.view, m_wrong, v, optim::AdamOptions{}, 1));
  Arg h = input(DType::f16, ViewKind::contiguous, {6});
  Arg hg = input(DType::f16, ViewKind::contiguous, {6});
  XY_EXPECT_ERROR(ErrorCode::dtype_mismatch,
                  optim::sgd_step(backend, h.view, hg.view, none, optim::SgdOptions{}, false));
  EXPECT_EQ(p.base.to_doubles(), p_before);
  EXPECT_EQ(q.base.to_doubles(), q_before);
}

// Empty parameters step without error; a gradient that is the parameter
// itself is read before the write (NumPy's rule for overlapping
// arguments); two state tensors that are the same storage are refused,
// with nothing changed.
TEST_P(Optim, empty_and_overlapping_arguments) {
  if (!runs_optim(DType::f32)) return;
  Tensor none;
  Tensor empty_p = input<float>(ViewKind::contiguous, {0, 3}).view;
  Tensor empty_g = input<float>(ViewKind::contiguous, {0, 3}).view;
  optim::sgd_step(backend, empty_p, empty_g, none, optim::SgdOptions{.lr = 0.1}, false);
  EXPECT_EQ(empty_p.numel(), 0);

  Arg q = input<float>(ViewKind::contiguous, {6});
  const auto q_before = q.base.to_doubles();
  optim::sgd_step(backend, q.view, q.view, none, optim::SgdOptions{.lr = 0.1}, false);  // q -= 0.1 q
  const auto q_after = q.base.to_doubles();
  for (std::size_t i = 0; i < q_after.size(); ++i) EXPECT_NEAR(q_after[i], 0.9 * q_before[i], 1e-6) << i;

  Arg r = input<float>(ViewKind::contiguous, {6});
  Tensor g = input<float>(ViewKind::contiguous, {6}).view, m = input<float>(ViewKind::contiguous, {6}).view;
  const auto r_before = r.base.to_doubles(), m_before = m.to_doubles();
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::adam_step(backend, r.view, g, m, m, optim::AdamOptions{}, 1));
  EXPECT_EQ(r.base.to_doubles(), r_before);
  EXPECT_EQ(m.to_doubles(), m_before);
}

TEST_P(Optim, bad_options) {
  std::vector<Parameter*> none;
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::SGD(none, optim::SgdOptions{.lr = -0.1}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::SGD(none, optim::SgdOptions{.lr = 0.1, .momentum = -0.5}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::SGD(none, optim::SgdOptions{.lr = 0.1, .weight_decay = -1}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::SGD(none, optim::SgdOptions{.lr = 0.1, .nesterov = true}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::SGD(none, optim::SgdOptions{.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::Adam(none, optim::AdamOptions{.lr = 0.1, .beta1 = 1.0, .beta2 = 0.9}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::Adam(none, optim::AdamOptions{.lr = 0.1, .beta2 = -0.1}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument,
                  optim::Adam(none, optim::AdamOptions{.lr = 0.1, .beta2 = 0.9, .eps = -1}));
  XY_EXPECT_ERROR(
      ErrorCode::invalid_argument,
      optim::AdamW(none, optim::AdamOptions{.lr = 0.1, .beta2 = 0.9, .weight_decay = -1, .decoupled = true}));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, optim::SGD({nullptr}, optim::SgdOptions{}));
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Optim, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
