// Elementwise fusion's public side: FusedProgram (values -> the packed
// instructions of xylem/plugin/fused_program.hpp) and fused(), which checks
// the tensors and launches math::fused.
#include "xylem/fused.hpp"

#include <string>

#include "core/dispatch.hpp"
#include "ops/checks.hpp"
#include "ops/layout.hpp"
#include "xylem/plugin/fused_program.hpp"

namespace xylem {
namespace {

namespace pf = plugin::fused;
constexpr std::string_view kName = "math::fused";

[[noreturn]] void invalid(const std::string& why) {
  throw Error(ErrorCode::invalid_argument, std::string(kName) + ": " + why);
}

}  // namespace

int FusedProgram::add(const Node& node) {
  nodes_.push_back(node);
  return int(nodes_.size()) - 1;
}

FusedProgram::Value FusedProgram::input(int k) {
  if (k < 0 || k >= pf::kMaxInputs) invalid("input " + std::to_string(k) + " is outside [0, 5)");
  for (std::size_t n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].kind == Node::Kind::input && nodes_[n].code == k) return Value{int(n)};
  return Value{add(Node{Node::Kind::input, k})};
}

FusedProgram::Value FusedProgram::unary(int code, Value x, double p0, double p1) {
  if (code < 0 || code >= XY_UN_COUNT) invalid("unknown unary code " + std::to_string(code));
  if (x.id < 0 || x.id >= int(nodes_.size())) invalid("a value of another program");
  return Value{add(Node{Node::Kind::unary, code, x.id, -1, p0, p1})};
}

FusedProgram::Value FusedProgram::binary(int code, Value a, Value b, double p0, double p1) {
  if (code < 0 || code >= XY_BIN_COUNT) invalid("unknown binary code " + std::to_string(code));
  if (a.id < 0 || a.id >= int(nodes_.size()) || b.id < 0 || b.id >= int(nodes_.size()))
    invalid("a value of another program");
  return Value{add(Node{Node::Kind::binary, code, a.id, b.id, p0, p1})};
}

void FusedProgram::output(int j, Value v) {
  if (j < 0 || j >= pf::kMaxOutputs) invalid("output " + std::to_string(j) + " is outside [0, 3)");
  if (v.id < 0 || v.id >= int(nodes_.size())) invalid("a value of another program");
  if (outputs_[std::size_t(j)] >= 0) invalid("output " + std::to_string(j) + " is set twice");
  outputs_[std::size_t(j)] = v.id;
}

// Loads come right before the first op that reads them, the ops in the
// order they were made (only those an output needs), the stores last, so no
// load follows a store. Registers go back to the pool at their value's last
// use, and an op may write the register its operand just freed.
bool FusedProgram::pack(Packed& out, std::string* why) const {
  const auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  const std::size_t n = nodes_.size();
  std::vector<char> needed(n, 0);
  for (int o : outputs_)
    if (o >= 0) needed[std::size_t(o)] = 1;
  for (std::size_t k = n; k-- > 0;) {
    if (!needed[k]) continue;
    if (nodes_[k].a >= 0) needed[std::size_t(nodes_[k].a)] = 1;
    if (nodes_[k].b >= 0) needed[std::size_t(nodes_[k].b)] = 1;
  }
  // The instruction order, as node ids (stores: -1 - output index).
  std::vector<int> order;
  std::vector<char> loaded(n, 0);
  const auto load = [&](int node) {
    if (nodes_[std::size_t(node)].kind == Node::Kind::input && !loaded[std::size_t(node)]) {
      loaded[std::size_t(node)] = 1;
      order.push_back(node);
    }
  };
  for (std::size_t k = 0; k < n; ++k) {
    if (!needed[k] || nodes_[k].kind == Node::Kind::input) continue;
    load(nodes_[k].a);
    if (nodes_[k].b >= 0) load(nodes_[k].b);
    order.push_back(int(k));
  }
  bool any = false;
  for (int j = 0; j < pf::kMaxOutputs; ++j) {
    if (outputs_[std::size_t(j)] < 0) continue;
    load(outputs_[std::size_t(j)]);
    any = true;
  }
  if (!any) return fail("the program sets no output");
  for (int j = 0; j < pf::kMaxOutputs; ++j)
    if (outputs_[std::size_t(j)] >= 0) order.push_back(-1 - j);
  if (order.size() > std::size_t(pf::kMaxInstructions))
    return fail("the program needs " + std::to_string(order.size()) + " instructions (loads and stores counted); at most " +
                std::to_string(pf::kMaxInstructions) + " fit");

  std::vector<int> last_use(n, -1);
  for (std::size_t p = 0; p < order.size(); ++p) {
    const int v = order[p];
    if (v < 0) {
      last_use[std::size_t(outputs_[std::size_t(-1 - v)])] = int(p);
    } else if (nodes_[std::size_t(v)].kind != Node::Kind::input) {
      last_use[std::size_t(nodes_[std::size_t(v)].a)] = int(p);
      if (nodes_[std::size_t(v)].b >= 0) last_use[std::size_t(nodes_[std::size_t(v)].b)] = int(p);
    }
  }
  std::vector<int> reg(n, -1);
  unsigned busy = 0;
  std::vector<std::pair<double, double>> pairs;
  Packed packed;
  for (std::size_t p = 0; p < order.size(); ++p) {
    const int v = order[p];
    pf::Instruction in;
    if (v < 0) {
      in.kind = pf::Kind::store;
      in.dst = -1 - v;
      in.a = reg[std::size_t(outputs_[std::size_t(in.dst)])];
    } else {
      const Node& node = nodes_[std::size_t(v)];
      if (node.kind == Node::Kind::input) {
        in.kind = pf::Kind::load;
        in.a = node.code;
      } else {
        in.kind = node.kind == Node::Kind::unary ? pf::Kind::unary : pf::Kind::binary;
        in.code = node.code;
        in.a = reg[std::size_t(node.a)];
        if (node.b >= 0) in.b = reg[std::size_t(node.b)];
        const std::pair<double, double> pair{node.p0, node.p1};
        std::size_t q = 0;
        while (q < pairs.size() && pairs[q] != pair) ++q;
        if (q == pairs.size()) {
          if (pairs.size() == std::size_t(pf::kParamPairs))
            return fail("the program has more than " + std::to_string(pf::kParamPairs) + " parameter pairs");
          pairs.push_back(pair);
        }
        in.params = int(q);
        for (int operand : {node.a, node.b})
          if (operand >= 0 && last_use[std::size_t(operand)] == int(p)) busy &= ~(1u << reg[std::size_t(operand)]);
      }
      int r = 0;
      while (r < pf::kRegisters && (busy >> r & 1u)) ++r;
      if (r == pf::kRegisters)
        return fail("the program holds more than " + std::to_string(pf::kRegisters) + " values at once");
      busy |= 1u << r;
      reg[std::size_t(v)] = r;
      in.dst = r;
    }
    pf::put_word(packed.words, int(p), pf::encode(in));
  }
  for (std::size_t q = 0; q < pairs.size(); ++q) {
    packed.reals[2 * q] = pairs[q].first;
    packed.reals[2 * q + 1] = pairs[q].second;
  }
  out = packed;
  return true;
}

