// ger, syrk, trsm and geam: kernels/blas_extra.cl, f32 and f64, or
// CLBlast for ger, syrk and trsm where gemm runs CLBlast (GPUs; see
// gemm.cpp for why CPU devices run ours). Where our gemm runs, syrk and
// trsm put nearly all their flops in it (kernels of their own, an item per
// element or right-hand side, ran 17x and 31x the native framework's time
// on PoCL on a 2-core EPYC at [2048, 1024] and [2048, 2048] x 512). Matrix
// views arrive with unit column stride (op.hpp's contract), so each is an
// offset and a row stride; reading one transposed swaps its two strides. iamin is in blas.cpp,
// beside iamax, whose kernels it shares.
#include "frameworks/opencl/ops/blas_extra.hpp"

#include "frameworks/opencl/ops/gemm.hpp"
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

constinit const ProgramSpec kBlasExtraProgram{"blas_extra", {&sources::blas_extra}, Helpers::none, Passes::reals};

using plugin::OpId;
using plugin::TensorArg;

// Strides of op(m)'s rows and columns, m a row-major view.
struct OpStrides {
  cl_long row, col;
};
OpStrides op_strides(const TensorArg& m, bool transposed) noexcept {
  const cl_long ld = leading_dim(m);
  return transposed ? OpStrides{1, ld} : OpStrides{ld, 1};
}

// A vector's stride; with fewer than two elements it means nothing.
cl_long vec_stride(const TensorArg& v) noexcept { return v.view.dims()[0] > 1 ? v.view.strides()[0] : 1; }

const KernelInfo& kernel_of(Launcher& launch, DType dtype, const char* name) {
  return launch.program(kBlasExtraProgram, dtype).kernel(join({name, suffix(dtype)}));
}

void ger(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_ger>(launch.call());
  const TensorArg &x = args.x, &y = args.y, &a = args.a;
  const std::int64_t m = a.view.dims()[0], n = a.view.dims()[1];
  if (m == 0 || n == 0) return;
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  if (gemm_uses_clblast(launch.device().info()) && clblast_ger(launch)) return;
#endif
  // A row per item on CPU devices (kernels/blas_extra.cl says why), an
  // element per item elsewhere.
  const bool cpu = (launch.device().info().type & CL_DEVICE_TYPE_CPU) != 0;
  launch.run(kernel_of(launch, a.dtype, cpu ? "ger_rows" : "ger"), static_cast<std::size_t>(cpu ? m : m * n),
             mem_of(x), offset_of(x), vec_stride(x), mem_of(y), offset_of(y), vec_stride(y), mem_of(a), offset_of(a),
             cl_long{leading_dim(a)}, cl_long{m}, cl_long{n}, Scalar{a.dtype, args.alpha});
}

// A [rows, cols] block of a row-major matrix view m from (r0, c0), for
// gemm, which takes matrix views.
TensorArg block(const TensorArg& m, std::int64_t r0, std::int64_t c0, std::int64_t rows, std::int64_t cols) {
  const std::int64_t ld = leading_dim(m);
  const std::int64_t dims[] = {rows, cols};
  const std::int64_t strides[] = {ld, 1};
  return TensorArg{m.data, Layout::strided(dims, strides, m.view.offset() + r0 * ld + c0), m.dtype};
}

// Rows [r0, r0+rows) by columns [c0, c0+cols) of op(a), as a gemm operand:
// the view and whether gemm reads it transposed.
struct OpBlock {
  TensorArg view;
  bool trans;
};
OpBlock op_block(const TensorArg& a, bool trans, std::int64_t r0, std::int64_t c0, std::int64_t rows,
                 std::int64_t cols) {
  return trans ? OpBlock{block(a, c0, r0, cols, rows), true} : OpBlock{block(a, r0, c0, rows, cols), false};
}

// c = d + beta*c on the triangle of c's [n, n] block from (i0, i0), d a
// dense [n, n] buffer (null: beta*c alone).
void syrk_triangle(Launcher& launch, const TensorArg& c, std::int64_t i0, std::int64_t n, bool upper, cl_mem d,
                   double beta) {
  const std::int64_t ldc = leading_dim(c);
  launch.run(kernel_of(launch, c.dtype, "syrk_triangle"), static_cast<std::size_t>(n * n), d ? d : mem_of(c),
             cl_int{d != nullptr}, mem_of(c), cl_long{offset_of(c) + i0 * (ldc + 1)}, cl_long{ldc}, cl_long{n},
             cl_int{upper}, Scalar{c.dtype, beta});
}

