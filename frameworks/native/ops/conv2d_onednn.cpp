// The oneDNN engine of the host convolution (see conv2d.hpp), f32, through
// oneDNN 2.x's C++ API (operation descriptors; 3.0 removed them).
//
// oneDNN picks the layouts its fastest kernel wants (format_tag::any:
// blocked, e.g. nChw16c and OIhw16i16o with AVX-512); operands are
// reordered from and to the caller's NCHW around the convolution when it
// picks another. Making the primitive descriptors, primitives and reorders
// of a pass again costs about 10 us even when oneDNN's own primitive cache
// holds the JIT code (0.5-8 ms the first time), against 20-80 us for a
// 1x16x14x14 convolution, so each (pass, geometry) keeps its plan.
// Scratchpads are ours (scratchpad_mode::user), so a cached plan may run on
// any thread.
//
// Threads: oneDNN runs on xylem's oneTBB threads, one image range each,
// with oneDNN itself single-threaded there (omp_set_num_threads(1) for the
// duration of the call). Debian's oneDNN is built on OpenMP (libgomp); left
// to its own threads, its idle workers spin after each call (GOMP_SPINCOUNT,
// 300000 by default) beside oneTBB's, and on this 2-core VM it then ran a
// ResNet 3x3 layer at 47 GFLOP/s, against 120 for im2col, 300+ with
// OMP_WAIT_POLICY=active, and 131-164 on one thread. Splitting the batch
// gives one thread pool and no spinning. When there are too few images to
// give every thread at least half an image's worth of work, im2col (which
// parallelises inside an image) runs instead. The filters, the same for
// every range, are reordered once per call, in slices over the threads
// (each range reordering them again cost every thread the whole reorder:
// 37.7 MB of filters for an Overfeat layer). grad_filter sums the ranges'
// partial filters in oneDNN's layout, in a fixed order, so results do not
// depend on timing, then reorders the sum once.
#include <oneapi/dnnl/dnnl.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frameworks/native/device.hpp"
#include "frameworks/native/ops/conv2d.hpp"
#include "frameworks/native/ops/onednn_engine.hpp"
#include "frameworks/native/ops/onednn_thread.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::native {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

[[nodiscard]] std::string_view op_name(ConvPass pass) noexcept {
  switch (pass) {
    case ConvPass::forward:
      return "nn::conv2d";
    case ConvPass::grad_data:
      return "nn::conv2d_grad_data";
    case ConvPass::grad_filter:
      return "nn::conv2d_grad_filter";
  }
  return "nn::conv2d";
}

// ---- descriptors ------------------------------------------------------------

memory::desc f32_desc(const memory::dims& dims, Tag tag) { return {dims, memory::data_type::f32, tag}; }
memory::desc input_desc(const ConvGeometry& g, bool any) {
  return f32_desc({g.n, g.c, g.h, g.w}, any ? Tag::any : Tag::nchw);
}
memory::desc output_desc(const ConvGeometry& g, bool any) {
  return f32_desc({g.n, g.k, g.p, g.q}, any ? Tag::any : Tag::nchw);
}
// Ours are [K, C/G, R, S]; oneDNN's grouped filters are [G, K/G, C/G, R, S]
// (goihw), the same bytes.
memory::desc filter_desc(const ConvGeometry& g, bool any) {
  if (g.groups == 1) return f32_desc({g.k, g.c, g.r, g.s}, any ? Tag::any : Tag::oihw);
  return f32_desc({g.groups, g.k_group(), g.c_group(), g.r, g.s}, any ? Tag::any : Tag::goihw);
}

// oneDNN counts dilation from 0 (ours from 1). Right padding equal to the
// left one gives oneDNN's output size formula our P and Q.
struct Window {
  memory::dims strides, dilates, pad_l, pad_r;
};
Window window_of(const ConvGeometry& g) {
  return {{g.stride_h, g.stride_w}, {g.dil_h - 1, g.dil_w - 1}, {g.pad_h, g.pad_w}, {g.pad_h, g.pad_w}};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_pd(const ConvGeometry& g) {
  const Window w = window_of(g);
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                             input_desc(g, true), filter_desc(g, true), output_desc(g, true),
                                             w.strides, w.dilates, w.pad_l, w.pad_r);
  return {desc, user_scratchpad(), onednn_engine(), true};
}

