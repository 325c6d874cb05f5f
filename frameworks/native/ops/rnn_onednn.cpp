// nn::rnn_sequence and its gradients on the host, f32: whole LSTM and GRU
// stacks through oneDNN's RNN primitives (lstm_*, and lbr_gru_* for the
// GRU: "linear before reset", the formula of PyTorch and cuDNN), the
// library PyTorch's CPU LSTM runs on too. layers::Recurrent takes this path
// where the backend supports the op; f64 stays on its per-step path, and so
// does f32 where disabled() says (nn::rnn_sequence_reserve is then
// unsupported).
//
// Per step, the per-step path paid a dispatched gemm and a dispatched cell
// op, the gemm too small to spread over many threads ([32, 256] x
// [256, 1024]); here a layer is one primitive, its input projection one
// gemm over all steps and each step's recurrent gemm and cell fused.
//
// Threads: as for the convolutions (conv2d_onednn.cpp), oneDNN stays
// single-threaded on xylem's oneTBB threads (Debian's oneDNN runs on
// OpenMP, whose idle workers would spin beside oneTBB's). The batch is cut
// into ranges of at least kMinRows rows, as many as there are threads, and
// each range runs the whole stack over its rows: rows of a batch never meet
// in a recurrent layer, only in the weights' gradients, whose partial sums
// are added in range order (so they depend on the thread count, never on
// timing).
//
// The reserve is ours: a header (the range size used, whether the
// gradients ran), then per range its rows of x, each layer's output rows
// and final states, and oneDNN's workspace of each layer; then the
// weights' gradient. oneDNN's backward computes the data and weight
// gradients at once, so rnn_sequence_grad_data keeps the latter there and
// rnn_sequence_grad_weights copies it out.
#include "frameworks/native/ops/rnn_onednn.hpp"

