// The cuDNN graph-API convolution engine (see cudnn_package.hpp).
//
// Why a second engine: cuDNN 9's legacy functions reach only the engines
// behind the old algorithm enums, while its graph API ranks every engine
// configuration it has for the shape. PyTorch calls the graph API; on the
// H100, for 64x64x56x56 3x3 f32, the legacy heuristics' choice ran at
// 0.93x of PyTorch's.
//
// A convolution pass is a graph of one operation. The first call of a shape
// asks cuDNN's heuristics (mode A, PyTorch's choice with cudnn.benchmark
// off; then the fallback list) for engine configurations, drops those whose
// numerics the call does not allow (inputs converted down; TF32 tensor cores
// for f32 when XYLEM_CUDA_CONV_TF32=0), and keeps the first that builds into
// an execution plan within the workspace limit. With XYLEM_CUDA_CUDNN_FIND=1
// the buildable candidates are timed on the call's own tensors instead
// (cudnn.benchmark on), which writes only the output. Later calls of the
// shape only enqueue the plan.
//
// nn::conv2d_epilogue's forward pass is the same graph with the tail's
// pointwise operations after the convolution (cudnn_tail.hpp), whose
// result is then a virtual f32 tensor: cuDNN's runtime fusion applies the
// tail in the convolution kernel's epilogue. On the H100, 64x64x56x56 3x3
// bias + ReLU, NCHW: f32 (TF32) 0.174 ms fused against 0.143 + 0.050 for
// the convolution and a separate pass; bf16 0.118 against 0.094 + 0.044.
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../check.hpp"
#include "cudnn_graph.hpp"
#include "cudnn_package.hpp"
#include "xylem/error.hpp"

namespace xylem::cuda {
namespace {

// How many buildable candidates of each heuristics list
// XYLEM_CUDA_CUDNN_FIND times (PyTorch's default cudnn.benchmark_limit).
constexpr int kMaxTimed = 10;

using Descriptor = CudnnDescriptor;

// A CUDA event with timing, for XYLEM_CUDA_CUDNN_FIND, destroyed with its owner.
class TimingEvent {
 public:
  TimingEvent(int device, const char* what) { XY_CUDA(cudaEventCreate(&e_), device, what); }
  ~TimingEvent() { (void)cudaEventDestroy(e_); }  // errors ignored: see Descriptor
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  [[nodiscard]] cudaEvent_t get() const noexcept { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

struct GraphPlan final : CudnnPlan {
  std::optional<Descriptor> plan;  // none: no engine takes the shape
  std::int64_t workspace = 0;
  std::string why_not;             // when there is no plan
  float timed_ms = std::numeric_limits<float>::infinity();  // the plan's time when candidates were timed
  [[nodiscard]] bool usable() const noexcept override { return plan.has_value(); }
};

// The operation's attributes of one pass; operands in the op's argument
// order (conv2d.hpp): forward (x, w -> y), grad_data (dy, w -> dx),
// grad_filter (x, dy -> dw).
struct PassAttributes {
  cudnnBackendDescriptorType_t op;
  cudnnBackendAttributeName_t alpha, beta, conv, in0, in1, out;
};

PassAttributes attributes_of(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,          CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,             CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
    case ConvPass::grad_data:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX};
    case ConvPass::grad_filter:
      break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW};
}

struct Dims {
  std::int64_t v[4];
};

// Operand sizes in argument order (see PassAttributes).
void operand_dims(ConvPass pass, const ConvShape& s, Dims (&out)[3]) {
  const Dims image{{s.N, s.C, s.H, s.W}}, filter{{s.K, s.C / s.groups, s.R, s.S}}, result{{s.N, s.K, s.P, s.Q}};
  switch (pass) {
    case ConvPass::forward: out[0] = image, out[1] = filter, out[2] = result; break;
    case ConvPass::grad_data: out[0] = result, out[1] = filter, out[2] = image; break;
    case ConvPass::grad_filter: out[0] = image, out[1] = result, out[2] = filter; break;
  }
}

class GraphEngine {
 public:
  // `tail`: the forward pass's elementwise tail, fused in (ops.out is y0).
  GraphEngine(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops,
              const Context& ctx, const ConvTail* tail = nullptr)
      : pkg_(pkg), lib_(pkg.lib()), pass_(pass), dtype_(dtype), s_(s), ops_(ops), ctx_(ctx),
        what_(tail ? "nn::conv2d_epilogue" : conv_what(pass)), tail_(tail) {}

