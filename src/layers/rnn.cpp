// LSTM and GRU layers (PyTorch's nn.LSTM, nn.GRU) from gemm and the fused
// cell ops: forward per layer and direction, backward through time.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "xylem/blas.hpp"
#include "xylem/error.hpp"
#include "xylem/math.hpp"
#include "xylem/rnn.hpp"
#include "xylem/rnn_sequence.hpp"
#include "xylem/shaping.hpp"

namespace xylem::layers {
namespace {

using blas::Transpose;

// Step t of a sequence [T, N, K]: the contiguous [N, K] matrix.
Tensor at(const Tensor& seq, std::int64_t t) {
  return seq.slice(0, t, t + 1).reshape({seq.layout().dim(1), seq.layout().dim(2)});
}
// Steps [begin, end) of a sequence [T, N, K] as rows [(end-begin)*N, K].
Tensor rows(const Tensor& seq, std::int64_t begin, std::int64_t end) {
  return seq.slice(0, begin, end).reshape({(end - begin) * seq.layout().dim(1), seq.layout().dim(2)});
}
Tensor rows(const Tensor& seq) { return rows(seq, 0, seq.layout().dim(0)); }

// c = alpha op(a) op(m) + beta c.
void gemm(const Backend& b, Transpose ta, Transpose tm, const Tensor& a, const Tensor& m, double beta, Tensor c) {
  blas::gemm(b, ta, tm, 1.0, a, m, beta, c);
}

}  // namespace

Recurrent::Recurrent(const Backend& b, Generator& gen, Mode mode, std::int64_t input_size, std::int64_t hidden_size,
                     int num_layers, bool bidirectional, bool batch_first, const ParameterOptions& options)
    : mode_(mode),
      input_(input_size),
      hidden_(hidden_size),
      layers_(num_layers),
      dirs_(bidirectional ? 2 : 1),
      batch_first_(batch_first),
      dtype_(options.dtype) {
  if (input_size < 1 || hidden_size < 1 || num_layers < 1)
    throw Error(ErrorCode::invalid_argument, describe() + ": sizes and num_layers must be at least 1");
  if (dtype_ != f32 && dtype_ != f64)
    throw Error(ErrorCode::dtype_mismatch, describe() + ": parameters must be f32 or f64");
  const double bound = 1.0 / std::sqrt(double(hidden_size));
  const std::int64_t rows_g = gate_count() * hidden_;
  for (int l = 0; l < layers_; ++l) {
    const std::int64_t in = l == 0 ? input_ : dirs_ * hidden_;
    for (int d = 0; d < dirs_; ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      Weights w{{"weight_ih" + suffix, Tensor(Layout{rows_g, in}, dtype_), {}},
                {"weight_hh" + suffix, Tensor(Layout{rows_g, hidden_}, dtype_), {}},
                {"bias_ih" + suffix, Tensor(Layout{rows_g}, dtype_), {}},
                {"bias_hh" + suffix, Tensor(Layout{rows_g}, dtype_), {}}};
      for (Parameter* p : {&w.weight_ih, &w.weight_hh, &w.bias_ih, &w.bias_hh})
        fill_uniform(b, p->value, gen, -bound, bound);
      weights_.push_back(std::move(w));
    }
  }
}

std::string Recurrent::describe() const {
  std::string s = (mode_ == Mode::lstm ? "LSTM(" : "GRU(") + std::to_string(input_) + ", " + std::to_string(hidden_);
  if (layers_ != 1) s += ", num_layers=" + std::to_string(layers_);
  if (dirs_ == 2) s += ", bidirectional=True";
  if (batch_first_) s += ", batch_first=True";
  return s + ")";
}

std::vector<Parameter*> Recurrent::parameters() {
  std::vector<Parameter*> out;
  for (Weights& w : weights_)
    for (Parameter* p : {&w.weight_ih, &w.weight_hh, &w.bias_ih, &w.bias_hh}) out.push_back(p);
  return out;
}

Layout Recurrent::output_shape(const Layout& x) const {
  if (x.rank() != 3 || x.dim(2) != input_)
    bad_input(x, batch_first_ ? "[N, T, " + std::to_string(input_) + "]" : "[T, N, " + std::to_string(input_) + "]");
  return Layout{x.dim(0), x.dim(1), dirs_ * hidden_};
}

std::vector<Tensor> Recurrent::state_pieces(const Backend& b, const Tensor& t, std::string_view arg,
                                            std::int64_t batch) const {
  const std::int64_t count = std::int64_t(layers_) * dirs_;
  std::vector<Tensor> pieces;
  if (!t.defined()) {
    for (std::int64_t k = 0; k < count; ++k) pieces.push_back(zeros(b, Layout{batch, hidden_}, dtype_));
    return pieces;
  }
  const Layout expected{count, batch, hidden_};
  if (!t.layout().same_dims(expected))
    throw Error(ErrorCode::shape_mismatch, describe() + ": " + std::string(arg) + " is " + t.layout().dims_string() +
                                               "; expected " + expected.dims_string());
  if (t.dtype() != dtype_)
    throw Error(ErrorCode::dtype_mismatch, describe() + ": " + std::string(arg) + " is " +
                                               std::string(name(t.dtype())) + "; expected " +
                                               std::string(name(dtype_)));
  const Tensor whole = contiguous(b, t);
  for (std::int64_t k = 0; k < count; ++k) pieces.push_back(at(whole, k));
  return pieces;
}

Tensor Recurrent::run_direction(const Backend& b, int layer, int direction, Saved& s, Tensor& h_last,
                                Tensor& c_last) {
  const Weights& w = weights_[std::size_t(layer * dirs_ + direction)];
  const std::int64_t steps = s.input.layout().dim(0), batch = s.input.layout().dim(1);
  const std::int64_t width = gate_count() * hidden_;
  const bool lstm = mode_ == Mode::lstm;
  // The input projection of every step at once, with the biases the cell
  // adds to it: both for LSTM, b_ih for GRU (whose b_hh sits inside r h_n).
  s.gates = Tensor(Layout{steps, batch, width}, dtype_);
  Tensor gate_rows = rows(s.gates);
  gemm(b, Transpose::no, Transpose::yes, rows(s.input), w.weight_ih.value, 0, gate_rows);
  if (lstm) {
    add(b, s.gates, add(b, w.bias_ih.value, w.bias_hh.value), s.gates);  // one pass over the gates
    s.cs = Tensor(Layout{steps, batch, hidden_}, dtype_);
  } else {
    add(b, s.gates, w.bias_ih.value, s.gates);
    s.hg = Tensor(Layout{steps, batch, width}, dtype_);
    fill(b, s.hg, 0);
    add(b, s.hg, w.bias_hh.value, s.hg);
  }
  s.hs = Tensor(Layout{steps, batch, hidden_}, dtype_);
  // W_hh^T once for every step: a gemm whose kernel reads rows of op(b)
  // (OpenCL's) otherwise transposed W_hh into scratch at each step.
  const Tensor w_hh_t = transpose(b, w.weight_hh.value, 0, 1);
  Tensor h_prev = s.h0, c_prev = s.c0;
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t t = direction == 0 ? k : steps - 1 - k;
    Tensor h = at(s.hs, t);
    if (lstm) {
      Tensor g = at(s.gates, t), c = at(s.cs, t);
      gemm(b, Transpose::no, Transpose::no, h_prev, w_hh_t, 1, g);
      nn::lstm_cell(b, g, c_prev, c, h);
      c_prev = c;
    } else {
      Tensor x = at(s.gates, t), hg = at(s.hg, t);
      gemm(b, Transpose::no, Transpose::no, h_prev, w_hh_t, 1, hg);
      nn::gru_cell(b, x, hg, h_prev, h);
    }
    h_prev = h;
  }
  h_last = h_prev;
  c_last = c_prev;
  return s.hs;
}

