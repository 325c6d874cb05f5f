// nn::attention and its gradients: kernels/attention.cl. GPUs: work-groups
// of query (key) rows, each group computing one chunk of XY_ATTN_CHUNK
// output columns; the tiles staged in local memory are as many rows as fit
// the budget below, so any head dimension runs. CPU devices (chosen by the
// device type at launch): the *_rows kernels, a few rows per item and
// vectors across blocks of the other side (attention.cl says why).
#include <algorithm>
#include <cstdint>

#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/nn_launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kAttentionProgram{"attention", {&sources::attention}, Helpers::nn, Passes::floats};

constexpr std::int64_t kChunk = 32;  // XY_ATTN_CHUNK in kernels/attention.cl

// Mirrors xy_attn in kernels/attention.cl.
struct AttnArg {
  cl_long B = 0, H = 0, Hkv = 0, Sq = 0, Sk = 0, D = 0, Dv = 0, causal = 0, chunks = 1, tile = 1;
  cl_ulong seed = 0, offset = 0;
};
static_assert(sizeof(AttnArg) == 12 * sizeof(cl_long));

const KernelInfo& attention_kernel(Launcher& launch, const char* name, DType dtype) {
  return launch.program(kAttentionProgram, dtype).kernel(join({name, suffix(dtype)}));
}

// Rows of a work-group of the GPU kernels (CPU devices run the *_rows ones).
std::size_t group_rows(const KernelInfo& kernel) { return std::min<std::size_t>(kernel.max_local, 64); }

// Rows of a local tile of `width` compute-type elements each (plus `extra`
// per row): up to 64, within a quarter of the device's local memory.
std::int64_t tile_rows(const Launcher& launch, DType dtype, std::int64_t width) {
  const auto budget = std::int64_t(std::min<std::uint64_t>(launch.device().info().local_mem / 4, 32 * 1024));
  const auto per_row = width * std::int64_t(size_of(compute_dtype(dtype)));
  return std::clamp<std::int64_t>(budget / std::max<std::int64_t>(per_row, 1), 1, 64);
}

AttnArg attn_arg(const TensorArg& q, const TensorArg& k, const TensorArg& v, std::int64_t causal, std::int64_t seed,
                 std::int64_t offset, std::int64_t columns) {
  const auto qd = q.view.dims(), kd = k.view.dims();
  AttnArg a;
  a.B = qd[0];
  a.H = qd[1];
  a.Sq = qd[2];
  a.D = qd[3];
  a.Hkv = kd[1];
  a.Sk = kd[2];
  a.Dv = v.view.dims()[3];
  a.causal = causal;
  a.chunks = (columns + kChunk - 1) / kChunk;
  a.seed = static_cast<cl_ulong>(seed);
  a.offset = static_cast<cl_ulong>(offset);
  return a;
}

// The mask as the kernels take it: a boolean pointer or an additive one.
cl_mem bool_mask(const TensorArg& m) { return m.data && m.dtype == DType::boolean ? mem_of(m) : nullptr; }
cl_mem add_mask(const TensorArg& m) { return m.data && m.dtype != DType::boolean ? mem_of(m) : nullptr; }

std::size_t groups(const AttnArg& a, std::int64_t heads, std::int64_t rows, std::size_t local) {
  const auto tiles = (rows + std::int64_t(local) - 1) / std::int64_t(local);
  return static_cast<std::size_t>(a.B * heads * tiles * a.chunks);
}

// The *_rows kernels of kernels/attention.cl (CPU devices): rows and
// output columns per item, XY_ATTN_ROWS and XY_ATTN_VECS vectors of VW.
constexpr std::int64_t kCpuRows = 4, kCpuVectors = 4;

bool on_cpu(const Launcher& launch) { return (launch.device().info().type & CL_DEVICE_TYPE_CPU) != 0; }

// The vector width of the *_rows kernels: VW of the compute type.
std::int64_t cpu_width(DType dtype) { return compute_dtype(dtype) == DType::f64 ? 8 : 16; }

// x [B, heads, S, width] transposed by blocks of VW rows into a scratch
// (attention_blocks).
Mem transposed_blocks(Launcher& launch, const TensorArg& x) {
  const auto d = x.view.dims();
  const std::int64_t width = cpu_width(x.dtype), blocks = (d[2] + width - 1) / width;
  Mem out = temporary_buffer(launch, d[0] * d[1] * blocks * d[3] * width, compute_dtype(x.dtype));
  launch.run(attention_kernel(launch, "attention_blocks", x.dtype), static_cast<std::size_t>(d[0] * d[1] * blocks),
             mem_of(x), view_arg(x), out.get(), cl_long{d[0]}, cl_long{d[1]}, cl_long{d[2]}, cl_long{d[3]});
  return out;
}

