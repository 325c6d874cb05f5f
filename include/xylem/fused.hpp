#pragma once
/// @file
/// Elementwise fusion: a chain of unary and binary elementwise ops (the codes
/// of xylem/plugin/math.h, XY_UN_* and XY_BIN_*) run as one kernel, each
/// element read once and written once. The native framework evaluates it
/// tile by tile in cache; OpenCL and CUDA compile it to one kernel at run
/// time (cached on disk).
///
/// Intermediate values stay in the compute type (f32 for f16, bf16 and f32;
/// f64 for f64): only the outputs are rounded to the storage dtype, so a
/// fused chain of f16 or bf16 ops may differ from the unfused one by the
/// rounding of its intermediates (it is the more accurate of the two).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "xylem/backend.hpp"
#include "xylem/tensor.hpp"

namespace xylem {

/// A chain of elementwise ops over up to 5 inputs and 3 outputs, built value
/// by value:
///
///     FusedProgram p;
///     auto x = p.input(0), a = p.input(1);
///     p.output(0, p.unary(XY_UN_RELU, p.binary(XY_BIN_MUL, x, a)));
///     fused(backend, p, {x_tensor, a_tensor}, {y_tensor});
///
/// Its limits (5 inputs, 3 outputs, 16 instructions counting a load per
/// input used and a store per output, 8 live values, 4 distinct parameter
/// pairs besides (0, 0)) are checked by fused(), which raises
/// invalid_argument past them; fits() asks first.
class FusedProgram {
 public:
  /// A value of the chain: an input or the result of an op.
  struct Value {
    int id = -1;  ///< its node in the program
  };

  /// Input k (0..4) of the call.
  Value input(int k);
  /// f(x) for the unary code (XY_UN_*), with its parameters.
  Value unary(int code, Value x, double p0 = 0, double p1 = 0);
  /// f(a, b) for the binary code (XY_BIN_*), with its parameters.
  Value binary(int code, Value a, Value b, double p0 = 0, double p1 = 0);
  /// Output j (0..2) of the call gets v; each output is set once.
  void output(int j, Value v);

  /// Whether the program, as it is, fits the limits of one call.
  [[nodiscard]] bool fits() const;
  /// The packed form math::fused takes: eight words of instructions and the
  /// eight reals of the parameter pairs. Throws invalid_argument past the
  /// limits or for an output never set between two that are.
  [[nodiscard]] std::array<std::int64_t, 8> words() const;
  /// The reals of the packed form (see words()).
  [[nodiscard]] std::array<double, 8> reals() const;

 private:
  // One node of the chain: an input (code is its index) or an op.
  struct Node {
    enum class Kind : std::uint8_t { input, unary, binary } kind = Kind::input;
    int code = 0;
    int a = -1, b = -1;  // operand nodes
    double p0 = 0, p1 = 0;
  };
  struct Packed {
    std::array<std::int64_t, 8> words{};
    std::array<double, 8> reals{};
  };
  // The program packed, or the reason it does not fit.
  [[nodiscard]] bool pack(Packed& out, std::string* why) const;
  [[nodiscard]] int add(const Node& node);

  std::vector<Node> nodes_;
  std::array<int, 3> outputs_{-1, -1, -1};
};

/// Automatic fusion, on unless the environment sets XYLEM_FUSE=0: the
/// elementwise ops of xylem::math and xylem::nn (add, mul, exp, relu, ...)
/// do not run when called but join a pending chain, which runs as one
/// fused() kernel once anything else needs their data: another op, a host
/// read, a wait (Backend::synchronize), interop or a collective. A result
/// whose last Tensor handle is gone by then is never written to memory. A
/// chain belongs to one backend, dtype and shape, and never spans a capture.
/// On native and CUDA a chain may begin with a blas::gemm (alpha 1, beta 0,
/// into a fresh tensor): the calls that take its result up then run as the
/// gemm's epilogue (nn::linear's bias add and the activation after it: one
/// op, the pre-activation not stored unless held).
/// Errors the call can know (shapes, dtypes, out of memory) are raised by
/// the call as without fusion. Results are within the ops' conformance
/// tolerances of the unfused ones (f16 and bf16 intermediates keep f32).
/// set_fusion(false) turns it off for the process, running what is pending.
void set_fusion(bool on);
/// Whether automatic fusion is on.
[[nodiscard]] bool fusion_enabled() noexcept;

/// Runs the program: outputs[j] gets output j, computed from inputs[k] for
/// input k. Inputs broadcast (NumPy's rule) to the outputs' shape; every
/// output has that one shape; every tensor has one float dtype. An output
/// may be an input (the same elements: in place). Raises invalid_argument
/// (a program past its limits, an input it uses missing, an output it
/// never sets), dtype_mismatch, shape_mismatch, before any tensor changes.
void fused(const Backend& b, const FusedProgram& program, std::span<const Tensor> inputs,
           std::span<Tensor> outputs);
/// fused() with brace lists of tensors.
void fused(const Backend& b, const FusedProgram& program, std::initializer_list<Tensor> inputs,
           std::initializer_list<Tensor> outputs);

}  // namespace xylem