#if XYLEM_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frameworks/native/ops/onednn_engine.hpp"
#include "frameworks/native/ops/onednn_thread.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::native {
namespace {

using dnnl::memory;
using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;
using Tag = memory::format_tag;

// A range's rows, at least: fewer left each step's gemm too thin to pay for
// reading the recurrent weights.
constexpr std::int64_t kMinRows = 2;
constexpr std::uint64_t kMagic = 0x786c6d726e6e3031;  // "xlmrnn01"

// XYLEM_NATIVE_ONEDNN_RNN=0 or 1 decides; by default the whole stacks run
// where oneDNN's kernels use AVX-512. On AVX2 (the 2-core EPYC VM) they
// took as long as the per-step path (LSTM forward at one thread: 28 ms of
// CPU against 26, forward+backward 73 against 71): both are bound by the
// same AVX2 gemms there. On the AVX-512 Xeon of the GPU machines PyTorch's
// oneDNN LSTM ran twice as fast as the per-step path, whose large gemms are
// OpenBLAS's AVX2 kernels there.
[[nodiscard]] bool disabled() noexcept {
  if (const char* v = std::getenv("XYLEM_NATIVE_ONEDNN_RNN")) return std::string_view(v) == "0";
  const auto isa = unsigned(dnnl_get_effective_cpu_isa()), avx512 = unsigned(dnnl_cpu_isa_avx512_core);
  return (isa & avx512) != avx512;
}

// ---- shapes -----------------------------------------------------------------

struct Shape {
  bool lstm = true;
  std::int64_t steps = 0, batch = 0, input = 0, hidden = 0, layers = 0, dirs = 1;
  [[nodiscard]] std::int64_t gates() const noexcept { return lstm ? 4 : 3; }
  // Layer l's input size.
  [[nodiscard]] std::int64_t in(std::int64_t l) const noexcept { return l == 0 ? input : dirs * hidden; }
  // h, and c for an LSTM.
  [[nodiscard]] std::int64_t states() const noexcept { return lstm ? 2 : 1; }
};

// seq: x (or dx) [T, N, I].
template <class A>
[[nodiscard]] Shape shape_of(const A& a, const TensorArg& seq) {
  return Shape{a.mode == 0, seq.view.dim(0), seq.view.dim(1), seq.view.dim(2), a.hidden, a.layers,
               a.bidirectional != 0 ? 2 : 1};
}

// oneDNN's gate g is PyTorch's gate kGate[g]: LSTM i, f, g, o alike; the
// GRU's update gate comes first in oneDNN (u, r, o) and second in PyTorch
// (r, z, n).
[[nodiscard]] std::int64_t torch_gate(const Shape& s, std::int64_t g) noexcept {
  return s.lstm || g == 2 ? g : 1 - g;
}

// Where layer l, direction d's weight_ih, weight_hh, bias_ih and bias_hh
// start in the flat weights (PyTorch's order).
struct FlatWeights {
  std::int64_t ih = 0, hh = 0, b_ih = 0, b_hh = 0;
};
[[nodiscard]] FlatWeights flat_weights(const Shape& s, std::int64_t l, std::int64_t d) noexcept {
  const std::int64_t g = s.gates() * s.hidden;
  std::int64_t at = 0;
  for (std::int64_t k = 0; k < l * s.dirs + d; ++k) at += g * (s.in(k / s.dirs) + s.hidden + 2);
  const std::int64_t in = s.in(l);
  return {at, at + g * in, at + g * (in + s.hidden), at + g * (in + s.hidden) + g};
}
[[nodiscard]] std::int64_t weight_count(const Shape& s) noexcept {
  const FlatWeights end = flat_weights(s, s.layers - 1, s.dirs - 1);
  return end.b_hh + s.gates() * s.hidden;
}

// Batch ranges: `rows` each, the last one maybe fewer.
struct Ranges {
  std::int64_t rows = 1, count = 0, batch = 0;
  [[nodiscard]] std::int64_t begin(std::int64_t r) const noexcept { return r * rows; }
  [[nodiscard]] std::int64_t size(std::int64_t r) const noexcept { return std::min(rows, batch - r * rows); }
};
[[nodiscard]] Ranges ranges_of(std::int64_t batch, std::int64_t rows) noexcept {
  return Ranges{rows, (batch + rows - 1) / rows, batch};
}
[[nodiscard]] Ranges ranges_now(std::int64_t batch) {
  const std::int64_t threads = std::max<std::int64_t>(
      1, std::min<std::int64_t>(tbb::this_task_arena::max_concurrency(),
                                std::int64_t(tbb::global_control::active_value(
                                    tbb::global_control::max_allowed_parallelism))));
  return ranges_of(batch, std::max(kMinRows, (batch + threads - 1) / threads));
}

// ---- plans ------------------------------------------------------------------

// One layer of a stack over `batch` rows (a range's).
struct LayerKey {
  bool lstm = true;
  std::int64_t input = 0, hidden = 0, dirs = 1, steps = 0, batch = 0;
  auto operator<=>(const LayerKey&) const = default;
};
[[nodiscard]] LayerKey layer_key(const Shape& s, std::int64_t l, std::int64_t batch) noexcept {
  return LayerKey{s.lstm, s.in(l), s.hidden, s.dirs, s.steps, batch};
}

memory::desc f32_desc(const memory::dims& dims, Tag tag) { return {dims, memory::data_type::f32, tag}; }

// A layer's operands in our dense layouts: sequences tnc, states ldnc,
// weights ldgoi (PyTorch's [G*H, in] per direction), bias ldgo.
struct UserDescs {
  memory::desc layer_in, layer_out, state, weights_layer, weights_iter, bias;
};
UserDescs user_descs(const LayerKey& k) {
  const std::int64_t gates = k.lstm ? 4 : 3;
  // The GRU's n gate has two biases in oneDNN's lbr_gru: x's and h's sides.
  return {f32_desc({k.steps, k.batch, k.input}, Tag::tnc),
          f32_desc({k.steps, k.batch, k.dirs * k.hidden}, Tag::tnc),
          f32_desc({1, k.dirs, k.batch, k.hidden}, Tag::ldnc),
          f32_desc({1, k.dirs, k.input, gates, k.hidden}, Tag::ldgoi),
          f32_desc({1, k.dirs, k.hidden, gates, k.hidden}, Tag::ldgoi),
          f32_desc({1, k.dirs, 4, k.hidden}, Tag::ldgo)};
}
memory::desc any_like(const memory::desc& d) { return {d.dims(), memory::data_type::f32, Tag::any}; }

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A reorder between two layouts, run with our scratchpad.
struct Reorder {
  dnnl::reorder primitive;
  memory::desc from, to, scratchpad;
  bool needed = false;
};
Reorder make_reorder(const memory::desc& from, const memory::desc& to) {
  if (from == to) return Reorder{{}, from, to, {}, false};
  const dnnl::reorder::primitive_desc pd(onednn_engine(), from, onednn_engine(), to, user_scratchpad());
  return Reorder{dnnl::reorder(pd), from, to, pd.scratchpad_desc(), true};
}

// A layer's forward and backward primitives and the reorders of its
// weights (into each primitive's layout) and of their gradients (back).
struct LayerPlan {
  UserDescs user;
  dnnl::primitive forward, backward;
  memory::desc workspace;
  std::size_t forward_scratchpad = 0, backward_scratchpad = 0;
  memory::desc diff_weights_layer, diff_weights_iter;  // the backward's layouts
  Reorder weights_layer, weights_iter;                 // ours -> the forward's
  Reorder back_weights_layer, back_weights_iter;       // ours -> the backward's
  Reorder diff_layer_out, diff_iter_out;               // the backward's -> ours
  [[nodiscard]] std::size_t reorder_scratchpad() const {
    std::size_t bytes = 0;
    for (const Reorder* r : {&weights_layer, &weights_iter, &back_weights_layer, &back_weights_iter, &diff_layer_out,
                             &diff_iter_out})
      if (r->needed) bytes = std::max(bytes, r->scratchpad.get_size());
    return bytes;
  }
};

dnnl::rnn_direction direction_of(const LayerKey& k) {
  return k.dirs == 2 ? dnnl::rnn_direction::bidirectional_concat : dnnl::rnn_direction::unidirectional_left2right;
}

// Fills a plan from the forward and backward primitive descriptors.
template <class ForwardPd, class BackwardPd>
void finish(LayerPlan& plan, const ForwardPd& fwd, const BackwardPd& bwd) {
  plan.forward = dnnl::primitive(fwd);
  plan.backward = dnnl::primitive(bwd);
  plan.workspace = fwd.workspace_desc();
  plan.forward_scratchpad = fwd.scratchpad_desc().get_size();
  plan.backward_scratchpad = bwd.scratchpad_desc().get_size();
  plan.diff_weights_layer = bwd.diff_weights_layer_desc();
  plan.diff_weights_iter = bwd.diff_weights_iter_desc();
  plan.weights_layer = make_reorder(plan.user.weights_layer, fwd.weights_layer_desc());
  plan.weights_iter = make_reorder(plan.user.weights_iter, fwd.weights_iter_desc());
  plan.back_weights_layer = make_reorder(plan.user.weights_layer, bwd.weights_layer_desc());
  plan.back_weights_iter = make_reorder(plan.user.weights_iter, bwd.weights_iter_desc());
  plan.diff_layer_out = make_reorder(bwd.diff_weights_layer_desc(), plan.user.weights_layer);
  plan.diff_iter_out = make_reorder(bwd.diff_weights_iter_desc(), plan.user.weights_iter);
}

std::unique_ptr<LayerPlan> make_plan(const LayerKey& k) {
  // oneDNN compiles its kernels when a primitive is made: the kernel-build
  // fault point, failing as oneDNN does.
  if (plugin::should_fail(plugin::FaultSite::kernel_build, "native"))
    throw dnnl::error(dnnl_runtime_error, "could not create a primitive (injected fault)");
  auto plan = std::make_unique<LayerPlan>();
  const UserDescs& u = plan->user = user_descs(k);
  const auto dir = direction_of(k);
  const memory::desc wl = any_like(u.weights_layer), wi = any_like(u.weights_iter);
  const auto fwd_kind = dnnl::prop_kind::forward_training, bwd_kind = dnnl::prop_kind::backward;
  const dnnl::engine& engine = onednn_engine();
  if (k.lstm) {
    const dnnl::lstm_forward::desc fd(fwd_kind, dir, u.layer_in, u.state, u.state, wl, wi, u.bias, u.layer_out,
                                      u.state, u.state);
    const dnnl::lstm_forward::primitive_desc fwd(fd, user_scratchpad(), engine);
    const dnnl::lstm_backward::desc bd(bwd_kind, dir, u.layer_in, u.state, u.state, wl, wi, u.bias, u.layer_out,
                                       u.state, u.state, u.layer_in, u.state, u.state, wl, wi, u.bias, u.layer_out,
                                       u.state, u.state);
    finish(*plan, fwd, dnnl::lstm_backward::primitive_desc(bd, user_scratchpad(), engine, fwd));
  } else {
    const dnnl::lbr_gru_forward::desc fd(fwd_kind, dir, u.layer_in, u.state, wl, wi, u.bias, u.layer_out, u.state);
    const dnnl::lbr_gru_forward::primitive_desc fwd(fd, user_scratchpad(), engine);
    const dnnl::lbr_gru_backward::desc bd(bwd_kind, dir, u.layer_in, u.state, wl, wi, u.bias, u.layer_out, u.state,
                                          u.layer_in, u.state, wl, wi, u.bias, u.layer_out, u.state);
    finish(*plan, fwd, dnnl::lbr_gru_backward::primitive_desc(bd, user_scratchpad(), engine, fwd));
  }
  return plan;
}

// Plans by layer shape, made once (a primitive costs milliseconds to make,
// its JIT code included) and never destroyed (see onednn_engine).
const LayerPlan& plan_for(const LayerKey& k) {
  static auto* mutex = new std::mutex;
  static auto* plans = new std::map<LayerKey, std::unique_ptr<LayerPlan>>;
  const std::lock_guard lock(*mutex);
  auto& slot = (*plans)[k];
  if (!slot) {
    const OneOpenMpThread one;
    slot = make_plan(k);
  }
  return *slot;
}

// The plans of every layer for a range of `rows` rows.
std::vector<const LayerPlan*> plans_for(const Shape& s, std::int64_t rows) {
  std::vector<const LayerPlan*> plans;
  for (std::int64_t l = 0; l < s.layers; ++l) plans.push_back(&plan_for(layer_key(s, l, rows)));
  return plans;
}

// ---- buffers ----------------------------------------------------------------

// Carves aligned pieces out of one buffer; on a null base it only counts
// the bytes (the same code sizes a buffer and then lays it out).
class Carver {
 public:
  explicit Carver(std::byte* base) : base_(base) {}
  template <class T>
  T* take(std::size_t count) {
    T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += onednn_aligned(count * sizeof(T));
    return p;
  }
  [[nodiscard]] std::size_t used() const noexcept { return used_; }

