// blas::gemm: the cases with nothing to multiply, then our register-blocked
// kernel (kernels/gemm.cl) or CLBlast (ops/gemm_clblast.cpp). f16 and
// bf16 go through f32 copies (ops/gemm_half.cpp), then back here.
//
// Which engine: bench/opencl_bench.cpp races the two in one run
// (XYLEM_OPENCL_GEMM=ours or =clblast forces one, for that race and for
// users). On PoCL on a 2-core AVX-512 EPYC, ours ran several times faster
// than CLBlast at every size measured (see the bench's gemm rows):
// CLBlast's kernels and tuning database are made for GPUs, whose local
// memory a CPU device only emulates. So CPU devices run ours, and GPUs and
// accelerators run CLBlast where the plugin has it, ours otherwise.
#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/gemm_candidates.hpp"
#include "frameworks/opencl/sources.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

namespace xylem::opencl {

namespace {

// The defines of a tile's variant of kernels/gemm.cl.
std::string tile_source(int tile) {
  const GemmTile& t = kGemmTiles[tile];
  return "#define XY_GEMM_RM " + std::to_string(t.rows) + "\n#define XY_GEMM_CV " + std::to_string(t.vectors) +
         "\n#define XY_GEMM_NARROW " + (t.narrow ? "1" : "0") + "\n#define XY_GEMM_BAND " + std::to_string(t.band) +
         "\n";
}

}  // namespace

// One variant per tile; a call's programs (Device::prepare) are variant 0's,
// the others built when a candidate first needs them.
constinit const ProgramSpec kGemmProgram{.name = "gemm",
                                         .texts = {&sources::gemm},
                                         .helpers = Helpers::none,
                                         .passes = Passes::reals,
                                         .variants = kGemmTileCount,
                                         .variant_name = gemm_tile_name,
                                         .variant_source = tile_source};

namespace {

using plugin::TensorArg;

enum class Engine { ours, clblast };

Engine choose_engine(const DeviceInfo& info) {
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  if (const char* forced = std::getenv("XYLEM_OPENCL_GEMM"); forced && *forced) {
    return std::string_view(forced) == "clblast" ? Engine::clblast : Engine::ours;
  }
  return (info.type & CL_DEVICE_TYPE_CPU) ? Engine::ours : Engine::clblast;
#else
  (void)info;
  return Engine::ours;
#endif
}

}  // namespace

// c = beta*c (zero without reading c when beta is 0).
void scale_c(Launcher& launch, const TensorArg& c, std::int64_t m, std::int64_t n, double beta) {
  const ProgramPackage& program = launch.program(kBlasProgram, c.dtype);
  launch.run(program.kernel(join({"scale_matrix", suffix(c.dtype)})), static_cast<std::size_t>(m * n), mem_of(c),
             offset_of(c), static_cast<cl_long>(leading_dim(c)), static_cast<cl_long>(m), static_cast<cl_long>(n),
             Scalar{c.dtype, beta});
}

bool gemm_uses_clblast(const DeviceInfo& info) { return choose_engine(info) == Engine::clblast; }

namespace {

void our_gemm(Launcher& launch, const GemmDims& g) {
  const auto args = plugin::unpack<plugin::args::blas_gemm>(launch.call());
  our_gemm_batched(launch, g, args.a, args.b, args.c, 1, 0, 0, 0);
}

}  // namespace

void our_gemm_batched(Launcher& launch, const GemmDims& g, const TensorArg& a, const TensorArg& b, const TensorArg& c,
                      std::int64_t batch, std::int64_t a_bs, std::int64_t b_bs, std::int64_t c_bs) {
  // Chosen before anything is enqueued: measuring waits for the queue.
  const int candidate = gemm_candidate_for(launch, c.dtype, g);
  const cl_long lda = leading_dim(a);
  // a's element (i, p) at i*sai + p*sak covers both of its layouts.
  const cl_long sai = g.trans_a ? 1 : lda, sak = g.trans_a ? lda : 1;
  cl_mem bmem = mem_of(b);
  cl_long bo = b.view.offset(), ldb = leading_dim(b), b_step = b_bs;
  if (g.trans_b) {
    // The kernel reads rows of op(b) as vectors: a transposed b is first
    // copied into a dense k x n scratch per matrix (the copy family's
    // tiled transpose, one launch for the batch), a small cost next to the
    // 2*m*n*k flops that follow.
    const std::int64_t b_count = b_bs == 0 ? 1 : batch;
    const std::int64_t dims[] = {b_count, g.k, g.n};
    const std::int64_t from_strides[] = {b_bs, 1, ldb};
    const std::int64_t to_strides[] = {g.k * g.n, g.n, 1};
    cl_mem packed = launch.device().scratch(1, static_cast<std::size_t>(b_count * g.k * g.n) * size_of(b.dtype));
    enqueue_copy(launch, TensorArg{b.data, Layout::strided(dims, from_strides, b.view.offset()), b.dtype},
                 TensorArg{packed, Layout::strided(dims, to_strides, 0), b.dtype});
    bmem = packed;
    bo = 0;
    ldb = g.n;
    b_step = b_bs == 0 ? 0 : g.k * g.n;
  }
  OurGemmOperands ops{mem_of(a), static_cast<cl_long>(a.view.offset()), sai, sak, bmem, bo, ldb,
                      mem_of(c), static_cast<cl_long>(c.view.offset()), static_cast<cl_long>(leading_dim(c))};
  ops.batch = batch;
  ops.a_bs = a_bs;
  ops.b_bs = b_step;
  ops.c_bs = c_bs;
  enqueue_our_gemm(launch, candidate, c.dtype, g, ops);
}

void enqueue_our_gemm(Launcher& launch, int candidate, DType dtype, const GemmDims& g, const OurGemmOperands& ops) {
  const GemmCandidate choice = gemm_candidate(candidate);
  const GemmTile& tile = kGemmTiles[choice.tile];
  const ProgramPackage& program = launch.device().program(kGemmProgram, dtype, choice.tile);
  const KernelInfo& kernel = program.kernel(join({"gemm", suffix(dtype)}));
  const std::int64_t width = (dtype == DType::f64 ? 8 : 16) / (tile.narrow ? 2 : 1);
  const std::int64_t across = tile.vectors * width;
  const std::int64_t tiles_m = (g.m + tile.rows - 1) / tile.rows, panels = (g.n + across - 1) / across;
  // A banded walk covers whole bands, the last one cut short by m.
  const std::int64_t tiles =
      tile.band ? (tiles_m + tile.band - 1) / tile.band * tile.band * panels : tiles_m * panels;
  // Groups of consecutive items share a panel of b. On a CPU device a
  // group runs on one thread: the candidate's number of groups per compute
  // unit, several for balance on a loaded machine.
  std::size_t local = kernel.local;
  const DeviceInfo& info = launch.device().info();
  if (info.type & CL_DEVICE_TYPE_CPU) {
    const std::int64_t per_unit = std::int64_t{choice.groups_per_unit} * std::max(info.compute_units, 1);
    const auto want = static_cast<std::size_t>(std::max<std::int64_t>(1, tiles * ops.batch / per_unit));
    while (local > 1 && local > want) local /= 2;
  }
  // Every matrix of a batch takes whole groups: `per_matrix` items.
  const std::size_t groups = (static_cast<std::size_t>(tiles) + local - 1) / local;
  const auto per_matrix = static_cast<cl_long>(groups * local);
  cl_mem b = ops.b;
  cl_long bo = ops.bo, ldb = ops.ldb, b_step = ops.ldb, b_bs = ops.b_bs;
  Mem packed;
  if (tile.band) {
    // Packed once for every slice of k below: a slice starts p rows into
    // each panel. A b shared by the batch is packed once.
    const std::int64_t b_count = ops.b_bs == 0 ? 1 : ops.batch;
    packed = temporary_buffer(launch, b_count * panels * g.k * across, dtype);
    launch.run(program.kernel(join({"gemm_pack_b", suffix(dtype)})), static_cast<std::size_t>(b_count * panels * g.k),
               ops.b, ops.bo, ops.ldb, packed.get(), static_cast<cl_long>(g.k), static_cast<cl_long>(g.n),
               static_cast<cl_long>(b_count), ops.b_bs);
    b = packed.get();
    bo = 0;
    ldb = static_cast<cl_long>(g.k * across);
    b_step = static_cast<cl_long>(across);
    b_bs = ops.b_bs == 0 ? 0 : static_cast<cl_long>(panels * g.k * across);
  }
  // Slices of k after the first add to c: c = alpha*a_s*b_s + 1*c.
  const std::int64_t step = choice.k_block > 0 ? choice.k_block : g.k;
  for (std::int64_t p = 0; p < g.k; p += step) {
    const std::int64_t k = std::min(step, g.k - p);
    launch.run_groups(kernel, groups * static_cast<std::size_t>(ops.batch), local, ops.a,
                      static_cast<cl_long>(ops.ao + p * ops.sak), ops.sai, ops.sak, b,
                      static_cast<cl_long>(bo + p * b_step), ldb, ops.c, ops.co, ops.ldc, static_cast<cl_long>(g.m),
                      static_cast<cl_long>(g.n), static_cast<cl_long>(k), Scalar{dtype, g.alpha},
                      Scalar{dtype, p == 0 ? g.beta : 1.0}, per_matrix, ops.a_bs, b_bs, ops.c_bs);
  }
}

std::int64_t leading_dim(const TensorArg& m) noexcept {
  const std::int64_t rows = m.view.dims()[0], cols = m.view.dims()[1];
  return rows > 1 ? m.view.strides()[0] : std::max<std::int64_t>(1, cols);
}

EventPtr launch_gemm(Launcher& launch) {
  if (launch.call().op == plugin::OpId::blas_gemm_batched) return launch_gemm_batched(launch);
  const auto args = plugin::unpack<plugin::args::blas_gemm>(launch.call());
  const TensorArg &a = args.a, &c = args.c;
  if (c.dtype == DType::f16 || c.dtype == DType::bf16) return launch_gemm_half(launch);
  GemmDims g{};
  g.m = c.view.dims()[0];
  g.n = c.view.dims()[1];
  g.k = args.transpose_a ? a.view.dims()[0] : a.view.dims()[1];
  g.trans_a = args.transpose_a != 0;
  g.trans_b = args.transpose_b != 0;
  g.alpha = args.alpha;
  g.beta = args.beta;
  if (g.m == 0 || g.n == 0) return launch.finish();
  // c = beta*c alone when there is nothing to multiply.
  if (g.k == 0 || g.alpha == 0) {
    scale_c(launch, c, g.m, g.n, g.beta);
    return launch.finish();
  }
  if (choose_engine(launch.device().info()) == Engine::ours) {
    our_gemm(launch, g);
    return launch.finish();
  }
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  // CLBlast reads c even with beta == 0, and c may hold NaN (NaN*0 is
  // NaN): clear it first.
  if (g.beta == 0) scale_c(launch, c, g.m, g.n, 0);
  clblast_gemm(launch, g);
#endif
  return launch.finish();
}

void enqueue_gemm(Launcher& launch, const TensorArg& a, const TensorArg& b, const TensorArg& c, bool trans_a,
                  bool trans_b, double alpha, double beta) {
  const plugin::OpCall step = plugin::pack(plugin::args::blas_gemm<>{.a = a,
                                                                     .b = b,
                                                                     .c = c,
                                                                     .transpose_a = trans_a ? 1 : 0,
                                                                     .transpose_b = trans_b ? 1 : 0,
                                                                     .alpha = alpha,
                                                                     .beta = beta});
  launch.run_step(step, launch_gemm);
}

}  // namespace xylem::opencl