// Items of a *_rows kernel over `rows` rows of `heads` heads, `columns`
// output columns; sets a.chunks. Each item is a group of its own, so that
// PoCL spreads the items over its threads.
std::size_t cpu_items(AttnArg& a, DType dtype, std::int64_t heads, std::int64_t rows, std::int64_t columns) {
  const std::int64_t cols = kCpuVectors * cpu_width(dtype);
  a.chunks = (columns + cols - 1) / cols;
  return static_cast<std::size_t>(a.B * heads * ((rows + kCpuRows - 1) / kCpuRows) * a.chunks);
}

// The forward on a CPU device: k transposed by blocks, then attention_rows
// (attention.cl says why this shape).
void forward_cpu(Launcher& launch) {
  const auto x = plugin::unpack<plugin::args::nn_attention>(launch.call());
  const DType dt = x.q.dtype;
  AttnArg a = attn_arg(x.q, x.k, x.v, x.causal, x.seed, x.offset, x.v.view.dims()[3]);
  const std::size_t items = cpu_items(a, dt, a.H, a.Sq, a.Dv);
  const Mem kt = transposed_blocks(launch, x.k);
  launch.run_groups(attention_kernel(launch, "attention_rows", dt), items, 1, mem_of(x.q), view_arg(x.q), kt.get(),
                    mem_of(x.v), view_arg(x.v), bool_mask(x.mask), add_mask(x.mask), view_arg(x.mask),
                    mem_of(x.out), view_arg(x.out), mem_of(x.lse), view_arg(x.lse), a, compute_scalar(dt, x.scale),
                    static_cast<cl_float>(x.p), compute_scalar(dt, 1 / (1 - x.p)));
}

void grad_q_cpu(Launcher& launch) {
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_q>(launch.call());
  const DType dt = x.q.dtype;
  AttnArg a = attn_arg(x.q, x.k, x.v, x.causal, x.seed, x.offset, x.q.view.dims()[3]);
  const std::size_t items = cpu_items(a, dt, a.H, a.Sq, a.D);
  const Mem kt = transposed_blocks(launch, x.k), vt = transposed_blocks(launch, x.v);
  launch.run_groups(attention_kernel(launch, "attention_grad_q_rows", dt), items, 1, mem_of(x.q), view_arg(x.q),
                    mem_of(x.k), view_arg(x.k), kt.get(), vt.get(), bool_mask(x.mask), add_mask(x.mask),
                    view_arg(x.mask), mem_of(x.dout), view_arg(x.dout), mem_of(x.stats), view_arg(x.stats),
                    mem_of(x.dq), view_arg(x.dq), a, compute_scalar(dt, x.scale), static_cast<cl_float>(x.p),
                    compute_scalar(dt, 1 / (1 - x.p)));
}

void grad_kv_cpu(Launcher& launch) {
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_kv>(launch.call());
  const DType dt = x.q.dtype;
  AttnArg a = attn_arg(x.q, x.k, x.v, x.causal, x.seed, x.offset, 1);
  const std::size_t items = cpu_items(a, dt, a.Hkv, a.Sk, std::max(a.D, a.Dv));
  const Mem qt = transposed_blocks(launch, x.q), dot = transposed_blocks(launch, x.dout);
  launch.run_groups(attention_kernel(launch, "attention_grad_kv_rows", dt), items, 1, mem_of(x.q), view_arg(x.q),
                    mem_of(x.k), view_arg(x.k), mem_of(x.v), view_arg(x.v), qt.get(), dot.get(), bool_mask(x.mask),
                    add_mask(x.mask), view_arg(x.mask), mem_of(x.dout), view_arg(x.dout), mem_of(x.stats),
                    view_arg(x.stats), mem_of(x.dk), view_arg(x.dk), mem_of(x.dv), view_arg(x.dv), a,
                    compute_scalar(dt, x.scale), static_cast<cl_float>(x.p), compute_scalar(dt, 1 / (1 - x.p)));
}

void forward(Launcher& launch) {
  if (on_cpu(launch)) return forward_cpu(launch);
  const auto x = plugin::unpack<plugin::args::nn_attention>(launch.call());
  const DType dt = x.q.dtype;
  AttnArg a = attn_arg(x.q, x.k, x.v, x.causal, x.seed, x.offset, x.v.view.dims()[3]);
  a.tile = tile_rows(launch, dt, a.D + kChunk);
  const KernelInfo& kernel = attention_kernel(launch, "attention", dt);
  const std::size_t local = group_rows(kernel);
  const std::size_t t = size_of(compute_dtype(dt));
  launch.run_groups(kernel, groups(a, a.H, a.Sq, local), local, mem_of(x.q), view_arg(x.q), mem_of(x.k),
                    view_arg(x.k), mem_of(x.v), view_arg(x.v), bool_mask(x.mask), add_mask(x.mask), view_arg(x.mask),
                    mem_of(x.out), view_arg(x.out), mem_of(x.lse), view_arg(x.lse), a, compute_scalar(dt, x.scale),
                    static_cast<cl_float>(x.p), compute_scalar(dt, 1 / (1 - x.p)),
                    LocalBytes{std::size_t(a.tile * a.D) * t}, LocalBytes{std::size_t(a.tile * kChunk) * t});
}