// Rows of c per gemm of syrk and trsm: on PoCL on a 2-core EPYC our gemm
// (its default candidate, which walks every panel of b down all of a) ran
// 128 rows by 1920 (k 1024) at 33 GFLOP/s, 256 by 1792 at 24, and
// 128 x 512 x 1024 at 29-34 against 22-26 for 1024 rows: a's strip of
// 128 rows stays in the cache across the panels. For syrk, the diagonal
// blocks, computed whole into a scratch square, are then 1/32 of the flops
// at n = 2048.
constexpr std::int64_t kGemmRows = 128;

// Our syrk where our gemm runs (its kernel is the fast one there): each
// block row of the triangle is one gemm, c[I, J] = alpha op(a)[I] op(a)[J]^T
// + beta c[I, J] for the columns J past (upper) or before (lower) the
// diagonal block I, and one into a scratch square for that block, added to
// its triangle. gemm reads b by rows: op(a)^T, [k, n], is a itself when
// transposed, else a transposed copy of a made once.
void our_syrk(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_syrk>(launch.call());
  const TensorArg &a = args.a, &c = args.c;
  const bool trans = args.transpose != 0, upper = args.upper != 0;
  const std::int64_t n = c.view.dims()[0], k = trans ? a.view.dims()[0] : a.view.dims()[1];
  if (k == 0 || args.alpha == 0) {
    syrk_triangle(launch, c, 0, n, upper, nullptr, args.beta);
    return;
  }
  TensorArg at = a;
  Mem at_buffer;
  if (!trans) {
    // Rows a cache line longer than n: gemm walks a panel of b down all k
    // rows, which a power-of-two stride would put on one set of the cache
    // (syrk [2048, 1024] ran 15-20% faster on PoCL on a 2-core EPYC).
    const std::int64_t ldt = n + 64 / static_cast<std::int64_t>(size_of(a.dtype));
    at_buffer = temporary_buffer(launch, k * ldt, a.dtype);
    const std::int64_t dims[] = {k, n};
    const std::int64_t from_strides[] = {1, leading_dim(a)};
    const std::int64_t to_strides[] = {ldt, 1};
    at = TensorArg{at_buffer.get(), Layout::strided(dims, to_strides, 0), a.dtype};
    enqueue_copy(launch, TensorArg{a.data, Layout::strided(dims, from_strides, a.view.offset()), a.dtype}, at);
  }
  const Mem square = temporary_buffer(launch, std::min(n, kGemmRows) * std::min(n, kGemmRows), c.dtype);
  for (std::int64_t i0 = 0; i0 < n; i0 += kGemmRows) {
    const std::int64_t rows = std::min(kGemmRows, n - i0);
    const OpBlock left = op_block(a, trans, i0, 0, rows, k);
    // The columns of the block row off the diagonal block.
    const std::int64_t j0 = upper ? i0 + rows : 0, cols = upper ? n - j0 : i0;
    if (cols > 0)
      enqueue_gemm(launch, left.view, block(at, 0, j0, k, cols), block(c, i0, j0, rows, cols), left.trans, false,
                   args.alpha, args.beta);
    const std::int64_t dims[] = {rows, rows};
    const std::int64_t strides[] = {rows, 1};
    enqueue_gemm(launch, left.view, block(at, 0, i0, k, rows),
                 TensorArg{square.get(), Layout::strided(dims, strides, 0), c.dtype}, left.trans, false, args.alpha, 0);
    syrk_triangle(launch, c, i0, rows, upper, square.get(), args.beta);
  }
}

void syrk(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_syrk>(launch.call());
  const std::int64_t n = args.c.view.dims()[0];
  if (n == 0) return;
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  const std::int64_t k = args.transpose != 0 ? args.a.view.dims()[0] : args.a.view.dims()[1];
  if (gemm_uses_clblast(launch.device().info()) && k > 0 && args.alpha != 0) {
    // CLBlast reads c even for beta 0, and c may hold NaN there: beta is
    // applied first, then CLBlast adds the product.
    syrk_triangle(launch, args.c, 0, n, args.upper != 0, nullptr, args.beta);
    clblast_syrk_product(launch);
    return;
  }
#endif
  our_syrk(launch);
}

// Unknowns per diagonal block solved by substitution (kernels/
// blas_extra.cl's trsm and trsm_strips), the rest of the work being gemm
// updates: on PoCL on a 2-core EPYC a block of 128 by 512 right-hand sides
// took 0.5 ms, the 16 of a 2048-row solve a tenth of its time.
constexpr std::int64_t kTrsmLeaf = 128;