 private:
  std::byte* base_;
  std::size_t used_ = 0;
};

struct Header {
  std::uint64_t magic = 0;
  std::int64_t rows = 0, steps = 0, batch = 0;
  std::uint64_t grads_ready = 0;
};

// A range's part of the reserve.
struct RangeReserve {
  float* x = nullptr;                  // [T, n, I]
  std::vector<float*> y, h_n, c_n;     // per layer: [T, n, D*H]; [D, n, H]
  std::vector<std::byte*> workspace;   // per layer, oneDNN's
};
RangeReserve carve_range(Carver& c, const Shape& s, std::int64_t n, const std::vector<const LayerPlan*>& plans) {
  RangeReserve r;
  r.x = c.take<float>(std::size_t(s.steps * n * s.input));
  for (std::int64_t l = 0; l < s.layers; ++l) {
    r.y.push_back(c.take<float>(std::size_t(s.steps * n * s.dirs * s.hidden)));
    r.h_n.push_back(c.take<float>(std::size_t(s.dirs * n * s.hidden)));
    r.c_n.push_back(s.lstm ? c.take<float>(std::size_t(s.dirs * n * s.hidden)) : nullptr);
    r.workspace.push_back(c.take<std::byte>(plans[std::size_t(l)]->workspace.get_size()));
  }
  return r;
}

// The whole reserve: header, ranges, the weights' gradient.
struct Reserve {
  Header* header = nullptr;
  std::vector<RangeReserve> ranges;
  float* dw = nullptr;
  std::size_t bytes = 0;
};
Reserve carve_reserve(std::byte* base, const Shape& s, const Ranges& ranges) {
  Carver c(base);
  Reserve r;
  r.header = c.take<Header>(1);
  const std::vector<const LayerPlan*> full = plans_for(s, ranges.rows);
  const std::vector<const LayerPlan*> last = plans_for(s, ranges.size(ranges.count - 1));
  for (std::int64_t k = 0; k < ranges.count; ++k)
    r.ranges.push_back(carve_range(c, s, ranges.size(k), k + 1 == ranges.count ? last : full));
  r.dw = c.take<float>(std::size_t(weight_count(s)));
  r.bytes = c.used();
  return r;
}

// A thread's scratch for one range; what a whole call shares between its
// ranges (the weights), on the calling thread; the ranges' weight gradients.
struct RangeScratch {
  static constexpr const char* what = "oneDNN RNN scratch";
};
struct CallScratch {
  static constexpr const char* what = "oneDNN RNN weights";
};
struct PartialGradients {
  static constexpr const char* what = "oneDNN RNN weight gradients";
};
std::byte* range_scratch(std::size_t bytes) { return onednn_thread_buffer<RangeScratch>(bytes); }
std::byte* call_scratch(std::size_t bytes) { return onednn_thread_buffer<CallScratch>(bytes); }

// ---- copies -----------------------------------------------------------------

// Rows [first, first + n) of a [outer, N, K] block to a dense [outer, n, K] one, and back.
void gather_rows(const float* from, std::int64_t outer, std::int64_t batch, std::int64_t k, std::int64_t first,
                 std::int64_t n, float* to) {
  for (std::int64_t o = 0; o < outer; ++o)
    std::memcpy(to + o * n * k, from + (o * batch + first) * k, std::size_t(n * k) * sizeof(float));
}
void scatter_rows(const float* from, std::int64_t outer, std::int64_t batch, std::int64_t k, std::int64_t first,
                  std::int64_t n, float* to) {
  for (std::int64_t o = 0; o < outer; ++o)
    std::memcpy(to + (o * batch + first) * k, from + o * n * k, std::size_t(n * k) * sizeof(float));
}
// Layer l's state `which` (0: h, 1: c) of states [S, L*D, N, H].
const float* state_block(const float* states, const Shape& s, std::int64_t which, std::int64_t l) {
  return states + ((which * s.layers + l) * s.dirs) * s.batch * s.hidden;
}
float* state_block(float* states, const Shape& s, std::int64_t which, std::int64_t l) {
  return states + ((which * s.layers + l) * s.dirs) * s.batch * s.hidden;
}

// Layer l's weights from the flat ones, in our dense layouts (ldgoi, ldgo).
struct LayerWeights {
  float* layer = nullptr;  // [D, G, H, in]
  float* iter = nullptr;   // [D, G, H, H]
  float* bias = nullptr;   // [D, 4, H]
};
LayerWeights carve_weights(Carver& c, const Shape& s, std::int64_t l) {
  const std::size_t g = std::size_t(s.dirs * s.gates() * s.hidden);
  return {c.take<float>(g * std::size_t(s.in(l))), c.take<float>(g * std::size_t(s.hidden)),
          c.take<float>(std::size_t(s.dirs * 4 * s.hidden))};
}

void pack_weights(const Shape& s, std::int64_t l, const float* w, const LayerWeights& to) {
  const std::int64_t h = s.hidden, in = s.in(l), gates = s.gates();
  for (std::int64_t d = 0; d < s.dirs; ++d) {
    const FlatWeights f = flat_weights(s, l, d);
    for (std::int64_t g = 0; g < gates; ++g) {
      const std::int64_t row = torch_gate(s, g) * h;
      std::memcpy(to.layer + (d * gates + g) * h * in, w + f.ih + row * in, std::size_t(h * in) * sizeof(float));
      std::memcpy(to.iter + (d * gates + g) * h * h, w + f.hh + row * h, std::size_t(h * h) * sizeof(float));
    }
    float* bias = to.bias + d * 4 * h;
    for (std::int64_t g = 0; g < 4; ++g)
      for (std::int64_t o = 0; o < h; ++o) {
        if (!s.lstm && g >= 2)  // the n gate: x's bias, then h's (inside r * (...))
          bias[g * h + o] = w[(g == 2 ? f.b_ih : f.b_hh) + 2 * h + o];
        else
          bias[g * h + o] = w[f.b_ih + torch_gate(s, g) * h + o] + w[f.b_hh + torch_gate(s, g) * h + o];
      }
  }
}

// The inverse of pack_weights for gradients: a combined bias's gradient
// is both biases'.
void unpack_grads(const Shape& s, std::int64_t l, const LayerWeights& from, float* dw) {
  const std::int64_t h = s.hidden, in = s.in(l), gates = s.gates();
  for (std::int64_t d = 0; d < s.dirs; ++d) {
    const FlatWeights f = flat_weights(s, l, d);
    for (std::int64_t g = 0; g < gates; ++g) {
      const std::int64_t row = torch_gate(s, g) * h;
      std::memcpy(dw + f.ih + row * in, from.layer + (d * gates + g) * h * in, std::size_t(h * in) * sizeof(float));
      std::memcpy(dw + f.hh + row * h, from.iter + (d * gates + g) * h * h, std::size_t(h * h) * sizeof(float));
    }
    const float* bias = from.bias + d * 4 * h;
    for (std::int64_t g = 0; g < 4; ++g)
      for (std::int64_t o = 0; o < h; ++o) {
        if (!s.lstm && g >= 2) {
          dw[(g == 2 ? f.b_ih : f.b_hh) + 2 * h + o] = bias[g * h + o];
        } else {
          dw[f.b_ih + torch_gate(s, g) * h + o] = bias[g * h + o];
          dw[f.b_hh + torch_gate(s, g) * h + o] = bias[g * h + o];
        }
      }
  }
}

// ---- running ----------------------------------------------------------------

void run_reorder(const Reorder& r, void* from, void* to, std::byte* scratch) {
  const dnnl::engine& engine = onednn_engine();
  dnnl::stream& stream = onednn_stream();
  r.primitive.execute(stream, {{DNNL_ARG_FROM, memory(r.from, engine, from)},
                               {DNNL_ARG_TO, memory(r.to, engine, to)},
                               {DNNL_ARG_SCRATCHPAD, memory(r.scratchpad, engine, scratch)}});
  stream.wait();
}

void execute(const dnnl::primitive& p, std::unordered_map<int, memory> args) {
  // The library-call fault point, failing as oneDNN does.
  if (plugin::should_fail(plugin::FaultSite::library_call, "native"))
    throw dnnl::error(dnnl_runtime_error, "could not execute a primitive (injected fault)");
  dnnl::stream& stream = onednn_stream();
  p.execute(stream, args);
  stream.wait();
}

// Each layer's weights in the layouts of the plans of both range sizes
// (forward's or backward's), packed and reordered once for every range.
struct PreparedWeights {
  std::vector<LayerWeights> packed;                     // ours, per layer
  std::vector<std::array<void*, 2>> full, last;         // per layer: layer and iter weights
};
PreparedWeights prepare_weights(const Shape& s, const float* w, const std::vector<const LayerPlan*>& full,
                                const std::vector<const LayerPlan*>& last, bool backward) {
  const auto inner = [&](const LayerPlan& p) {
    return std::array{backward ? &p.back_weights_layer : &p.weights_layer,
                      backward ? &p.back_weights_iter : &p.weights_iter};
  };
  // Sizes first (a null base counts), then the same layout for real.
  const auto lay_out = [&](std::byte* base, PreparedWeights* out) {
    Carver c(base);
    std::size_t scratchpad = 0;
    for (std::int64_t l = 0; l < s.layers; ++l) {
      const LayerWeights packed = carve_weights(c, s, l);
      std::array<std::array<void*, 2>, 2> placed{};
      for (int which = 0; which < 2; ++which) {
        const LayerPlan& p = *(which == 0 ? full : last)[std::size_t(l)];
        for (int k = 0; k < 2; ++k) {
          const Reorder& r = *inner(p)[std::size_t(k)];
          void* user = k == 0 ? packed.layer : packed.iter;
          placed[std::size_t(which)][std::size_t(k)] = r.needed ? c.take<std::byte>(r.to.get_size()) : user;
          scratchpad = std::max(scratchpad, r.needed ? r.scratchpad.get_size() : 0);
        }
      }
      if (out) {
        out->packed.push_back(packed);
        out->full.push_back(placed[0]);
        out->last.push_back(placed[1]);
      }
    }
    return std::pair{c.used(), scratchpad};
  };
  const auto [bytes, scratchpad] = lay_out(nullptr, nullptr);
  std::byte* base = call_scratch(bytes + scratchpad);
  PreparedWeights out;
  lay_out(base, &out);
  std::byte* scratch = base + bytes;
  const OneOpenMpThread one;
  for (std::int64_t l = 0; l < s.layers; ++l) {
    const std::size_t li = std::size_t(l);
    pack_weights(s, l, w, out.packed[li]);
    for (int which = 0; which < 2; ++which) {
      const LayerPlan& p = *(which == 0 ? full : last)[li];
      // The last range shares the full ranges' copy when both plans want
      // the same layout (they differ in the batch only).
      for (int k = 0; k < 2; ++k) {
        const Reorder& r = *inner(p)[std::size_t(k)];
        if (!r.needed) continue;
        void* user = k == 0 ? out.packed[li].layer : out.packed[li].iter;
        auto& mine = (which == 0 ? out.full : out.last)[li][std::size_t(k)];
        if (which == 1 && r.to == inner(*full[li])[std::size_t(k)]->to) {
          mine = out.full[li][std::size_t(k)];
          continue;
        }
        run_reorder(r, user, mine, scratch);
      }
    }
  }
  return out;
}

// "nn::rnn_sequence on native, LSTM x [T, N, I], H 256, 2 layers: oneDNN: "
std::string describe(std::string_view op, const Shape& s) {
  return std::string(op) + " on native, " + (s.lstm ? "LSTM" : "GRU") + " x [" + std::to_string(s.steps) + ", " +
         std::to_string(s.batch) + ", " + std::to_string(s.input) + "], hidden " + std::to_string(s.hidden) + ", " +
         std::to_string(s.layers) + " layer(s)" + (s.dirs == 2 ? ", bidirectional" : "") + ": ";
}

// Runs body, turning oneDNN's errors into ours.
template <class Body>
void guarded(std::string_view op, const Shape& s, Body&& body) {
  try {
    body();
  } catch (const dnnl::error& e) {
    const ErrorCode code = e.status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal;
    throw Error(code, describe(op, s) + "oneDNN: " + e.what() + " (XYLEM_NATIVE_ONEDNN_RNN=0 runs it per step)");
  }
}

template <class Body>
void for_ranges(const Ranges& ranges, Body&& body) {
  tbb::parallel_for(
      tbb::blocked_range<std::int64_t>(0, ranges.count, 1),
      [&](const tbb::blocked_range<std::int64_t>& rs) {
        const OneOpenMpThread one;
        for (std::int64_t r = rs.begin(); r < rs.end(); ++r) body(r);
      },
      tbb::simple_partitioner());
}

// ---- the ops ----------------------------------------------------------------

void reserve_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence_reserve>(call);
  const Shape s = shape_of(a, a.x);
  if (disabled())
    throw Error(ErrorCode::unsupported, describe("nn::rnn_sequence_reserve", s) +
                                             "off (oneDNN's kernels lack AVX-512 here, or XYLEM_NATIVE_ONEDNN_RNN=0)");
  guarded("nn::rnn_sequence_reserve", s, [&] {
    element_ptr<std::int64_t>(a.bytes)[0] = std::int64_t(carve_reserve(nullptr, s, ranges_now(s.batch)).bytes);
  });
}

