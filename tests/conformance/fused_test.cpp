// math::fused: chains of math.h's unary and binary codes run as one kernel,
// against float64 references of the same chain, in f16, bf16, f32 and f64.
// Every pair of codes (unary then unary, binary then unary, unary then
// binary, binary then binary) on the host; on a framework that compiles
// each program at run time, every code in each position of each pair kind
// in f32 and a third of those in the other dtypes (a compile per program
// and dtype makes all pairs minutes long there); three pairs a program.
// Broadcast inputs, strided and transposed views, several outputs, in
// place, empty tensors, the 4-op chain against its unfused ops, and
// rejected programs and tensors.
#include <algorithm>

#include "conformance/math_common.hpp"
#include "xylem/fused.hpp"
#include "xylem/plugin/math.h"

namespace conformance {
namespace {

using xylem::ErrorCode;
using xylem::FusedProgram;

// Parameters of the codes that take them; (0, 0) for the rest.
std::pair<double, double> unary_params(int code) {
  switch (code) {
    case XY_UN_CLAMP:
      return {-0.5, 0.75};
    case XY_UN_LEAKY_RELU:
      return {0.1, 0};
    case XY_UN_ELU:
      return {1.3, 0};
    case XY_UN_SOFTPLUS:
      return {1.5, 20};
    default:
      return {0, 0};
  }
}

std::pair<double, double> binary_params(int code) {
  switch (code) {
    case XY_BIN_LEAKY_RELU_GRAD:
      return {0.1, 0};
    case XY_BIN_ELU_GRAD:
      return {1.3, 0};
    case XY_BIN_SOFTPLUS_GRAD:
      return {1.5, 20};
    default:
      return {0, 0};
  }
}

// A chain as the test writes it: a FusedProgram, and the same chain
// evaluated in f64 through math.h's formulas, with the error each value
// may carry from computing in the compute type.
class Chain {
 public:
  using V = FusedProgram::Value;
  V input(int k) {
    const V v = program.input(k);
    grow(v);
    nodes_[std::size_t(v.id)] = Node{-1, k, -1, -1};
    return v;
  }
  V unary(int code, V x) {
    const auto [p0, p1] = unary_params(code);
    const V v = program.unary(code, x, p0, p1);
    grow(v);
    nodes_[std::size_t(v.id)] = Node{0, code, x.id, -1};
    return v;
  }
  V binary(int code, V a, V b) {
    const auto [p0, p1] = binary_params(code);
    const V v = program.binary(code, a, b, p0, p1);
    grow(v);
    nodes_[std::size_t(v.id)] = Node{1, code, a.id, b.id};
    return v;
  }
  void output(int j, V v) {
    program.output(j, v);
    if (outputs_.size() <= std::size_t(j)) outputs_.resize(std::size_t(j) + 1);
    outputs_[std::size_t(j)] = v.id;
  }

  // Value and error scale of output j for the inputs' values `in` (indexed
  // by input number): the error scale is the sum over every op of its
  // result's sensitivity to a relative change of its operands, carried to
  // the output (estimated by central differences in f64).
  std::pair<double, double> eval(int j, const std::vector<double>& in) const {
    std::vector<double> value(nodes_.size()), scale(nodes_.size());
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      const Node& n = nodes_[k];
      if (n.kind < 0) {
        value[k] = in[std::size_t(n.code)];
        scale[k] = 0;
        continue;
      }
      const double a = value[std::size_t(n.a)], b = n.b >= 0 ? value[std::size_t(n.b)] : 0;
      const auto f = [&](double u, double w) { return apply(n, u, w); };
      value[k] = f(a, b);
      // |df/da| * (|a| * own error + error carried in a), and the same for b.
      const double da = slope([&](double u) { return f(u, b); }, a);
      double s = std::abs(value[k]) + std::abs(da) * (std::abs(a) + scale[std::size_t(n.a)]);
      if (n.b >= 0) {
        const double db = slope([&](double w) { return f(a, w); }, b);
        s += std::abs(db) * (std::abs(b) + scale[std::size_t(n.b)]);
      }
      scale[k] = s;
    }
    const auto o = std::size_t(outputs_[std::size_t(j)]);
    return {value[o], scale[o]};
  }

  FusedProgram program;

