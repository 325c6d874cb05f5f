// nn::attention and nn::attention_grad through cuDNN's fused attention (see
// attention_cudnn.hpp): what PyTorch's cuDNN backend runs on the H100, and
// what makes its SDPA there twice as fast as its own flash kernel.
//
// Two graphs, each built once per layout and kept as a plan:
// - forward: the composite graph cuDNN recognises and fuses into one flash
//   kernel: S = Q K^T * scale, when causal the keys past the query's row
//   replaced by the lowest float, softmax with its statistics
//   (max + log(sum exp)), O = P V. (cuDNN 9.13's single attention
//   operation runs the same kernel, but calls of it left the H100 idle
//   between kernels: bf16 [8, 16, 4096, 128] at 0.93x of PyTorch's time,
//   this graph at 1.01x.)
// - backward: that graph's gradient, as cuDNN fuses it: dV = P^T dO,
//   dS = P * (dO V^T - rowsum(dO * O)) * scale, dK = dS^T Q, dQ = dS K, with
//   P recomputed from the statistics; dQ accumulates in f32 (a workspace).
// The statistics are nn::attention's lse: the logsumexp of each row's
// scaled scores, natural log, f32 [B, H, Sq, 1], so either forward serves
// either backward. K and V enter as their transposes, views of the same
// memory with the last two dims and strides swapped.
#include <array>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "attention_cudnn.hpp"
#include "cudnn_graph.hpp"
#include "cudnn_package.hpp"

namespace xylem::cuda {
namespace {

using plugin::TensorArg;

// Up to cuDNN 9.15 the backward needs a padding-mask workaround for key
// counts that are not multiples of 128, which this file does not build.
constexpr std::size_t kRaggedKeysVersion = 91600;

bool turned_off() noexcept {
  const char* v = std::getenv("XYLEM_CUDA_CUDNN_ATTENTION");
  return v != nullptr && std::string_view(v) == "0";
}

struct AttentionPlan final : CudnnPlan {
  std::optional<CudnnDescriptor> plan;  // none: cuDNN does not take the layout
  std::int64_t workspace = 0;
  [[nodiscard]] bool usable() const noexcept override { return plan.has_value(); }
};

// The address of a view's first element.
template <class T>
T* first(const TensorArg& t) noexcept {
  return static_cast<T*>(t.data) + t.view.offset();
}

using Dims = std::array<std::int64_t, 4>;

Dims dims_of(const TensorArg& t) {
  const auto d = t.view.dims();
  return {d[0], d[1], d[2], d[3]};
}
Dims strides_of(const TensorArg& t) {
  const auto s = t.view.strides();
  return {s[0], s[1], s[2], 1};
}
Dims packed(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }
// The last two axes swapped: K^T from K, with no copy.
Dims swapped(Dims d) {
  std::swap(d[2], d[3]);
  return d;
}

// Whether an operand lies on 16 bytes with row, head and batch strides of
// whole 16-byte vectors: what cuDNN's attention kernels load.
bool vector_aligned(const TensorArg& t) {
  if (alignment_of(first<const std::uint16_t>(t)) != 16) return false;
  const auto s = t.view.strides();
  return s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0;
}

// A graph under construction: its tensors and operations, kept alive until
// the plan is built (cuDNN copies what it needs into the graph).
class GraphBuilder {
 public:
  GraphBuilder(const CudnnLibrary& lib, int device, const char* what) : calls_(lib, device, what) {}

  [[nodiscard]] const CudnnGraphCalls& calls() const noexcept { return calls_; }

  // A tensor the caller binds (uid below 100), or one by value (a scalar
  // the variant pack points to on the host).
  cudnnBackendDescriptor_t tensor(std::int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides,
                                  bool by_value = false) {
    return make_tensor(uid, type, dims, strides, false, by_value);
  }
  cudnnBackendDescriptor_t scalar(std::int64_t uid) { return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, true); }
  // An intermediate cuDNN keeps in registers or shared memory.
  cudnnBackendDescriptor_t temp(cudnnDataType_t type, const Dims& dims) {
    return make_tensor(next_uid_++, type, dims, packed(dims), true, false);
  }
  cudnnBackendDescriptor_t temp(cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    return make_tensor(next_uid_++, type, dims, strides, true, false);
  }