void forward_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence>(call);
  const Shape s = shape_of(a, a.x);
  guarded("nn::rnn_sequence", s, [&] {
    const Ranges ranges = ranges_now(s.batch);
    const Reserve reserve = carve_reserve(element_ptr<std::byte>(a.reserve), s, ranges);
    if (std::int64_t(reserve.bytes) > a.reserve.view.numel())
      throw Error(ErrorCode::invalid_argument,
                  describe("nn::rnn_sequence", s) + "reserve holds " + std::to_string(a.reserve.view.numel()) +
                      " bytes; nn::rnn_sequence_reserve asks " + std::to_string(reserve.bytes));
    const std::vector<const LayerPlan*> full = plans_for(s, ranges.rows);
    const std::vector<const LayerPlan*> last = plans_for(s, ranges.size(ranges.count - 1));
    const PreparedWeights weights = prepare_weights(s, element_ptr<const float>(a.w), full, last, false);
    const float* x = element_ptr<const float>(a.x);
    const float* states = element_ptr<const float>(a.states);
    float* y = element_ptr<float>(a.y);
    float* states_out = element_ptr<float>(a.states_out);
    const dnnl::engine& engine = onednn_engine();
    for_ranges(ranges, [&](std::int64_t r) {
      const bool is_last = r + 1 == ranges.count;
      const std::int64_t first = ranges.begin(r), n = ranges.size(r);
      const std::vector<const LayerPlan*>& plans = is_last ? last : full;
      const RangeReserve& mine = reserve.ranges[std::size_t(r)];
      // Scratch: the initial states, then the scratchpad.
      const std::size_t state = std::size_t(s.dirs * n * s.hidden);
      std::size_t scratchpad = 0;
      for (const LayerPlan* p : plans) scratchpad = std::max(scratchpad, p->forward_scratchpad);
      std::byte* scratch = range_scratch(2 * onednn_aligned(state * sizeof(float)) + scratchpad);
      auto* h0 = reinterpret_cast<float*>(scratch);
      auto* c0 = reinterpret_cast<float*>(scratch + onednn_aligned(state * sizeof(float)));
      std::byte* pad = scratch + 2 * onednn_aligned(state * sizeof(float));
      gather_rows(x, s.steps, s.batch, s.input, first, n, mine.x);
      for (std::int64_t l = 0; l < s.layers; ++l) {
        const std::size_t li = std::size_t(l);
        const LayerPlan& p = *plans[li];
        gather_rows(state_block(states, s, 0, l), s.dirs, s.batch, s.hidden, first, n, h0);
        if (s.lstm) gather_rows(state_block(states, s, 1, l), s.dirs, s.batch, s.hidden, first, n, c0);
        const auto& w = (is_last ? weights.last : weights.full)[li];
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC_LAYER, memory(p.user.layer_in, engine, l == 0 ? mine.x : mine.y[li - 1])},
            {DNNL_ARG_SRC_ITER, memory(p.user.state, engine, h0)},
            {DNNL_ARG_WEIGHTS_LAYER, memory(p.weights_layer.to, engine, w[0])},
            {DNNL_ARG_WEIGHTS_ITER, memory(p.weights_iter.to, engine, w[1])},
            {DNNL_ARG_BIAS, memory(p.user.bias, engine, weights.packed[li].bias)},
            {DNNL_ARG_DST_LAYER, memory(p.user.layer_out, engine, mine.y[li])},
            {DNNL_ARG_DST_ITER, memory(p.user.state, engine, mine.h_n[li])},
            {DNNL_ARG_WORKSPACE, memory(p.workspace, engine, mine.workspace[li])},
            {DNNL_ARG_SCRATCHPAD, memory(dnnl::memory::desc({std::int64_t(p.forward_scratchpad)},
                                                             memory::data_type::u8, Tag::a),
                                         engine, pad)}};
        if (s.lstm) {
          args.emplace(DNNL_ARG_SRC_ITER_C, memory(p.user.state, engine, c0));
          args.emplace(DNNL_ARG_DST_ITER_C, memory(p.user.state, engine, mine.c_n[li]));
        }
        execute(p.forward, std::move(args));
        scatter_rows(mine.h_n[li], s.dirs, s.batch, s.hidden, first, n, state_block(states_out, s, 0, l));
        if (s.lstm) scatter_rows(mine.c_n[li], s.dirs, s.batch, s.hidden, first, n, state_block(states_out, s, 1, l));
      }
      scatter_rows(mine.y[std::size_t(s.layers - 1)], s.steps, s.batch, s.dirs * s.hidden, first, n, y);
    });
    *reserve.header = Header{kMagic, ranges.rows, s.steps, s.batch, 0};
  });
}

