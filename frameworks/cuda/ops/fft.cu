// fft::c2c, r2c, c2r on CUDA through cuFFT (cufft_library.*, loaded at run
// time). Plans are made once per (transform, precision, lengths, batch) in
// the device's package and run on the compute stream with a work area from
// the device's allocator; NumPy's norm is a scaling pass after the
// transform, skipped for a scale of 1 (the forward transform by default).
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "../check.hpp"
#include "cufft_library.hpp"
#include "map.cuh"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;

[[noreturn]] void throw_cufft(cufftResult r, const char* call, int device, std::string_view what) {
  throw Error(r == CUFFT_ALLOC_FAILED ? ErrorCode::out_of_memory : ErrorCode::internal,
              std::string(what) + " on cuda:" + std::to_string(device) + ": " + call + " failed with " +
                  cufft_status_name(r));
}
#define XY_CUFFT(call, device, what)                                   \
  do {                                                                 \
    if (const cufftResult r_ = (call); r_ != CUFFT_SUCCESS)            \
      throw_cufft(r_, #call, (device), (what));                        \
  } while (0)

// One plan and the work area it needs (cuFFT's auto allocation is off: the
// work area comes from the device's allocator for each launch).
struct Plan {
  const CufftLibrary* lib = nullptr;
  cufftHandle handle = 0;
  bool made = false;
  std::size_t work_bytes = 0;
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (made) (void)lib->cufftDestroy(handle);
  }
};

// (type, rank, n0, n1, batch): everything a plan depends on here (the
// layouts are always the contiguous ones).
using PlanKey = std::tuple<int, int, long long, long long, long long>;

class FftPackage final : public plugin::Package {
 public:
  explicit FftPackage(const CufftLibrary& lib) : lib_(&lib) {}
  // Launches are serialised per device (the compute stream's lock), so the
  // plans need no lock of their own.
  Plan& plan(cufftType type, int rank, const long long* n, long long batch, int device, std::string_view what) {
    const PlanKey key{int(type), rank, n[0], rank == 2 ? n[1] : 0, batch};
    if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
    auto p = std::make_unique<Plan>();
    p->lib = lib_;
    XY_CUFFT(lib_->cufftCreate(&p->handle), device, what);
    p->made = true;
    XY_CUFFT(lib_->cufftSetAutoAllocation(p->handle, 0), device, what);
    long long n_copy[2] = {n[0], rank == 2 ? n[1] : 1};
    // Null embeds: the contiguous layouts, batches one after the other.
    XY_CUFFT(lib_->cufftMakePlanMany64(p->handle, rank, n_copy, nullptr, 1, 0, nullptr, 1, 0, type, batch,
                                       &p->work_bytes),
             device, what);
    return *plans_.emplace(key, std::move(p)).first->second;
  }
  [[nodiscard]] const CufftLibrary& lib() const noexcept { return *lib_; }

 private:
  const CufftLibrary* lib_;
  std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

FftPackage& package(const Context& ctx) {
  return ctx.packages->get<FftPackage>(kFftPackage, [] {
    std::string why;
    const CufftLibrary* lib = cufft_library(&why);
    // Device::supports refuses the fft ops without cuFFT, so this is reached only with it.
    if (lib == nullptr) throw Error(ErrorCode::unsupported, why);
    return std::make_unique<FftPackage>(*lib);
  });
}

template <class R>
__global__ void scale_kernel(std::int64_t n, R* p, R f) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] *= f;
}

template <class R>
void scale_by(R* p, std::int64_t count, double scale, const Context& ctx, std::string_view what) {
  if (scale == 1.0 || count == 0) return;
  static const int per_sm = blocks_per_multiprocessor(scale_kernel<R>);
  scale_kernel<R><<<grid_for(count, per_sm, ctx), kMapThreads, 0, ctx.stream>>>(count, p, static_cast<R>(scale));
  XY_CUDA_LAUNCHED(ctx.device, what);
}

// A call's transform: rank, lengths of the real-side (full) signal, batch.
struct Shape {
  int rank = 1;
  long long n[2] = {1, 1};
  long long batch = 0;
  [[nodiscard]] std::int64_t full() const { return n[0] * (rank == 2 ? n[1] : 1); }
  [[nodiscard]] std::int64_t half() const { return rank == 2 ? n[0] * (n[1] / 2 + 1) : n[0] / 2 + 1; }
};
Shape shape_of(const TensorArg& full_side) {
  const Layout& v = full_side.view;
  Shape s;
  s.rank = v.rank() - 1;
  s.batch = v.dims()[0];
  for (int a = 0; a < s.rank; ++a) s.n[a] = v.dims()[std::size_t(a) + 1];
  return s;
}