 private:
  struct Node {
    int kind;  // -1 input, 0 unary, 1 binary
    int code, a, b;
  };
  static double apply(const Node& n, double a, double b) {
    if (n.kind == 0) {
      const auto [p0, p1] = unary_params(n.code);
      return xy_unary_d(n.code, a, p0, p1);
    }
    const auto [p0, p1] = binary_params(n.code);
    return xy_binary_d(n.code, a, b, p0, p1);
  }
  template <class F>
  static double slope(F f, double x) {
    const double h = 1e-6 * std::max(std::abs(x), 1e-3);
    const double d = (f(x + h) - f(x - h)) / (2 * h);
    return std::isfinite(d) ? d : 0.0;
  }
  void grow(V v) {
    if (nodes_.size() <= std::size_t(v.id)) nodes_.resize(std::size_t(v.id) + 1);
  }
  std::vector<Node> nodes_;
  std::vector<int> outputs_;
};

// The compute type's error for a transcendental function: f32's for the
// half types.
double compute_tol(DType dtype) { return math_tol(dtype == DType::f64 ? DType::f64 : DType::f32); }

struct InputSpec {
  Dims dims;
  ViewKind layout = ViewKind::contiguous;
  double low = 0.25, high = 1.25;
};

// x0 [7, 143] strided, x1 a row [143] (stride 0 across rows), x2 a scalar.
const Dims kOut{7, 143};
const std::vector<InputSpec> kPairInputs{{{7, 143}, ViewKind::strided}, {{143}}, {{}}};
// Every other program: dense x0 [1001] with x1 and x2 broadcast scalars, the
// layout of the vector paths.
const Dims kDenseOut{1001};
const std::vector<InputSpec> kDensePairInputs{{{1001}}, {{1}}, {{}}};

class Fused : public MathConformance {
 protected:
  // Runs the chain on inputs of `specs` into outputs of `out_dims` and
  // `out_layout`, and checks every output against the f64 chain.
  void check(Chain& chain, DType dtype, const std::vector<InputSpec>& specs, int outputs, const Dims& out_dims,
             ViewKind out_layout, const std::string& what) {
    std::vector<Arg> in;
    for (const auto& s : specs) in.push_back(input(dtype, s.layout, s.dims, s.low, s.high));
    std::vector<Arg> out;
    for (int j = 0; j < outputs; ++j) out.push_back(poisoned(dtype, out_layout, out_dims));
    std::vector<Tensor> xs, ys;
    for (auto& a : in) xs.push_back(a.view);
    for (auto& a : out) ys.push_back(a.view);
    xylem::fused(backend, chain.program, xs, ys);
    expect_chain(chain, dtype, in, specs, out, out_dims, what);
  }

  void expect_chain(const Chain& chain, DType dtype, const std::vector<Arg>& in, const std::vector<InputSpec>& specs,
                    const std::vector<Arg>& out, const Dims& out_dims, const std::string& what) {
    const auto n = static_cast<std::size_t>(numel(out_dims));
    for (std::size_t j = 0; j < out.size(); ++j) {
      std::vector<double> e(n), allowed(n);
      std::vector<double> values(in.size());
      for (std::size_t k = 0; k < n; ++k) {
        for (std::size_t i = 0; i < in.size(); ++i) values[i] = in[i].at(broadcast_index(out_dims, specs[i].dims, k));
        const auto [v, scale] = chain.eval(int(j), values);
        e[k] = round_to(dtype, v);
        allowed[k] = math_tol(dtype) * std::abs(e[k]) + 8 * compute_tol(dtype) * scale + tiny(dtype);
      }
      expect_result(out[j], e, [&](std::size_t k) { return allowed[k]; }, what + ", output " + std::to_string(j));
    }
  }

  bool fused_runs(DType dtype) {
    return runs(OpId::math_fused, dtype, [&] {
      Chain c;
      c.output(0, c.unary(XY_UN_NEG, c.input(0)));
      auto x = input(dtype, ViewKind::contiguous, {4});
      (void)x;
      Tensor y(Layout{4}, dtype);
      xylem::fused(backend, c.program, {x.view}, {y});
    });
  }

  // Every code pair on the host. Elsewhere (a compile per program and
  // dtype) each code in each position in f32, a third of those pairs in
  // the other dtypes.
  std::vector<std::pair<int, int>> pairs(int n1, int n2, DType dtype) const {
    std::vector<std::pair<int, int>> out;
    if (target.framework == "native") {
      for (int a = 0; a < n1; ++a)
        for (int b = 0; b < n2; ++b) out.push_back({a, b});
      return out;
    }
    for (int k = 0; k < std::max(n1, n2); ++k)
      if (dtype == DType::f32 || k % 3 == 0) out.push_back({k % n1, (k * 7 + 3) % n2});
    return out;
  }