// The reserve as forward left it, with the ranges it used.
Reserve written_reserve(std::string_view op, const Shape& s, const TensorArg& t, Ranges& ranges) {
  auto* base = element_ptr<std::byte>(t);
  Header header;
  if (t.view.numel() >= std::int64_t(sizeof header)) std::memcpy(&header, base, sizeof header);
  if (header.magic != kMagic || header.steps != s.steps || header.batch != s.batch || header.rows < 1)
    throw Error(ErrorCode::invalid_argument, describe(op, s) + "the reserve was not written by nn::rnn_sequence of "
                                                               "this stack on native");
  ranges = ranges_of(s.batch, header.rows);
  Reserve reserve = carve_reserve(base, s, ranges);
  if (std::int64_t(reserve.bytes) > t.view.numel())
    throw Error(ErrorCode::invalid_argument, describe(op, s) + "the reserve is smaller than its stack needs");
  return reserve;
}

void grad_data_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence_grad_data>(call);
  const Shape s = shape_of(a, a.dx);
  guarded("nn::rnn_sequence_grad_data", s, [&] {
    Ranges ranges;
    const Reserve reserve = written_reserve("nn::rnn_sequence_grad_data", s, a.reserve, ranges);
    const std::vector<const LayerPlan*> full = plans_for(s, ranges.rows);
    const std::vector<const LayerPlan*> last = plans_for(s, ranges.size(ranges.count - 1));
    const PreparedWeights weights = prepare_weights(s, element_ptr<const float>(a.w), full, last, true);
    // Each range's weight gradients in our layouts, summed after.
    const auto partial_layout = [&](std::byte* base) {
      Carver c(base);
      std::vector<LayerWeights> out;
      for (std::int64_t l = 0; l < s.layers; ++l) out.push_back(carve_weights(c, s, l));
      return std::pair{out, c.used()};
    };
    const std::size_t partial_bytes = partial_layout(nullptr).second;
    // Beside prepare_weights' call scratch, which still holds the weights.
    std::byte* partials = onednn_thread_buffer<PartialGradients>(partial_bytes * std::size_t(ranges.count));
    const float* dy = element_ptr<const float>(a.dy);
    const float* dstates_out = element_ptr<const float>(a.dstates_out);
    const float* states = element_ptr<const float>(a.states);
    float* dx = element_ptr<float>(a.dx);
    float* dstates = element_ptr<float>(a.dstates);
    const dnnl::engine& engine = onednn_engine();
    std::int64_t widest = s.input;  // the widest layer input or output
    for (std::int64_t l = 0; l < s.layers; ++l) widest = std::max(widest, s.in(l));
    widest = std::max(widest, s.dirs * s.hidden);
    for_ranges(ranges, [&](std::int64_t r) {
      const bool is_last = r + 1 == ranges.count;
      const std::int64_t first = ranges.begin(r), n = ranges.size(r);
      const std::vector<const LayerPlan*>& plans = is_last ? last : full;
      const RangeReserve& mine = reserve.ranges[std::size_t(r)];
      const auto [dense, unused] = partial_layout(partials + std::size_t(r) * partial_bytes);
      // Scratch: states and their gradients, two sequence gradients (the
      // layer's and the one below's), oneDNN's diff weights, the scratchpad.
      const auto lay_out = [&](std::byte* base) {
        Carver c(base);
        const std::size_t state = std::size_t(s.dirs * n * s.hidden), seq = std::size_t(s.steps * n * widest);
        struct {
          float *h0, *c0, *dh_n, *dc_n, *dh0, *dc0, *seq_a, *seq_b;
          std::vector<std::byte*> dwl, dwi;
          float* dbias;
          std::byte* pad;
        } b{};
        for (float** p : {&b.h0, &b.c0, &b.dh_n, &b.dc_n, &b.dh0, &b.dc0}) *p = c.take<float>(state);
        b.seq_a = c.take<float>(seq);
        b.seq_b = c.take<float>(seq);
        std::size_t scratchpad = 0;
        for (const LayerPlan* p : plans) {
          b.dwl.push_back(c.take<std::byte>(p->diff_weights_layer.get_size()));
          b.dwi.push_back(c.take<std::byte>(p->diff_weights_iter.get_size()));
          scratchpad = std::max({scratchpad, p->backward_scratchpad, p->reorder_scratchpad()});
        }
        b.dbias = c.take<float>(std::size_t(s.dirs * 4 * s.hidden));
        b.pad = c.take<std::byte>(scratchpad);
        return std::pair{b, c.used()};
      };
      const std::size_t bytes = lay_out(nullptr).second;
      const auto b = lay_out(range_scratch(bytes)).first;
      gather_rows(dy, s.steps, s.batch, s.dirs * s.hidden, first, n, b.seq_a);
      float* diff_out = b.seq_a;  // the gradient of this layer's output
      float* diff_in = b.seq_b;   // of its input
      for (std::int64_t l = s.layers - 1; l >= 0; --l) {
        const std::size_t li = std::size_t(l);
        const LayerPlan& p = *plans[li];
        gather_rows(state_block(states, s, 0, l), s.dirs, s.batch, s.hidden, first, n, b.h0);
        gather_rows(state_block(dstates_out, s, 0, l), s.dirs, s.batch, s.hidden, first, n, b.dh_n);
        if (s.lstm) {
          gather_rows(state_block(states, s, 1, l), s.dirs, s.batch, s.hidden, first, n, b.c0);
          gather_rows(state_block(dstates_out, s, 1, l), s.dirs, s.batch, s.hidden, first, n, b.dc_n);
        }
        // oneDNN adds to the weights' gradients.
        std::memset(b.dwl[li], 0, p.diff_weights_layer.get_size());
        std::memset(b.dwi[li], 0, p.diff_weights_iter.get_size());
        std::memset(b.dbias, 0, std::size_t(s.dirs * 4 * s.hidden) * sizeof(float));
        const auto& w = (is_last ? weights.last : weights.full)[li];
        const memory::desc pad_desc({std::int64_t(p.backward_scratchpad)}, memory::data_type::u8, Tag::a);
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC_LAYER, memory(p.user.layer_in, engine, l == 0 ? mine.x : mine.y[li - 1])},
            {DNNL_ARG_SRC_ITER, memory(p.user.state, engine, b.h0)},
            {DNNL_ARG_WEIGHTS_LAYER, memory(p.back_weights_layer.to, engine, w[0])},
            {DNNL_ARG_WEIGHTS_ITER, memory(p.back_weights_iter.to, engine, w[1])},
            {DNNL_ARG_BIAS, memory(p.user.bias, engine, weights.packed[li].bias)},
            {DNNL_ARG_DST_LAYER, memory(p.user.layer_out, engine, mine.y[li])},
            {DNNL_ARG_DST_ITER, memory(p.user.state, engine, mine.h_n[li])},
            {DNNL_ARG_DIFF_SRC_LAYER, memory(p.user.layer_in, engine, diff_in)},
            {DNNL_ARG_DIFF_SRC_ITER, memory(p.user.state, engine, b.dh0)},
            {DNNL_ARG_DIFF_WEIGHTS_LAYER, memory(p.diff_weights_layer, engine, b.dwl[li])},
            {DNNL_ARG_DIFF_WEIGHTS_ITER, memory(p.diff_weights_iter, engine, b.dwi[li])},
            {DNNL_ARG_DIFF_BIAS, memory(p.user.bias, engine, b.dbias)},
            {DNNL_ARG_DIFF_DST_LAYER, memory(p.user.layer_out, engine, diff_out)},
            {DNNL_ARG_DIFF_DST_ITER, memory(p.user.state, engine, b.dh_n)},
            {DNNL_ARG_WORKSPACE, memory(p.workspace, engine, mine.workspace[li])},
            {DNNL_ARG_SCRATCHPAD, memory(pad_desc, engine, b.pad)}};
        if (s.lstm) {
          args.emplace(DNNL_ARG_SRC_ITER_C, memory(p.user.state, engine, b.c0));
          args.emplace(DNNL_ARG_DST_ITER_C, memory(p.user.state, engine, mine.c_n[li]));
          args.emplace(DNNL_ARG_DIFF_SRC_ITER_C, memory(p.user.state, engine, b.dc0));
          args.emplace(DNNL_ARG_DIFF_DST_ITER_C, memory(p.user.state, engine, b.dc_n));
        }
        execute(p.backward, std::move(args));
        scatter_rows(b.dh0, s.dirs, s.batch, s.hidden, first, n, state_block(dstates, s, 0, l));
        if (s.lstm) scatter_rows(b.dc0, s.dirs, s.batch, s.hidden, first, n, state_block(dstates, s, 1, l));
        // This range's weight gradients, in our layouts.
        const LayerWeights& to = dense[li];
        const auto out = [&](const Reorder& re, std::byte* from, float* dst, std::size_t bytes_) {
          if (re.needed)
            run_reorder(re, from, dst, b.pad);
          else
            std::memcpy(dst, from, bytes_);
        };
        out(p.diff_layer_out, b.dwl[li], to.layer, p.user.weights_layer.get_size());
        out(p.diff_iter_out, b.dwi[li], to.iter, p.user.weights_iter.get_size());
        std::memcpy(to.bias, b.dbias, std::size_t(s.dirs * 4 * s.hidden) * sizeof(float));
        std::swap(diff_out, diff_in);
      }
      // diff_out now holds the gradient of layer 0's input.
      scatter_rows(diff_out, s.steps, s.batch, s.input, first, n, dx);
    });
    // The ranges' weight gradients added in range order, into the first.
    auto* sum = reinterpret_cast<float*>(partials);
    const std::int64_t floats = std::int64_t(partial_bytes / sizeof(float));
    if (ranges.count > 1)
      tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, floats, 16384),
                        [&](const tbb::blocked_range<std::int64_t>& rs) {
                          for (std::int64_t j = rs.begin(); j < rs.end(); ++j) {
                            float total = sum[j];
                            for (std::int64_t r = 1; r < ranges.count; ++r)
                              total += reinterpret_cast<const float*>(partials + std::size_t(r) * partial_bytes)[j];
                            sum[j] = total;
                          }
                        });
    const std::vector<LayerWeights> summed = partial_layout(partials).first;
    for (std::int64_t l = 0; l < s.layers; ++l) unpack_grads(s, l, summed[std::size_t(l)], reserve.dw);
    reserve.header->grads_ready = 1;
  });
}