// Our trsm where our gemm runs. Left: op(a) x = alpha b, the unknowns are
// b's rows; right: x op(a) = alpha b, its columns. Split in two halves, the
// one that depends on no other first (forward: the top or left one),
// solved recursively, then the other half's right-hand sides less the
// product of the half solved (one gemm), then that half, recursively: all
// but kTrsmLeaf-wide diagonal blocks of the flops run in gemm.
class OurTrsm {
 public:
  OurTrsm(Launcher& launch, const plugin::args::blas_trsm<TensorArg>& args)
      : launch_(launch), args_(args), a_(args_.a), b_(args_.b), left_(args_.left != 0),
        trans_(args_.transpose != 0) {}

  void run() {
    const std::int64_t k = left_ ? b_.view.dims()[0] : b_.view.dims()[1];
    solve(0, k, args_.alpha);
  }

 private:
  // The leaf kernel's matrix M (op(a) on the left, op(a)^T on the right,
  // so that each right-hand side is a column) is lower triangular, solved
  // from the first unknown, when a's triangle, seen through the
  // transposes, is.
  [[nodiscard]] bool m_transposes_a() const { return left_ == trans_; }
  [[nodiscard]] bool forward() const { return (args_.upper != 0) == m_transposes_a(); }

  // Unknowns [u0, u1): the half without dependencies, the update, the other.
  void solve(std::int64_t u0, std::int64_t u1, double alpha) {
    if (u1 - u0 <= kTrsmLeaf) {
      leaf(u0, u1, alpha);
      return;
    }
    // A multiple of the leaf size: whole leaves, aligned rows for gemm.
    const std::int64_t mid = u0 + ((u1 - u0) / 2 + kTrsmLeaf - 1) / kTrsmLeaf * kTrsmLeaf;
    const std::int64_t s0 = forward() ? u0 : mid, s1 = forward() ? mid : u1;
    const std::int64_t t0 = forward() ? mid : u0, t1 = forward() ? u1 : mid;
    solve(s0, s1, alpha);
    update(s0, s1, t0, t1, alpha);
    solve(t0, t1, 1);
  }

  // Right-hand sides of unknowns [t0, t1) = beta * them - the product of
  // the solved unknowns [s0, s1) with op(a)'s block between the two: a
  // gemm per kGemmRows rows of b.
  void update(std::int64_t s0, std::int64_t s1, std::int64_t t0, std::int64_t t1, double beta) {
    const std::int64_t sn = s1 - s0, tn = t1 - t0;
    if (left_) {  // b[T, :] -= op(a)[T, S] x[S, :]
      const std::int64_t n = b_.view.dims()[1];
      for (std::int64_t r = t0; r < t1; r += kGemmRows) {
        const std::int64_t rows = std::min(kGemmRows, t1 - r);
        const OpBlock m = op_block(a_, trans_, r, s0, rows, sn);
        enqueue_gemm(launch_, m.view, block(b_, s0, 0, sn, n), block(b_, r, 0, rows, n), m.trans, false, -1, beta);
      }
    } else {  // b[:, T] -= x[:, S] op(a)[S, T]
      const std::int64_t m = b_.view.dims()[0];
      const OpBlock o = op_block(a_, trans_, s0, t0, sn, tn);
      for (std::int64_t r = 0; r < m; r += kGemmRows) {
        const std::int64_t rows = std::min(kGemmRows, m - r);
        enqueue_gemm(launch_, block(b_, r, s0, rows, sn), o.view, block(b_, r, t0, rows, tn), false, o.trans, -1,
                     beta);
      }
    }
  }

  // The diagonal block of unknowns [u0, u1) by substitution. CPU devices
  // take the right-hand sides that lie side by side (the left side's
  // columns) a vector of them per item (kernels/blas_extra.cl's
  // trsm_strips says why), each item a group of its own so that the strips
  // spread over the threads; the rest, and GPUs, an item per right-hand
  // side, neighbouring items on neighbouring columns.
  void leaf(std::int64_t u0, std::int64_t u1, double alpha) {
    const OpStrides s = op_strides(a_, m_transposes_a());
    const cl_long ldb = leading_dim(b_), ao = offset_of(a_) + u0 * (s.row + s.col);
    const cl_long inc_e = left_ ? ldb : 1, inc_v = left_ ? 1 : ldb, bo = offset_of(b_) + u0 * inc_e;
    const std::int64_t count = left_ ? b_.view.dims()[1] : b_.view.dims()[0];
    const cl_int lower = forward(), unit = args_.unit_diagonal != 0;
    const Scalar scale{b_.dtype, alpha};
    std::int64_t done = 0;
    if (left_ && (launch_.device().info().type & CL_DEVICE_TYPE_CPU)) {
      const std::int64_t width = b_.dtype == DType::f64 ? 8 : 16;  // VW
      const std::int64_t strips = count / width;
      if (strips > 0)
        launch_.run_groups(kernel_of(launch_, b_.dtype, "trsm_strips"), static_cast<std::size_t>(strips), 1,
                           mem_of(a_), ao, s.row, s.col, mem_of(b_), bo, ldb, cl_long{u1 - u0}, cl_long{strips},
                           lower, unit, scale);
      done = strips * width;
    }
    if (done < count)
      launch_.run(kernel_of(launch_, b_.dtype, "trsm"), static_cast<std::size_t>(count - done), mem_of(a_), ao, s.row,
                  s.col, mem_of(b_), cl_long{bo + done * inc_v}, inc_e, inc_v, cl_long{u1 - u0},
                  cl_long{count - done}, lower, unit, scale);
  }

