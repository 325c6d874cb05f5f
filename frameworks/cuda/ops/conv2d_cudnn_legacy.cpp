// The cuDNN legacy convolution engine (see cudnn_package.hpp): the
// cudnnConvolution* functions of cuDNN 7's API, still in every cuDNN 9.
//
// The first call of each shape chooses an algorithm (cuDNN's heuristics, or
// with XYLEM_CUDA_CUDNN_FIND=1 or tuning on, timing on the call's own
// tensors with cudnnFind*Ex, which writes only the output, the winner then
// stored in the tuning cache, whose entry later processes take instead of
// the heuristics: cudnn_tune.hpp) and keeps it with its descriptors;
// later calls of the shape only enqueue it. Workspaces come from the
// caching allocator in stream order.
//
// Math: f32 uses CUDNN_DEFAULT_MATH, which lets cuDNN use TF32 tensor cores
// as PyTorch does by default (torch.backends.cudnn.allow_tf32 = True);
// XYLEM_CUDA_CONV_TF32=0 selects CUDNN_FMA_MATH (full f32 products). f16 and
// bf16 use tensor cores and accumulate in f32 (CUDNN_DATA_FLOAT compute);
// f64 computes in f64.
#include <algorithm>
#include <climits>
#include <limits>
#include <optional>
#include <utility>
#include <memory>
#include <string>

#include "cudnn_package.hpp"
#include "cudnn_tune.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

constexpr int kMaxAlgos = std::max({int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT), int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT),
                                     int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT)});

// The descriptors of one shape and the algorithm chosen for it.
struct Plan final : CudnnPlan {
  explicit Plan(const CudnnLibrary& l) : lib(l) {}
  ~Plan() override {
    // Errors ignored: destructors run at exit too.
    if (x) (void)lib.cudnnDestroyTensorDescriptor(x);
    if (y) (void)lib.cudnnDestroyTensorDescriptor(y);
    if (w) (void)lib.cudnnDestroyFilterDescriptor(w);
    if (conv) (void)lib.cudnnDestroyConvolutionDescriptor(conv);
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  [[nodiscard]] bool usable() const noexcept override { return algo >= 0; }

  const CudnnLibrary& lib;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;  // input and output images (x/dx, y/dy)
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = -1;  // of the pass's algorithm enum; -1: none (use im2col)
  std::size_t workspace = 0;
  float timed_ms = std::numeric_limits<float>::infinity();  // cudnnFind's time for the algorithm, when timed
};

struct Types {
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
};

Types types_of(DType d) {
  switch (d) {
    case DType::f16: return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case DType::bf16: return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case DType::f32:
      return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, conv_tf32_allowed() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH};
    default: return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH};
  }
}

// cuDNN's legacy descriptors take int sizes, and a tensor of at most 2^31 elements.
bool fits_cudnn(const ConvShape& s) {
  const std::int64_t dims[] = {s.N, s.C, s.H, s.W, s.K, s.R, s.S, s.P, s.Q, s.stride_h, s.stride_w,
                               s.pad_h, s.pad_w, s.dil_h, s.dil_w, s.groups};
  for (std::int64_t d : dims)
    if (d > INT_MAX) return false;
  return s.N * s.C * s.H * s.W <= INT_MAX && s.N * s.K * s.P * s.Q <= INT_MAX &&
         s.K * (s.C / s.groups) * s.R * s.S <= INT_MAX;
}

// Perf results of the three passes share their layout; the fields we use.
struct Candidate {
  int algo;
  cudnnStatus_t status;
  std::size_t memory;
  cudnnMathType_t math;
  float ms;  // cudnnFind's time; heuristics leave it negative
};

template <class Perf>
Candidate candidate(const Perf& p) {
  return {int(p.algo), p.status, p.memory, p.mathType, p.time};
}

class Engine {
 public:
  Engine(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops,
         const Context& ctx)
      : pkg_(pkg), lib_(pkg.lib()), pass_(pass), dtype_(dtype), s_(s), ops_(ops), ctx_(ctx), what_(conv_what(pass)) {
    const Types t = types_of(dtype);
    const CudnnKey key =
        cudnn_key(CudnnApi::legacy, pass, dtype, s, dtype == DType::f32 && conv_tf32_allowed(), cudnn_find_wanted(ops),
                  ops);
    auto& plans = pkg.plans();
    auto it = plans.find(key);
    if (it == plans.end()) {
      it = plans.emplace(key, make_plan(t)).first;
    }
    plan_ = static_cast<Plan*>(it->second.get());
  }

  [[nodiscard]] bool has_plan() const noexcept { return plan_->algo >= 0; }
  [[nodiscard]] float timed_ms() const noexcept { return plan_->timed_ms; }

  void run(DType dtype) {
    TempBuffer workspace = ctx_.temp(std::max<std::size_t>(plan_->workspace, 1));
    if (dtype == DType::f64) {
      const double one = 1, zero = 0;
      execute(*plan_, &one, &zero, workspace.get(), plan_->workspace);
    } else {
      const float one = 1, zero = 0;
      execute(*plan_, &one, &zero, workspace.get(), plan_->workspace);
    }
  }

