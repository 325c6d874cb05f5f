// creation: fill, arange, uniform, normal (kernels/creation.cl).
#include <CL/cl_half.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "xylem/plugin/convert.hpp"
#include "xylem/plugin/math.h"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kCreationProgram{"creation", {&sources::creation}, Helpers::none, Passes::reals};

using plugin::OpId;
using plugin::saturate;
using plugin::TensorArg;

std::uint16_t bf16_bits(float value) noexcept {
  return static_cast<std::uint16_t>(xy_f32_bits_to_bf16(std::bit_cast<std::uint32_t>(value)));
}

// The stored bits of `value` in dtype, widened to 64 bits.
std::uint64_t pattern(DType dtype, double value) {
  switch (dtype) {
    case DType::f16:
      return cl_half_from_float(static_cast<float>(value), CL_HALF_RTE);
    case DType::bf16:
      return bf16_bits(static_cast<float>(value));
    case DType::f32:
      return std::bit_cast<std::uint32_t>(static_cast<float>(value));
    case DType::f64:
      return std::bit_cast<std::uint64_t>(value);
    case DType::i32:
      return static_cast<std::uint32_t>(saturate<std::int32_t>(value));
    case DType::i64:
      return static_cast<std::uint64_t>(saturate<std::int64_t>(value));
    case DType::u8:
      return saturate<std::uint8_t>(value);
    case DType::boolean:
      return value != 0.0 ? 1 : 0;
    case DType::c64:  // value + 0i: the real part in the low word (little-endian hosts and devices)
      return std::bit_cast<std::uint32_t>(static_cast<float>(value));
    case DType::c128:  // the real part; fill() adds the zero imaginary word
      return std::bit_cast<std::uint64_t>(value);
  }
  return 0;
}

// Runs <op>_c<suffix> (contiguous) or <op>_s<suffix> (strided) over y,
// with `extra` arguments after the view's.
template <class... Extra>
void generate(Launcher& launch, const TensorArg& y, const std::string& op, const std::string& sfx,
              const Extra&... extra) {
  const Collapsed c = collapse({&y.view});
  if (c.numel == 0) return;
  const ProgramPackage& program = launch.program(kCreationProgram, y.dtype);
  const cl_long n = c.numel;
  if (c.contiguous && op == "fill") {
    launch.run_runs(program.kernel(join({op, "_c", sfx})), static_cast<std::size_t>(n), mem_of(y), offset_of(y), n,
                    extra...);
  } else if (op == "fill" && (launch.device().info().type & CL_DEVICE_TYPE_CPU)) {
    // A strided fill in chunks of runs: an item per element divided its
    // place out for each, and pad's border slabs (130K elements of a
    // [8, 64, 130, 130] f32 output) cost half as much as copying the rest.
    launch.run_chunks_in_place(program.kernel(join({op, "_r", sfx})), static_cast<std::size_t>(n), mem_of(y),
                               c.layout, n, extra...);
  } else if (c.contiguous) {
    launch.run(program.kernel(join({op, "_c", sfx})),
               static_cast<std::size_t>(n), mem_of(y), offset_of(y), n, extra...);
  } else {
    launch.run(program.kernel(join({op, "_s", sfx})),
               static_cast<std::size_t>(n), mem_of(y), c.layout, n, extra...);
  }
}

void fill(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::creation_fill>(launch.call());
  const TensorArg& y = args.y;
  const std::uint64_t bits = pattern(y.dtype, args.value);
  switch (size_of(y.dtype)) {
    case 1:
      return generate(launch, y, "fill", "_8", static_cast<cl_uchar>(bits));
    case 2:
      return generate(launch, y, "fill", "_16", static_cast<cl_ushort>(bits));
    case 4:
      return generate(launch, y, "fill", "_32", static_cast<cl_uint>(bits));
    case 8:
      return generate(launch, y, "fill", "_64", static_cast<cl_ulong>(bits));
    default: {
      cl_ulong2 pair{};
      pair.s[0] = bits;
      return generate(launch, y, "fill", "_128", pair);
    }
  }
}

// A double that is a whole number within int64, as an integer.
bool whole(double v, cl_long& out) {
  if (!std::isfinite(v) || v != std::trunc(v) || std::fabs(v) >= 9.2e18) return false;
  out = static_cast<cl_long>(v);
  return true;
}

void arange(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::creation_arange>(launch.call());
  const double start = args.start, step = args.step;
  cl_long istart = 0, istep = 0;
  const cl_int integral = whole(start, istart) && whole(step, istep) ? 1 : 0;
  const std::string sfx = suffix(args.y.dtype);
  // xy_wide is double where the device has fp64, float otherwise.
  if (launch.device().info().fp64) {
    generate(launch, args.y, "arange", sfx, start, step, istart, istep, integral);
  } else {
    generate(launch, args.y, "arange", sfx, static_cast<float>(start), static_cast<float>(step), istart, istep,
             integral);
  }
}

// uniform: low + (high - low)*u with the difference taken in T, as native.
void uniform(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::creation_uniform>(launch.call());
  const DType dtype = args.y.dtype;
  const double span = dtype == DType::f32
                           ? static_cast<double>(static_cast<float>(args.high) - static_cast<float>(args.low))
                           : args.high - args.low;
  generate(launch, args.y, "uniform", suffix(dtype), Scalar{dtype, args.low}, Scalar{dtype, span},
           static_cast<cl_ulong>(args.seed), static_cast<cl_ulong>(args.offset));
}

void normal(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::creation_normal>(launch.call());
  const DType dtype = args.y.dtype;
  generate(launch, args.y, "normal", suffix(dtype), Scalar{dtype, args.mean}, Scalar{dtype, args.stddev},
           static_cast<cl_ulong>(args.seed), static_cast<cl_ulong>(args.offset));
}

}  // namespace

EventPtr launch_creation(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::creation_fill:
      fill(launch);
      break;
    case OpId::creation_arange:
      arange(launch);
      break;
    case OpId::creation_uniform:
      uniform(launch);
      break;
    case OpId::creation_normal:
      normal(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not a creation op");
  }
  return launch.finish();
}

namespace {

constinit const OpKernel kCreation{launch_creation, {&kCreationProgram}};

}  // namespace

void register_creation(KernelTable& table) {
  // fill moves bit patterns: every dtype, f64 too without fp64 (Device::supports).
  set_dtypes(table, OpId::creation_fill, kEveryDtype, &kCreation);
  set_dtypes(table, OpId::creation_fill, kComplexDtypes, &kCreation);
  for (DType dtype : kEveryDtype)
    if (dtype != DType::boolean) table.set(OpId::creation_arange, dtype, &kCreation);
  set_dtypes(table, OpId::creation_uniform, kRealDtypes, &kCreation);
  set_dtypes(table, OpId::creation_normal, kRealDtypes, &kCreation);
}

}  // namespace xylem::opencl