RecurrentOutput Recurrent::forward(const Backend& b, const Tensor& x, const Tensor& h0, const Tensor& c0) {
  const Layout y_shape = require_input(x);
  if (x.dtype() != dtype_)
    throw Error(ErrorCode::dtype_mismatch, describe() + ": input is " + std::string(name(x.dtype())) +
                                               "; expected " + std::string(name(dtype_)));
  if (mode_ == Mode::gru && c0.defined())
    throw Error(ErrorCode::invalid_argument, describe() + ": a GRU has no cell state, c0 must be empty");
  const std::int64_t batch = batch_first_ ? x.layout().dim(0) : x.layout().dim(1);
  Tensor input = batch_first_ ? transpose(b, x, 0, 1) : x.layout().is_contiguous() ? x : contiguous(b, x);
  if (const std::int64_t bytes = stack_reserve(b, input); bytes >= 0) {
    RecurrentOutput out = forward_stack(b, input, h0, c0, bytes);
    y_shape_ = y_shape;
    return out;
  }
  std::vector<Tensor> h0s = state_pieces(b, h0, "h0", batch);
  std::vector<Tensor> c0s;
  if (mode_ == Mode::lstm) c0s = state_pieces(b, c0, "c0", batch);

  std::vector<Saved> saved(weights_.size());
  std::vector<Tensor> h_n, c_n;
  for (int l = 0; l < layers_; ++l) {
    std::vector<Tensor> outputs;
    for (int d = 0; d < dirs_; ++d) {
      const std::size_t k = std::size_t(l * dirs_ + d);
      Saved& s = saved[k];
      s.input = input;
      s.h0 = h0s[k];
      if (mode_ == Mode::lstm) s.c0 = c0s[k];
      Tensor h_last, c_last;
      outputs.push_back(run_direction(b, l, d, s, h_last, c_last));
      h_n.push_back(h_last);
      if (mode_ == Mode::lstm) c_n.push_back(c_last);
    }
    input = dirs_ == 1 ? outputs[0] : concatenate(b, outputs, 2);
  }
  RecurrentOutput out;
  out.output = batch_first_ ? transpose(b, input, 0, 1) : input;
  out.h_n = stack(b, h_n, 0);
  if (mode_ == Mode::lstm) out.c_n = stack(b, c_n, 0);
  saved_ = std::move(saved);
  stack_ = {};
  y_shape_ = y_shape;
  return out;
}

