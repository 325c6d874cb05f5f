// Making tensors: zeros, ones, full, arange, random numbers (Generator),
// fill, cast and contiguous copies.
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <random>

#include "bindings.hpp"

namespace xylem::python {
namespace {

// The generator random functions draw from when given none; xylem.seed()
// restarts it.
std::mutex generator_mutex;
std::shared_ptr<Generator> default_generator;  // guarded by generator_mutex

Layout dims(const std::vector<std::int64_t>& shape) { return Layout(shape); }

}  // namespace

std::shared_ptr<Generator> generator_or_default(Generator* given) {
  if (given) return {std::shared_ptr<Generator>{}, given};
  std::lock_guard lock(generator_mutex);
  if (!default_generator) default_generator = std::make_shared<Generator>(std::random_device{}());
  return default_generator;
}

void bind_creation(nb::module_& m) {
  nb::class_<Generator>(m, "Generator",
                        "A seeded counter-based (Philox) generator: the same seed gives the same numbers on every "
                        "framework. Thread-safe.")
      .def(nb::init<std::uint64_t>(), "seed"_a, "The stream of numbers `seed` names, from its start.")
      .def_prop_ro("seed", &Generator::seed, "The seed it was made with.");
  m.def(
      "seed",
      [](std::uint64_t seed) {
        std::lock_guard lock(generator_mutex);
        default_generator = std::make_shared<Generator>(seed);
      },
      "seed"_a, "Restarts the default generator (the one random functions use when given none) at `seed`.");

  m.def(
      "zeros", [](const std::vector<std::int64_t>& shape, DType dtype, std::optional<Backend> b) {
        return zeros(resolve(b), dims(shape), dtype);
      },
      "shape"_a, "dtype"_a = DType::f32, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "A new tensor of `shape` filled with 0.");
  m.def(
      "ones", [](const std::vector<std::int64_t>& shape, DType dtype, std::optional<Backend> b) {
        return ones(resolve(b), dims(shape), dtype);
      },
      "shape"_a, "dtype"_a = DType::f32, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "A new tensor of `shape` filled with 1.");
  m.def(
      "full", [](const std::vector<std::int64_t>& shape, double value, DType dtype, std::optional<Backend> b) {
        return full(resolve(b), dims(shape), dtype, value);
      },
      "shape"_a, "value"_a, "dtype"_a = DType::f32, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "A new tensor of `shape` filled with `value` (converted to dtype).");
  m.def(
      "arange", [](std::int64_t n, DType dtype, double start, double step, std::optional<Backend> b) {
        return arange(resolve(b), n, dtype, start, step);
      },
      "n"_a, "dtype"_a = DType::f32, "start"_a = 0.0, "step"_a = 1.0, nb::kw_only(), "backend"_a = nb::none(),
      release_gil(), "start, start+step, ... (n elements): shape (n,).");
  m.def(
      "uniform",
      [](const std::vector<std::int64_t>& shape, DType dtype, double low, double high, Generator* gen,
         std::optional<Backend> b) {
        return uniform(resolve(b), dims(shape), dtype, *generator_or_default(gen), low, high);
      },
      "shape"_a, "dtype"_a = DType::f32, "low"_a = 0.0, "high"_a = 1.0, nb::kw_only(), "generator"_a = nb::none(),
      "backend"_a = nb::none(), release_gil(),
      "Uniform random numbers in [low, high) from `generator` (default: xylem's, see seed()); float dtypes.");
  m.def(
      "normal",
      [](const std::vector<std::int64_t>& shape, DType dtype, double mean, double stddev, Generator* gen,
         std::optional<Backend> b) {
        return normal(resolve(b), dims(shape), dtype, *generator_or_default(gen), mean, stddev);
      },
      "shape"_a, "dtype"_a = DType::f32, "mean"_a = 0.0, "stddev"_a = 1.0, nb::kw_only(), "generator"_a = nb::none(),
      "backend"_a = nb::none(), release_gil(), "Normally distributed random numbers from `generator`; float dtypes.");
  m.def(
      "fill", [](Tensor& y, double value, std::optional<Backend> b) { fill(resolve(b), y, value); }, "y"_a,
      "value"_a, nb::kw_only(), "backend"_a = nb::none(), release_gil(),
      "Writes `value` into every element of y (a tensor or a view).");
  m.def(
      "fill_uniform",
      [](Tensor& y, double low, double high, Generator* gen, std::optional<Backend> b) {
        fill_uniform(resolve(b), y, *generator_or_default(gen), low, high);
      },
      "y"_a, "low"_a = 0.0, "high"_a = 1.0, nb::kw_only(), "generator"_a = nb::none(), "backend"_a = nb::none(),
      release_gil(), "Writes uniform random numbers in [low, high) into y.");
  m.def(
      "fill_normal",
      [](Tensor& y, double mean, double stddev, Generator* gen, std::optional<Backend> b) {
        fill_normal(resolve(b), y, *generator_or_default(gen), mean, stddev);
      },
      "y"_a, "mean"_a = 0.0, "stddev"_a = 1.0, nb::kw_only(), "generator"_a = nb::none(), "backend"_a = nb::none(),
      release_gil(), "Writes normally distributed random numbers into y.");
  m.def(
      "contiguous", [](const Tensor& x, std::optional<Backend> b) { return contiguous(resolve(b), x); }, "x"_a,
      nb::kw_only(), "backend"_a = nb::none(), release_gil(), "A contiguous copy of a tensor (or view).");
  m.def(
      "cast",
      [](const Tensor& x, DType to, std::optional<Tensor> out, std::optional<Backend> b) {
        if (!out) return cast(resolve(b), x, to);
        if (out->dtype() != to) {
          throw Error(ErrorCode::dtype_mismatch, "cast: out is " + std::string(name(out->dtype())) + ", not " +
                                                     std::string(name(to)));
        }
        cast(resolve(b), x, *out);
        return *out;
      },
      "x"_a, "dtype"_a, nb::kw_only(), "out"_a = nb::none(), "backend"_a = nb::none(), release_gil(),
      "x converted to `dtype` (any of the eight to any): float to integer truncates toward zero and saturates "
      "(NaN -> 0), to bool is x != 0, narrowing floats round to nearest even. With `out` (x's shape, of dtype), "
      "written there.");
}

}  // namespace xylem::python
