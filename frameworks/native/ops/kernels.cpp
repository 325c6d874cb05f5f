// The native kernel table, built once on first use (thread-safe: a
// function-local static) from every op family's registration; and the size
// above which kernels stream their output.
#include "frameworks/native/ops/kernels.hpp"

#include <fstream>

namespace xylem::native {

const KernelTable& kernels() {
  static const KernelTable table =
      plugin::make_kernel_table<Kernel>({register_creation, register_copy, register_blas, register_elementwise, register_cast,
                                         register_reduce, register_softmax, register_dropout, register_cross_entropy,
                                         register_layer_norm, register_batch_norm, register_conv2d, register_pool,
                                         register_lrn, register_optim, register_index,
                                         register_attention, register_attention_grad, register_fft, register_rnn,
                                         register_blas_extra, register_fused,
                                         register_gemm_epilogue, register_softmax_epilogue,
                                         register_reduce_epilogue});
  return table;
}

// An op reading n bytes and writing n touches 2n: its output can still be
// in the last-level cache for the next op only while 2n fits, i.e. n up to
// half the cache. Above that the output leaves the cache anyway, and an
// ordinary store first reads each destination line (read-for-ownership): a
// unary op moves 3n instead of 2n. Streaming stores skip that read (glibc's
// memcpy switches to them at a similar size, 3/4 of the shared cache).
//
// The L3 size comes from Linux's sysfs, which reports the cache a core
// shares; glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) was 12x too large on the
// EPYC VM we measure on. 32 MiB when sysfs does not say.
std::int64_t stream_threshold_bytes() noexcept {
  static const std::int64_t bytes = [] {
    std::int64_t l3 = std::int64_t(32) << 20;
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index3/size");
    std::int64_t size = 0;
    char unit = 0;
    if (in >> size >> unit && size > 0) l3 = size << (unit == 'M' ? 20 : unit == 'K' ? 10 : 0);
    return l3 / 2;
  }();
  return bytes;
}

}  // namespace xylem::native
