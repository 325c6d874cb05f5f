#pragma once
// The OpenCL framework's kernel table: one slot per (op, dtype), what
// Device::supports answers from (with the device's fp64) and what
// Device::launch calls. Each op family file (ops/<family>.cpp, the names
// of frameworks/native/ops/) describes its program once and fills its
// slots in register_<family>().
#include <array>
#include <span>

#include "frameworks/opencl/program_spec.hpp"
#include "xylem/future.hpp"
#include "xylem/plugin/kernel_table.hpp"

namespace xylem::opencl {

class Launcher;

// One op's entry: its launch code and the programs it runs kernels of,
// which Device::launch builds (or loads) before taking the launch lock and
// `xylem warm` builds ahead of time.
struct OpKernel {
  EventPtr (*launch)(Launcher& launch);
  std::array<const ProgramSpec*, 4> programs{};  // null past the last
};

// (cl.hpp's Kernel is a cl_kernel handle.)
using KernelTable = plugin::KernelTable<const OpKernel*>;

// The dtype sets ops take. f64 needs a device with fp64 (Device::supports)
// save for the ops that only move bit patterns.
inline constexpr std::array<DType, 8> kEveryDtype = {DType::f16, DType::bf16, DType::f32, DType::f64,
                                                     DType::i32, DType::i64, DType::u8,  DType::boolean};
// The complex dtypes, which only the ops moving bit patterns take here.
inline constexpr std::array<DType, 2> kComplexDtypes = {DType::c64, DType::c128};
// f16 and bf16 compute in f32 (kernels/storage.cl): no device fp16 needed.
inline constexpr std::array<DType, 4> kFloatDtypes = {DType::f16, DType::bf16, DType::f32, DType::f64};
inline constexpr std::array<DType, 2> kRealDtypes = {DType::f32, DType::f64};
// The integer dtypes of arithmetic, comparisons, where and reductions.
inline constexpr std::array<DType, 2> kIntegerDtypes = {DType::i32, DType::i64};

// kernels/integer.cl: i32 and i64 elementwise (ops/elementwise.cpp) and
// reductions (ops/reduce.cpp), one program per type.
extern const ProgramSpec kIntegerProgram;

// Sets `op`'s slot for each of `dtypes`.
void set_dtypes(KernelTable& table, plugin::OpId op, std::span<const DType> dtypes,
                const OpKernel* kernel);

void register_creation(KernelTable& table);
void register_copy(KernelTable& table);
void register_blas(KernelTable& table);
// ger, syrk, trsm and geam (blas_extra.cpp).
void register_blas_extra(KernelTable& table);
// f16/bf16 gemm (gemm_half.cpp).
void register_gemm_half(KernelTable& table);
void register_elementwise(KernelTable& table);
void register_cast(KernelTable& table);
void register_reduce(KernelTable& table);
void register_softmax(KernelTable& table);
void register_dropout(KernelTable& table);
void register_cross_entropy(KernelTable& table);
void register_layer_norm(KernelTable& table);
void register_batch_norm(KernelTable& table);
void register_conv2d(KernelTable& table);
void register_pool(KernelTable& table);
void register_lrn(KernelTable& table);
void register_optim(KernelTable& table);
void register_rnn(KernelTable& table);
// Indexing along an axis: gather, scatter and their index check.
void register_index(KernelTable& table);
// Scaled dot-product attention: the forward and the gradients.
void register_attention(KernelTable& table);
// math::fused: one program per chain, generated at run time.
void register_fused(KernelTable& table);

// The table with every family registered (built once).
[[nodiscard]] const KernelTable& kernels();

}  // namespace xylem::opencl