  Launcher& launch_;
  const plugin::args::blas_trsm<TensorArg> args_;
  const TensorArg &a_, &b_;
  const bool left_, trans_;
};

void trsm(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_trsm>(launch.call());
  if (args.b.view.dims()[0] == 0 || args.b.view.dims()[1] == 0) return;
#ifdef XYLEM_OPENCL_HAVE_CLBLAST
  if (gemm_uses_clblast(launch.device().info())) {
    clblast_trsm(launch);
    return;
  }
#endif
  if (!(launch.device().info().type & CL_DEVICE_TYPE_CPU)) {
    OurTrsm(launch, args).run();
    return;
  }
  // A CPU device solves on a copy of b (of b^T for x op(a) = alpha b,
  // solved as op(a)^T x^T = alpha b^T), so that the right-hand sides lie
  // side by side (OurTrsm::leaf says why that matters there), its rows a
  // cache line longer than they are (our_syrk's transposed copy says why);
  // the two copies cost little next to the solve.
  const TensorArg& b = args.b;
  const bool left = args.left != 0;
  const std::int64_t rows = b.view.dims()[left ? 0 : 1], cols = b.view.dims()[left ? 1 : 0];
  const std::int64_t ld = cols + 64 / static_cast<std::int64_t>(size_of(b.dtype));
  const std::int64_t dims[] = {rows, cols}, b_strides[] = {left ? leading_dim(b) : 1, left ? 1 : leading_dim(b)};
  const std::int64_t copy_strides[] = {ld, 1};
  const TensorArg b_view{b.data, Layout::strided(dims, b_strides, b.view.offset()), b.dtype};
  const Mem scratch = temporary_buffer(launch, rows * ld, b.dtype);
  auto solved = args;
  solved.b = TensorArg{scratch.get(), Layout::strided(dims, copy_strides, 0), b.dtype};
  solved.left = 1;
  solved.transpose = (args.transpose != 0) == left ? 1 : 0;
  enqueue_copy(launch, b_view, solved.b);
  OurTrsm(launch, solved).run();
  enqueue_copy(launch, solved.b, b_view);
}

void geam(Launcher& launch) {
  const auto args = plugin::unpack<plugin::args::blas_geam>(launch.call());
  const TensorArg &a = args.a, &b = args.b, &c = args.c;
  const std::int64_t m = c.view.dims()[0], n = c.view.dims()[1];
  if (m == 0 || n == 0) return;
  const OpStrides sa = op_strides(a, args.transpose_a != 0), sb = op_strides(b, args.transpose_b != 0);
  // A tile of c per item (kernels/blas_extra.cl): 32 x 32 on CPU devices, one element on GPUs.
  const std::int64_t tile = launch.device().info().type & CL_DEVICE_TYPE_CPU ? 32 : 1;
  const std::int64_t tiles = (m + tile - 1) / tile * ((n + tile - 1) / tile);
  launch.run(kernel_of(launch, c.dtype, "geam"), static_cast<std::size_t>(tiles), mem_of(a), offset_of(a), sa.row,
             sa.col, mem_of(b), offset_of(b), sb.row, sb.col, mem_of(c), offset_of(c), cl_long{leading_dim(c)},
             cl_long{m}, cl_long{n}, Scalar{c.dtype, args.alpha}, Scalar{c.dtype, args.beta}, cl_long{tile});
}

EventPtr launch_blas_extra(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::blas_ger:
      ger(launch);
      break;
    case OpId::blas_syrk:
      syrk(launch);
      break;
    case OpId::blas_trsm:
      trsm(launch);
      break;
    case OpId::blas_geam:
      geam(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not one of ger, syrk, trsm, geam");
  }
  return launch.finish();
}

constinit const OpKernel kBlasExtra{launch_blas_extra, {&kBlasExtraProgram}};

}  // namespace

void register_blas_extra(KernelTable& table) {
  for (OpId op : {OpId::blas_ger, OpId::blas_syrk, OpId::blas_trsm, OpId::blas_geam})
    set_dtypes(table, op, kRealDtypes, &kBlasExtra);
}

}  // namespace xylem::opencl