  enum class PairKind { unary_unary, binary_unary, unary_binary, binary_binary };

  // The pairs of one kind, three to a program (one output each).
  void run_pairs(PairKind kind, DType dtype) {
    const bool first_binary = kind == PairKind::binary_unary || kind == PairKind::binary_binary;
    const bool second_binary = kind == PairKind::unary_binary || kind == PairKind::binary_binary;
    const int n1 = first_binary ? int{XY_BIN_COUNT} : int{XY_UN_COUNT};
    const int n2 = second_binary ? int{XY_BIN_COUNT} : int{XY_UN_COUNT};
    const auto list = pairs(n1, n2, dtype);
    const std::size_t inputs = kind == PairKind::unary_unary ? 1 : kind == PairKind::binary_binary ? 3 : 2;
    for (std::size_t k = 0; k < list.size(); k += 3) {
      const bool dense = k % 2 == 1;
      const auto& all = dense ? kDensePairInputs : kPairInputs;
      const std::vector<InputSpec> specs(all.begin(), all.begin() + std::ptrdiff_t(inputs));
      Chain c;
      const auto x0 = c.input(0);
      std::string what = "pairs";
      const int outputs = int(std::min<std::size_t>(3, list.size() - k));
      for (int j = 0; j < outputs; ++j) {
        const auto [a, b] = list[k + std::size_t(j)];
        what += " (" + std::to_string(a) + ", " + std::to_string(b) + ")";
        // The row on the right of a first binary op, the scalar on the left of a second one.
        const auto first = first_binary ? c.binary(a, x0, c.input(1)) : c.unary(a, x0);
        if (kind == PairKind::binary_binary)
          c.output(j, c.binary(b, c.input(2), first));
        else if (kind == PairKind::unary_binary)
          c.output(j, c.binary(b, first, c.input(1)));
        else
          c.output(j, c.unary(b, first));
      }
      check(c, dtype, specs, outputs, dense ? kDenseOut : kOut, k % 4 == 3 ? ViewKind::strided : ViewKind::contiguous,
            what);
    }
  }
};

TEST_P(Fused, UnaryUnary) {
  for_each_float_dtype([&](DType dtype) {
    if (fused_runs(dtype)) run_pairs(PairKind::unary_unary, dtype);
  });
}

TEST_P(Fused, BinaryUnary) {
  for_each_float_dtype([&](DType dtype) {
    if (fused_runs(dtype)) run_pairs(PairKind::binary_unary, dtype);
  });
}

TEST_P(Fused, UnaryBinary) {
  for_each_float_dtype([&](DType dtype) {
    if (fused_runs(dtype)) run_pairs(PairKind::unary_binary, dtype);
  });
}

TEST_P(Fused, BinaryBinary) {
  for_each_float_dtype([&](DType dtype) {
    if (fused_runs(dtype)) run_pairs(PairKind::binary_binary, dtype);
  });
}

// Several outputs, shared values, every input slot, views of each kind,
// sizes that leave tails, and empty tensors.
TEST_P(Fused, ShapesAndOutputs) {
  for_each_float_dtype([&](DType dtype) {
    if (!fused_runs(dtype)) return;
    Chain c;
    const auto x0 = c.input(0), x1 = c.input(1), x2 = c.input(2), x3 = c.input(3), x4 = c.input(4);
    const auto t = c.binary(XY_BIN_ADD, c.binary(XY_BIN_MUL, x0, x1), x2);
    c.output(0, c.unary(XY_UN_RELU, t));
    c.output(1, c.binary(XY_BIN_MAXIMUM, c.unary(XY_UN_TANH, t), x3));
    c.output(2, c.binary(XY_BIN_DIV, x4, c.unary(XY_UN_EXP, x0)));
    struct Case {
      Dims out;
      std::vector<InputSpec> in;
      ViewKind out_layout;
    };
    using L = ViewKind;
    const std::vector<Case> cases{
        {{100003}, {{{100003}}, {{100003}, L::strided}, {{1}}, {{}}, {{100003}, L::shifted}}, L::contiguous},
        {{1000}, {{{1000}}, {{1000}}, {{1000}}, {{1000}}, {{1000}}}, L::strided},
        {{37, 29}, {{{37, 29}, L::transposed}, {{29}}, {{37, 1}, L::padded}, {{37, 29}, L::strided}, {{}}}, L::transposed},
        {{3, 1, 7}, {{{3, 1, 7}}, {{7}}, {{3, 1, 1}}, {{1, 7}}, {{3, 1, 7}, L::strided}}, L::strided},
        // Biases over channels and rows, innermost dims of whole 16-byte
        // vectors (CUDA's broadcast vector kernel), a partial last tile.
        {{3, 40, 72}, {{{3, 40, 72}}, {{40, 1}}, {{72}}, {{3, 40, 72}}, {{1, 40, 72}}}, L::contiguous},
        {{130, 64}, {{{130, 64}}, {{64}}, {{130, 1}}, {{130, 64}}, {{1, 64}}}, L::contiguous},
        {{}, {{{}}, {{}}, {{}}, {{}}, {{}}}, L::contiguous},
        {{0}, {{{0}}, {{1}}, {{0}}, {{}}, {{0}}}, L::contiguous},
        {{4, 0}, {{{4, 1}}, {{0}}, {{}}, {{4, 0}}, {{1, 0}}}, L::contiguous},
    };
    for (const auto& k : cases) {
      SCOPED_TRACE(dims_string(k.out) + " " + name(k.out_layout));
      check(c, dtype, k.in, 3, k.out, k.out_layout, "three outputs");
    }
  });
}

// Outputs that are inputs (the same elements): every input is read before
// an output is written.
TEST_P(Fused, InPlace) {
  for_each_float_dtype([&](DType dtype) {
    if (!fused_runs(dtype)) return;
    for (ViewKind layout : {ViewKind::contiguous, ViewKind::strided}) {
      SCOPED_TRACE(name(layout));
      Chain c;
      const auto x0 = c.input(0), x1 = c.input(1);
      c.output(0, c.binary(XY_BIN_SUB, c.unary(XY_UN_SIGMOID, x1), x0));
      c.output(1, c.binary(XY_BIN_MUL, x0, x1));
      const std::vector<InputSpec> specs{{{5003}, layout}, {{5003}, layout}};
      std::vector<Arg> in{input(dtype, layout, {5003}, 0.25, 1.25), input(dtype, layout, {5003}, 0.25, 1.25)};
      // y0 is x1 and y1 is x0: each output overwrites the other's input.
      const std::vector<Arg> before = in;
      std::vector<Tensor> ys{in[1].view, in[0].view};
      const std::vector<Tensor> xs{in[0].view, in[1].view};
      xylem::fused(backend, c.program, xs, ys);
      std::vector<Arg> out{in[1], in[0]};
      // The host values of the inputs, from before the call.
      expect_chain(c, dtype, before, specs, out, {5003}, "in place");
    }
  });
}

// y = relu(x*a + b)*c, fused and as four ops: the same values within the
// tolerance of the unfused chain's roundings.
TEST_P(Fused, MatchesUnfusedChain) {
  for_each_float_dtype([&](DType dtype) {
    if (!fused_runs(dtype)) return;
    Chain c;
    const auto t = c.binary(XY_BIN_ADD, c.binary(XY_BIN_MUL, c.input(0), c.input(1)), c.input(2));
    c.output(0, c.binary(XY_BIN_MUL, c.unary(XY_UN_RELU, t), c.input(3)));
    auto x = input(dtype, ViewKind::contiguous, {64, 33}, -2, 2);
    auto a = input(dtype, ViewKind::contiguous, {33}, -2, 2);
    auto b = input(dtype, ViewKind::contiguous, {}, -1, 1);
    auto s = input(dtype, ViewKind::contiguous, {64, 1}, -2, 2);
    Tensor fused_y(Layout{64, 33}, dtype);
    xylem::fused(backend, c.program, {x.view, a.view, b.view, s.view}, {fused_y});
    // The four ops run one by one: automatic fusion off for them.
    xylem::set_fusion(false);
    const Tensor unfused = xylem::mul(backend, xylem::nn::relu(backend, xylem::add(backend, xylem::mul(backend, x.view, a.view), b.view)),
                                      s.view);
    const auto want = unfused.to_doubles();
    xylem::set_fusion(true);
    const auto got = fused_y.to_doubles();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      // Three roundings of intermediates to dtype in the unfused chain, of
      // values up to |x*a| + |b| <= 5, scaled by |s| <= 2.
      const double allowed = 4 * arith_tol(dtype) * 10 + tiny(dtype);
      EXPECT_NEAR(got[k], want[k], allowed) << "element " << k;
    }
  });
}

