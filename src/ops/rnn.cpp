// The recurrent cell ops (nn::lstm_cell, gru_cell and their gradients): the
// checks, then one launch each (the formulas are rnn_math.h's, in every
// framework's kernel).
#include <string>
#include <string_view>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "xylem/rnn.hpp"

namespace xylem::nn {
namespace {

// The kernels index rows of H units; an empty tensor holds nothing to index.
void require_contiguous(std::string_view op, std::string_view arg, const Tensor& t) {
  if (t.layout().is_contiguous() || t.numel() == 0) return;
  // Built by appends: GCC 12 warns (-Wrestrict, falsely) on "'" + std::string.
  std::string what = "'";
  what += arg;
  what += "' (" + ops::describe(t) + ") must be contiguous";
  ops::require_argument(false, op, what);
}

// A contiguous [N, H] state of the first state's dtype: the shape every
// other tensor of the step derives from.
void require_state(std::string_view op, std::string_view first_name, const Tensor& first, std::string_view arg,
                   const Tensor& t) {
  ops::require_like(op, first_name, first, arg, t);
  require_contiguous(op, arg, t);
}

// The first state: f32 or f64, rank 2, contiguous.
void require_first_state(std::string_view op, std::string_view arg, const Tensor& t) {
  ops::require_real(op, arg, t);
  ops::require_rank(op, arg, t, 2);
  require_state(op, arg, t, arg, t);
}

// A gate tensor [N, gates*H] of the state's dtype, contiguous.
void require_gates(std::string_view op, std::string_view state_name, const Tensor& state, std::string_view arg,
                   const Tensor& t, std::int64_t gates) {
  ops::require_defined(op, arg, t);
  ops::require_same_dtype(op, state_name, state, arg, t);
  ops::require_dims(op, arg, t, Layout{state.layout().dim(0), gates * state.layout().dim(1)});
  require_contiguous(op, arg, t);
}

}  // namespace

void lstm_cell(const Backend& b, Tensor& gates, const Tensor& c_prev, Tensor& c, Tensor& h) {
  constexpr std::string_view name = "nn::lstm_cell";
  require_first_state(name, "c_prev", c_prev);
  require_gates(name, "c_prev", c_prev, "gates", gates, 4);
  require_state(name, "c_prev", c_prev, "c", c);
  require_state(name, "c_prev", c_prev, "h", h);
  detail::launch(b, detail::args::nn_lstm_cell<Tensor>{.gates = gates, .c_prev = c_prev, .c = c, .h = h}, name);
}

void lstm_cell_grad(const Backend& b, const Tensor& gates, const Tensor& c_prev, const Tensor& c, const Tensor& dy,
                    const Tensor& dh, const Tensor& dc, Tensor& dgates, Tensor& dc_prev) {
  constexpr std::string_view name = "nn::lstm_cell_grad";
  require_first_state(name, "c_prev", c_prev);
  require_gates(name, "c_prev", c_prev, "gates", gates, 4);
  require_state(name, "c_prev", c_prev, "c", c);
  require_state(name, "c_prev", c_prev, "dy", dy);
  require_state(name, "c_prev", c_prev, "dh", dh);
  require_state(name, "c_prev", c_prev, "dc", dc);
  require_gates(name, "c_prev", c_prev, "dgates", dgates, 4);
  require_state(name, "c_prev", c_prev, "dc_prev", dc_prev);
  detail::launch(b,
                 detail::args::nn_lstm_cell_grad<Tensor>{.gates = gates,
                                                         .c_prev = c_prev,
                                                         .c = c,
                                                         .dy = dy,
                                                         .dh = dh,
                                                         .dc = dc,
                                                         .dgates = dgates,
                                                         .dc_prev = dc_prev},
                 name);
}

void gru_cell(const Backend& b, Tensor& xg, const Tensor& hg, const Tensor& h_prev, Tensor& h) {
  constexpr std::string_view name = "nn::gru_cell";
  require_first_state(name, "h_prev", h_prev);
  require_gates(name, "h_prev", h_prev, "xg", xg, 3);
  require_gates(name, "h_prev", h_prev, "hg", hg, 3);
  require_state(name, "h_prev", h_prev, "h", h);
  detail::launch(b, detail::args::nn_gru_cell<Tensor>{.xg = xg, .hg = hg, .h_prev = h_prev, .h = h}, name);
}

void gru_cell_grad(const Backend& b, const Tensor& gates, const Tensor& hg, const Tensor& h_prev, const Tensor& dy,
                   const Tensor& dh, Tensor& dxg, Tensor& dhg, Tensor& dh_prev) {
  constexpr std::string_view name = "nn::gru_cell_grad";
  require_first_state(name, "h_prev", h_prev);
  require_gates(name, "h_prev", h_prev, "gates", gates, 3);
  require_gates(name, "h_prev", h_prev, "hg", hg, 3);
  require_state(name, "h_prev", h_prev, "dy", dy);
  require_state(name, "h_prev", h_prev, "dh", dh);
  require_gates(name, "h_prev", h_prev, "dxg", dxg, 3);
  require_gates(name, "h_prev", h_prev, "dhg", dhg, 3);
  require_state(name, "h_prev", h_prev, "dh_prev", dh_prev);
  detail::launch(b,
                 detail::args::nn_gru_cell_grad<Tensor>{.gates = gates,
                                                        .hg = hg,
                                                        .h_prev = h_prev,
                                                        .dy = dy,
                                                        .dh = dh,
                                                        .dxg = dxg,
                                                        .dhg = dhg,
                                                        .dh_prev = dh_prev},
                 name);
}

}  // namespace xylem::nn