  // y = mode(x, b) (b may be null), or for BINARY_SELECT y = t ? x : b;
  // GEN_INDEX writes the index along `axis`.
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t t = nullptr,
                                     cudnnDataType_t precision = CUDNN_DATA_FLOAT, std::int64_t axis = -1) {
    const CudnnDescriptor& p = keep(calls_.make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
    calls_.set(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    calls_.set(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    if (axis >= 0) calls_.set(p, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    calls_.finalize(p);
    const CudnnDescriptor& op = operation(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, {p.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, {x});
    if (b != nullptr) calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, {b});
    calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, {y});
    if (t != nullptr) calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, {t});
    return y;
  }
  // y = the reduction of x over the axes where y has size 1.
  cudnnBackendDescriptor_t reduce(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    const CudnnDescriptor& r = keep(calls_.make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR));
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    calls_.set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    calls_.set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    calls_.finalize(r);
    const CudnnDescriptor& op = operation(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    calls_.set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, {x});
    calls_.set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, {y});
    calls_.set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, {r.get()});
    return y;
  }
  // c = a b over the last two axes, in f32.
  cudnnBackendDescriptor_t matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    const CudnnDescriptor& m = keep(calls_.make(CUDNN_BACKEND_MATMUL_DESCRIPTOR));
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    calls_.set(m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
    calls_.finalize(m);
    const CudnnDescriptor& op = operation(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    calls_.set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, {a});
    calls_.set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, {b});
    calls_.set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, {c});
    calls_.set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, {m.get()});
    return c;
  }
  // y: x's elements under another layout (a transpose).
  cudnnBackendDescriptor_t reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    const CudnnDescriptor& op = operation(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    calls_.set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, {x});
    calls_.set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, {y});
    return y;
  }
  // An operation the caller fills in (cuDNN's fused attention).
  const CudnnDescriptor& operation(cudnnBackendDescriptorType_t type) {
    const CudnnDescriptor& op = keep(calls_.make(type));
    ops_.push_back(op.get());
    return op;
  }

  // The first plan of cuDNN's heuristics that builds, or none.
  std::unique_ptr<AttentionPlan> plan(cudnnHandle_t handle) const {
    auto result = std::make_unique<AttentionPlan>();
    std::string why;
    const std::optional<CudnnDescriptor> graph = calls_.graph(handle, ops_, why);
    if (!graph) return result;
    for (const CudnnDescriptor& config : calls_.configurations(*graph, CUDNN_HEUR_MODE_A)) {
      if (std::optional<CudnnDescriptor> built = calls_.build(handle, config, result->workspace, kMaxCudnnWorkspace)) {
        result->plan.emplace(std::move(*built));
        break;
      }
    }
    return result;
  }

 private:
  const CudnnDescriptor& keep(CudnnDescriptor d) { return *held_.emplace_back(std::make_unique<CudnnDescriptor>(std::move(d))); }

  cudnnBackendDescriptor_t make_tensor(std::int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides,
                                       bool is_virtual, bool by_value) {
    const std::int64_t d[4] = {dims[0], dims[1], dims[2], dims[3]}, s[4] = {strides[0], strides[1], strides[2], strides[3]};
    return keep(calls_.tensor(uid, type, d, s, 16, is_virtual, by_value)).get();
  }

  CudnnGraphCalls calls_;
  std::vector<std::unique_ptr<CudnnDescriptor>> held_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::int64_t next_uid_ = 100;  // intermediates; operands below
};

constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;

// S [B, H, Sq, Sk] with the keys past each query's row (j > i) replaced by
// the lowest float, as cuDNN's fused kernels recognise a causal mask.
cudnnBackendDescriptor_t causal_mask(GraphBuilder& g, cudnnBackendDescriptor_t s, const Dims& scores,
                                     cudnnBackendDescriptor_t lowest) {
  const cudnnBackendDescriptor_t row = g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, g.temp(CUDNN_DATA_INT32, scores),
                                                   nullptr, CUDNN_DATA_INT32, 2);
  const cudnnBackendDescriptor_t col = g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, nullptr, g.temp(CUDNN_DATA_INT32, scores),
                                                   nullptr, CUDNN_DATA_INT32, 3);
  const cudnnBackendDescriptor_t keep =
      g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, g.temp(CUDNN_DATA_BOOLEAN, scores), nullptr, CUDNN_DATA_BOOLEAN);
  return g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, lowest, g.temp(kF32, scores), keep);
}

// A plan and the pointers its operands are bound to, in uid order.
struct Binding {
  std::vector<std::int64_t> uids;
  std::vector<void*> pointers;
  void add(std::int64_t uid, void* p) {
    uids.push_back(uid);
    pointers.push_back(p);
  }
};

class Run {
 public:
  Run(const Context& ctx, const char* what) : ctx_(ctx), what_(what) {}

