// math::fused on OpenCL: the program's kernel (xylem/plugin/fused_source.hpp)
// after an OpenCL prelude, built once per program and dtype through the
// device's program slots and the on-disk cache like every other program.
// Each program gets a ProgramSpec of its own, made on first use and kept
// for the life of the plugin (a process runs few distinct chains).
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"
#include "xylem/plugin/args.hpp"
#include "xylem/plugin/fused_call.hpp"

namespace xylem::opencl {

namespace {

namespace pf = plugin::fused;
using plugin::OpCall;
using plugin::OpId;

// The dialect of fused_source.hpp in OpenCL C: T, ST, SUF and FS come from
// the pass (package.cpp), XY_LD and XY_ST from kernels/storage.cl, the
// formulas from math.h. Each work-item takes a chunk of elements
// (XY_CHUNK_BOUNDS, Launcher::run_chunks). On CPU devices a chunk of dense
// or broadcast views first goes through explicit vectors of VW elements,
// with the vector formulas of kernels/elementwise.cl (first in the program,
// XY_FUSED defined: its xy_fused_*_v), streamed to memory when the host
// asks.
constexpr std::string_view kPrelude =
    "\n#define XY_GLOBAL global\n#define XY_KERNEL kernel void\ntypedef long xy_long;\n"
    "#define XY_MULHI(a, b) mul_hi(a, b)\n"
    "#define XY_FUSED_PARAMS , int stream, long per\n"
    "#define XY_FUSED_RANGE(i, end, n) XY_CHUNK_BOUNDS(i, end, n, per);\n"
    "#define XY_FUSED_LOOP(i, end) for (; i < end; ++i)\n"
    "#define XY_UNARY(c, x, p0, p1) XF(xy_unary)(c, x, p0, p1)\n"
    "#define XY_BINARY(c, a, b, p0, p1) XF(xy_binary)(c, a, b, p0, p1)\n"
    "#ifdef XY_CPU\n#define XY_FUSED_VECTOR 1\n"
    "#define XY_VUNARY xy_fused_unary_v\n#define XY_VBINARY xy_fused_binary_v\n"
    "#define XY_VLOAD(p, o, s) ((s) ? XY_VLD(p, o) : (VT)(XY_LD(p, o)))\n"
    "#define XY_VSTORE(p, o, v) do { if (streamed) XY_VSTREAM_ST(p, o, v); else XY_VST(p, o, v); } while (0)\n"
    "#define XY_STREAM_OK(p) (stream && XY_ALIGNED(p, XY_VBYTES))\n"
    "#endif\n";

// A program's spec and the text it points to.
struct FusedSpec {
  std::string name, text;
  std::string_view text_view;
  ProgramSpec spec;
};

const ProgramSpec& spec_for(const pf::Words& words) {
  static std::mutex mutex;
  static std::map<pf::Words, std::unique_ptr<FusedSpec>> specs;
  std::lock_guard lock(mutex);
  auto& entry = specs[words];
  if (!entry) {
    entry = std::make_unique<FusedSpec>();
    entry->name = "fused " + pf::program_hex(words);
    entry->text = std::string(kPrelude) + pf::kernel_source(words);
    entry->text_view = entry->text;
    entry->spec = ProgramSpec{entry->name, {&sources::elementwise, &entry->text_view}, Helpers::none, Passes::floats,
                              1,           "XY_FUSED"};
  }
  return entry->spec;
}

EventPtr launch_fused(Launcher& launch) {
  const OpCall& call = launch.call();
  const auto a = plugin::unpack<plugin::args::math_fused>(call);
  const pf::Call c = pf::unpack_call(a);
  if (!c.why.empty()) throw Error(ErrorCode::invalid_argument, launch.describe() + ": " + c.why);
  if (c.numel == 0) return launch.finish();
  const DType dtype = a.x0.dtype;
  const KernelInfo& kernel = launch.program(spec_for(c.words), dtype).kernel("xy_fused");
  const auto real = [&](double v) { return Scalar{dtype, v}; };
  launch.run_chunks(kernel, static_cast<std::size_t>(c.numel), size_of(dtype), mem_of(a.x0), mem_of(a.x1),
                    mem_of(a.x2), mem_of(a.x3), mem_of(a.x4), mem_of(a.y0), mem_of(a.y1), mem_of(a.y2), c.layout,
                    cl_long{c.numel}, real(a.r0), real(a.r1), real(a.r2), real(a.r3), real(a.r4), real(a.r5),
                    real(a.r6), real(a.r7));
  return launch.finish();
}

constinit const OpKernel kFused{launch_fused, {}};

}  // namespace

void register_fused(KernelTable& table) { set_dtypes(table, OpId::math_fused, kFloatDtypes, &kFused); }

}  // namespace xylem::opencl
