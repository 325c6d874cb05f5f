// nn::rnn_sequence and its gradients: whole LSTM / GRU stacks through
// cuDNN's RNN API (cudnnRNNForward, cudnnRNNBackwardData_v8,
// cudnnRNNBackwardWeights_v8), as PyTorch runs nn.LSTM and nn.GRU on CUDA.
//
// The weights arrive flat in PyTorch's parameter order; cuDNN wants its own
// packed weight space. Each call copies the flat weights into a temporary
// weight space (cudnnGetRNNWeightParams gives every matrix's and bias's
// place) and the weight gradient scatters back the same way: a few tens of
// device copies, small against the sequence's work.
//
// Gate order: cuDNN's LSTM linear layers 0-3 (input) and 4-7 (recurrent)
// are the i, f, c' (PyTorch's g), o gates; its GRU's 0-2 and 3-5 the r, z,
// h' (PyTorch's n) gates, with h' = tanh(W x + b_W + r (R h + b_R)) under
// CUDNN_RNN_DOUBLE_BIAS: PyTorch's blocks in PyTorch's order.
#include <array>
#include <climits>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../check.hpp"
#include "conv2d.hpp"
#include "cudnn_package.hpp"
#include "kernels.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::TensorArg;

// The stack's sizes, from the call's x (or y) and integers.
struct RnnShape {
  bool lstm;
  std::int64_t steps, batch, input, hidden, layers, dirs;
  [[nodiscard]] std::int64_t gates() const noexcept { return lstm ? 4 : 3; }
  [[nodiscard]] std::int64_t layer_input(std::int64_t layer) const noexcept {
    return layer == 0 ? input : dirs * hidden;
  }
};

// XYLEM_CUDA_CUDNN_RNN=0 leaves the recurrent layers on their per-step
// path: nn::rnn_sequence_reserve, which they ask first, is then unsupported.
bool rnn_disabled() noexcept {
  const char* v = std::getenv("XYLEM_CUDA_CUDNN_RNN");
  return v != nullptr && std::string_view(v) == "0";
}

[[noreturn]] void unsupported(const Context& ctx, std::string_view what, const std::string& why) {
  throw Error(ErrorCode::unsupported, "cuda:" + std::to_string(ctx.device) + " " + std::string(what) + ": " + why);
}

// Descriptors of one shape; the workspace and reserve sizes cuDNN asks for.
struct RnnPlan final : CudnnPlan {
  explicit RnnPlan(const CudnnLibrary& l) : lib(l) {}
  ~RnnPlan() override {
    // Errors ignored: destructors run at exit too.
    if (seq_lengths) (void)cudaFree(seq_lengths);
    if (rnn) (void)lib.cudnnDestroyRNNDescriptor(rnn);
    if (dropout) (void)lib.cudnnDestroyDropoutDescriptor(dropout);
    if (x) (void)lib.cudnnDestroyRNNDataDescriptor(x);
    if (y) (void)lib.cudnnDestroyRNNDataDescriptor(y);
    if (h) (void)lib.cudnnDestroyTensorDescriptor(h);
    if (m) (void)lib.cudnnDestroyTensorDescriptor(m);
    if (b) (void)lib.cudnnDestroyTensorDescriptor(b);
  }
  RnnPlan(const RnnPlan&) = delete;
  RnnPlan& operator=(const RnnPlan&) = delete;
  [[nodiscard]] bool usable() const noexcept override { return true; }

  const CudnnLibrary& lib;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr;     // h and c: [L*D, N, H]
  cudnnTensorDescriptor_t m = nullptr, b = nullptr;  // filled by cudnnGetRNNWeightParams
  std::int32_t* seq_lengths = nullptr;     // device copy of the N lengths, all T
  std::size_t workspace = 0, reserve = 0, weights = 0;
};

// Everything a plan depends on.
std::array<std::int64_t, 10> rnn_key(const RnnShape& s, DType dtype, bool tf32) {
  return {std::int64_t(s.lstm), std::int64_t(dtype), std::int64_t(tf32), s.steps, s.batch, s.input,
          s.hidden, s.layers, s.dirs, 0};
}

