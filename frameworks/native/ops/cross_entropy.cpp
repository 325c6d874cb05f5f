// nn::cross_entropy and nn::cross_entropy_grad natively: x [N, C] logits,
// target [N] i64, per-row loss = logsumexp(x[n]) - x[n, target[n]] and its
// gradient (softmax - one_hot) * dloss. f16/bf16/f32/f64, any strides;
// computed in the stat type (f32, or f64 for f64) on dense rows with
// softmax.cpp's vector loops. A target equal to ignore_index gives 0 (loss
// and gradient row), one outside [0, C) NaN.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "frameworks/native/ops/convert.hpp"
#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/softmax_rows.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;

// Logits per task (about 256 KiB of f32).
constexpr std::int64_t kTaskElements = 64 * 1024;

// Row n of the logits as a dense compute-type row: in place when it already
// is one, else gathered into buf.
template <class T>
const ComputeOf<T>* logits_row(const plugin::TensorArg& x, std::int64_t n, std::vector<ComputeOf<T>>& buf) {
  const std::int64_t classes = x.view.dims()[1], sc = x.view.strides()[1];
  const T* row = element_ptr<const T>(x) + n * x.view.strides()[0];
  if constexpr (std::is_same_v<T, ComputeOf<T>>) {
    if (sc == 1 || classes <= 1) return row;
  }
  buf.resize(std::size_t(classes));
  load_row(row, sc, buf.data(), buf.size());
  return buf.data();
}

// Runs body(n, row, buf) over the rows in parallel.
template <class T, class Body>
void for_each_row(const plugin::TensorArg& x, Body body) {
  const std::int64_t rows = x.view.dims()[0], classes = x.view.dims()[1];
  parallel_chunks(rows, std::max<std::int64_t>(1, kTaskElements / std::max<std::int64_t>(1, classes)),
                  [&](std::int64_t b, std::int64_t e) {
                    std::vector<ComputeOf<T>> buf;
                    for (std::int64_t n = b; n < e; ++n) body(n, logits_row<T>(x, n, buf));
                  });
}

template <class T>
void cross_entropy_kernel(const OpCall& call) {
  using C = ComputeOf<T>;
  const auto args = plugin::unpack<plugin::args::nn_cross_entropy>(call);
  const std::int64_t classes = args.x.view.dims()[1];
  const std::int64_t* target = element_ptr<const std::int64_t>(args.target);
  const std::int64_t st = args.target.view.strides()[0];
  T* loss = element_ptr<T>(args.loss);
  const std::int64_t sl = args.loss.view.strides()[0];
  const std::int64_t ignore = args.ignore_index;
  for_each_row<T>(args.x, [&](std::int64_t n, const C* row) {
    const std::int64_t t = target[n * st];
    const C value = t == ignore                ? C(0)
                    : t >= 0 && t < classes ? log_sum_exp(row, std::size_t(classes)) - row[t]
                                            : std::numeric_limits<C>::quiet_NaN();
    loss[n * sl] = from_compute<T>(value);
  });
}

template <class T>
void cross_entropy_grad_kernel(const OpCall& call) {
  using C = ComputeOf<T>;
  const auto args = plugin::unpack<plugin::args::nn_cross_entropy_grad>(call);
  const std::int64_t classes = args.x.view.dims()[1];
  const std::int64_t* target = element_ptr<const std::int64_t>(args.target);
  const std::int64_t st = args.target.view.strides()[0];
  const T* dloss = element_ptr<const T>(args.dloss);
  const std::int64_t sd = args.dloss.view.strides()[0];
  const plugin::TensorArg& dx = args.dx;
  const std::int64_t sxr = dx.view.strides()[0], sxc = dx.view.strides()[1];
  const std::int64_t ignore = args.ignore_index;
  for_each_row<T>(args.x, [&](std::int64_t n, const C* row) {
    thread_local std::vector<C> grad;
    grad.resize(std::size_t(classes));
    const std::int64_t t = target[n * st];
    const C scale = to_compute(dloss[n * sd]);
    if (t == ignore) {
      std::fill(grad.begin(), grad.end(), C(0));
    } else if (t >= 0 && t < classes) {
      softmax_row(row, grad.data(), grad.size(), false);
      grad[std::size_t(t)] -= C(1);
      for (C& g : grad) g *= scale;
    } else {
      std::fill(grad.begin(), grad.end(), std::numeric_limits<C>::quiet_NaN());
    }
    store_row(grad.data(), element_ptr<T>(dx) + n * sxr, sxc, grad.size());
  });
}

}  // namespace

void register_cross_entropy(KernelTable& table) {
  for_float_types([&](auto type, DType d) {
    using T = typename decltype(type)::type;
    table.set(OpId::nn_cross_entropy, d, &cross_entropy_kernel<T>);
    table.set(OpId::nn_cross_entropy_grad, d, &cross_entropy_grad_kernel<T>);
  });
}

}  // namespace xylem::native
