// Native nn::softmax_epilogue: the softmax in bands of rows, each band's
// tail (the math::fused program whose input 0 is the softmax) run while the
// band is still in cache, so the softmax's result is not written to memory
// and read back. Both halves are this framework's own kernels (softmax.cpp,
// fused.cpp's tile evaluator), called on the band's views
// (xylem/plugin/epilogue.hpp).
#include <algorithm>
#include <cstdint>

#include "frameworks/native/ops/kernels.hpp"
#include "xylem/plugin/epilogue.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;
using plugin::OpId;
namespace pe = plugin::epilogue;

// A band's result is about this many bytes: the tail reads it from the
// last-level cache (shared by the threads the two kernels use), and a band
// still gives every thread rows of its own.
constexpr std::int64_t kBandBytes = std::int64_t{4} << 20;

void softmax_epilogue_kernel(const OpCall& call) {
  const auto e = plugin::unpack<plugin::args::nn_softmax_epilogue>(call);
  const std::int64_t n = e.y0.view.numel();
  if (n == 0) return;
  const Kernel softmax = kernels().get(OpId::nn_softmax, e.y0.dtype);
  const Kernel tail = kernels().get(OpId::math_fused, e.y0.dtype);
  const std::int64_t band = pe::softmax_band_indices(e, kBandBytes);
  if (band == 0) {
    softmax(pe::softmax(e));
    tail(pe::tail(e));
    return;
  }
  const std::int64_t rows_per_index = pe::softmax_rows_per_index(e), indices = e.y0.view.dims()[0];
  for (std::int64_t first = 0; first < indices; first += band) {
    const pe::SoftmaxArgs part = pe::softmax_band(e, rows_per_index, first, std::min(band, indices - first));
    softmax(pe::softmax(part));
    tail(pe::tail(part));
  }
}

}  // namespace

void register_softmax_epilogue(KernelTable& table) {
  for (const DType d : {DType::f16, DType::bf16, DType::f32, DType::f64})
    table.set(OpId::nn_softmax_epilogue, d, &softmax_epilogue_kernel);
}

}  // namespace xylem::native