class RnnRun {
 public:
  RnnRun(const Context& ctx, std::string_view what, DType dtype, const RnnShape& s)
      : ctx_(ctx), what_(what), dtype_(dtype), s_(s) {
    for (std::int64_t v : {s.steps, s.batch, s.input, s.hidden, s.layers, s.dirs * s.hidden, s.layers * s.dirs})
      if (v > INT_MAX) unsupported(ctx, what, "a size past cuDNN's int range");
    pkg_ = &ctx.packages->get<CudnnPackage>(kCudnnPackage, [&] {
      return std::make_unique<CudnnPackage>(ctx.device, ctx.stream);
    });
    if (!pkg_->available()) {
      std::string why = "cuDNN unavailable";
      (void)cudnn_library(&why);
      unsupported(ctx, what, why);
    }
    pkg_->follow(ctx.stream);
    const bool tf32 = dtype == DType::f32 && conv_tf32_allowed();
    auto& plans = pkg_->rnn_plans();
    const auto key = rnn_key(s, dtype, tf32);
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, make_plan(tf32)).first;
    plan_ = static_cast<RnnPlan*>(it->second.get());
  }

  [[nodiscard]] const RnnPlan& plan() const noexcept { return *plan_; }

  // Copies the flat weights w into a weight space (weights_to) or a weight
  // space's gradient into the flat dw (weights_from).
  void weights_to(const TensorArg& w, void* space) { move_weights(w, space, true); }
  void weights_from(void* space, const TensorArg& dw) { move_weights(dw, space, false); }

  void require_reserve(const TensorArg& reserve) const {
    if (std::size_t(reserve.view.numel()) < plan_->reserve)
      throw Error(ErrorCode::invalid_argument,
                  "cuda:" + std::to_string(ctx_.device) + " " + std::string(what_) + ": reserve holds " +
                      std::to_string(reserve.view.numel()) + " bytes; cuDNN needs " + std::to_string(plan_->reserve) +
                      " (nn::rnn_sequence_reserve)");
  }

  [[nodiscard]] TempBuffer temp(std::size_t bytes) const { return ctx_.temp(std::max<std::size_t>(bytes, 1)); }
  [[nodiscard]] const CudnnLibrary& lib() const noexcept { return pkg_->lib(); }
  [[nodiscard]] cudnnHandle_t handle() const noexcept { return pkg_->handle(); }
  [[nodiscard]] int device() const noexcept { return ctx_.device; }
  [[nodiscard]] std::string_view what() const noexcept { return what_; }

 private:
  std::unique_ptr<RnnPlan> make_plan(bool tf32) {
    const CudnnLibrary& l = pkg_->lib();
    const int dev = ctx_.device;
    auto p = std::make_unique<RnnPlan>(l);
    const cudnnDataType_t data = dtype_ == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    // As PyTorch: TF32 tensor cores for f32 unless turned off (the
    // convolutions' XYLEM_CUDA_CONV_TF32 policy), plain FMA otherwise.
    const cudnnMathType_t math = dtype_ == DType::f32 && !tf32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    XY_CUDNN(l, cudnnCreateDropoutDescriptor(&p->dropout), dev, what_);
    // No dropout: cuDNN then needs no generator states.
    XY_CUDNN(l, cudnnSetDropoutDescriptor(p->dropout, pkg_->handle(), 0.0f, nullptr, 0, 0), dev, what_);
    XY_CUDNN(l, cudnnCreateRNNDescriptor(&p->rnn), dev, what_);
    XY_CUDNN(l,
             cudnnSetRNNDescriptor_v8(p->rnn, CUDNN_RNN_ALGO_STANDARD, s_.lstm ? CUDNN_LSTM : CUDNN_GRU,
                                      CUDNN_RNN_DOUBLE_BIAS, s_.dirs == 2 ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL,
                                      CUDNN_LINEAR_INPUT, data, data, math, std::int32_t(s_.input),
                                      std::int32_t(s_.hidden), std::int32_t(s_.hidden), std::int32_t(s_.layers),
                                      p->dropout, CUDNN_RNN_PADDED_IO_DISABLED),
             dev, what_);
    const std::vector<int> lengths(std::size_t(s_.batch), int(s_.steps));
    XY_CUDNN(l, cudnnCreateRNNDataDescriptor(&p->x), dev, what_);
    XY_CUDNN(l,
             cudnnSetRNNDataDescriptor(p->x, data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, int(s_.steps),
                                       int(s_.batch), int(s_.input), lengths.data(), nullptr),
             dev, what_);
    XY_CUDNN(l, cudnnCreateRNNDataDescriptor(&p->y), dev, what_);
    XY_CUDNN(l,
             cudnnSetRNNDataDescriptor(p->y, data, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, int(s_.steps),
                                       int(s_.batch), int(s_.dirs * s_.hidden), lengths.data(), nullptr),
             dev, what_);
    const int state_dims[3] = {int(s_.layers * s_.dirs), int(s_.batch), int(s_.hidden)};
    const int state_strides[3] = {int(s_.batch * s_.hidden), int(s_.hidden), 1};
    XY_CUDNN(l, cudnnCreateTensorDescriptor(&p->h), dev, what_);
    XY_CUDNN(l, cudnnSetTensorNdDescriptor(p->h, data, 3, state_dims, state_strides), dev, what_);
    XY_CUDNN(l, cudnnCreateTensorDescriptor(&p->m), dev, what_);
    XY_CUDNN(l, cudnnCreateTensorDescriptor(&p->b), dev, what_);
    XY_CUDNN(l,
             cudnnGetRNNTempSpaceSizes(pkg_->handle(), p->rnn, CUDNN_FWD_MODE_TRAINING, p->x, &p->workspace,
                                       &p->reserve),
             dev, what_);
    XY_CUDNN(l, cudnnGetRNNWeightSpaceSize(pkg_->handle(), p->rnn, &p->weights), dev, what_);
    // The kernels read the lengths asynchronously, so they live as long as
    // the plan; the plan is made once per shape.
    const std::size_t bytes = lengths.size() * sizeof(std::int32_t);
    XY_CUDA(cudaMalloc(reinterpret_cast<void**>(&p->seq_lengths), bytes), dev, "nn::rnn_sequence lengths");
    XY_CUDA(cudaMemcpy(p->seq_lengths, lengths.data(), bytes, cudaMemcpyHostToDevice), dev,
            "nn::rnn_sequence lengths");
    return p;
  }

  // The number of elements of a descriptor cudnnGetRNNWeightParams filled.
  std::int64_t elements(cudnnTensorDescriptor_t d) const {
    cudnnDataType_t type;
    int rank = 0, dims[8] = {}, strides[8] = {};
    XY_CUDNN(lib(), cudnnGetTensorNdDescriptor(d, 8, &type, &rank, dims, strides), ctx_.device, what_);
    std::int64_t n = 1;
    for (int k = 0; k < rank; ++k) n *= dims[k];
    return n;
  }

  // One copy between the flat layout (at element `flat`) and cuDNN's
  // (`place`), `count` elements, checked against what cuDNN says it holds.
  void copy(char* flat_base, std::int64_t flat, void* place, std::int64_t count, std::int64_t cudnn_count,
            bool into_space) {
    if (count != cudnn_count || place == nullptr)
      throw Error(ErrorCode::internal, "cuda:" + std::to_string(ctx_.device) + " " + std::string(what_) +
                                           ": cuDNN's weight space holds " + std::to_string(cudnn_count) +
                                           " elements where PyTorch's layout has " + std::to_string(count));
    const std::size_t size = size_of(dtype_);
    char* f = flat_base + flat * std::int64_t(size);
    XY_CUDA(cudaMemcpyAsync(into_space ? place : f, into_space ? f : place, std::size_t(count) * size,
                            cudaMemcpyDeviceToDevice, ctx_.stream),
            ctx_.device, "nn::rnn_sequence weights");
  }

  void move_weights(const TensorArg& flat_arg, void* space, bool into_space) {
    char* flat = static_cast<char*>(flat_arg.data) + flat_arg.view.offset() * std::int64_t(size_of(dtype_));
    const std::int64_t g = s_.gates(), h = s_.hidden;
    std::int64_t base = 0;  // of the layer and direction's four parameters
    for (std::int64_t layer = 0; layer < s_.layers; ++layer) {
      const std::int64_t in = s_.layer_input(layer);
      for (std::int64_t dir = 0; dir < s_.dirs; ++dir) {
        const std::int64_t w_ih = base, w_hh = w_ih + g * h * in, b_ih = w_hh + g * h * h, b_hh = b_ih + g * h;
        for (std::int64_t id = 0; id < 2 * g; ++id) {
          void* m = nullptr;
          void* b = nullptr;
          XY_CUDNN(lib(),
                   cudnnGetRNNWeightParams(handle(), plan_->rnn, std::int32_t(layer * s_.dirs + dir), plan_->weights,
                                           space, std::int32_t(id), plan_->m, &m, plan_->b, &b),
                   ctx_.device, what_);
          const bool recurrent = id >= g;
          const std::int64_t q = recurrent ? id - g : id;  // the gate
          const std::int64_t cols = recurrent ? h : in;
          copy(flat, (recurrent ? w_hh : w_ih) + q * h * cols, m, h * cols, elements(plan_->m), into_space);
          copy(flat, (recurrent ? b_hh : b_ih) + q * h, b, h, elements(plan_->b), into_space);
        }
        base = b_hh + g * h;
      }
    }
    if (base != flat_arg.view.numel())
      throw Error(ErrorCode::internal, "cuda:" + std::to_string(ctx_.device) + " " + std::string(what_) +
                                           ": the flat weights hold " + std::to_string(flat_arg.view.numel()) +
                                           " elements; the stack has " + std::to_string(base));
  }

  const Context& ctx_;
  std::string_view what_;
  DType dtype_;
  RnnShape s_;
  CudnnPackage* pkg_ = nullptr;
  RnnPlan* plan_ = nullptr;
};

