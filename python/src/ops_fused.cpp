// Elementwise fusion: xylem.FusedProgram (values of a chain of math.h's
// unary and binary codes, by name) and xylem.fused, which runs one.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cctype>
#include <string>
#include <string_view>

#include "bindings.hpp"
#include "xylem/plugin/math.h"

namespace xylem::python {
namespace {

struct CodeName {
  std::string_view name;  // the enumerator, XY_UN_EXP
  int code;
};

#define XYLEM_PY_CODE(code, expression) CodeName{#code, code},
constexpr CodeName kUnary[] = {XY_UNARY_FORMULAS(XYLEM_PY_CODE, , , , , , , , )};
constexpr CodeName kBinary[] = {XY_BINARY_FORMULAS(XYLEM_PY_CODE, , , , , , , , )};
#undef XYLEM_PY_CODE

// "exp" for XY_UN_EXP, "relu_grad" for XY_BIN_RELU_GRAD.
std::string short_name(std::string_view enumerator, std::string_view prefix) {
  std::string out(enumerator.substr(prefix.size()));
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <std::size_t N>
int code_of(const CodeName (&table)[N], std::string_view prefix, const std::string& name) {
  for (const CodeName& c : table)
    if (short_name(c.name, prefix) == name) return c.code;
  throw Error(ErrorCode::invalid_argument, "FusedProgram: no elementwise op named '" + name + "'");
}

template <std::size_t N>
std::vector<std::string> names_of(const CodeName (&table)[N], std::string_view prefix) {
  std::vector<std::string> out;
  for (const CodeName& c : table) out.push_back(short_name(c.name, prefix));
  return out;
}

}  // namespace

void bind_fused(nb::module_& m) {
  using Value = FusedProgram::Value;
  nb::class_<Value>(m, "FusedValue", "A value of a FusedProgram: an input or an op's result.");
  nb::class_<FusedProgram>(m, "FusedProgram",
                           "A chain of elementwise ops run as one kernel by xylem.fused: up to 5 inputs, 3 "
                           "outputs, 16 instructions (a load per input used and a store per output counted), 8 "
                           "values live at once, 4 distinct parameter pairs. Ops by name: FusedProgram.unary_ops "
                           "and FusedProgram.binary_ops list them.")
      .def(nb::init<>())
      .def("input", &FusedProgram::input, "k"_a, "Input k (0..4) of the call.")
      .def(
          "unary",
          [](FusedProgram& p, const std::string& op, Value x, double p0, double p1) {
            return p.unary(code_of(kUnary, "XY_UN_", op), x, p0, p1);
          },
          "op"_a, "x"_a, "p0"_a = 0.0, "p1"_a = 0.0, "op(x) with its parameters (clamp: low, high; leaky_relu: slope).")
      .def(
          "binary",
          [](FusedProgram& p, const std::string& op, Value a, Value b, double p0, double p1) {
            return p.binary(code_of(kBinary, "XY_BIN_", op), a, b, p0, p1);
          },
          "op"_a, "a"_a, "b"_a, "p0"_a = 0.0, "p1"_a = 0.0, "op(a, b) with its parameters.")
      .def("output", &FusedProgram::output, "j"_a, "value"_a, "Output j (0..2) of the call gets `value`.")
      .def("fits", &FusedProgram::fits, "Whether the program fits the limits of one call.")
      .def_prop_ro_static(
          "unary_ops", [](nb::handle) { return names_of(kUnary, "XY_UN_"); }, "The names unary() takes.")
      .def_prop_ro_static(
          "binary_ops", [](nb::handle) { return names_of(kBinary, "XY_BIN_"); }, "The names binary() takes.");
  m.def(
      "fused",
      [](const FusedProgram& program, const std::vector<Tensor>& inputs, std::vector<Tensor> outputs,
         std::optional<Backend> b) {
        fused(resolve(b), program, inputs, outputs);
        return outputs;
      },
      "program"_a, "inputs"_a, "outputs"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "Runs the FusedProgram: outputs[j] (one shape, the inputs' float dtype) gets output j, the inputs "
      "broadcasting to that shape; an output may be an input (in place). Returns the outputs.");
  m.def("set_fusion", &set_fusion, "on"_a,
        "Turns automatic fusion of eager elementwise calls on or off for the process (on unless "
        "XYLEM_FUSE=0); off runs what is pending.");
  m.def("fusion_enabled", &fusion_enabled, "Whether eager elementwise calls are fused automatically.");
}

}  // namespace xylem::python