// ---- plans ------------------------------------------------------------------

// One operand of a plan: the caller's dense layout, the one the primitive
// wants and, when they differ, the reorder between them (caller's -> the
// primitive's for inputs, back for the output) and where the reordered copy
// lives in the workspace.
struct Operand {
  memory::desc user, inner;
  dnnl::reorder reorder;
  memory::desc reorder_scratchpad;
  std::size_t offset = 0;
  [[nodiscard]] bool reordered() const { return user != inner; }
};

// One slice of the filters' reorder: whole blocks of the inner layout along
// the filters' first axis (output channels, or groups), as views into the
// whole user and inner copies.
struct FilterSlice {
  dnnl::reorder reorder;
  memory::desc from, to, scratchpad;
};

// Everything one (pass, geometry) needs at run time. ops follow
// ConvOperands' order (in0, in1, out); args are their DNNL_ARG_ names.
// The filters are the same for every image range of a call, so their
// reorder runs once per call, in slices spread over the threads
// (filter_slices, empty when the filters need no reorder), instead of once
// per range.
struct Plan {
  dnnl::primitive conv;
  memory::desc scratchpad;
  std::array<Operand, 3> ops;
  std::array<int, 3> args{};
  std::size_t scratchpad_offset = 0, workspace_bytes = 0;
  std::size_t filter = 0;  // which of ops are the filters
  std::vector<FilterSlice> filter_slices;
  std::size_t filter_slice_scratchpad_bytes = 0;
};

[[nodiscard]] std::size_t aligned(std::size_t bytes) noexcept { return onednn_aligned(bytes); }

// Fills the operands' layouts and reorders and the workspace layout: the
// reordered copies, then one scratchpad shared by the primitives of the plan
// (they run one after another).
void finish_plan(Plan& plan, const std::array<memory::desc, 3>& user, const std::array<memory::desc, 3>& inner) {
  std::size_t bytes = 0, scratchpad_bytes = plan.scratchpad.get_size();
  for (std::size_t i = 0; i < 3; ++i) {
    Operand& op = plan.ops[i];
    op.user = user[i];
    op.inner = inner[i];
    if (!op.reordered()) continue;
    const bool output = i == 2;
    const dnnl::reorder::primitive_desc pd(onednn_engine(), output ? op.inner : op.user, onednn_engine(),
                                           output ? op.user : op.inner, user_scratchpad());
    op.reorder = dnnl::reorder(pd);
    op.reorder_scratchpad = pd.scratchpad_desc();
    scratchpad_bytes = std::max(scratchpad_bytes, op.reorder_scratchpad.get_size());
    op.offset = bytes;
    bytes += aligned(op.inner.get_size());
  }
  plan.scratchpad_offset = bytes;
  plan.workspace_bytes = bytes + aligned(scratchpad_bytes);
}

// The block of a layout's first axis (1 when that axis is not blocked).
[[nodiscard]] memory::dim first_axis_block(const memory::desc& md) {
  const auto& blocking = md.data.format_desc.blocking;
  memory::dim block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i)
    if (blocking.inner_idxs[i] == 0) block *= blocking.inner_blks[i];
  return block;
}

[[nodiscard]] bool has_padding(const memory::desc& md) {
  for (int i = 0; i < md.data.ndims; ++i)
    if (md.data.padded_dims[i] != md.data.dims[i]) return true;
  return false;
}