template <class A>
RnnShape shape_of(const A& a, const TensorArg& seq, std::int64_t input) {
  return {a.mode == 0,
          seq.view.dim(0),
          seq.view.dim(1),
          input,
          a.hidden,
          a.layers,
          a.bidirectional ? 2 : 1};
}

// Where a tensor's first element lives.
void* at(const TensorArg& t) {
  return static_cast<char*>(t.data) + t.view.offset() * std::int64_t(size_of(t.dtype));
}
// State s (0: h, 1: c) of a states tensor [S, L*D, N, H].
void* state(const TensorArg& t, int s) {
  const std::int64_t per = t.view.numel() / t.view.dim(0);
  return static_cast<char*>(at(t)) + s * per * std::int64_t(size_of(t.dtype));
}

// The weight space, holding the flat weights w, and the workspace of a
// forward or data-gradient call, after checking its reserve.
struct Spaces {
  TempBuffer weights, work;
};
Spaces spaces_for(RnnRun& run, const TensorArg& reserve, const TensorArg& w) {
  run.require_reserve(reserve);
  Spaces spaces{run.temp(run.plan().weights), run.temp(run.plan().workspace)};
  run.weights_to(w, spaces.weights.get());
  return spaces;
}

void reserve_size(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence_reserve>(c);
  // Asked here alone: a stack whose forward ran can always run its gradients.
  if (rnn_disabled()) unsupported(ctx, "nn::rnn_sequence_reserve", "disabled by XYLEM_CUDA_CUDNN_RNN=0");
  RnnRun run(ctx, "nn::rnn_sequence_reserve", a.x.dtype, shape_of(a, a.x, a.x.view.dim(2)));
  const std::int64_t bytes = std::int64_t(run.plan().reserve);
  // From pageable memory the copy is staged before the call returns, so the
  // local may go.
  XY_CUDA(cudaMemcpyAsync(at(a.bytes), &bytes, sizeof bytes, cudaMemcpyHostToDevice, ctx.stream), ctx.device,
          "nn::rnn_sequence_reserve");
}

