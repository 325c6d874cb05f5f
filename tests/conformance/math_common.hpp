#pragma once
// Shared by the math and blas-2/3 conformance tests: tolerances by kind of
// op, NumPy broadcasting on the host, outputs of any dtype poisoned on the
// backend, host tensors of any dtype, and checks that a rejected call names
// the op and the shapes and changes nothing.
#include <string>
#include <vector>

#include "conformance/conformance.hpp"

namespace conformance {

// Relative error allowed for an op computed in dtype's compute type and
// stored in dtype: correctly rounded arithmetic (+ - * /, sqrt; an ulp of
// the half types, 4 eps of f32 and f64), or a transcendental function.
double arith_tol(DType dtype);
double math_tol(DType dtype);
// Absolute floor: f16's subnormal step, else the compute type's smallest
// normal (so flushing subnormal results to zero is tolerated).
double tiny(DType dtype);
// The largest finite value and the smallest normal of a float dtype.
double largest(DType dtype);
double smallest_normal(DType dtype);

// NumPy broadcasting: the result's dims, and the logical index into an
// operand of dims `in` of the result's logical element k.
Dims broadcast_dims(const Dims& a, const Dims& b);
std::size_t broadcast_index(const Dims& out, const Dims& in, std::size_t k);
std::string dims_string(const Dims& dims);
std::int64_t numel(const Dims& dims);
// The coordinates of row-major element k of dims, and back.
Dims coords_of(const Dims& dims, std::int64_t k);
std::int64_t flat_of(const Dims& dims, const Dims& coords);

// Storage bytes of any dtype holding `values` (already exact in it).
std::vector<unsigned char> encode_any(DType dtype, const std::vector<double>& values);

class MathConformance : public Conformance {
 protected:
  // An output of any dtype, filled with `poison` on the backend under test
  // (integer and boolean outputs need a poison other than NaN).
  Arg poisoned(DType dtype, ViewKind layout, const Dims& dims, double poison = kNaN);
  // A host input of any dtype holding `logical` (rounded to a float dtype;
  // integer values must be exact).
  Arg host_input(DType dtype, ViewKind layout, const Dims& dims, const std::vector<double>& logical);
  // Random booleans (a `where` condition).
  Arg random_bools(ViewKind layout, const Dims& dims);
  // runs() for where in dtype.
  bool runs_where(DType dtype);
  // fn must raise `code` with a message naming `op` and every string of
  // `shapes`; every tensor of `untouched` must be left as it was.
  void expect_rejected(xylem::ErrorCode code, const std::string& op, const std::vector<std::string>& shapes,
                       const std::vector<Tensor>& untouched, const std::function<void()>& fn);
};

}  // namespace conformance