// Up to `slices` slices of the filters' reorder (user -> inner, or back for
// an output). A padded inner layout, or one with fewer blocks than two,
// gets the operand's whole reorder: sub-views would leave the padding
// unwritten, and the kernels read it as zeros.
void slice_filter_reorder(Plan& plan, std::int64_t slices) {
  const Operand& op = plan.ops[plan.filter];
  if (!op.reordered()) return;
  const bool output = plan.filter == 2;
  const bool blocked = op.inner.data.format_kind == dnnl_blocked;
  const memory::dims dims = op.user.dims();
  const memory::dim block = blocked ? first_axis_block(op.inner) : dims[0];
  const memory::dim blocks = block > 0 ? dims[0] / block : 0;
  slices = std::min<std::int64_t>(slices, blocks);
  if (!blocked || has_padding(op.inner) || dims[0] % block != 0 || slices < 2) {
    plan.filter_slices.push_back({op.reorder, output ? op.inner : op.user, output ? op.user : op.inner,
                                  op.reorder_scratchpad});
    plan.filter_slice_scratchpad_bytes = op.reorder_scratchpad.get_size();
    return;
  }
  for (std::int64_t i = 0; i < slices; ++i) {
    memory::dims sub = dims, offsets(dims.size(), 0);
    offsets[0] = i * blocks / slices * block;
    sub[0] = (i + 1) * blocks / slices * block - offsets[0];
    const memory::desc user = op.user.submemory_desc(sub, offsets), inner = op.inner.submemory_desc(sub, offsets);
    const memory::desc& from = output ? inner : user;
    const memory::desc& to = output ? user : inner;
    const dnnl::reorder::primitive_desc pd(onednn_engine(), from, onednn_engine(), to, user_scratchpad());
    plan.filter_slices.push_back({dnnl::reorder(pd), from, to, pd.scratchpad_desc()});
    plan.filter_slice_scratchpad_bytes = std::max(plan.filter_slice_scratchpad_bytes, pd.scratchpad_desc().get_size());
  }
}

// Elements of a layout, block padding included, per real element.
[[nodiscard]] double padding_factor(const memory::desc& md) {
  double real = 1, padded = 1;
  for (int i = 0; i < md.data.ndims; ++i) {
    real *= double(md.data.dims[i]);
    padded *= double(md.data.padded_dims[i]);
  }
  return real > 0 ? padded / real : 1;
}

// Whether oneDNN's kernel (pd, not empty) for a pass beats ours: not its
// reference kernels (plain loops), nor its own im2col + gemm ("x64:gemm",
// which ran a grouped grad_filter at 0.3-0.5x of ours), nor a blocked kernel
// that pads the channels of an image operand to its block more than twice
// over (a 3-channel dx in blocks of 16: 0.5x of ours for a 7x7 stem's
// grad_data).
template <class Pd>
[[nodiscard]] bool fast(const Pd& pd, const memory::desc& image0, const memory::desc& image1) {
  const std::string_view impl = pd.impl_info_str();
  return !impl.starts_with("ref") && !impl.starts_with("x64:gemm") && padding_factor(image0) <= 2 &&
         padding_factor(image1) <= 2;
}

// The plan of one pass, or nullptr when oneDNN has no fast kernel for it;
// its filter reorder in up to `slices` slices.
std::unique_ptr<Plan> make_plan(ConvPass pass, const ConvGeometry& g, std::int64_t slices) {
  // oneDNN compiles its kernels when a primitive is made: the kernel-build
  // fault point, failing as oneDNN does.
  if (plugin::should_fail(plugin::FaultSite::kernel_build, "native"))
    throw dnnl::error(dnnl_runtime_error, "could not create a primitive (injected fault)");
  const auto fwd = forward_pd(g);
  if (!fwd) return nullptr;
  const Window w = window_of(g);
  const dnnl::algorithm direct = dnnl::algorithm::convolution_direct;
  auto plan = std::make_unique<Plan>();
  const memory::desc x = input_desc(g, false), f = filter_desc(g, false), y = output_desc(g, false);
  switch (pass) {
    case ConvPass::forward: {
      if (!fast(fwd, fwd.src_desc(), fwd.dst_desc())) return nullptr;
      plan->conv = dnnl::convolution_forward(fwd);
      plan->scratchpad = fwd.scratchpad_desc();
      plan->args = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
      finish_plan(*plan, {x, f, y}, {fwd.src_desc(), fwd.weights_desc(), fwd.dst_desc()});
      break;
    }
    case ConvPass::grad_data: {
      const dnnl::convolution_backward_data::desc desc(direct, input_desc(g, true), filter_desc(g, true),
                                                       output_desc(g, true), w.strides, w.dilates, w.pad_l, w.pad_r);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), onednn_engine(), fwd, true);
      if (!pd || !fast(pd, pd.diff_src_desc(), pd.diff_dst_desc())) return nullptr;
      plan->conv = dnnl::convolution_backward_data(pd);
      plan->scratchpad = pd.scratchpad_desc();
      plan->args = {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC};
      finish_plan(*plan, {y, f, x}, {pd.diff_dst_desc(), pd.weights_desc(), pd.diff_src_desc()});
      break;
    }
    case ConvPass::grad_filter: {
      const dnnl::convolution_backward_weights::desc desc(direct, input_desc(g, true), filter_desc(g, true),
                                                          output_desc(g, true), w.strides, w.dilates, w.pad_l,
                                                          w.pad_r);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), onednn_engine(), fwd, true);
      if (!pd || !fast(pd, pd.src_desc(), pd.diff_dst_desc())) return nullptr;
      plan->conv = dnnl::convolution_backward_weights(pd);
      plan->scratchpad = pd.scratchpad_desc();
      plan->args = {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS};
      finish_plan(*plan, {x, y, f}, {pd.src_desc(), pd.diff_dst_desc(), pd.diff_weights_desc()});
      plan->filter = 2;
      break;
    }
  }
  if (pass != ConvPass::grad_filter) plan->filter = 1;
  slice_filter_reorder(*plan, slices);
  return plan;
}

