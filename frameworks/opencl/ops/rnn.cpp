// nn::lstm_cell, gru_cell and their gradients: kernels/rnn.cl (with
// rnn_math.h), one work-item per (row, unit) of the contiguous states, or
// per vector of units on CPU devices.
#include "frameworks/opencl/ops/kernels.hpp"
#include "frameworks/opencl/ops/launch.hpp"
#include "frameworks/opencl/sources.hpp"

namespace xylem::opencl {

namespace {

using plugin::OpId;
using plugin::TensorArg;

constinit const ProgramSpec kRnnProgram{"rnn", {&sources::rnn_math_h, &sources::rnn}, Helpers::none, Passes::reals};

cl_long offset_of(const TensorArg& t) { return cl_long{t.view.offset()}; }

// The [N, H] state every launch runs over: its element count and H, and
// the units one work-item takes: a vector's worth on CPU devices where H
// holds whole vectors (kernels/rnn.cl's _v kernels), else one.
struct States {
  cl_long n, hidden;
  cl_long per_item = 1;
};
States states_of(const Launcher& launch, const TensorArg& state) {
  const auto& v = state.view;
  States s{cl_long{v.numel()}, cl_long{v.rank() == 2 ? v.dim(1) : 0}};
  const cl_long width = state.dtype == DType::f64 ? 8 : 16;  // VW of the pass
  if ((launch.device().info().type & CL_DEVICE_TYPE_CPU) && s.hidden > 0 && s.hidden % width == 0)
    s.per_item = width;
  return s;
}

const KernelInfo& kernel_of(Launcher& launch, DType dtype, const char* name, const States& s) {
  return launch.program(kRnnProgram, dtype).kernel(join({name, s.per_item > 1 ? "_v" : "", suffix(dtype)}));
}

std::size_t items(const States& s) { return static_cast<std::size_t>(s.n / s.per_item); }

void lstm(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell>(launch.call());
  const States s = states_of(launch, a.c);
  launch.run(kernel_of(launch, a.c.dtype, "lstm_cell", s), items(s), mem_of(a.gates),
             offset_of(a.gates), mem_of(a.c_prev), offset_of(a.c_prev), mem_of(a.c), offset_of(a.c), mem_of(a.h),
             offset_of(a.h), s.n, s.hidden);
}

void lstm_grad(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::nn_lstm_cell_grad>(launch.call());
  const States s = states_of(launch, a.c);
  launch.run(kernel_of(launch, a.c.dtype, "lstm_cell_grad", s), items(s), mem_of(a.gates),
             offset_of(a.gates), mem_of(a.c_prev), offset_of(a.c_prev), mem_of(a.c), offset_of(a.c), mem_of(a.dy),
             offset_of(a.dy), mem_of(a.dh), offset_of(a.dh), mem_of(a.dc), offset_of(a.dc), mem_of(a.dgates),
             offset_of(a.dgates), mem_of(a.dc_prev), offset_of(a.dc_prev), s.n, s.hidden);
}

void gru(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell>(launch.call());
  const States s = states_of(launch, a.h);
  launch.run(kernel_of(launch, a.h.dtype, "gru_cell", s), items(s), mem_of(a.xg), offset_of(a.xg),
             mem_of(a.hg), offset_of(a.hg), mem_of(a.h_prev), offset_of(a.h_prev), mem_of(a.h), offset_of(a.h), s.n,
             s.hidden);
}

void gru_grad(Launcher& launch) {
  const auto a = plugin::unpack<plugin::args::nn_gru_cell_grad>(launch.call());
  const States s = states_of(launch, a.h_prev);
  launch.run(kernel_of(launch, a.h_prev.dtype, "gru_cell_grad", s), items(s), mem_of(a.gates),
             offset_of(a.gates), mem_of(a.hg), offset_of(a.hg), mem_of(a.h_prev), offset_of(a.h_prev), mem_of(a.dy),
             offset_of(a.dy), mem_of(a.dh), offset_of(a.dh), mem_of(a.dxg), offset_of(a.dxg), mem_of(a.dhg),
             offset_of(a.dhg), mem_of(a.dh_prev), offset_of(a.dh_prev), s.n, s.hidden);
}

EventPtr launch_rnn(Launcher& launch) {
  switch (launch.call().op) {
    case OpId::nn_lstm_cell:
      lstm(launch);
      break;
    case OpId::nn_lstm_cell_grad:
      lstm_grad(launch);
      break;
    case OpId::nn_gru_cell:
      gru(launch);
      break;
    default:
      gru_grad(launch);
      break;
  }
  return launch.finish();
}

constinit const OpKernel kRnn{launch_rnn, {&kRnnProgram}};

}  // namespace

void register_rnn(KernelTable& table) {
  for (OpId op : {OpId::nn_lstm_cell, OpId::nn_lstm_cell_grad, OpId::nn_gru_cell, OpId::nn_gru_cell_grad})
    set_dtypes(table, op, kRealDtypes, &kRnn);
}

}  // namespace xylem::opencl