  // The package, or null where cuDNN cannot serve this device.
  CudnnPackage* package() {
    const CudnnLibrary* lib = cudnn_library();
    if (lib == nullptr) return nullptr;
    version_ = lib->cudnnGetVersion();
    auto& pkg = ctx_.packages->get<CudnnPackage>(kCudnnPackage, [&] {
      return std::make_unique<CudnnPackage>(ctx_.device, ctx_.stream);
    });
    if (!pkg.available()) return nullptr;
    pkg.follow(ctx_.stream);
    pkg_ = &pkg;
    return pkg_;
  }
  [[nodiscard]] std::size_t version() const noexcept { return version_; }

  // The plan of `key`, made by `build` (a GraphBuilder& -> void) on first use.
  template <class Build>
  const AttentionPlan& plan(const std::vector<std::int64_t>& key, Build&& build) {
    auto& plans = pkg_->attention_plans();
    auto it = plans.find(key);
    if (it == plans.end()) {
      GraphBuilder g(pkg_->lib(), ctx_.device, what_);
      build(g);
      it = plans.emplace(key, g.plan(pkg_->handle())).first;
    }
    return static_cast<const AttentionPlan&>(*it->second);
  }

  // Runs the plan. `scratch` lists operands of the graph that live in the
  // workspace, after cuDNN's own (uid and bytes; the binding's pointer for
  // each uid is set here).
  void execute(const AttentionPlan& p, Binding& b,
               std::initializer_list<std::pair<std::int64_t, std::size_t>> scratch = {}) {
    const auto rounded = [](std::size_t n) { return (n + 255) / 256 * 256; };
    std::size_t bytes = rounded(std::size_t(p.workspace));
    for (const auto& [uid, n] : scratch) bytes += rounded(n);
    TempBuffer workspace = ctx_.temp(std::max<std::size_t>(bytes, 1));
    char* at = static_cast<char*>(workspace.get()) + rounded(std::size_t(p.workspace));
    for (const auto& [uid, n] : scratch) {
      for (std::size_t i = 0; i < b.uids.size(); ++i)
        if (b.uids[i] == uid) b.pointers[i] = at;
      at += rounded(n);
    }
    CudnnGraphCalls(pkg_->lib(), ctx_.device, what_)
        .execute(pkg_->handle(), p.plan->get(), std::int64_t(b.uids.size()), b.uids.data(), b.pointers.data(),
                 workspace.get());
  }

 private:
  const Context& ctx_;
  const char* what_;
  CudnnPackage* pkg_ = nullptr;
  std::size_t version_ = 0;
};

cudnnDataType_t type_of(DType d) { return d == DType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF; }

// Everything a plan depends on: which graph, dtype, sizes and strides.
std::vector<std::int64_t> key_of(std::int64_t graph, DType dtype, std::initializer_list<const TensorArg*> operands) {
  std::vector<std::int64_t> k{graph, std::int64_t(dtype)};
  for (const TensorArg* t : operands) {
    const auto d = t->view.dims();
    const auto s = t->view.strides();
    for (std::size_t a = 0; a < d.size(); ++a) k.push_back(d[a]);
    for (std::size_t a = 0; a + 1 < s.size(); ++a) k.push_back(s[a]);
  }
  return k;
}

enum Graph : std::int64_t { kForward, kForwardCausal, kBackward, kBackwardCausal };
enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kScale, kLowest, kDO, kDQ, kDK, kDV, kOne, kRowSum, kDQSum };