// Plans by (pass, geometry), including "no plan" answers, so each is made
// once. A program that runs many distinct geometries would grow this
// without bound: past kMaxPlans, it starts over.
class PlanCache {
 public:
  std::shared_ptr<const Plan> get(ConvPass pass, const ConvGeometry& g, std::int64_t slices) {
    const Key key{std::int64_t(pass), g.n,        g.c,        g.h,     g.w,     g.k,     g.r,     g.s,     g.p,
                  g.q,                g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dil_h, g.dil_w, g.groups};
    {
      std::lock_guard lock(mutex_);
      if (auto it = plans_.find(key); it != plans_.end()) return it->second;
    }
    // Made outside the lock: other geometries need not wait. Two threads
    // making the same plan at once both get a working one.
    std::shared_ptr<const Plan> plan = make_plan(pass, g, slices);
    wait_at_exit_before_new_state();  // oneDNN's tables, built by the first plans
    std::lock_guard lock(mutex_);
    if (plans_.size() >= kMaxPlans) plans_.clear();
    plans_.emplace(key, plan);
    return plan;
  }

 private:
  static constexpr std::size_t kMaxPlans = 256;
  using Key = std::array<std::int64_t, 17>;
  struct Hash {
    std::size_t operator()(const Key& key) const noexcept {
      std::size_t h = 0;
      for (std::int64_t v : key) h = h * 1000003u ^ std::hash<std::int64_t>{}(v);
      return h;
    }
  };
  std::mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Plan>, Hash> plans_;
};

PlanCache& plans() {
  static auto* cache = new PlanCache();  // never destroyed: see onednn_engine
  return *cache;
}

// ---- running ----------------------------------------------------------------

// What one image range or filter slice uses on its thread: reordered
// operands, scratchpads.
struct Workspace {
  static constexpr const char* what = "oneDNN convolution workspace";
};
std::byte* workspace(std::size_t bytes) { return onednn_thread_buffer<Workspace>(bytes); }

// What a whole call shares between its ranges, held by the calling thread
// for the call: the reordered filters, and grad_filter's partial sums. The
// native queue runs one kernel at a time, so no second call on this thread
// reuses it meanwhile.
struct CallBuffer {
  static constexpr const char* what = "oneDNN convolution buffer";
};
std::byte* call_buffer(std::size_t bytes) { return onednn_thread_buffer<CallBuffer>(bytes); }