void grad_rows(Launcher& launch) {
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_rows>(launch.call());
  const auto d = x.out.view.dims();
  const std::int64_t rows = d[0] * d[1] * d[2];
  launch.run(attention_kernel(launch, "attention_grad_rows", x.out.dtype), static_cast<std::size_t>(rows),
             mem_of(x.out), view_arg(x.out), mem_of(x.dout), view_arg(x.dout), mem_of(x.lse), view_arg(x.lse),
             mem_of(x.stats), view_arg(x.stats), cl_long{d[1]}, cl_long{d[2]}, cl_long{d[3]}, cl_long{rows});
}

void grad_q(Launcher& launch) {
  if (on_cpu(launch)) return grad_q_cpu(launch);
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_q>(launch.call());
  const DType dt = x.q.dtype;
  AttnArg a = attn_arg(x.q, x.k, x.v, x.causal, x.seed, x.offset, x.q.view.dims()[3]);
  a.tile = tile_rows(launch, dt, a.D + a.Dv);
  const KernelInfo& kernel = attention_kernel(launch, "attention_grad_q", dt);
  const std::size_t local = group_rows(kernel);
  const std::size_t t = size_of(compute_dtype(dt));
  launch.run_groups(kernel, groups(a, a.H, a.Sq, local), local, mem_of(x.q), view_arg(x.q), mem_of(x.k),
                    view_arg(x.k), mem_of(x.v), view_arg(x.v), bool_mask(x.mask), add_mask(x.mask), view_arg(x.mask),
                    mem_of(x.dout), view_arg(x.dout), mem_of(x.stats), view_arg(x.stats), mem_of(x.dq),
                    view_arg(x.dq), a, compute_scalar(dt, x.scale), static_cast<cl_float>(x.p),
                    compute_scalar(dt, 1 / (1 - x.p)), LocalBytes{std::size_t(a.tile * a.D) * t},
                    LocalBytes{std::size_t(a.tile * a.Dv) * t});
}

void grad_kv(Launcher& launch) {
  if (on_cpu(launch)) return grad_kv_cpu(launch);
  const auto x = plugin::unpack<plugin::args::nn_attention_grad_kv>(launch.call());
  const DType dt = x.q.dtype;
  AttnArg a = attn_arg(x.q, x.k, x.v, x.causal, x.seed, x.offset,
                       std::max(x.q.view.dims()[3], x.v.view.dims()[3]));
  a.tile = tile_rows(launch, dt, a.D + a.Dv + 2);
  const KernelInfo& kernel = attention_kernel(launch, "attention_grad_kv", dt);
  const std::size_t local = group_rows(kernel);
  const std::size_t t = size_of(compute_dtype(dt));
  launch.run_groups(kernel, groups(a, a.Hkv, a.Sk, local), local, mem_of(x.q), view_arg(x.q), mem_of(x.k),
                    view_arg(x.k), mem_of(x.v), view_arg(x.v), bool_mask(x.mask), add_mask(x.mask), view_arg(x.mask),
                    mem_of(x.dout), view_arg(x.dout), mem_of(x.stats), view_arg(x.stats), mem_of(x.dk),
                    view_arg(x.dk), mem_of(x.dv), view_arg(x.dv), a, compute_scalar(dt, x.scale),
                    static_cast<cl_float>(x.p), compute_scalar(dt, 1 / (1 - x.p)),
                    LocalBytes{std::size_t(a.tile * a.D) * t}, LocalBytes{std::size_t(a.tile * a.Dv) * t},
                    LocalBytes{std::size_t(2 * a.tile) * t});
}

EventPtr launch_attention(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::nn_attention:
      forward(launch);
      break;
    case OpId::nn_attention_grad_rows:
      grad_rows(launch);
      break;
    case OpId::nn_attention_grad_q:
      grad_q(launch);
      break;
    case OpId::nn_attention_grad_kv:
      grad_kv(launch);
      break;
    default:
      throw Error(ErrorCode::internal, launch.describe() + ": not an attention op");
  }
  return launch.finish();
}

constinit const OpKernel kAttention{launch_attention, {&kAttentionProgram}};

}  // namespace

void register_attention(KernelTable& table) {
  for (OpId op : {OpId::nn_attention, OpId::nn_attention_grad_rows, OpId::nn_attention_grad_q,
                  OpId::nn_attention_grad_kv})
    set_dtypes(table, op, kFloatDtypes, &kAttention);
}

}  // namespace xylem::opencl