  // The shape's plan, made on first use.
  GraphPlan& plan() {
    const bool tf32 = dtype_ == DType::f32 && conv_tf32_allowed();
    const bool timed = cudnn_find_wanted(ops_);
    const CudnnKey key = cudnn_key(CudnnApi::graph, pass_, dtype_, s_, tf32, timed, ops_);
    if (tail_) {
      auto& plans = pkg_.epilogue_plans();
      const std::vector<std::int64_t> with_tail = tail_key(key);
      auto it = plans.find(with_tail);
      if (it == plans.end()) it = plans.emplace(with_tail, make_plan(tf32, timed)).first;
      return static_cast<GraphPlan&>(*it->second);
    }
    auto& plans = pkg_.plans();
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, make_plan(tf32, timed)).first;
    return static_cast<GraphPlan&>(*it->second);
  }

  void run(const GraphPlan& p) {
    TempBuffer workspace = ctx_.temp(std::max<std::size_t>(std::size_t(p.workspace), 1));
    execute(p.plan->get(), workspace.get());
  }

 private:
  int device() const { return ctx_.device; }

  Descriptor make(cudnnBackendDescriptorType_t type) const { return calls_.make(type); }
  void set(const Descriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values) const {
    calls_.set(d, name, type, count, values);
  }
  void finalize(const Descriptor& d) const { calls_.finalize(d); }

  // A dense tensor of the call's dtype at `data`, or (data null) the
  // virtual f32 result a tail reads.
  Descriptor tensor(std::int64_t uid, const Dims& dims, const void* data) const {
    const std::int64_t strides[4] = {dims.v[1] * dims.v[2] * dims.v[3], dims.v[2] * dims.v[3], dims.v[3], 1};
    const bool is_virtual = data == nullptr;
    const cudnnDataType_t type = is_virtual ? CUDNN_DATA_FLOAT : cudnn_data_type(dtype_);
    return calls_.tensor(uid, type, dims.v, strides, is_virtual ? 16 : alignment_of(data), is_virtual);
  }

  // The plan key of a fused call: the convolution's, then the program and
  // every tail tensor's type, shape and alignment.
  std::vector<std::int64_t> tail_key(const CudnnKey& key) const {
    std::vector<std::int64_t> k(std::begin(key.v), std::end(key.v));
    k.insert(k.end(), tail_->words.begin(), tail_->words.end());
    const auto add = [&](const TailTensor& t) {
      k.push_back(std::int64_t(t.dtype));
      k.insert(k.end(), t.dims.begin(), t.dims.end());
      k.insert(k.end(), t.strides.begin(), t.strides.end());
      k.push_back(t.alignment);
    };
    for (const std::optional<TailTensor>& t : tail_->inputs) {
      k.push_back(t.has_value());
      if (t) add(*t);
    }
    add(tail_->y0);
    return k;
  }

  Descriptor convolution() const {
    // f16 and bf16 accumulate in f32; f64 computes in f64.
    const cudnnDataType_t compute = dtype_ == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const std::int64_t spatial = 2, dilations[2] = {s_.dil_h, s_.dil_w}, strides[2] = {s_.stride_h, s_.stride_w},
                       padding[2] = {s_.pad_h, s_.pad_w};
    Descriptor c = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilations);
    set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
    set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
    set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
    finalize(c);
    return c;
  }

  // The operation graph, or none when cuDNN's graph API cannot express the
  // shape (a data type or size it does not take), in which case `why` says so.
  std::optional<Descriptor> graph(std::string& why) const {
    try {
      return build_graph(why);
    } catch (const Error& e) {
      // Descriptors cuDNN refuses (a size or type its graph API does not
      // take): the legacy engine may still serve the shape.
      if (e.code() != ErrorCode::invalid_argument && e.code() != ErrorCode::unsupported) throw;
      why = e.what();
      return std::nullopt;
    }
  }