// Runs a plan on one image range. prepared[i], where not null, holds
// operand i in the plan's inner layout: an input already reordered there,
// or where the output is left unreordered.
void run(const Plan& plan, const std::array<void*, 3>& user_data, const std::array<std::byte*, 3>& prepared) {
  // The library-call fault point, failing as oneDNN does.
  if (plugin::should_fail(plugin::FaultSite::library_call, "native"))
    throw dnnl::error(dnnl_runtime_error, "could not execute a primitive (injected fault)");
  const dnnl::engine& engine = onednn_engine();
  dnnl::stream& stream = onednn_stream();
  std::byte* ws = workspace(plan.workspace_bytes);
  std::byte* scratch = ws + plan.scratchpad_offset;
  std::unordered_map<int, memory> args{{DNNL_ARG_SCRATCHPAD, memory(plan.scratchpad, engine, scratch)}};
  std::array<memory, 3> user, inner;
  for (std::size_t i = 0; i < 3; ++i) {
    const Operand& op = plan.ops[i];
    user[i] = memory(op.user, engine, user_data[i]);
    if (!op.reordered())
      inner[i] = user[i];
    else
      inner[i] = memory(op.inner, engine, prepared[i] != nullptr ? prepared[i] : ws + op.offset);
    args.emplace(plan.args[i], inner[i]);
    if (i < 2 && op.reordered() && prepared[i] == nullptr) {
      op.reorder.execute(stream, {{DNNL_ARG_FROM, user[i]},
                                  {DNNL_ARG_TO, inner[i]},
                                  {DNNL_ARG_SCRATCHPAD, memory(op.reorder_scratchpad, engine, scratch)}});
    }
  }
  plan.conv.execute(stream, args);
  const Operand& out = plan.ops[2];
  if (out.reordered() && prepared[2] == nullptr) {
    out.reorder.execute(stream, {{DNNL_ARG_FROM, inner[2]},
                                 {DNNL_ARG_TO, user[2]},
                                 {DNNL_ARG_SCRATCHPAD, memory(out.reorder_scratchpad, engine, scratch)}});
  }
  stream.wait();
}

// The plan's filter reorder between the user's copy and `inner`, slices in
// parallel.
void reorder_filter(const Plan& plan, void* user, std::byte* inner) {
  const bool output = plan.filter == 2;
  tbb::parallel_for(std::size_t{0}, plan.filter_slices.size(), [&](std::size_t i) {
    const OneOpenMpThread one;
    const FilterSlice& slice = plan.filter_slices[i];
    const dnnl::engine& engine = onednn_engine();
    dnnl::stream& stream = onednn_stream();
    std::byte* scratch = workspace(plan.filter_slice_scratchpad_bytes);
    slice.reorder.execute(stream, {{DNNL_ARG_FROM, memory(slice.from, engine, output ? inner : user)},
                                   {DNNL_ARG_TO, memory(slice.to, engine, output ? user : inner)},
                                   {DNNL_ARG_SCRATCHPAD, memory(slice.scratchpad, engine, scratch)}});
    stream.wait();
  });
}

// "conv2d on native, x [...], w [...]: oneDNN: ", before oneDNN's message.
std::string describe(ConvPass pass, const ConvGeometry& g) {
  return std::string(op_name(pass)) + " on native, x [" + std::to_string(g.n) + ", " + std::to_string(g.c) + ", " +
         std::to_string(g.h) + ", " + std::to_string(g.w) + "], w [" + std::to_string(g.k) + ", " +
         std::to_string(g.c_group()) + ", " + std::to_string(g.r) + ", " + std::to_string(g.s) + "]: oneDNN: ";
}

}  // namespace

