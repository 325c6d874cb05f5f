#pragma once
/// @file
/// Recurrent networks with PyTorch's semantics: the fused cell ops of one
/// time step (nn::lstm_cell, nn::gru_cell and their gradients) and the
/// layers::LSTM and layers::GRU layers built from them and gemm.
///
/// Where the backend runs nn::rnn_sequence (CUDA with cuDNN) for the input's
/// dtype and shape, a layer runs its whole stack through it, as PyTorch does
/// on CUDA (XYLEM_CUDA_CUDNN_RNN=0 turns that off; a layer asks once per
/// sequence length and batch size). Otherwise it
/// runs per layer and direction: one gemm projects the whole input
/// sequence ([T*N, I] x [I, gates*H]) up front; each step then runs one
/// recurrent gemm and one fused cell op, which keeps the activated gates
/// backward needs. Backward runs one cell gradient op and one gemm per step,
/// and the weight gradients as a few gemms over the whole sequence.
#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/creation.hpp"
#include "xylem/layers.hpp"
#include "xylem/rnn_sequence.hpp"
#include "xylem/tensor.hpp"

namespace xylem::nn {

/// One LSTM step (the nn::lstm_cell op): gates [N, 4H] holds the
/// pre-activations of PyTorch's i, f, g, o blocks (x W_ih^T + b_ih +
/// h_prev W_hh^T + b_hh) and is overwritten with the activated gates;
/// c = f c_prev + i g and h = o tanh(c), each [N, H]. Every tensor
/// contiguous and of one dtype, f32 or f64 (invalid_argument,
/// dtype_mismatch, shape_mismatch otherwise).
void lstm_cell(const Backend& b, Tensor& gates, const Tensor& c_prev, Tensor& c, Tensor& h);
/// The gradient of lstm_cell: gates as lstm_cell left them; dy + dh is the
/// gradient reaching h, dc the one reaching c from the next step (all
/// [N, H]). Writes dgates [N, 4H] (of the pre-activations) and dc_prev.
void lstm_cell_grad(const Backend& b, const Tensor& gates, const Tensor& c_prev, const Tensor& c, const Tensor& dy,
                    const Tensor& dh, const Tensor& dc, Tensor& dgates, Tensor& dc_prev);
/// One GRU step (the nn::gru_cell op): xg [N, 3H] = x W_ih^T + b_ih and
/// hg [N, 3H] = h_prev W_hh^T + b_hh in PyTorch's r, z, n blocks;
/// r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n),
/// h = (1 - z) n + z h_prev. xg is overwritten with r, z, n. Tensors as
/// lstm_cell's.
void gru_cell(const Backend& b, Tensor& xg, const Tensor& hg, const Tensor& h_prev, Tensor& h);
/// The gradient of gru_cell: gates the r, z, n gru_cell left in xg; dy + dh
/// reaches h. Writes dxg and dhg [N, 3H] (the gradients of xg and hg) and
/// dh_prev = (dy + dh) z, h_prev's gradient through z h_prev alone (the
/// caller adds dhg W_hh).
void gru_cell_grad(const Backend& b, const Tensor& gates, const Tensor& hg, const Tensor& h_prev, const Tensor& dy,
                   const Tensor& dh, Tensor& dxg, Tensor& dhg, Tensor& dh_prev);

}  // namespace xylem::nn

namespace xylem::layers {

/// What a recurrent layer's forward gives: output [T, N, D*H] ([N, T, D*H]
/// batch first; D = 2 when bidirectional, the forward direction's units
/// first), and the final states h_n and (LSTM) c_n, [num_layers*D, N, H].
struct RecurrentOutput {
  Tensor output;  ///< the last layer's h at every step
  Tensor h_n;     ///< each layer and direction's last h
  Tensor c_n;     ///< each layer and direction's last c (LSTM; empty for GRU)
};

/// What a recurrent layer's backward gives: the gradients of the input and
/// of the initial states (zeros ones when forward had none).
struct RecurrentGrads {
  Tensor dx;   ///< of the input, its shape
  Tensor dh0;  ///< of h0, [num_layers*D, N, H]
  Tensor dc0;  ///< of c0 (LSTM; empty for GRU)
};

/// PyTorch's nn.LSTM and nn.GRU, with their parameters (named
/// weight_ih_l{k}, weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k}, with the
/// suffix _reverse for the backward direction, in PyTorch's order) and
/// their initialisation, U(-1/sqrt(H), 1/sqrt(H)). Input x [T, N, I] ([N,
/// T, I] batch first), batched. A wrong input size or rank, or initial
/// states of the wrong shape, raise shape_mismatch; another dtype than the
/// parameters' dtype_mismatch; c0 given to a GRU invalid_argument.
class Recurrent : public Layer {
 public:
  /// The cell.
  enum class Mode {
    lstm,  ///< gates i, f, g, o; states h and c
    gru    ///< gates r, z, n; state h
  };
  /// Parameters drawn from `gen` in PyTorch's order, in options.dtype (f32
  /// or f64); num_layers >= 1, sizes >= 1 (invalid_argument otherwise).
  Recurrent(const Backend& b, Generator& gen, Mode mode, std::int64_t input_size, std::int64_t hidden_size,
            int num_layers = 1, bool bidirectional = false, bool batch_first = false,
            const ParameterOptions& options = {});
  /// output = forward(b, x, {}, {}).output: zero initial states.
  Tensor forward(const Backend& b, const Tensor& x) override;
  /// The output and final states from x and the initial states h0 and c0
  /// ([num_layers*D, N, H]; empty handles: zeros). Saves what backward needs.
  RecurrentOutput forward(const Backend& b, const Tensor& x, const Tensor& h0, const Tensor& c0 = {});
  /// dx = backward(b, dy, {}, {}).dx.
  Tensor backward(const Backend& b, const Tensor& dy) override;
  /// Backward through time from the gradients of the output and of the
  /// final states (empty handles: zeros); adds the parameters' gradients
  /// into their grad and releases what forward saved.
  RecurrentGrads backward(const Backend& b, const Tensor& dy, const Tensor& dh_n, const Tensor& dc_n = {});
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] Layout output_shape(const Layout& x) const override;
  [[nodiscard]] std::vector<Parameter*> parameters() override;