// The plan for the call and its work area, bound to the compute stream.
struct Bound {
  const CufftLibrary& lib;
  cufftHandle handle;
  TempBuffer work;
};
Bound bind(const Context& ctx, cufftType type, const Shape& s, std::string_view what) {
  FftPackage& pkg = package(ctx);
  Plan& plan = pkg.plan(type, s.rank, s.n, s.batch, ctx.device, what);
  TempBuffer work = ctx.temp(plan.work_bytes);
  XY_CUFFT(pkg.lib().cufftSetStream(plan.handle, ctx.stream), ctx.device, what);
  XY_CUFFT(pkg.lib().cufftSetWorkArea(plan.handle, work.get()), ctx.device, what);
  return Bound{pkg.lib(), plan.handle, std::move(work)};
}

template <class R>
void c2c(const OpCall& c, const Context& ctx) {
  constexpr std::string_view what = "fft::c2c";
  const auto args = plugin::unpack<plugin::args::fft_c2c>(c);
  const Shape s = shape_of(args.x);
  const int sign = args.inverse ? CUFFT_INVERSE : CUFFT_FORWARD;
  // cuFFT leaves an out-of-place c2c's input as it was; its API takes it non-const.
  if constexpr (sizeof(R) == 4) {
    const Bound b = bind(ctx, CUFFT_C2C, s, what);
    XY_CUFFT(b.lib.cufftExecC2C(b.handle, element_ptr<cufftComplex>(args.x), element_ptr<cufftComplex>(args.y), sign),
             ctx.device, what);
  } else {
    const Bound b = bind(ctx, CUFFT_Z2Z, s, what);
    XY_CUFFT(b.lib.cufftExecZ2Z(b.handle, element_ptr<cufftDoubleComplex>(args.x),
                                element_ptr<cufftDoubleComplex>(args.y), sign),
             ctx.device, what);
  }
  scale_by(element_ptr<R>(args.y), 2 * s.full() * s.batch, args.scale, ctx, what);
}

template <class R>
void r2c(const OpCall& c, const Context& ctx) {
  constexpr std::string_view what = "fft::r2c";
  const auto args = plugin::unpack<plugin::args::fft_r2c>(c);
  const Shape s = shape_of(args.x);
  if constexpr (sizeof(R) == 4) {
    const Bound b = bind(ctx, CUFFT_R2C, s, what);
    XY_CUFFT(b.lib.cufftExecR2C(b.handle, element_ptr<cufftReal>(args.x), element_ptr<cufftComplex>(args.y)),
             ctx.device, what);
  } else {
    const Bound b = bind(ctx, CUFFT_D2Z, s, what);
    XY_CUFFT(b.lib.cufftExecD2Z(b.handle, element_ptr<cufftDoubleReal>(args.x), element_ptr<cufftDoubleComplex>(args.y)),
             ctx.device, what);
  }
  scale_by(element_ptr<R>(args.y), 2 * s.half() * s.batch, args.scale, ctx, what);
}

// cuFFT's c2r overwrites its input, which the op must keep: it reads a copy.
template <class R>
void c2r(const OpCall& c, const Context& ctx) {
  constexpr std::string_view what = "fft::c2r";
  const auto args = plugin::unpack<plugin::args::fft_c2r>(c);
  const Shape s = shape_of(args.y);
  const std::size_t bytes = std::size_t(s.half() * s.batch) * 2 * sizeof(R);
  TempBuffer copy = ctx.temp(bytes);
  XY_CUDA(cudaMemcpyAsync(copy.get(), element_ptr<R>(args.x), bytes, cudaMemcpyDeviceToDevice, ctx.stream),
          ctx.device, what);
  if constexpr (sizeof(R) == 4) {
    const Bound b = bind(ctx, CUFFT_C2R, s, what);
    XY_CUFFT(b.lib.cufftExecC2R(b.handle, copy.as<cufftComplex>(), element_ptr<cufftReal>(args.y)), ctx.device, what);
  } else {
    const Bound b = bind(ctx, CUFFT_Z2D, s, what);
    XY_CUFFT(b.lib.cufftExecZ2D(b.handle, copy.as<cufftDoubleComplex>(), element_ptr<cufftDoubleReal>(args.y)),
             ctx.device, what);
  }
  scale_by(element_ptr<R>(args.y), s.full() * s.batch, args.scale, ctx, what);
}

}  // namespace

bool is_fft(plugin::OpId op) noexcept {
  return op == OpId::fft_c2c || op == OpId::fft_r2c || op == OpId::fft_c2r;
}

void register_fft(KernelTable& table) {
  table.set(OpId::fft_c2c, DType::c64, &c2c<float>);
  table.set(OpId::fft_c2c, DType::c128, &c2c<double>);
  table.set(OpId::fft_r2c, DType::f32, &r2c<float>);
  table.set(OpId::fft_r2c, DType::f64, &r2c<double>);
  table.set(OpId::fft_c2r, DType::c64, &c2r<float>);
  table.set(OpId::fft_c2r, DType::c128, &c2r<double>);
}

}  // namespace xylem::cuda