bool forward(const plugin::args::nn_attention<TensorArg>& x, const Context& ctx) {
  Run run(ctx, "nn::attention");
  if (run.package() == nullptr) return false;
  const bool causal = x.causal != 0;
  const cudnnDataType_t type = type_of(x.q.dtype);
  const Dims qd = dims_of(x.q), kd = dims_of(x.k), vd = dims_of(x.v);
  const Dims stats_dims{qd[0], qd[1], qd[2], 1}, scores{qd[0], qd[1], qd[2], kd[2]};
  const auto ls = x.lse.view.strides();
  const Dims stats_strides{ls[0], ls[1], ls[2], 1};
  const AttentionPlan& plan =
      run.plan(key_of(causal ? kForwardCausal : kForward, x.q.dtype, {&x.q, &x.k, &x.v, &x.out, &x.lse}),
               [&](GraphBuilder& g) {
                 const auto q = g.tensor(kQ, type, qd, strides_of(x.q));
                 const auto o = g.tensor(kO, type, dims_of(x.out), strides_of(x.out));
                 const auto stats = g.tensor(kStats, kF32, stats_dims, stats_strides);
                 const auto scale = g.scalar(kScale);
                 const auto kt = g.tensor(kK, type, swapped(kd), swapped(strides_of(x.k)));
                 const auto v = g.tensor(kV, type, vd, strides_of(x.v));
                 auto s = g.matmul(q, kt, g.temp(kF32, scores));
                 s = g.pointwise(CUDNN_POINTWISE_MUL, s, scale, g.temp(kF32, scores));
                 if (causal) s = causal_mask(g, s, scores, g.scalar(kLowest));
                 const auto max = g.reduce(CUDNN_REDUCE_TENSOR_MAX, s, g.temp(kF32, stats_dims));
                 const auto shifted = g.pointwise(CUDNN_POINTWISE_SUB, s, max, g.temp(kF32, scores));
                 const auto e = g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, g.temp(kF32, scores));
                 const auto sum = g.reduce(CUDNN_REDUCE_TENSOR_ADD, e, g.temp(kF32, stats_dims));
                 const auto log = g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, g.temp(kF32, stats_dims));
                 g.pointwise(CUDNN_POINTWISE_ADD, max, log, stats);
                 // P in the operands' type: cuDNN's second matmul takes it so.
                 const auto p = g.pointwise(CUDNN_POINTWISE_DIV, e, sum, g.temp(type, scores));
                 g.matmul(p, v, o);
               });
  if (!plan.usable()) return false;
  float scale = float(x.scale), lowest = std::numeric_limits<float>::lowest();  // read when enqueued
  Binding b;
  b.add(kQ, first<std::uint16_t>(x.q));
  b.add(kK, first<std::uint16_t>(x.k));
  b.add(kV, first<std::uint16_t>(x.v));
  b.add(kO, first<std::uint16_t>(x.out));
  b.add(kStats, first<float>(x.lse));
  b.add(kScale, &scale);
  if (causal) b.add(kLowest, &lowest);
  run.execute(plan, b);
  return true;
}

