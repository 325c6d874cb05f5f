// core::copy_view: y = x for any dtype and any strides of either side. The
// copy moves bits, so every dtype of one size shares one kernel.
#include "map.cuh"

namespace xylem::cuda {
namespace {

struct Identity {
  template <class T>
  __device__ T operator()(std::int64_t, T x) const {
    return x;
  }
};

template <class Bits>
void copy_view(const plugin::OpCall& c, const Context& ctx) {
  const auto args = plugin::unpack<plugin::args::core_copy_view>(c);
  map<Bits>(ctx, "core::copy_view", Identity{}, args.y, args.x);
}

template <std::size_t Size>
struct BitsOf;
template <> struct BitsOf<1> { using type = std::uint8_t; };
template <> struct BitsOf<2> { using type = std::uint16_t; };
template <> struct BitsOf<4> { using type = std::uint32_t; };
template <> struct BitsOf<8> { using type = std::uint64_t; };
template <> struct BitsOf<16> { using type = uint4; };

}  // namespace

void register_copy(KernelTable& table) {
#define XYLEM_CUDA_COPY(e, n, bytes, f) \
  table.set(plugin::OpId::core_copy_view, DType::e, copy_view<BitsOf<bytes>::type>);
  XYLEM_DTYPES(XYLEM_CUDA_COPY)
#undef XYLEM_CUDA_COPY
}

}  // namespace xylem::cuda
