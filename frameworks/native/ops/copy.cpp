// core::copy_view natively: y = x for two views of the same dims and dtype,
// any strides. Only the element size matters, so one kernel per size serves
// every dtype. Dense stretches go through memcpy, in parallel chunks, since
// one core alone cannot saturate memory bandwidth.
#include <cstdint>
#include <cstring>

#include "frameworks/native/ops/kernels.hpp"
#include "frameworks/native/ops/strided.hpp"

namespace xylem::native {
namespace {

using plugin::OpCall;

// About 256 KiB per chunk: large enough that the split costs nothing next to
// the copy, small enough that both cores get work from a few MiB up.
constexpr std::int64_t kChunkBytes = 256 * 1024;

template <class Word>
void copy_kernel(const OpCall& call) {
  const auto* x = element_ptr<const Word>(call.t[0]);
  auto* y = element_ptr<Word>(call.t[1]);
  const auto layout = make_layout<2>({&call.t[0].view, &call.t[1].view});
  const std::int64_t sx = layout.inner_stride(0), sy = layout.inner_stride(1);
  const bool dense = layout.inner_unit();
  parallel_runs(layout, kChunkBytes / std::int64_t(sizeof(Word)),
                [&](const std::array<std::int64_t, 2>& offsets, std::int64_t count, std::int64_t) {
                  const Word* from = x + offsets[0];
                  Word* to = y + offsets[1];
                  if (dense) {
                    // Copying a view onto itself is a no-op, and memcpy must
                    // not see identical source and destination.
                    if (from != to) std::memcpy(to, from, std::size_t(count) * sizeof(Word));
                  } else {
                    for (std::int64_t j = 0; j < count; ++j) to[j * sy] = from[j * sx];
                  }
                });
}

}  // namespace

void register_copy(KernelTable& table) {
  using plugin::OpId;
  for (std::size_t i = 0; i < kDTypeCount; ++i) {
    const auto dtype = static_cast<DType>(i);
    switch (size_of(dtype)) {
      case 1: table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint8_t>); break;
      case 2: table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint16_t>); break;
      case 4: table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint32_t>); break;
      case 8: table.set(OpId::core_copy_view, dtype, &copy_kernel<std::uint64_t>); break;
      default: break;  // no such dtype today; a new size needs a new word type here
    }
  }
}

}  // namespace xylem::native