// A program a framework is handed directly: more values than registers,
// instructions and parameter pairs than fit, are refused by FusedProgram.
TEST_P(Fused, ProgramLimits) {
  {
    FusedProgram p;
    auto v = p.input(0);
    for (int k = 0; k < 14; ++k) v = p.unary(XY_UN_NEG, v);
    p.output(0, v);
    EXPECT_TRUE(p.fits());  // a load, 14 ops and a store: 16 instructions
    p.output(1, p.unary(XY_UN_NEG, v));
    EXPECT_FALSE(p.fits());
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)p.words());
  }
  {
    FusedProgram p;
    auto v = p.input(0);
    for (int k = 1; k <= 5; ++k) v = p.unary(XY_UN_CLAMP, v, -k, k);
    p.output(0, v);
    EXPECT_FALSE(p.fits());  // five parameter pairs
  }
  {
    // Ten values live at once: x and nine values the final sum needs.
    FusedProgram p;
    const auto x = p.input(0);
    std::vector<FusedProgram::Value> v;
    for (int k = 0; k < 9; ++k) v.push_back(p.unary(k % 2 ? XY_UN_NEG : XY_UN_ABS, x));
    auto sum = v[0];
    for (std::size_t k = 1; k < v.size(); ++k) sum = p.binary(XY_BIN_ADD, sum, v[k]);
    p.output(0, sum);
    EXPECT_FALSE(p.fits());
  }
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, FusedProgram().input(5));
  XY_EXPECT_ERROR(ErrorCode::invalid_argument, (void)FusedProgram().words());  // no output
  {
    FusedProgram p;
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, p.unary(XY_UN_COUNT, p.input(0)));
    XY_EXPECT_ERROR(ErrorCode::invalid_argument, p.binary(XY_BIN_COUNT, p.input(0), p.input(0)));
  }
}

