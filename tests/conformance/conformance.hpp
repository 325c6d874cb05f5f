#pragma once
// The conformance suite: every op of plugin/ops.hpp on every framework
// present, in f32 and f64, against float64 references computed here on fresh
// random inputs. Outputs are poisoned (NaN) first, so unwritten elements
// show, and elements outside an output view must keep their poison. An op a
// framework does not support must raise `unsupported` (said on stdout).
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/support.hpp"

namespace conformance {

using xylem::Backend;
using xylem::DType;
using xylem::Layout;
using xylem::Tensor;
using OpId = xylem::Op;
using Dims = std::vector<std::int64_t>;

// One framework hardware to test, or one framework that is absent.
struct Target {
  std::string framework;
  int index = 0;
  bool available = false;
  std::string reason;
  [[nodiscard]] std::string spec() const { return framework + ":" + std::to_string(index); }
};
std::vector<Target> available_targets();
std::vector<Target> unavailable_targets();
std::string target_label(const ::testing::TestParamInfo<Target>& info);
void PrintTo(const Target& t, std::ostream* os);

// Relative tolerances by dtype: elementwise math (a few ulp of f32, with room
// for SIMD/GPU approximations), and reductions (relative to the sum of the
// magnitudes of the terms).
template <class T>
struct Tol;
template <>
struct Tol<float> {
  static constexpr double elem = 1e-5;
  static constexpr double reduce = 1e-4;
  static constexpr double eps = std::numeric_limits<float>::epsilon();
};
template <>
struct Tol<double> {
  static constexpr double elem = 1e-13;
  static constexpr double reduce = 1e-12;
  static constexpr double eps = std::numeric_limits<double>::epsilon();
};

// The same tolerances for any float dtype, chosen at run time. f16 and bf16
// compute in f32 and round to storage: elem is about an ulp of the storage
// format; eps is the compute type's epsilon (f32's for the half types).
struct DTol {
  double elem;
  double reduce;
  double eps;
};
DTol tol(DType dtype);

// Float dtypes on the host: the nearest value of `dtype` (nearest even;
// overflow -> Inf), and storage bytes holding values that are exact in it.
double round_to(DType dtype, double value);
std::vector<unsigned char> encode(DType dtype, const std::vector<double>& exact_values);

// How an argument's elements lie in its storage.
enum class ViewKind {
  contiguous,
  strided,     // every other element of the last axis, from element 1
  transposed,  // rank 2: the transpose of a contiguous matrix
  padded,      // rank 2: columns 1..n of a wider contiguous matrix (row stride > columns)
  shifted,     // contiguous from element 1 of a longer buffer: not 16-byte aligned
};
const char* name(ViewKind layout);

// Storage offsets of a view's elements, in row-major logical order.
std::vector<std::int64_t> positions(const Layout& view);

// An argument: its storage tensor, the view passed to the op, and what the
// host knows of both (values as double; NaN for poison).
struct Arg {
  Tensor base;
  Tensor view;
  std::vector<double> base_values;  // storage, as double
  std::vector<std::int64_t> pos;    // storage offset of logical element k
  [[nodiscard]] double at(std::size_t k) const { return base_values[static_cast<std::size_t>(pos[k])]; }
  [[nodiscard]] std::vector<double> values() const;  // logical order
};

// The base of each op family's fixture; each family instantiates its own
// over available_targets() (test names: Frameworks/<Family>.<op>/<framework>_<index>).
class Conformance : public ::testing::TestWithParam<Target> {
 protected:
  Conformance();

  // An input on the host (native) with random values in [low, high],
  // rounded to T. `logical`, when given, sets the view's elements.
  template <class T>
  Arg input(ViewKind layout, const Dims& dims, double low = -1, double high = 1,
            const std::vector<double>* logical = nullptr);
  // An output poisoned with NaN on the backend under test (fill runs there).
  template <class T>
  Arg output(ViewKind layout, const Dims& dims);
  // The same for any float dtype (f16 and bf16 included): values are rounded
  // to dtype on the host, and base_values hold exactly what is stored. The
  // poison comes from the host.
  Arg input(DType dtype, ViewKind layout, const Dims& dims, double low = -1, double high = 1,
            const std::vector<double>* logical = nullptr);
  Arg output(DType dtype, ViewKind layout, const Dims& dims);

  // Checks every element of arg's storage after an op: logical element k
  // within allowed(k) of expect[k]; elements outside the view as they were
  // (NaN poison included), bit for bit.
  template <class T>
  void expect_result(const Arg& arg, const std::vector<double>& expect,
                     const std::function<double(std::size_t)>& allowed, const std::string& what);
  // The same for any dtype (reads back through Tensor::to_doubles).
  void expect_result(const Arg& arg, const std::vector<double>& expect,
                     const std::function<double(std::size_t)>& allowed, const std::string& what);

  // True when the backend runs op in dtype. Otherwise checks that `call`
  // raises `unsupported`, says so on stdout and returns false.
  bool runs(OpId op, DType dtype, const std::function<void()>& call);

  Target target = GetParam();
  Backend backend;
  std::uint64_t seed = xylem_test::fresh_seed();
  std::mt19937_64 rng{seed};
  ::testing::ScopedTrace trace{__FILE__, __LINE__, target.spec() + ", " + xylem_test::seed_message(seed)};
};

// Calls f(float{}) and f(double{}): a test body for each dtype.
template <class F>
void for_each_dtype(F&& f) {
  {
    SCOPED_TRACE("f32");
    f(float{});
  }
  {
    SCOPED_TRACE("f64");
    f(double{});
  }
}

// Calls f(dtype) for f16, bf16, f32 and f64, each under its own trace.
template <class F>
void for_each_float_dtype(F&& f) {
  for (DType dtype : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(xylem::name(dtype)));
    f(dtype);
  }
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Odd sizes, to catch tails of vector loops and work splits.
inline constexpr std::int64_t kSizes[] = {1, 7, 1000, 100003};

}  // namespace conformance

#include "conformance/conformance_impl.hpp"