bool conv_onednn(ConvPass pass, const ConvGeometry& g, const ConvOperands<float>& ops) {
  // Empty inputs (C = 0): nothing to reorder or multiply; im2col writes zeros.
  if (g.c == 0 || g.k == 0) return false;
  const std::int64_t threads = std::max(1, tbb::this_task_arena::max_concurrency());
  const std::int64_t ranges = std::min(g.n, threads);
  if (2 * ranges < threads) return false;  // too few images: see the top of the file
  // Ranges differ by at most one image: two geometries, two plans.
  const auto range_begin = [&](std::int64_t i) { return i * g.n / ranges; };
  ConvGeometry small = g, large = g;
  small.n = g.n / ranges;
  large.n = small.n + (g.n % ranges != 0 ? 1 : 0);
  const std::int64_t image_in = g.c * g.h * g.w, image_out = g.k * g.p * g.q;
  try {
    std::shared_ptr<const Plan> small_plan, large_plan;
    try {
      const OneOpenMpThread one;
      small_plan = plans().get(pass, small, threads);
      large_plan = large.n == small.n ? small_plan : plans().get(pass, large, threads);
    } catch (const dnnl::error& e) {
      // Making a primitive is where oneDNN compiles its kernels.
      throw Error(e.status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::compile_failed,
                  describe(pass, g) + e.what() + " (XYLEM_NATIVE_CONV=im2col avoids oneDNN)");
    }
    if (!small_plan || !large_plan) return false;
    const std::size_t fi = small_plan->filter;
    const Operand& filter = small_plan->ops[fi];
    // Both plans must agree on the filters' layout to share one copy (they
    // differ in the batch only, so oneDNN picks the same one in practice).
    const bool shared = filter.reordered() && filter.inner == large_plan->ops[fi].inner;
    const bool grad_filter = pass == ConvPass::grad_filter;
    // grad_filter: each range's partial dw, in the inner layout when the
    // filters are reordered (summed there, then reordered once), else in
    // the user's; range 0 writes dw itself when it is alone and unreordered.
    const std::size_t filter_bytes = aligned(shared ? filter.inner.get_size() : filter.user.get_size());
    const bool partials = grad_filter && (shared || ranges > 1);
    std::byte* common = nullptr;
    if (shared || partials) common = call_buffer(partials ? std::size_t(ranges) * filter_bytes : filter_bytes);
    if (shared && !grad_filter) reorder_filter(*small_plan, const_cast<float*>(ops.in1), common);
    tbb::parallel_for(std::int64_t{0}, ranges, [&](std::int64_t i) {
      const OneOpenMpThread one;
      const std::int64_t b = range_begin(i), count = range_begin(i + 1) - b;
      const Plan& plan = count == small.n ? *small_plan : *large_plan;
      std::array<std::byte*, 3> prepared{};
      if (shared) prepared[fi] = common + (grad_filter ? std::size_t(i) * filter_bytes : 0);
      switch (pass) {
        case ConvPass::forward:  // x, w -> y
          run(plan, {const_cast<float*>(ops.in0 + b * image_in), const_cast<float*>(ops.in1), ops.out + b * image_out},
              prepared);
          break;
        case ConvPass::grad_data:  // dy, w -> dx
          run(plan, {const_cast<float*>(ops.in0 + b * image_out), const_cast<float*>(ops.in1), ops.out + b * image_in},
              prepared);
          break;
        case ConvPass::grad_filter:  // x, dy -> dw
          run(plan, {const_cast<float*>(ops.in0 + b * image_in), const_cast<float*>(ops.in1 + b * image_out),
                     partials && !shared ? static_cast<void*>(common + std::size_t(i) * filter_bytes) : ops.out},
              prepared);
          break;
      }
    });
    if (partials) {
      // The partial sums added in range order, so results do not depend on
      // timing; into the first partial when a reorder to dw follows.
      const auto* part = reinterpret_cast<const float*>(common);
      float* sum = shared ? reinterpret_cast<float*>(common) : ops.out;
      const std::int64_t elements = std::int64_t((shared ? filter.inner : filter.user).get_size() / sizeof(float));
      const std::size_t stride = filter_bytes / sizeof(float);
      if (ranges > 1) {
        tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, elements, 4096),
                          [&](const tbb::blocked_range<std::int64_t>& r) {
                            for (std::int64_t j = r.begin(); j < r.end(); ++j) {
                              float total = part[j];
                              for (std::int64_t i = 1; i < ranges; ++i) total += part[std::size_t(i) * stride + std::size_t(j)];
                              sum[j] = total;
                            }
                          });
      }
      if (shared) reorder_filter(*small_plan, ops.out, common);
    }
    return true;
  } catch (const dnnl::error& e) {
    const ErrorCode code = e.status == dnnl_out_of_memory ? ErrorCode::out_of_memory : ErrorCode::internal;
    throw Error(code, describe(pass, g) + e.what() + " (XYLEM_NATIVE_CONV=im2col avoids oneDNN)");
  }
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace xylem::native