void forward(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence>(c);
  const RnnShape s = shape_of(a, a.x, a.x.view.dim(2));
  RnnRun run(ctx, "nn::rnn_sequence", a.x.dtype, s);
  const RnnPlan& p = run.plan();
  const Spaces spaces = spaces_for(run, a.reserve, a.w);
  void* const weights = spaces.weights.get();
  void* const work = spaces.work.get();
  XY_CUDNN(run.lib(),
           cudnnRNNForward(run.handle(), p.rnn, CUDNN_FWD_MODE_TRAINING, p.seq_lengths, p.x, at(a.x), p.y, at(a.y),
                           p.h, state(a.states, 0), state(a.states_out, 0), p.h,
                           s.lstm ? state(a.states, 1) : nullptr, s.lstm ? state(a.states_out, 1) : nullptr, p.weights,
                           weights, p.workspace, work, p.reserve, at(a.reserve)),
           ctx.device, run.what());
}

void grad_data(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence_grad_data>(c);
  const RnnShape s = shape_of(a, a.y, a.dx.view.dim(2));
  RnnRun run(ctx, "nn::rnn_sequence_grad_data", a.y.dtype, s);
  const RnnPlan& p = run.plan();
  const Spaces spaces = spaces_for(run, a.reserve, a.w);
  void* const weights = spaces.weights.get();
  void* const work = spaces.work.get();
  XY_CUDNN(run.lib(),
           cudnnRNNBackwardData_v8(run.handle(), p.rnn, p.seq_lengths, p.y, at(a.y), at(a.dy), p.x, at(a.dx), p.h,
                                   state(a.states, 0), state(a.dstates_out, 0), state(a.dstates, 0), p.h,
                                   s.lstm ? state(a.states, 1) : nullptr, s.lstm ? state(a.dstates_out, 1) : nullptr,
                                   s.lstm ? state(a.dstates, 1) : nullptr, p.weights, weights, p.workspace, work,
                                   p.reserve, at(a.reserve)),
           ctx.device, run.what());
}