  std::optional<Descriptor> build_graph(std::string& why) const {
    Dims dims[3];
    operand_dims(pass_, s_, dims);
    // With a tail, the convolution's result is virtual (uid 4); the tail
    // writes y0 (uid 3).
    const Descriptor in0 = tensor(1, dims[0], ops_.in0), in1 = tensor(2, dims[1], ops_.in1),
                     out = tail_ ? tensor(4, dims[2], nullptr) : tensor(3, dims[2], ops_.out);
    const Descriptor conv = convolution();
    const PassAttributes a = attributes_of(pass_);
    Descriptor op = make(a.op);
    const double alpha64 = 1, beta64 = 0;
    const float alpha32 = 1, beta32 = 0;
    const bool f64 = dtype_ == DType::f64;
    const cudnnBackendAttributeType_t scale_type = f64 ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
    set(op, a.alpha, scale_type, 1, f64 ? static_cast<const void*>(&alpha64) : &alpha32);
    set(op, a.beta, scale_type, 1, f64 ? static_cast<const void*>(&beta64) : &beta32);
    const cudnnBackendDescriptor_t conv_d = conv.get(), in0_d = in0.get(), in1_d = in1.get(), out_d = out.get();
    set(op, a.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_d);
    set(op, a.in0, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &in0_d);
    set(op, a.in1, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &in1_d);
    set(op, a.out, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &out_d);
    if (!tail_) return calls_.graph(pkg_.handle(), {op.get()}, why);
    const std::array<std::int64_t, 4> result{dims[2].v[0], dims[2].v[1], dims[2].v[2], dims[2].v[3]};
    const std::optional<CudnnTail> tail = cudnn_tail(calls_, out_d, result, tail_->words, tail_->inputs, tail_->y0, why);
    if (!tail) return std::nullopt;
    std::vector<cudnnBackendDescriptor_t> ops{op.get()};
    ops.insert(ops.end(), tail->ops.begin(), tail->ops.end());
    return calls_.graph(pkg_.handle(), ops, why);
  }

  // Whether the configuration's numerics suit the call, as PyTorch decides:
  // never inputs converted to a narrower type; for f32 no tensor cores (TF32)
  // unless allowed.
  bool numerics_allowed(const Descriptor& config, bool tf32) const {
    Descriptor engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendDescriptor_t engine_d = engine.get();
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    std::int64_t n = 0;
    // A configuration whose notes cannot be read is not taken: its numerics are unknown.
    if (lib_.cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                      &engine_d) != CUDNN_STATUS_SUCCESS ||
        lib_.cudnnBackendGetAttribute(engine.get(), CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                      CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes) != CUDNN_STATUS_SUCCESS)
      return false;
    for (std::int64_t i = 0; i < std::min<std::int64_t>(n, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i) {
      if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
      if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && dtype_ == DType::f32 && !tf32) return false;
    }
    return true;
  }

  std::unique_ptr<GraphPlan> make_plan(bool tf32, bool timed) const {
    auto result = std::make_unique<GraphPlan>();
    const std::optional<Descriptor> g = graph(result->why_not);
    if (!g) return result;
    // Untimed, the first buildable configuration of the heuristics' list
    // wins, the fallback list serving only when that list has none. Timed,
    // candidates come from both lists (up to kMaxTimed from each), as
    // PyTorch's benchmark mode takes them: the fallback list holds engines of
    // reduced arithmetic (Winograd, FFT) that mode A may not rank, which in
    // full f32 can beat every direct engine on large 3x3 convolutions.
    std::vector<std::pair<Descriptor, std::int64_t>> built;  // plans and their workspaces
    std::size_t from_heuristics = 0;                          // how many of them mode A listed
    for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      const std::size_t before = built.size();
      for (const Descriptor& config : calls_.configurations(*g, mode)) {
        if (built.size() - before == std::size_t(timed ? kMaxTimed : 1)) break;
        if (!numerics_allowed(config, tf32)) continue;
        std::int64_t workspace = 0;
        if (std::optional<Descriptor> plan = calls_.build(pkg_.handle(), config, workspace, kMaxCudnnWorkspace)) built.emplace_back(std::move(*plan), workspace);
      }
      if (mode == CUDNN_HEUR_MODE_A) from_heuristics = built.size();
      if (!timed && !built.empty()) break;
    }
    if (built.empty()) {
      result->why_not = "no engine configuration builds for this shape";
      return result;
    }
    const std::size_t best = timed ? fastest(built, from_heuristics, result->timed_ms) : 0;
    result->workspace = built[best].second;
    result->plan.emplace(std::move(built[best].first));
    return result;
  }

  // Index of the fastest plan, timed on the call's tensors (each once to
  // warm up, then the best of three); blocks the host, once per shape.
  // With cudnn_log_wanted() each candidate's time goes to stderr, naming
  // the list it came from (the first `from_heuristics` are mode A's).
  std::size_t fastest(const std::vector<std::pair<Descriptor, std::int64_t>>& plans, std::size_t from_heuristics,
                      float& best_ms) const {
    const bool log = cudnn_log_wanted();
    std::int64_t most = 0;
    for (const auto& p : plans) most = std::max(most, p.second);
    TempBuffer workspace = ctx_.temp(std::max<std::size_t>(std::size_t(most), 1));
    const TimingEvent start(device(), what_), stop(device(), what_);
    std::size_t best = 0;
    best_ms = std::numeric_limits<float>::infinity();
    for (std::size_t i = 0; i < plans.size(); ++i) {
      execute(plans[i].first.get(), workspace.get());
      float plan_ms = std::numeric_limits<float>::infinity();
      for (int rep = 0; rep < 3; ++rep) {
        XY_CUDA(cudaEventRecord(start.get(), ctx_.stream), device(), what_);
        execute(plans[i].first.get(), workspace.get());
        XY_CUDA(cudaEventRecord(stop.get(), ctx_.stream), device(), what_);
        XY_CUDA(cudaEventSynchronize(stop.get()), device(), what_);
        float ms = 0;
        XY_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()), device(), what_);
        plan_ms = std::min(plan_ms, ms);
      }
      if (plan_ms < best_ms) best_ms = plan_ms, best = i;
      if (log)
        std::fprintf(stderr, "xylem cudnn find: %s N%lld C%lld H%lld W%lld K%lld R%lld %s #%zu: %.3f ms, workspace %lld\n",
                     what_, (long long)s_.N, (long long)s_.C, (long long)s_.H, (long long)s_.W, (long long)s_.K,
                     (long long)s_.R, i < from_heuristics ? "heuristics" : "fallback",
                     i < from_heuristics ? i : i - from_heuristics, double(plan_ms), (long long)plans[i].second);
    }
    if (log) std::fprintf(stderr, "xylem cudnn find: %s took #%zu of %zu\n", what_, best, plans.size());
    return best;
  }

  void execute(cudnnBackendDescriptor_t plan, void* workspace) const {
    std::int64_t uids[6] = {1, 2, 3};
    void* pointers[6] = {const_cast<void*>(ops_.in0), const_cast<void*>(ops_.in1), ops_.out};
    std::int64_t count = 3;
    for (std::size_t k = 0; tail_ && k < tail_->inputs.size(); ++k) {
      if (!tail_->inputs[k]) continue;
      uids[count] = kTailInputUid + std::int64_t(k) + 1;
      pointers[count++] = const_cast<void*>(tail_->input_data[k]);
    }
    calls_.execute(pkg_.handle(), plan, count, uids, pointers, workspace);
  }

  CudnnPackage& pkg_;
  const CudnnLibrary& lib_;
  ConvPass pass_;
  DType dtype_;
  const ConvShape& s_;
  const ConvOperands& ops_;
  const Context& ctx_;
  const char* what_;
  const ConvTail* tail_;
  CudnnGraphCalls calls_{lib_, ctx_.device, what_};
};

