#pragma once
// An elementwise tail (a math::fused program, xylem/plugin/fused_program.hpp)
// as cuDNN graph-API pointwise operations after a head operation, for the
// engines that fuse them into the head's kernel (nn::conv2d_epilogue).
//
// The head's result enters as the program's input 0, a virtual f32 tensor;
// inputs 1..3 are real tensors (a broadcast dimension has size 1, as cuDNN
// broadcasts); the one stored value is written to y0. Only what cuDNN's
// pointwise modes compute as math.h's codes do is taken: add, sub, mul,
// div and the unary codes without parameters but ReLU (NaN); anything else
// leaves the call to the two-step path (the head, then our fused kernel).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cudnn_graph.hpp"
#include "xylem/dtype.hpp"
#include "xylem/plugin/fused_program.hpp"

namespace xylem::cuda {

// The unique ids the tail's real tensors are bound to.
inline constexpr std::int64_t kTailOutputUid = 3;     // y0
inline constexpr std::int64_t kTailInputUid = 10;     // + k for input k (1..3)

// A tensor of the tail as cuDNN is told it: rank 4, broadcast dims of size 1.
struct TailTensor {
  DType dtype = DType::f32;
  std::array<std::int64_t, 4> dims{}, strides{};
  std::int64_t alignment = 16;
};

struct CudnnTail {
  std::vector<CudnnDescriptor> owned;          // tensors and pointwise descriptors
  std::vector<cudnnBackendDescriptor_t> ops;   // the operations, in order
};

// The tail's operations reading `head` (the head's virtual result, of
// `dims`); inputs[k - 1] describes input k where present. None, with `why`,
// when cuDNN's pointwise modes cannot express the program.
[[nodiscard]] std::optional<CudnnTail> cudnn_tail(const CudnnGraphCalls& calls, cudnnBackendDescriptor_t head,
                                                  const std::array<std::int64_t, 4>& dims,
                                                  const plugin::fused::Words& words,
                                                  const std::array<std::optional<TailTensor>, 3>& inputs,
                                                  const TailTensor& y0, std::string& why);

// cuDNN's data type for a float dtype.
[[nodiscard]] cudnnDataType_t cudnn_data_type(DType d) noexcept;

}  // namespace xylem::cuda