bool backward(const plugin::args::nn_attention_grad<TensorArg>& x, const Context& ctx) {
  const Dims qd = dims_of(x.q), kd = dims_of(x.k), vd = dims_of(x.v);
  if (kd[1] != qd[1]) return false;  // grouped heads: dk and dv would need a sum over the group
  if (qd[2] == 1 && kd[2] == 1) return false;  // cuDNN's backward refuses Sq = Sk = 1
  Run run(ctx, "nn::scaled_dot_product_attention_grad");
  if (run.package() == nullptr) return false;
  if (run.version() < kRaggedKeysVersion && kd[2] % 128 != 0) return false;
  const bool causal = x.causal != 0;
  const cudnnDataType_t type = type_of(x.q.dtype);
  const Dims stats_dims{qd[0], qd[1], qd[2], 1}, scores{qd[0], qd[1], qd[2], kd[2]};
  const Dims scores_t{qd[0], qd[1], kd[2], qd[2]}, scores_t_strides{qd[1] * qd[2] * kd[2], qd[2] * kd[2], 1, kd[2]};
  const auto ls = x.lse.view.strides();
  const Dims stats_strides{ls[0], ls[1], ls[2], 1};
  const AttentionPlan& plan = run.plan(
      key_of(causal ? kBackwardCausal : kBackward, x.q.dtype,
             {&x.q, &x.k, &x.v, &x.out, &x.dout, &x.lse, &x.dq, &x.dk, &x.dv}),
      [&](GraphBuilder& g) {
        const auto q = g.tensor(kQ, type, qd, strides_of(x.q));
        const auto kt = g.tensor(kK, type, swapped(kd), swapped(strides_of(x.k)));
        const auto vt = g.tensor(kV, type, swapped(vd), swapped(strides_of(x.v)));
        const auto o = g.tensor(kO, type, dims_of(x.out), strides_of(x.out));
        const auto dout = g.tensor(kDO, type, dims_of(x.dout), strides_of(x.dout));
        const auto stats = g.tensor(kStats, kF32, stats_dims, stats_strides);
        const auto dq = g.tensor(kDQ, type, dims_of(x.dq), strides_of(x.dq));
        const auto dk = g.tensor(kDK, type, dims_of(x.dk), strides_of(x.dk));
        const auto dv = g.tensor(kDV, type, dims_of(x.dv), strides_of(x.dv));
        const auto scale = g.scalar(kScale);
        const auto row_sum = g.tensor(kRowSum, kF32, stats_dims, packed(stats_dims));
        const auto dq_sum = g.tensor(kDQSum, kF32, qd, packed(qd));
        // rowsum(dO * O), the softmax's gradient term per row.
        const auto products = g.pointwise(CUDNN_POINTWISE_MUL, dout, o, g.temp(kF32, dims_of(x.out)));
        const auto sums = g.reduce(CUDNN_REDUCE_TENSOR_ADD, products, g.temp(kF32, stats_dims));
        g.pointwise(CUDNN_POINTWISE_MUL, sums, g.scalar(kOne), row_sum);
        // P = exp(S * scale - lse), masked as the forward was.
        auto s = g.matmul(q, kt, g.temp(kF32, scores));
        s = g.pointwise(CUDNN_POINTWISE_MUL, s, scale, g.temp(kF32, scores));
        s = g.pointwise(CUDNN_POINTWISE_SUB, s, stats, g.temp(kF32, scores));
        if (causal) s = causal_mask(g, s, scores, g.scalar(kLowest));
        const auto p = g.pointwise(CUDNN_POINTWISE_EXP, s, nullptr, g.temp(kF32, scores));
        // dV = P^T dO.
        g.matmul(g.reshape(p, g.temp(type, scores_t, scores_t_strides)), dout, dv);
        // dS = P * (dO V^T - rowsum) * scale.
        auto ds = g.matmul(dout, vt, g.temp(kF32, scores));
        ds = g.pointwise(CUDNN_POINTWISE_SUB, ds, row_sum, g.temp(kF32, scores));
        ds = g.pointwise(CUDNN_POINTWISE_MUL, ds, p, g.temp(kF32, scores));
        ds = g.pointwise(CUDNN_POINTWISE_MUL, ds, scale, g.temp(kF32, scores));
        // dK = dS^T Q; dQ = dS K, summed in f32 then rounded.
        g.matmul(g.reshape(ds, g.temp(type, scores_t, scores_t_strides)), q, dk);
        const auto k = g.reshape(kt, g.temp(type, kd, strides_of(x.k)));
        g.matmul(ds, k, dq_sum);
        g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_sum, nullptr, dq);
      });
  if (!plan.usable()) return false;
  float scale = float(x.scale), lowest = std::numeric_limits<float>::lowest(), one = 1;  // read when enqueued
  Binding b;
  b.add(kQ, first<std::uint16_t>(x.q));
  b.add(kK, first<std::uint16_t>(x.k));
  b.add(kV, first<std::uint16_t>(x.v));
  b.add(kO, first<std::uint16_t>(x.out));
  b.add(kDO, first<std::uint16_t>(x.dout));
  b.add(kStats, first<float>(x.lse));
  b.add(kDQ, first<std::uint16_t>(x.dq));
  b.add(kDK, first<std::uint16_t>(x.dk));
  b.add(kDV, first<std::uint16_t>(x.dv));
  b.add(kScale, &scale);
  b.add(kOne, &one);
  if (causal) b.add(kLowest, &lowest);
  // The row sums and dQ's f32 sums live in the workspace.
  b.add(kRowSum, nullptr);
  b.add(kDQSum, nullptr);
  run.execute(plan, b,
              {{kRowSum, std::size_t(qd[0] * qd[1] * qd[2]) * sizeof(float)},
               {kDQSum, std::size_t(qd[0] * qd[1] * qd[2] * qd[3]) * sizeof(float)}});
  return true;
}

bool suits(const TensorArg& q, std::initializer_list<const TensorArg*> operands, double p) {
  if (q.dtype != DType::f16 && q.dtype != DType::bf16) return false;
  if (p > 0 || turned_off()) return false;
  for (const TensorArg* t : operands)
    if (!vector_aligned(*t)) return false;
  return true;
}

}  // namespace

bool attention_forward_cudnn(const plugin::OpCall& call, const Context& ctx) {
  const auto x = plugin::unpack<plugin::args::nn_attention>(call);
  if (x.mask.data != nullptr || !suits(x.q, {&x.q, &x.k, &x.v, &x.out}, x.p)) return false;
  if (x.lse.view.strides()[2] != 1) return false;
  return forward(x, ctx);
}

bool attention_grad_cudnn(const plugin::OpCall& call, const Context& ctx) {
  const auto x = plugin::unpack<plugin::args::nn_attention_grad>(call);
  if (!suits(x.q, {&x.q, &x.k, &x.v, &x.out, &x.dout, &x.dq, &x.dk, &x.dv}, 0)) return false;
  if (x.lse.view.strides()[2] != 1) return false;
  return backward(x, ctx);
}

}  // namespace xylem::cuda
