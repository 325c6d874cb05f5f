// nn::rnn_sequence and its gradients: the checks, then one launch each (the
// work is cuDNN's, in the CUDA plugin).
#include "xylem/rnn_sequence.hpp"

#include <string>
#include <string_view>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"

namespace xylem::nn {
namespace {

void require_contiguous(std::string_view op, std::string_view arg, const Tensor& t) {
  ops::require_argument(t.layout().is_contiguous(), op, [&] {
    // Built by appends: GCC 12 warns (-Wrestrict, falsely) on "'" + std::string.
    std::string what = "'";
    what += arg;
    what += "' (" + ops::describe(t) + ") must be contiguous";
    return what;
  });
}

// A tensor of x's dtype with the given dims, contiguous.
void require_like(std::string_view op, const Tensor& x, std::string_view arg, const Tensor& t, const Layout& dims) {
  ops::require_defined(op, arg, t);
  ops::require_same_dtype(op, "x", x, arg, t);
  ops::require_dims(op, arg, t, dims);
  require_contiguous(op, arg, t);
}

// x [T, N, I], f32 or f64, contiguous, T and N at least 1.
void require_sequence(std::string_view op, std::string_view arg, const Tensor& x, const RnnStack& s) {
  ops::require_real(op, arg, x);
  ops::require_rank(op, arg, x, 3);
  require_contiguous(op, arg, x);
  ops::require_argument(x.layout().dim(0) >= 1 && x.layout().dim(1) >= 1 && x.layout().dim(2) >= 1, op,
                        "T, N and I must be at least 1");
  ops::require_argument(s.hidden >= 1 && s.layers >= 1, op, "hidden and layers must be at least 1");
}

Layout states_dims(const RnnStack& s, std::int64_t batch) {
  return Layout{s.lstm ? 2 : 1, s.layers * (s.bidirectional ? 2 : 1), batch, s.hidden};
}
Layout output_dims(const RnnStack& s, const Tensor& x) {
  return Layout{x.layout().dim(0), x.layout().dim(1), (s.bidirectional ? 2 : 1) * s.hidden};
}

void require_reserve(std::string_view op, const Tensor& reserve) {
  ops::require_dtype(op, "reserve", reserve, u8);
  ops::require_rank(op, "reserve", reserve, 1);
  require_contiguous(op, "reserve", reserve);
}

}  // namespace

std::int64_t RnnStack::weight_count(std::int64_t input) const noexcept {
  const std::int64_t g = (lstm ? 4 : 3) * hidden, dirs = bidirectional ? 2 : 1;
  std::int64_t n = 0;
  for (std::int64_t l = 0; l < layers; ++l) n += dirs * (g * (l == 0 ? input : dirs * hidden) + g * hidden + 2 * g);
  return n;
}

std::int64_t rnn_sequence_reserve(const Backend& b, const Tensor& x, const RnnStack& stack) {
  constexpr std::string_view name = "nn::rnn_sequence_reserve";
  require_sequence(name, "x", x, stack);
  Tensor bytes(Layout{1}, i64);
  detail::launch(b,
                 detail::args::nn_rnn_sequence_reserve<Tensor>{.x = x,
                                                               .bytes = bytes,
                                                               .mode = stack.lstm ? 0 : 1,
                                                               .hidden = stack.hidden,
                                                               .layers = stack.layers,
                                                               .bidirectional = stack.bidirectional ? 1 : 0},
                 name);
  return bytes.to_vector<std::int64_t>().at(0);
}

void rnn_sequence(const Backend& b, const Tensor& x, const Tensor& states, const Tensor& w, const RnnStack& stack,
                  Tensor& y, Tensor& states_out, Tensor& reserve) {
  constexpr std::string_view name = "nn::rnn_sequence";
  require_sequence(name, "x", x, stack);
  const Layout sd = states_dims(stack, x.layout().dim(1));
  require_like(name, x, "states", states, sd);
  require_like(name, x, "w", w, Layout{stack.weight_count(x.layout().dim(2))});
  require_like(name, x, "y", y, output_dims(stack, x));
  require_like(name, x, "states_out", states_out, sd);
  require_reserve(name, reserve);
  detail::launch(b,
                 detail::args::nn_rnn_sequence<Tensor>{.x = x,
                                                       .states = states,
                                                       .w = w,
                                                       .y = y,
                                                       .states_out = states_out,
                                                       .reserve = reserve,
                                                       .mode = stack.lstm ? 0 : 1,
                                                       .hidden = stack.hidden,
                                                       .layers = stack.layers,
                                                       .bidirectional = stack.bidirectional ? 1 : 0},
                 name);
}

void rnn_sequence_grad_data(const Backend& b, const Tensor& y, const Tensor& dy, const Tensor& dstates_out,
                            const Tensor& states, const Tensor& w, const RnnStack& stack, Tensor& reserve, Tensor& dx,
                            Tensor& dstates) {
  constexpr std::string_view name = "nn::rnn_sequence_grad_data";
  require_sequence(name, "dx", dx, stack);
  const Layout sd = states_dims(stack, dx.layout().dim(1));
  require_like(name, dx, "y", y, output_dims(stack, dx));
  require_like(name, dx, "dy", dy, output_dims(stack, dx));
  require_like(name, dx, "dstates_out", dstates_out, sd);
  require_like(name, dx, "states", states, sd);
  require_like(name, dx, "w", w, Layout{stack.weight_count(dx.layout().dim(2))});
  require_like(name, dx, "dstates", dstates, sd);
  require_reserve(name, reserve);
  detail::launch(b,
                 detail::args::nn_rnn_sequence_grad_data<Tensor>{.y = y,
                                                                 .dy = dy,
                                                                 .dstates_out = dstates_out,
                                                                 .states = states,
                                                                 .w = w,
                                                                 .reserve = reserve,
                                                                 .dx = dx,
                                                                 .dstates = dstates,
                                                                 .mode = stack.lstm ? 0 : 1,
                                                                 .hidden = stack.hidden,
                                                                 .layers = stack.layers,
                                                                 .bidirectional = stack.bidirectional ? 1 : 0},
                 name);
}

void rnn_sequence_grad_weights(const Backend& b, const Tensor& x, const Tensor& states, const Tensor& y,
                               const Tensor& reserve, const RnnStack& stack, Tensor& dw) {
  constexpr std::string_view name = "nn::rnn_sequence_grad_weights";
  require_sequence(name, "x", x, stack);
  require_like(name, x, "states", states, states_dims(stack, x.layout().dim(1)));
  require_like(name, x, "y", y, output_dims(stack, x));
  require_like(name, x, "dw", dw, Layout{stack.weight_count(x.layout().dim(2))});
  require_reserve(name, reserve);
  detail::launch(b,
                 detail::args::nn_rnn_sequence_grad_weights<Tensor>{.x = x,
                                                                    .states = states,
                                                                    .y = y,
                                                                    .reserve = reserve,
                                                                    .dw = dw,
                                                                    .mode = stack.lstm ? 0 : 1,
                                                                    .hidden = stack.hidden,
                                                                    .layers = stack.layers,
                                                                    .bidirectional = stack.bidirectional ? 1 : 0},
                 name);
}

}  // namespace xylem::nn