 private:
  int device() const { return ctx_.device; }

  std::unique_ptr<Plan> make_plan(const Types& t) {
    auto plan = std::make_unique<Plan>(lib_);
    XY_CUDNN(lib_, cudnnCreateTensorDescriptor(&plan->x), device(), what_);
    XY_CUDNN(lib_, cudnnCreateTensorDescriptor(&plan->y), device(), what_);
    XY_CUDNN(lib_, cudnnCreateFilterDescriptor(&plan->w), device(), what_);
    XY_CUDNN(lib_, cudnnCreateConvolutionDescriptor(&plan->conv), device(), what_);
    XY_CUDNN(lib_,
             cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW, t.data, int(s_.N), int(s_.C), int(s_.H), int(s_.W)),
             device(), what_);
    XY_CUDNN(lib_,
             cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NCHW, t.data, int(s_.N), int(s_.K), int(s_.P), int(s_.Q)),
             device(), what_);
    XY_CUDNN(lib_,
             cudnnSetFilter4dDescriptor(plan->w, t.data, CUDNN_TENSOR_NCHW, int(s_.K), int(s_.C / s_.groups), int(s_.R),
                                        int(s_.S)),
             device(), what_);
    XY_CUDNN(
        lib_,
        cudnnSetConvolution2dDescriptor(plan->conv, int(s_.pad_h), int(s_.pad_w), int(s_.stride_h), int(s_.stride_w),
                                        int(s_.dil_h), int(s_.dil_w), CUDNN_CROSS_CORRELATION, t.compute),
        device(), what_);
    XY_CUDNN(lib_, cudnnSetConvolutionGroupCount(plan->conv, int(s_.groups)), device(), what_);
    XY_CUDNN(lib_, cudnnSetConvolutionMathType(plan->conv, t.math), device(), what_);

    // cuDNN's heuristics rank the algorithms (PyTorch's default,
    // torch.backends.cudnn.benchmark = False); their first that works
    // within kMaxCudnnWorkspace is taken. With XYLEM_CUDA_CUDNN_FIND=1 the
    // algorithms are timed instead, with as much workspace as the largest
    // needs (less where the device cannot spare it). Timing is not the
    // default: on the H100 it chose FFT algorithms for 64x64x56x56 3x3 f32
    // that then ran 1.5 times slower than the heuristics' choice.
    Candidate listed[kMaxAlgos], timed[kMaxAlgos];
    const int n_listed = heuristics(*plan, listed);
    const auto take = [&](const Candidate& c) {
      plan->algo = c.algo;
      plan->workspace = c.memory;
      XY_CUDNN(lib_, cudnnSetConvolutionMathType(plan->conv, c.math), device(), what_);
    };
    // Untimed, an algorithm timed before (the tuning cache) wins, where the
    // heuristics still list it as working within the workspace limit.
    const plugin::tune::Key tune_key = cudnn_tune_key(pkg_, CudnnTuned::legacy_algo, pass_, dtype_, s_);
    if (!cudnn_find_wanted(ops_) && cudnn_data_aligned(ops_)) {
      const auto stored = plugin::tune::lookup(tune_key);
      const auto chosen = stored ? parse_legacy_algo(stored->choice) : std::nullopt;
      for (int i = 0; chosen && i < n_listed; ++i) {
        const Candidate& c = listed[i];
        if (c.algo == chosen->algo && int(c.math) == chosen->math && c.status == CUDNN_STATUS_SUCCESS &&
            c.memory <= kMaxCudnnWorkspace) {
          take(c);
          return plan;
        }
      }
    }
    std::size_t allowed = kMaxCudnnWorkspace;
    int n_timed = 0;
    if (cudnn_find_wanted(ops_)) {
      std::size_t wanted = 0;
      for (int i = 0; i < n_listed; ++i)
        if (listed[i].status == CUDNN_STATUS_SUCCESS && listed[i].memory <= kMaxCudnnWorkspace)
          wanted = std::max(wanted, listed[i].memory);
      std::optional<TempBuffer> workspace;
      while (!workspace) {
        try {
          workspace.emplace(ctx_.temp(std::max<std::size_t>(wanted, 1)));
        } catch (const Error& e) {
          if (e.code() != ErrorCode::out_of_memory || wanted == 0) throw;
          wanted /= 2;
        }
      }
      n_timed = find(*plan, workspace->get(), wanted, timed);
      allowed = wanted;
    }
    // Fastest first; the heuristics' choice where timing found nothing.
    for (const auto& [list, count] : {std::pair{timed, n_timed}, std::pair{listed, n_listed}})
      for (int i = 0; i < count; ++i)
        if (list[i].status == CUDNN_STATUS_SUCCESS && list[i].memory <= allowed) {
          take(list[i]);
          if (list == timed) {
            plan->timed_ms = list[i].ms;
            (void)plugin::tune::store(tune_key, {legacy_algo_name({list[i].algo, int(list[i].math)}),
                                                 double(list[i].ms) * 1e-3});
          }
          return plan;
        }
    return plan;  // algo < 0: no cuDNN algorithm takes this shape, im2col does (remembered)
  }

  int heuristics(const Plan& p, Candidate* out) {
    int n = 0;
    switch (pass_) {
      case ConvPass::forward: {
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        XY_CUDNN(lib_, cudnnGetConvolutionForwardAlgorithm_v7(pkg_.handle(), p.x, p.w, p.conv, p.y,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, r),
                 device(), what_);
        for (int i = 0; i < n; ++i) out[i] = candidate(r[i]);
        break;
      }
      case ConvPass::grad_data: {
        cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        XY_CUDNN(lib_, cudnnGetConvolutionBackwardDataAlgorithm_v7(pkg_.handle(), p.w, p.y, p.conv, p.x,
                                                                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, r),
                 device(), what_);
        for (int i = 0; i < n; ++i) out[i] = candidate(r[i]);
        break;
      }
      case ConvPass::grad_filter: {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        XY_CUDNN(lib_, cudnnGetConvolutionBackwardFilterAlgorithm_v7(pkg_.handle(), p.x, p.y, p.conv, p.w,
                                                                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, r),
                 device(), what_);
        for (int i = 0; i < n; ++i) out[i] = candidate(r[i]);
        break;
      }
    }
    return n;
  }

  // Times the algorithms on this call's tensors; blocks the host until done
  // (cuDNN synchronises), once per shape.
  int find(const Plan& p, void* ws, std::size_t ws_bytes, Candidate* out) {
    int n = 0;
    switch (pass_) {
      case ConvPass::forward: {
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        XY_CUDNN(lib_, cudnnFindConvolutionForwardAlgorithmEx(pkg_.handle(), p.x, ops_.in0, p.w, ops_.in1, p.conv, p.y,
                                                              ops_.out, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, r, ws,
                                                              ws_bytes),
                 device(), what_);
        for (int i = 0; i < n; ++i) out[i] = candidate(r[i]);
        break;
      }
      case ConvPass::grad_data: {
        cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        XY_CUDNN(lib_, cudnnFindConvolutionBackwardDataAlgorithmEx(pkg_.handle(), p.w, ops_.in1, p.y, ops_.in0, p.conv,
                                                                   p.x, ops_.out, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                                                                   &n, r, ws, ws_bytes),
                 device(), what_);
        for (int i = 0; i < n; ++i) out[i] = candidate(r[i]);
        break;
      }
      case ConvPass::grad_filter: {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        XY_CUDNN(lib_, cudnnFindConvolutionBackwardFilterAlgorithmEx(pkg_.handle(), p.x, ops_.in0, p.y, ops_.in1,
                                                                     p.conv, p.w, ops_.out,
                                                                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, r,
                                                                     ws, ws_bytes),
                 device(), what_);
        for (int i = 0; i < n; ++i) out[i] = candidate(r[i]);
        break;
      }
    }
    return n;
  }

  void execute(const Plan& p, const void* one, const void* zero, void* ws, std::size_t ws_bytes) {
    switch (pass_) {
      case ConvPass::forward:  // in0 = x, in1 = w, out = y
        XY_CUDNN(lib_, cudnnConvolutionForward(pkg_.handle(), one, p.x, ops_.in0, p.w, ops_.in1, p.conv,
                                               cudnnConvolutionFwdAlgo_t(p.algo), ws, ws_bytes, zero, p.y, ops_.out),
                 device(), what_);
        break;
      case ConvPass::grad_data:  // in0 = dy, in1 = w, out = dx
        XY_CUDNN(lib_, cudnnConvolutionBackwardData(pkg_.handle(), one, p.w, ops_.in1, p.y, ops_.in0, p.conv,
                                                    cudnnConvolutionBwdDataAlgo_t(p.algo), ws, ws_bytes, zero, p.x,
                                                    ops_.out),
                 device(), what_);
        break;
      case ConvPass::grad_filter:  // in0 = x, in1 = dy, out = dw
        XY_CUDNN(lib_, cudnnConvolutionBackwardFilter(pkg_.handle(), one, p.x, ops_.in0, p.y, ops_.in1, p.conv,
                                                      cudnnConvolutionBwdFilterAlgo_t(p.algo), ws, ws_bytes, zero,
                                                      p.w, ops_.out),
                 device(), what_);
        break;
    }
  }

  CudnnPackage& pkg_;
  const CudnnLibrary& lib_;
  ConvPass pass_;
  DType dtype_;
  const ConvShape& s_;
  const ConvOperands& ops_;
  const Context& ctx_;
  const char* what_;
  Plan* plan_ = nullptr;
};

}  // namespace

float conv_cudnn_legacy_timed_ms(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s,
                                 const ConvOperands& ops, const Context& ctx) {
  if (!fits_cudnn(s)) return std::numeric_limits<float>::infinity();
  return Engine(pkg, pass, dtype, s, ops, ctx).timed_ms();
}

bool conv_cudnn_legacy(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops,
                       const Context& ctx) {
  if (!fits_cudnn(s)) return false;
  Engine engine(pkg, pass, dtype, s, ops, ctx);
  if (!engine.has_plan()) return false;
  engine.run(dtype);
  return true;
}

}  // namespace xylem::cuda
