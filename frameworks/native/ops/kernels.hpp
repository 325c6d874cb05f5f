#pragma once
// The native framework's kernel table: one slot per (op, dtype). Each op
// family file (blas.cpp, activation.cpp, creation.cpp, copy.cpp) fills its
// slots in register_<family>(). Kernels run on the device's queue thread and
// may use oneTBB for parallelism inside.
#include <array>
#include <cstdint>

#include "xylem/plugin/kernel_table.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::native {

using Kernel = void (*)(const plugin::OpCall& call);

using KernelTable = plugin::KernelTable<Kernel>;
using plugin::dispatch_dtype;

void register_creation(KernelTable& table);
void register_copy(KernelTable& table);
void register_blas(KernelTable& table);
// f16/bf16 gemm (gemm_half.cpp), called from register_blas.
void register_gemm_half(KernelTable& table);
// ger, syrk, trsm and geam (blas_extra.cpp).
void register_blas_extra(KernelTable& table);
void register_elementwise(KernelTable& table);
// Casts, reductions and the row-wise nn families: softmax, dropout, cross-entropy.
void register_cast(KernelTable& table);
void register_reduce(KernelTable& table);
void register_softmax(KernelTable& table);
void register_dropout(KernelTable& table);
void register_cross_entropy(KernelTable& table);
// The nn families over channels and windows: normalisation, convolution, pooling, LRN.
void register_layer_norm(KernelTable& table);
void register_batch_norm(KernelTable& table);
void register_conv2d(KernelTable& table);
void register_pool(KernelTable& table);
void register_lrn(KernelTable& table);
// Optimizer updates: SGD, Adam/AdamW.
void register_optim(KernelTable& table);
void register_rnn(KernelTable& table);
// Indexing along an axis: gather, scatter and their index check.
void register_index(KernelTable& table);
// Scaled dot-product attention: the forward and per-row statistics, then the gradients.
void register_attention(KernelTable& table);
void register_attention_grad(KernelTable& table);
// Discrete Fourier transforms (FFTW).
void register_fft(KernelTable& table);
// math::fused: the tiled evaluator of elementwise chains.
void register_fused(KernelTable& table);
// blas::gemm_epilogue: the gemm in bands, each band's tail in cache (gemm_epilogue.cpp).
void register_gemm_epilogue(KernelTable& table);
// nn::softmax_epilogue: the softmax in bands, each band's tail in cache (softmax_epilogue.cpp).
void register_softmax_epilogue(KernelTable& table);
// math::reduce_epilogue: the reduction, then its tail (reduce_epilogue.cpp).
void register_reduce_epilogue(KernelTable& table);

// The table with every family registered (built once).
[[nodiscard]] const KernelTable& kernels();

// Outputs larger than this many bytes are written with streaming
// (non-temporal) stores by the elementwise kernels:
// half the last-level cache (kernels.cpp says why).
[[nodiscard]] std::int64_t stream_threshold_bytes() noexcept;

// Typed element pointer of an argument: data + view offset.
template <class T>
[[nodiscard]] inline T* element_ptr(const plugin::TensorArg& a) noexcept {
  return static_cast<T*>(a.data) + a.view.offset();
}

}  // namespace xylem::native