void grad_weights(const OpCall& c, const Context& ctx) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence_grad_weights>(c);
  const RnnShape s = shape_of(a, a.x, a.x.view.dim(2));
  RnnRun run(ctx, "nn::rnn_sequence_grad_weights", a.x.dtype, s);
  run.require_reserve(a.reserve);
  const RnnPlan& p = run.plan();
  TempBuffer dweights = run.temp(p.weights), work = run.temp(p.workspace);
  // CUDNN_WGRAD_MODE_ADD adds into the space: it starts from zeros.
  XY_CUDA(cudaMemsetAsync(dweights.get(), 0, p.weights, ctx.stream), ctx.device, "nn::rnn_sequence_grad_weights");
  XY_CUDNN(run.lib(),
           cudnnRNNBackwardWeights_v8(run.handle(), p.rnn, CUDNN_WGRAD_MODE_ADD, p.seq_lengths, p.x, at(a.x), p.h,
                                      state(a.states, 0), p.y, at(a.y), p.weights, dweights.get(), p.workspace,
                                      work.get(), p.reserve, at(a.reserve)),
           ctx.device, run.what());
  run.weights_from(dweights.get(), a.dw);
}

}  // namespace

void register_rnn_cudnn(KernelTable& table) {
  for (DType d : {DType::f32, DType::f64}) {
    table.set(plugin::OpId::nn_rnn_sequence_reserve, d, &reserve_size);
    table.set(plugin::OpId::nn_rnn_sequence, d, &forward);
    table.set(plugin::OpId::nn_rnn_sequence_grad_data, d, &grad_data);
    table.set(plugin::OpId::nn_rnn_sequence_grad_weights, d, &grad_weights);
  }
}

}  // namespace xylem::cuda