Tensor Recurrent::forward(const Backend& b, const Tensor& x) { return forward(b, x, Tensor{}, Tensor{}).output; }

void Recurrent::back_direction(const Backend& b, int layer, int direction, Saved& s, const Tensor& dy,
                               const Tensor& dh_n, const Tensor& dc_n, Tensor& dinput, double beta, Tensor& dh0,
                               Tensor& dc0) {
  Weights& w = weights_[std::size_t(layer * dirs_ + direction)];
  const std::int64_t steps = s.input.layout().dim(0), batch = s.input.layout().dim(1);
  const std::int64_t width = gate_count() * hidden_;
  const bool lstm = mode_ == Mode::lstm;
  const Layout state{batch, hidden_};
  // dgates: of the pre-activations (LSTM) or of x W_ih^T + b_ih (GRU);
  // dhg (GRU): of h W_hh^T + b_hh.
  Tensor dgates(Layout{steps, batch, width}, dtype_);
  Tensor dhg = lstm ? dgates : Tensor(Layout{steps, batch, width}, dtype_);
  // The gradients reaching h and c from the step after: the final states'
  // first, then buffers of our own. An op never writes what it reads, so
  // a state an op reads and writes in one launch alternates between two.
  Tensor dh = dh_n, dc = dc_n;
  Tensor dh_bufs[2] = {Tensor(state, dtype_), Tensor(state, dtype_)};
  Tensor dc_bufs[2] = {Tensor(state, dtype_), Tensor(state, dtype_)};
  for (std::int64_t k = steps - 1; k >= 0; --k) {
    const std::int64_t t = direction == 0 ? k : steps - 1 - k;
    const std::int64_t before = direction == 0 ? t - 1 : t + 1;  // the step that ran before t
    Tensor dg = at(dgates, t);
    Tensor& next_dh = dh_bufs[std::size_t(k % 2)];
    if (lstm) {
      const Tensor c_prev = k == 0 ? s.c0 : at(s.cs, before);
      Tensor& dc_prev = dc_bufs[std::size_t(k % 2)];
      nn::lstm_cell_grad(b, at(s.gates, t), c_prev, at(s.cs, t), at(dy, t), dh, dc, dg, dc_prev);
      gemm(b, Transpose::no, Transpose::no, dg, w.weight_hh.value, 0, next_dh);
      dc = dc_prev;
    } else {
      const Tensor h_prev = k == 0 ? s.h0 : at(s.hs, before);
      Tensor dr = at(dhg, t);
      nn::gru_cell_grad(b, at(s.gates, t), at(s.hg, t), h_prev, at(dy, t), dh, dg, dr, next_dh);
      gemm(b, Transpose::no, Transpose::no, dr, w.weight_hh.value, 1, next_dh);
    }
    dh = next_dh;
  }
  dh0 = steps == 0 ? dh_n : dh;
  dc0 = lstm ? (steps == 0 ? dc_n : dc) : Tensor{};

  // The weights' gradients over the whole sequence: dW_ih = dgates^T input;
  // dW_hh = dhg^T h_prev, h_prev the h of the step before (h0 first).
  const Tensor dgate_rows = rows(dgates), dhg_rows = rows(dhg);
  Tensor dw_ih(w.weight_ih.value.layout(), dtype_), dw_hh(w.weight_hh.value.layout(), dtype_);
  gemm(b, Transpose::yes, Transpose::no, dgate_rows, rows(s.input), 0, dw_ih);
  if (steps == 0) {
    fill(b, dw_hh, 0);
  } else {
    const std::int64_t first = direction == 0 ? 0 : steps - 1;
    gemm(b, Transpose::yes, Transpose::no, at(dhg, first), s.h0, 0, dw_hh);
    if (steps > 1) {
      const Tensor later = direction == 0 ? rows(dhg, 1, steps) : rows(dhg, 0, steps - 1);
      const Tensor earlier = direction == 0 ? rows(s.hs, 0, steps - 1) : rows(s.hs, 1, steps);
      gemm(b, Transpose::yes, Transpose::no, later, earlier, 1, dw_hh);
    }
  }
  const Reduction over_rows{{0}, false};
  Tensor db_ih = sum(b, dgate_rows, over_rows);
  Tensor db_hh = lstm ? sum(b, dgate_rows, over_rows) : sum(b, dhg_rows, over_rows);
  Tensor dinput_rows = rows(dinput);
  gemm(b, Transpose::no, Transpose::no, dgate_rows, w.weight_ih.value, beta, dinput_rows);
  accumulate(b, w.weight_ih, dw_ih);
  accumulate(b, w.weight_hh, dw_hh);
  accumulate(b, w.bias_ih, db_ih);
  accumulate(b, w.bias_hh, db_hh);
}