// Runs the engine's plan, made on first use; false (nothing run) where it
// has none, with why.
bool run_planned(GraphEngine& engine, std::string* why_not) {
  const GraphPlan& plan = engine.plan();
  if (!plan.usable()) {
    if (why_not) *why_not = plan.why_not;
    return false;
  }
  engine.run(plan);
  return true;
}

}  // namespace

float conv_cudnn_graph_timed_ms(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s,
                                const ConvOperands& ops, const Context& ctx) {
  GraphEngine engine(pkg, pass, dtype, s, ops, ctx);
  return engine.plan().timed_ms;
}

bool conv_cudnn_fused(DType dtype, const ConvShape& s, const ConvOperands& ops, const ConvTail& tail,
                      const Context& ctx, std::string* why_not) {
  auto& pkg = ctx.packages->get<CudnnPackage>(kCudnnPackage, [&] {
    return std::make_unique<CudnnPackage>(ctx.device, ctx.stream);
  });
  if (!pkg.available()) {
    if (why_not) *why_not = "cuDNN is not available";
    return false;
  }
  pkg.follow(ctx.stream);
  GraphEngine engine(pkg, ConvPass::forward, dtype, s, ops, ctx, &tail);
  return run_planned(engine, why_not);
}

bool conv_cudnn_graph(CudnnPackage& pkg, ConvPass pass, DType dtype, const ConvShape& s, const ConvOperands& ops,
                      const Context& ctx, std::string* why_not) {
  GraphEngine engine(pkg, pass, dtype, s, ops, ctx);
  return run_planned(engine, why_not);
}

}  // namespace xylem::cuda