  /// The four parameters of one layer and direction.
  struct Weights {
    Parameter weight_ih;  ///< [gates*H, I] (layer 0) or [gates*H, D*H]
    Parameter weight_hh;  ///< [gates*H, H]
    Parameter bias_ih;    ///< [gates*H]
    Parameter bias_hh;    ///< [gates*H]
  };
  /// Layer `layer`'s weights of direction `direction` (1: reverse).
  [[nodiscard]] Weights& weights(int layer, int direction) {
    return weights_.at(std::size_t(layer * dirs_ + direction));
  }

 private:
  // What forward keeps of one layer and direction for backward.
  struct Saved {
    Tensor input;  // the layer's input [T, N, I], contiguous, time first
    Tensor gates;  // [T, N, gates*H]: the activated gates at every step
    Tensor hg;     // GRU: h_prev W_hh^T + b_hh at every step
    Tensor hs;     // [T, N, H]: h at every step
    Tensor cs;     // LSTM: c at every step
    Tensor h0;     // [N, H], contiguous
    Tensor c0;     // LSTM: [N, H], contiguous
  };
  [[nodiscard]] nn::RnnStack stack_spec() const noexcept;
  // What forward keeps of a whole stack run through nn::rnn_sequence.
  struct StackSaved {
    Tensor x, states, w, y, reserve;
  };
  [[nodiscard]] std::int64_t gate_count() const noexcept { return mode_ == Mode::lstm ? 4 : 3; }
  // The reserve bytes of nn::rnn_sequence for the time-major input, or -1
  // where the backend does not run the stack for it (asked once per shape).
  std::int64_t stack_reserve(const Backend& b, const Tensor& input);
  // Every parameter's value flattened in PyTorch's order.
  Tensor flat_weights(const Backend& b) const;
  // The [S, L*D, N, H] states (h, then c for an LSTM) from h and c.
  Tensor stack_states(const Backend& b, const Tensor& h, const Tensor& c, std::string_view h_arg,
                      std::string_view c_arg, std::int64_t batch) const;
  RecurrentOutput forward_stack(const Backend& b, const Tensor& input, const Tensor& h0, const Tensor& c0,
                                std::int64_t reserve_bytes);
  RecurrentGrads backward_stack(const Backend& b, const Tensor& grad, const Tensor& dh_n, const Tensor& dc_n);
  // One direction of one layer over `input`: its h at every step, and its
  // last h and c; fills `s`.
  Tensor run_direction(const Backend& b, int layer, int direction, Saved& s, Tensor& h_last, Tensor& c_last);
  // Backward of one direction from dy [T, N, H] and the final states'
  // gradients (contiguous); adds into dinput (beta 0 writes it) and the
  // parameters' gradients; gives the initial states' gradients.
  void back_direction(const Backend& b, int layer, int direction, Saved& s, const Tensor& dy, const Tensor& dh_n,
                      const Tensor& dc_n, Tensor& dinput, double beta, Tensor& dh0, Tensor& dc0);
  // The [num_layers*D, N, H] state `arg` as contiguous [N, H] pieces, or
  // zeros for an empty handle; checks its shape and dtype.
  std::vector<Tensor> state_pieces(const Backend& b, const Tensor& t, std::string_view arg, std::int64_t batch) const;

  Mode mode_;
  std::int64_t input_, hidden_;
  int layers_, dirs_;
  bool batch_first_;
  DType dtype_;
  std::vector<Weights> weights_;
  std::vector<Saved> saved_;  // per layer and direction, while a forward awaits its backward
  StackSaved stack_;          // instead, after a forward through nn::rnn_sequence
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> reserve_bytes_;  // per (T, N): stack_reserve's
  Layout y_shape_;
};

/// PyTorch's nn.LSTM: Recurrent in Mode::lstm.
class LSTM : public Recurrent {
 public:
  /// As Recurrent's constructor.
  LSTM(const Backend& b, Generator& gen, std::int64_t input_size, std::int64_t hidden_size, int num_layers = 1,
       bool bidirectional = false, bool batch_first = false, const ParameterOptions& options = {})
      : Recurrent(b, gen, Mode::lstm, input_size, hidden_size, num_layers, bidirectional, batch_first, options) {}
};

/// PyTorch's nn.GRU: Recurrent in Mode::gru.
class GRU : public Recurrent {
 public:
  /// As Recurrent's constructor.
  GRU(const Backend& b, Generator& gen, std::int64_t input_size, std::int64_t hidden_size, int num_layers = 1,
      bool bidirectional = false, bool batch_first = false, const ParameterOptions& options = {})
      : Recurrent(b, gen, Mode::gru, input_size, hidden_size, num_layers, bidirectional, batch_first, options) {}
};

}  // namespace xylem::layers