TEST_P(Fused, Rejected) {
  const DType dtype = DType::f32;
  if (!fused_runs(dtype)) return;
  auto a = input(dtype, ViewKind::contiguous, {3, 4});
  auto row = input(dtype, ViewKind::contiguous, {4});
  auto wide = input(dtype, ViewKind::contiguous, {5});
  auto d = input(DType::f64, ViewKind::contiguous, {3, 4});
  auto y = poisoned(dtype, ViewKind::contiguous, {3, 4});
  auto y2 = poisoned(dtype, ViewKind::contiguous, {3, 5});
  const std::vector<Tensor> all{a.base, row.base, wide.base, d.base, y.base, y2.base};
  Chain c;
  c.output(0, c.binary(XY_BIN_ADD, c.input(0), c.input(1)));
  const std::string op = "math::fused";
  expect_rejected(ErrorCode::invalid_argument, op, {}, all,
                  [&] { xylem::fused(backend, c.program, {a.view}, {y.view}); });  // input 1 missing
  expect_rejected(ErrorCode::invalid_argument, op, {}, all,
                  [&] { xylem::fused(backend, c.program, {a.view, row.view}, {y.view, y2.view}); });  // y1 never set
  expect_rejected(ErrorCode::shape_mismatch, op, {"[5]", "[3, 4]"}, all,
                  [&] { xylem::fused(backend, c.program, {a.view, wide.view}, {y.view}); });
  expect_rejected(ErrorCode::shape_mismatch, op, {"[3, 4]"}, all,
                  [&] { xylem::fused(backend, c.program, {a.view, row.view}, {y2.view}); });
  expect_rejected(ErrorCode::dtype_mismatch, op, {}, all,
                  [&] { xylem::fused(backend, c.program, {a.view, d.view}, {y.view}); });
  expect_rejected(ErrorCode::dtype_mismatch, op, {}, all,
                  [&] { xylem::fused(backend, c.program, {d.view, d.view}, {y.view}); });
  expect_rejected(ErrorCode::invalid_argument, op, {}, all,
                  [&] { xylem::fused(backend, c.program, {a.view, row.view}, {Tensor()}); });
}

INSTANTIATE_TEST_SUITE_P(Frameworks, Fused, ::testing::ValuesIn(available_targets()), target_label);

}  // namespace
}  // namespace conformance