RecurrentGrads Recurrent::backward(const Backend& b, const Tensor& dy, const Tensor& dh_n, const Tensor& dc_n) {
  require_backward(!saved_.empty() || stack_.reserve.defined(), dy, y_shape_);
  if (dy.dtype() != dtype_)
    throw Error(ErrorCode::dtype_mismatch, describe() + ": dy is " + std::string(name(dy.dtype())) + "; expected " +
                                               std::string(name(dtype_)));
  if (mode_ == Mode::gru && dc_n.defined())
    throw Error(ErrorCode::invalid_argument, describe() + ": a GRU has no cell state, dc_n must be empty");
  Tensor grad = batch_first_ ? transpose(b, dy, 0, 1) : dy.layout().is_contiguous() ? dy : contiguous(b, dy);
  if (stack_.reserve.defined()) return backward_stack(b, grad, dh_n, dc_n);
  const std::int64_t batch = saved_[0].input.layout().dim(1);
  std::vector<Tensor> dhs = state_pieces(b, dh_n, "dh_n", batch);
  std::vector<Tensor> dcs;
  if (mode_ == Mode::lstm) dcs = state_pieces(b, dc_n, "dc_n", batch);

  std::vector<Tensor> dh0(weights_.size()), dc0(weights_.size());
  for (int l = layers_ - 1; l >= 0; --l) {
    Saved& first = saved_[std::size_t(l * dirs_)];
    Tensor dinput(first.input.layout(), dtype_);
    for (int d = 0; d < dirs_; ++d) {
      const std::size_t k = std::size_t(l * dirs_ + d);
      const Tensor dy_d = dirs_ == 1 ? grad : contiguous(b, grad.slice(2, d * hidden_, (d + 1) * hidden_));
      back_direction(b, l, d, saved_[k], dy_d, dhs[k], mode_ == Mode::lstm ? dcs[k] : Tensor{}, dinput,
                     d == 0 ? 0.0 : 1.0, dh0[k], dc0[k]);
    }
    grad = dinput;
  }
  RecurrentGrads out;
  out.dx = batch_first_ ? transpose(b, grad, 0, 1) : grad;
  out.dh0 = stack(b, dh0, 0);
  if (mode_ == Mode::lstm) out.dc0 = stack(b, dc0, 0);
  saved_.clear();
  return out;
}

nn::RnnStack Recurrent::stack_spec() const noexcept {
  return nn::RnnStack{mode_ == Mode::lstm, hidden_, std::int64_t(layers_), dirs_ == 2};
}

