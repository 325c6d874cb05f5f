// nn::attention's forward as one fused cuDNN operation (see
// attention_cudnn.hpp). cuDNN 9.13 added the scaled dot-product attention
// forward operation (CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR): Q, K, V
// and O as [B, H, S, D] tensors of any strides with unit innermost stride,
// the scale a by-value f32, and the statistics (the logsumexp of each row's
// scaled scores, natural log, f32 [B, H, Sq, 1]) that nn::attention's lse
// is. It is what PyTorch's cuDNN attention backend runs on the H100 and
// what makes its SDPA twice as fast as its own flash kernel there.
#include <array>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "attention_cudnn.hpp"
#include "cudnn_graph.hpp"
#include "cudnn_package.hpp"

namespace xylem::cuda {
#if CUDNN_VERSION >= 91300
namespace {

constexpr const char* kWhat = "nn::attention";

// The operation exists from cuDNN 9.13 (headers and library both).
constexpr std::size_t kFirstVersion = 91300;

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
T* first(const plugin::TensorArg& t) noexcept {
  return static_cast<T*>(t.data) + t.view.offset();
}

enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kStats, kScale };

// Everything a plan depends on: dtype, sizes and strides.
using AttentionKey = std::array<std::int64_t, 24>;

AttentionKey key_of(const plugin::args::nn_attention<plugin::TensorArg>& x) {
  AttentionKey k{};
  std::size_t i = 0;
  k[i++] = std::int64_t(x.q.dtype);
  for (const plugin::TensorArg* t : {&x.q, &x.k, &x.v}) {
    const auto d = t->view.dims();
    for (int a = 1; a < 4; ++a) k[i++] = d[a];  // heads, rows, head dimension
  }
  k[i++] = x.q.view.dims()[0];
  for (const plugin::TensorArg* t : {&x.q, &x.k, &x.v, &x.out}) {
    const auto s = t->view.strides();
    for (int a = 0; a < 3; ++a) k[i++] = s[a];
  }
  return k;  // every operand 16-byte aligned (vector_aligned)
}

class ForwardGraph {
 public:
  ForwardGraph(CudnnPackage& pkg, const plugin::args::nn_attention<plugin::TensorArg>& x, const Context& ctx)
      : pkg_(pkg), x_(x), calls_(pkg.lib(), ctx.device, kWhat) {}

  std::unique_ptr<AttentionPlan> make_plan() const {
    auto result = std::make_unique<AttentionPlan>();
    const cudnnDataType_t type = x_.q.dtype == DType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    const auto qd = x_.q.view.dims();
    const CudnnDescriptor q = tensor(kQ, type, x_.q), k = tensor(kK, type, x_.k), v = tensor(kV, type, x_.v),
                          o = tensor(kO, type, x_.out);
    const std::int64_t stats_dims[4] = {qd[0], qd[1], qd[2], 1};
    const auto ls = x_.lse.view.strides();
    const std::int64_t stats_strides[4] = {ls[0], ls[1], ls[2], 1};
    const CudnnDescriptor stats = tensor(kStats, CUDNN_DATA_FLOAT, stats_dims, stats_strides, false);
    const std::int64_t one[4] = {1, 1, 1, 1};
    const CudnnDescriptor scale = tensor(kScale, CUDNN_DATA_FLOAT, one, one, true);
    CudnnDescriptor op = calls_.make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    calls_.set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, {q.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, {k.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, {v.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, {o.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, {stats.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, {scale.get()});
    std::string why;
    const std::optional<CudnnDescriptor> graph = calls_.graph(pkg_.handle(), {op.get()}, why);
    if (!graph) return result;
    for (const CudnnDescriptor& config : calls_.configurations(*graph, CUDNN_HEUR_MODE_A)) {
      if (std::optional<CudnnDescriptor> plan =
              calls_.build(pkg_.handle(), config, result->workspace, kMaxCudnnWorkspace)) {
        result->plan.emplace(std::move(*plan));
        break;
      }
    }
    return result;
  }

  void run(const AttentionPlan& p, const Context& ctx) const {
    TempBuffer workspace = ctx.temp(std::max<std::size_t>(std::size_t(p.workspace), 1));
    float scale = float(x_.scale);  // read when the plan is enqueued
    const std::int64_t uids[6] = {kQ, kK, kV, kO, kStats, kScale};
    void* const pointers[6] = {first<std::uint16_t>(x_.q), first<std::uint16_t>(x_.k), first<std::uint16_t>(x_.v),
                               first<std::uint16_t>(x_.out), first<float>(x_.lse), &scale};
    calls_.execute(pkg_.handle(), p.plan->get(), 6, uids, pointers, workspace.get());
  }

 private:
  CudnnDescriptor tensor(std::int64_t uid, cudnnDataType_t type, const plugin::TensorArg& t) const {
    const auto d = t.view.dims();
    const auto s = t.view.strides();
    const std::int64_t dims[4] = {d[0], d[1], d[2], d[3]}, strides[4] = {s[0], s[1], s[2], 1};
    return tensor(uid, type, dims, strides, false);
  }
  CudnnDescriptor tensor(std::int64_t uid, cudnnDataType_t type, const std::int64_t (&dims)[4],
                         const std::int64_t (&strides)[4], bool by_value) const {
    CudnnDescriptor t = calls_.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::int64_t alignment = 16;
    calls_.set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    calls_.set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    calls_.set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    calls_.set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    calls_.set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    if (by_value) calls_.set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    calls_.finalize(t);
    return t;
  }

  CudnnPackage& pkg_;
  const plugin::args::nn_attention<plugin::TensorArg>& x_;
  CudnnGraphCalls calls_;
};

// Whether every operand lies on 16 bytes with row, head and batch strides
// of whole 16-byte vectors: what cuDNN's attention kernels load.
bool vector_aligned(const plugin::TensorArg& t) {
  if (alignment_of(first<const std::uint16_t>(t)) != 16) return false;
  const auto s = t.view.strides();
  return s[0] % 8 == 0 && s[1] % 8 == 0 && s[2] % 8 == 0;
}

}  // namespace
#endif

bool attention_forward_cudnn(const plugin::OpCall& call, const Context& ctx) {
#if CUDNN_VERSION < 91300
  (void)call, (void)ctx;
  return false;  // built against headers without the operation
#else
  const auto x = plugin::unpack<plugin::args::nn_attention>(call);
  if (x.q.dtype != DType::f16 && x.q.dtype != DType::bf16) return false;
  if (x.mask.data != nullptr || x.causal != 0 || x.p > 0 || turned_off()) return false;
  for (const plugin::TensorArg* t : {&x.q, &x.k, &x.v, &x.out})
    if (!vector_aligned(*t)) return false;
  if (x.lse.view.strides()[2] != 1) return false;
  const CudnnLibrary* lib = cudnn_library();
  if (lib == nullptr || lib->cudnnGetVersion() < kFirstVersion) return false;
  auto& pkg = ctx.packages->get<CudnnPackage>(kCudnnPackage, [&] {
    return std::make_unique<CudnnPackage>(ctx.device, ctx.stream);
  });
  if (!pkg.available()) return false;
  pkg.follow(ctx.stream);
  ForwardGraph graph(pkg, x, ctx);
  auto& plans = pkg.attention_plans();
  const AttentionKey key = key_of(x);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, graph.make_plan()).first;
  const auto& plan = static_cast<const AttentionPlan&>(*it->second);
  if (!plan.usable()) return false;
  graph.run(plan, ctx);
  return true;
#endif
}

}  // namespace xylem::cuda