bool FusedProgram::fits() const {
  Packed p;
  return pack(p, nullptr);
}

std::array<std::int64_t, 8> FusedProgram::words() const {
  Packed p;
  std::string why;
  if (!pack(p, &why)) invalid(why);
  return p.words;
}

std::array<double, 8> FusedProgram::reals() const {
  Packed p;
  std::string why;
  if (!pack(p, &why)) invalid(why);
  return p.reals;
}

void fused(const Backend& b, const FusedProgram& program, std::span<const Tensor> inputs,
           std::span<Tensor> outputs) {
  if (inputs.empty() || inputs.size() > std::size_t(pf::kMaxInputs))
    invalid("takes 1 to 5 inputs, not " + std::to_string(inputs.size()));
  if (outputs.empty() || outputs.size() > std::size_t(pf::kMaxOutputs))
    invalid("takes 1 to 3 outputs, not " + std::to_string(outputs.size()));
  const std::array<std::int64_t, 8> words = program.words();
  const std::array<double, 8> reals = program.reals();
  const unsigned in_mask = (1u << inputs.size()) - 1, out_mask = (1u << outputs.size()) - 1;
  if (const std::string why = pf::validate(words, in_mask, out_mask); !why.empty())
    invalid(why + " (with " + std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size()) +
            " outputs)");
  const auto in_name = [](std::size_t k) { return "inputs[" + std::to_string(k) + "]"; };
  const auto out_name = [](std::size_t j) { return "outputs[" + std::to_string(j) + "]"; };
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    ops::require_float(kName, in_name(k), inputs[k]);
    ops::require_same_dtype(kName, in_name(0), inputs[0], in_name(k), inputs[k]);
  }
  for (std::size_t j = 0; j < outputs.size(); ++j) {
    ops::require_defined(kName, out_name(j), outputs[j]);
    ops::require_same_dtype(kName, in_name(0), inputs[0], out_name(j), outputs[j]);
    ops::require_same_dims(kName, out_name(0), outputs[0], out_name(j), outputs[j]);
  }
  const Layout dims(outputs[0].layout().dims());
  std::array<Tensor, pf::kMaxInputs> x;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (!ops::broadcast(kName, inputs[k].layout(), dims).same_dims(dims))
      throw Error(ErrorCode::shape_mismatch, std::string(kName) + ": '" + in_name(k) + "' has shape " +
                                                 inputs[k].layout().dims_string() + ", which does not broadcast to " +
                                                 dims.dims_string());
    x[k] = ops::expand(inputs[k], dims);
  }
  const Tensor none;
  Tensor& y0 = outputs[0];
  const Tensor& y1 = outputs.size() > 1 ? outputs[1] : none;
  const Tensor& y2 = outputs.size() > 2 ? outputs[2] : none;
  detail::launch(b,
                 detail::args::math_fused<detail::TensorRef>{
                     .x0 = x[0], .x1 = x[1], .x2 = x[2], .x3 = x[3], .x4 = x[4], .y0 = y0, .y1 = y1, .y2 = y2,
                     .w0 = words[0], .w1 = words[1], .w2 = words[2], .w3 = words[3], .w4 = words[4],
                     .w5 = words[5], .w6 = words[6], .w7 = words[7], .r0 = reals[0], .r1 = reals[1],
                     .r2 = reals[2], .r3 = reals[3], .r4 = reals[4], .r5 = reals[5], .r6 = reals[6],
                     .r7 = reals[7]},
                 kName);
}

void fused(const Backend& b, const FusedProgram& program, std::initializer_list<Tensor> inputs,
           std::initializer_list<Tensor> outputs) {
  std::vector<Tensor> out(outputs);
  fused(b, program, std::span<const Tensor>(inputs.begin(), inputs.size()), std::span<Tensor>(out));
}

}  // namespace xylem
