#pragma once
// The optimizer fuzzer's families: optim::sgd_step and optim::adam_step with
// random dims (empty included), settings at and past their limits (lr 0,
// weight decay, Nesterov, eps 0 and tiny, betas near 1, huge step counts),
// state that is the parameter, the gradient or part of another tensor's
// storage, views that are not contiguous, and wrong dims and dtypes. The
// reference is PyTorch's update written here in float64 from the formulas
// (torch.optim.SGD and Adam's documentation), on the settings as the dtype
// holds them: the op computes in the tensors' dtype.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "ops_math.hpp"

namespace xylem_fuzz {

// The element positions an argument covers overlap another's.
inline bool overlaps(const Arg& a, const Arg& b) {
  if (!a.base.defined() || !b.base.defined() || a.base.storage() != b.base.storage()) return false;
  for (auto x : a.pos)
    for (auto y : b.pos)
      if (x == y) return true;
  return false;
}

// Row-major and dense (the op's "contiguous"); an empty view always is.
inline bool dense(const Arg& a) {
  for (std::size_t k = 0; k < a.pos.size(); ++k)
    if (a.pos[k] != a.pos[0] + std::int64_t(k)) return false;
  return true;
}

// A dense view of dims over new storage, at some offset.
inline Arg dense_arg(const xylem::Backend& b, Picker& p, DType t, const Dims& dims) {
  Arg a;
  a.dims = dims;
  a.dtype = t;
  Dims strides(dims.size());
  std::int64_t running = 1;
  for (std::size_t i = dims.size(); i-- > 0;) strides[i] = running, running *= std::max<std::int64_t>(dims[i], 1);
  const std::int64_t offset = p.pick(3);
  a.base = storage(b, p, t, offset + xylem_ref::numel(dims) + p.pick(3), a.before);
  set_view(a, strides, offset);
  return a;
}

// An optimizer tensor like `param`: usually dense of its dims and dtype,
// sometimes another view kind, dims or dtype, or (from `others`, when
// given) another argument's own view or part of its storage.
inline Arg state_arg(Ctx& c, const Arg& param, const std::vector<const Arg*>& others) {
  if (!others.empty() && c.p.one_in(8)) {
    const Arg& other = *others[c.p.pick(std::uint32_t(others.size()))];
    if (other.base.defined()) {
      Arg a = c.p.one_in(2) ? other : alias_arg(c.p, other, param.dims);
      if (a.base.defined()) return a;
    }
  }
  const DType t = maybe_wrong(c.p, param.dtype);
  const Dims dims = maybe_wrong(c.p, param.dims);
  return c.p.one_in(10) ? make_arg(c.backend, c.p, t, dims) : dense_arg(c.backend, c.p, t, dims);
}

// The parameter: dense, or one time in 6 any view (outputs have no stride-0 axis).
inline Arg param_arg(Ctx& c, DType t) {
  const Dims dims = pick_dims(c.p, int(c.p.pick(5)), 6);
  return c.p.one_in(6) ? make_arg(c.backend, c.p, t, dims, false) : dense_arg(c.backend, c.p, t, dims);
}

// Makes every value of a's storage non-negative: Adam's second moment.
inline void non_negative(const xylem::Backend& b, Arg& a) {
  for (auto& v : a.before) v = std::abs(v);
  const Tensor host = Tensor::from(a.before);
  a.base = a.dtype == DType::f64 ? host : xylem::cast(b, host, a.dtype);
  a.view = a.base.as_strided(a.view.layout());
}

// What the op sees of a setting: the value in the tensors' dtype.
inline double held(DType t, double x) { return t == DType::f32 ? double(float(x)) : x; }

// A result the dtype cannot hold becomes the infinity it rounds to.
inline double representable(DType t, double x) {
  const double top = t == DType::f32 ? double(std::numeric_limits<float>::max()) : std::numeric_limits<double>::max();
  return std::abs(x) > top ? std::copysign(std::numeric_limits<double>::infinity(), x) : x;
}

// Whether the op's dtype, dims and layout rules hold for these tensors
// (absent ones skipped), and no two outputs share an element.
inline bool tensors_ok(const Arg& param, const std::vector<const Arg*>& state, const std::vector<const Arg*>& outs) {
  if ((param.dtype != DType::f32 && param.dtype != DType::f64) || !dense(param)) return false;
  for (const Arg* a : state)
    if (a->dtype != param.dtype || a->dims != param.dims || !dense(*a)) return false;
  for (std::size_t i = 0; i < outs.size(); ++i)
    for (std::size_t j = i + 1; j < outs.size(); ++j)
      if (overlaps(*outs[i], *outs[j])) return false;
  return true;
}

// A setting from `good`, or one time in 12 from `bad` (out of range), so
// that most calls pass the checks and reach the kernel.
template <std::size_t N, std::size_t M>
double setting(Picker& p, const double (&good)[N], const double (&bad)[M]) {
  return p.one_in(12) ? p.from(bad) : p.from(good);
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kLearningRates[] = {0, 1e-3, 0.1, 1, 10};
inline constexpr double kDecays[] = {0, 0, 1e-2, 1};
inline constexpr double kNegativeOrNaN[] = {-0.5, -1e-300, kNaN};

// f32 or f64, or one time in 8 any dtype.
inline DType optim_dtype(Picker& p) {
  static constexpr DType reals[] = {DType::f32, DType::f64};
  return p.one_in(8) ? p.from(kAllDTypes) : p.from(reals);
}

inline std::string settings_string(std::initializer_list<std::pair<const char*, double>> settings) {
  std::string s;
  char text[64];
  for (const auto& [name, value] : settings) {
    std::snprintf(text, sizeof text, " %s %.17g", name, value);
    s += text;
  }
  return s;
}

inline void fuzz_sgd(Ctx& c) {
  static constexpr double momenta[] = {0, 0, 0.5, 0.9, 1};
  static constexpr double dampenings[] = {0, 0, 0.1, 1, -0.5};
  static constexpr double not_finite[] = {kInf, -kInf, kNaN};
  xylem::optim::SgdOptions o;
  o.lr = setting(c.p, kLearningRates, kNegativeOrNaN);
  o.momentum = setting(c.p, momenta, kNegativeOrNaN);
  o.dampening = setting(c.p, dampenings, not_finite);
  o.weight_decay = setting(c.p, kDecays, kNegativeOrNaN);
  o.nesterov = c.p.one_in(3);
  const bool first_step = c.p.one_in(3);
  const DType t = optim_dtype(c.p);
  const Arg param = param_arg(c, t);
  const Arg grad = state_arg(c, param, {&param});
  // A buffer exactly when there is momentum, and one time in 12 the other way.
  const bool with_buffer = (o.momentum != 0) != c.p.one_in(12);
  Arg buffer;
  if (with_buffer) buffer = state_arg(c, param, {&param, &grad});
  std::vector<const Arg*> state{&grad}, outs{&param};
  if (with_buffer) state.push_back(&buffer), outs.push_back(&buffer);
  const bool valid = o.lr >= 0 && o.momentum >= 0 && o.weight_decay >= 0 && std::isfinite(o.dampening) &&
                     (!o.nesterov || (o.momentum > 0 && o.dampening == 0)) && with_buffer == (o.momentum != 0) &&
                     tensors_ok(param, state, outs);
  const std::string what =
      "optim::sgd_step" +
      settings_string({{"lr", o.lr}, {"momentum", o.momentum}, {"dampening", o.dampening},
                       {"weight_decay", o.weight_decay}, {"nesterov", o.nesterov}, {"first_step", first_step}}) +
      " param " + param.describe() + ", grad " + grad.describe() + (with_buffer ? ", buffer " + buffer.describe() : "");
  std::vector<const Arg*> ins{&grad};
  run_outputs("optim::sgd_step", what, valid, ins, outs,
              [&] {
                Tensor p = param.view, b = with_buffer ? buffer.view : Tensor{};
                xylem::optim::sgd_step(c.backend, p, grad.view, b, o, first_step);
              },
              [&] {
                const double lr = held(t, o.lr), momentum = held(t, o.momentum), wd = held(t, o.weight_decay);
                const double keep = held(t, 1 - held(t, o.dampening));
                const auto p0 = param.logical().v, g = grad.logical().v;
                const auto b0 = with_buffer ? buffer.logical().v : std::vector<double>(p0.size());
                xylem_ref::Expect ep, eb;
                for (std::size_t k = 0; k < p0.size(); ++k) {
                  double d = wd != 0 ? g[k] + wd * p0[k] : g[k], md = std::abs(g[k]) + wd * std::abs(p0[k]);
                  if (momentum != 0) {
                    const double b = first_step ? d : momentum * b0[k] + keep * d;
                    const double mb = first_step ? md : momentum * std::abs(b0[k]) + std::abs(keep) * md;
                    eb.push(representable(t, b), mb);
                    d = o.nesterov ? d + momentum * b : b;
                    md = o.nesterov ? md + momentum * mb : mb;
                  }
                  ep.push(representable(t, p0[k] - lr * d), std::abs(p0[k]) + lr * md);
                }
                std::vector<xylem_ref::Expect> e{ep};
                if (with_buffer) e.push_back(eb);
                return e;
              });
}

inline void fuzz_adam(Ctx& c) {
  static constexpr double betas[] = {0, 0.5, 0.9, 0.999, 0.9999999};
  static constexpr double bad_betas[] = {1, 1.5, -0.1, kNaN};
  static constexpr double epsilons[] = {1e-8, 0, 1e-30, 1};
  static constexpr std::int64_t steps[] = {1, 2, 3, 10, 1000000, 0, -2};
  xylem::optim::AdamOptions o;
  o.lr = setting(c.p, kLearningRates, kNegativeOrNaN);
  o.beta1 = setting(c.p, betas, bad_betas);
  o.beta2 = setting(c.p, betas, bad_betas);
  o.eps = setting(c.p, epsilons, kNegativeOrNaN);
  o.weight_decay = setting(c.p, kDecays, kNegativeOrNaN);
  o.decoupled = c.p.one_in(2);
  const std::int64_t step = c.p.one_in(12) ? steps[5 + c.p.pick(2)] : steps[c.p.pick(5)];
  const DType t = optim_dtype(c.p);
  const Arg param = param_arg(c, t);
  const Arg grad = state_arg(c, param, {&param});
  const Arg m = state_arg(c, param, {&param, &grad});
  // The second moment is never negative in a real run; a view of another
  // tensor here is one of the outputs' own (refused: outputs overlap), so
  // that its values stay its own.
  Arg v = state_arg(c, param, {});
  non_negative(c.backend, v);
  if (c.p.one_in(8)) v = c.p.one_in(2) ? param : m;
  const std::vector<const Arg*> state{&grad, &m, &v}, outs{&param, &m, &v};
  const bool valid = o.lr >= 0 && o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps >= 0 &&
                     o.weight_decay >= 0 && step >= 1 && tensors_ok(param, state, outs);
  const std::string what = "optim::adam_step" +
                           settings_string({{"lr", o.lr}, {"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps},
                                            {"weight_decay", o.weight_decay}, {"decoupled", o.decoupled},
                                            {"step", double(step)}}) +
                           " param " + param.describe() + ", grad " + grad.describe() + ", exp_avg " + m.describe() +
                           ", exp_avg_sq " + v.describe();
  run_outputs("optim::adam_step", what, valid, {&grad}, outs,
              [&] {
                Tensor p = param.view, mv = m.view, vv = v.view;
                xylem::optim::adam_step(c.backend, p, grad.view, mv, vv, o, step);
              },
              [&] {
                const double lr = held(t, o.lr), beta1 = held(t, o.beta1), beta2 = held(t, o.beta2);
                const double eps = held(t, o.eps), wd = held(t, o.weight_decay);
                const double bc1 = held(t, 1 - std::pow(o.beta1, double(step)));
                const double bc2 = held(t, 1 - std::pow(o.beta2, double(step)));
                const auto p0 = param.logical().v, g0 = grad.logical().v, m0 = m.logical().v, v0 = v.logical().v;
                xylem_ref::Expect ep, em, ev;
                for (std::size_t k = 0; k < p0.size(); ++k) {
                  double p = p0[k], g = g0[k], mg = std::abs(g);
                  if (wd != 0 && o.decoupled) p *= 1 - lr * wd;
                  if (wd != 0 && !o.decoupled) g += wd * p0[k], mg += wd * std::abs(p0[k]);
                  const double m1 = m0[k] + (1 - beta1) * (g - m0[k]);
                  const double mm = std::abs(m0[k]) + (1 - beta1) * (mg + std::abs(m0[k]));
                  const double v1 = beta2 * v0[k] + (1 - beta2) * g * g;
                  const double denom = std::sqrt(v1) / std::sqrt(bc2) + eps;
                  em.push(representable(t, m1), mm);
                  ev.push(representable(t, v1), v1);
                  ep.push(representable(t, p - (lr / bc1) * (m1 / denom)), std::abs(p0[k]) + (lr / bc1) * (mm / denom));
                }
                return std::vector<xylem_ref::Expect>{ep, em, ev};
              });
}

}  // namespace xylem_fuzz