void grad_weights_kernel(const OpCall& call) {
  const auto a = plugin::unpack<plugin::args::nn_rnn_sequence_grad_weights>(call);
  const Shape s = shape_of(a, a.x);
  guarded("nn::rnn_sequence_grad_weights", s, [&] {
    Ranges ranges;
    const Reserve reserve = written_reserve("nn::rnn_sequence_grad_weights", s, a.reserve, ranges);
    if (reserve.header->grads_ready == 0)
      throw Error(ErrorCode::invalid_argument,
                  describe("nn::rnn_sequence_grad_weights", s) + "nn::rnn_sequence_grad_data must run first");
    std::memcpy(element_ptr<float>(a.dw), reserve.dw, std::size_t(weight_count(s)) * sizeof(float));
  });
}

}  // namespace

void register_rnn_sequence(KernelTable& table) {
  table.set(OpId::nn_rnn_sequence_reserve, DType::f32, &reserve_kernel);
  table.set(OpId::nn_rnn_sequence, DType::f32, &forward_kernel);
  table.set(OpId::nn_rnn_sequence_grad_data, DType::f32, &grad_data_kernel);
  table.set(OpId::nn_rnn_sequence_grad_weights, DType::f32, &grad_weights_kernel);
}

}  // namespace xylem::native

#else  // no oneDNN: the layers run per step

namespace xylem::native {
void register_rnn_sequence(KernelTable&) {}
}  // namespace xylem::native

#endif