std::int64_t Recurrent::stack_reserve(const Backend& b, const Tensor& input) {
  const std::int64_t steps = input.layout().dim(0), batch = input.layout().dim(1);
  if (steps < 1 || batch < 1 || !b.supports(Op::nn_rnn_sequence, dtype_)) return -1;
  const auto key = std::pair{steps, batch};
  if (const auto it = reserve_bytes_.find(key); it != reserve_bytes_.end()) return it->second;
  std::int64_t bytes = -1;
  try {
    bytes = nn::rnn_sequence_reserve(b, input, stack_spec());
  } catch (const Error& e) {
    // No cuDNN, XYLEM_CUDA_CUDNN_RNN=0, or a shape it does not take: the
    // per-step path serves.
    if (e.code() != ErrorCode::unsupported) throw;
  }
  reserve_bytes_.emplace(key, bytes);
  return bytes;
}

Tensor Recurrent::flat_weights(const Backend& b) const {
  std::vector<Tensor> pieces;
  for (const Weights& w : weights_)
    for (const Parameter* p : {&w.weight_ih, &w.weight_hh, &w.bias_ih, &w.bias_hh})
      pieces.push_back(p->value.reshape({p->value.numel()}));
  return concatenate(b, pieces, 0);
}

Tensor Recurrent::stack_states(const Backend& b, const Tensor& h, const Tensor& c, std::string_view h_arg,
                               std::string_view c_arg, std::int64_t batch) const {
  const Layout one{std::int64_t(layers_) * dirs_, batch, hidden_};
  const auto whole = [&](const Tensor& t, std::string_view arg) {
    return t.defined() ? stack(b, state_pieces(b, t, arg, batch), 0) : zeros(b, one, dtype_);
  };
  if (mode_ == Mode::gru) return whole(h, h_arg).reshape({1, one.dim(0), batch, hidden_});
  const Tensor both[2] = {whole(h, h_arg), whole(c, c_arg)};
  return stack(b, both, 0);
}

RecurrentOutput Recurrent::forward_stack(const Backend& b, const Tensor& input, const Tensor& h0, const Tensor& c0,
                                         std::int64_t reserve_bytes) {
  const std::int64_t steps = input.layout().dim(0), batch = input.layout().dim(1), count = layers_ * dirs_;
  StackSaved s;
  s.x = input;
  s.states = stack_states(b, h0, c0, "h0", "c0", batch);
  s.w = flat_weights(b);
  s.y = Tensor(Layout{steps, batch, dirs_ * hidden_}, dtype_);
  s.reserve = Tensor(Layout{std::max<std::int64_t>(reserve_bytes, 1)}, u8);
  Tensor states_out(s.states.layout(), dtype_);
  nn::rnn_sequence(b, s.x, s.states, s.w, stack_spec(), s.y, states_out, s.reserve);
  RecurrentOutput out;
  out.output = batch_first_ ? transpose(b, s.y, 0, 1) : s.y;
  out.h_n = states_out.slice(0, 0, 1).reshape({count, batch, hidden_});
  if (mode_ == Mode::lstm) out.c_n = states_out.slice(0, 1, 2).reshape({count, batch, hidden_});
  saved_.clear();
  stack_ = std::move(s);
  return out;
}

RecurrentGrads Recurrent::backward_stack(const Backend& b, const Tensor& grad, const Tensor& dh_n,
                                         const Tensor& dc_n) {
  const StackSaved& s = stack_;
  const std::int64_t batch = s.x.layout().dim(1), count = layers_ * dirs_;
  const Tensor dstates_out = stack_states(b, dh_n, dc_n, "dh_n", "dc_n", batch);
  Tensor reserve = s.reserve;
  Tensor dx(s.x.layout(), dtype_), dstates(s.states.layout(), dtype_), dw(s.w.layout(), dtype_);
  nn::rnn_sequence_grad_data(b, s.y, grad, dstates_out, s.states, s.w, stack_spec(), reserve, dx, dstates);
  nn::rnn_sequence_grad_weights(b, s.x, s.states, s.y, reserve, stack_spec(), dw);
  std::int64_t offset = 0;
  for (Parameter* p : parameters()) {
    const std::int64_t n = p->value.numel();
    accumulate(b, *p, dw.slice(0, offset, offset + n).reshape(p->value.layout().dims()));
    offset += n;
  }
  RecurrentGrads out;
  out.dx = batch_first_ ? transpose(b, dx, 0, 1) : dx;
  out.dh0 = dstates.slice(0, 0, 1).reshape({count, batch, hidden_});
  if (mode_ == Mode::lstm) out.dc0 = dstates.slice(0, 1, 2).reshape({count, batch, hidden_});
  stack_ = {};
  return out;
}

Tensor Recurrent::backward(const Backend& b, const Tensor& dy) { return backward(b, dy, Tensor{}, Tensor{}).dx; }

}  // namespace xylem::layers
