#include "cudnn_tail.hpp"

#include <algorithm>

namespace xylem::cuda {
namespace {

namespace pf = plugin::fused;

// cuDNN's mode computing math.h's code exactly as our kernels do (up to
// rounding), or none. Codes with parameters are left out, and ReLU: cuDNN's
// RELU_FWD turns NaN into 0 where ours keeps it (as PyTorch's), which the
// H100 showed (unit.fusion_auto's NaN case).
std::optional<cudnnPointwiseMode_t> unary_mode(int code) {
  switch (code) {
    case XY_UN_EXP: return CUDNN_POINTWISE_EXP;
    case XY_UN_LOG: return CUDNN_POINTWISE_LOG;
    case XY_UN_SQRT: return CUDNN_POINTWISE_SQRT;
    case XY_UN_RSQRT: return CUDNN_POINTWISE_RSQRT;
    case XY_UN_ABS: return CUDNN_POINTWISE_ABS;
    case XY_UN_NEG: return CUDNN_POINTWISE_NEG;
    case XY_UN_SIGMOID: return CUDNN_POINTWISE_SIGMOID_FWD;
    case XY_UN_TANH: return CUDNN_POINTWISE_TANH_FWD;
    case XY_UN_GELU: return CUDNN_POINTWISE_GELU_FWD;
    case XY_UN_GELU_TANH: return CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
    case XY_UN_SILU: return CUDNN_POINTWISE_SWISH_FWD;  // its beta's default, 1
    default: return std::nullopt;
  }
}

std::optional<cudnnPointwiseMode_t> binary_mode(int code) {
  switch (code) {
    case XY_BIN_ADD: return CUDNN_POINTWISE_ADD;
    case XY_BIN_SUB: return CUDNN_POINTWISE_SUB;
    case XY_BIN_MUL: return CUDNN_POINTWISE_MUL;
    case XY_BIN_DIV: return CUDNN_POINTWISE_DIV;
    default: return std::nullopt;
  }
}

// One value of the program: its tensor and dims.
struct Value {
  cudnnBackendDescriptor_t tensor = nullptr;
  std::array<std::int64_t, 4> dims{};
};

std::array<std::int64_t, 4> packed_strides(const std::array<std::int64_t, 4>& d) {
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

class Builder {
 public:
  Builder(const CudnnGraphCalls& calls, CudnnTail& tail) : calls_(calls), tail_(tail) {}

  cudnnBackendDescriptor_t tensor(std::int64_t uid, DType dtype, const std::array<std::int64_t, 4>& dims,
                                  const std::array<std::int64_t, 4>& strides, std::int64_t alignment, bool is_virtual) {
    const std::int64_t d[4] = {dims[0], dims[1], dims[2], dims[3]}, s[4] = {strides[0], strides[1], strides[2], strides[3]};
    return tail_.owned.emplace_back(calls_.tensor(uid, cudnn_data_type(dtype), d, s, alignment, is_virtual)).get();
  }

  // A virtual f32 intermediate, or the output when `out` is given.
  cudnnBackendDescriptor_t result(const std::array<std::int64_t, 4>& dims, cudnnBackendDescriptor_t out) {
    return out ? out : tensor(next_virtual_++, DType::f32, dims, packed_strides(dims), 16, true);
  }

  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t y) {
    const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    CudnnDescriptor& p = tail_.owned.emplace_back(calls_.make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
    calls_.set(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    calls_.set(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    calls_.finalize(p);
    CudnnDescriptor& op = tail_.owned.emplace_back(calls_.make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
    calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, {p.get()});
    calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, {x});
    if (b) calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, {b});
    calls_.set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, {y});
    // Finalized with the graph (CudnnGraphCalls::graph), which says why
    // cuDNN refuses one.
    tail_.ops.push_back(op.get());
  }

 private:
  const CudnnGraphCalls& calls_;
  CudnnTail& tail_;
  std::int64_t next_virtual_ = 100;
};

}  // namespace

cudnnDataType_t cudnn_data_type(DType d) noexcept {
  switch (d) {
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::f32: return CUDNN_DATA_FLOAT;
    default: return CUDNN_DATA_DOUBLE;
  }
}

std::optional<CudnnTail> cudnn_tail(const CudnnGraphCalls& calls, cudnnBackendDescriptor_t head,
                                    const std::array<std::int64_t, 4>& dims, const pf::Words& words,
                                    const std::array<std::optional<TailTensor>, 3>& inputs, const TailTensor& y0,
                                    std::string& why) {
  const pf::Program program = pf::decode_program(words);
  // The one store, into y0; what follows it is dead (no load follows a
  // store, and nothing else is stored).
  int store_at = -1;
  for (int k = 0; k < program.size; ++k) {
    const pf::Instruction& in = program.code[std::size_t(k)];
    if (in.kind != pf::Kind::store) continue;
    if (store_at >= 0 || in.dst != 0) {
      why = "the tail stores more than one value";
      return std::nullopt;
    }
    store_at = k;
  }
  if (store_at < 0) {
    why = "the tail stores nothing";
    return std::nullopt;
  }
  const int stored = program.code[std::size_t(store_at)].a;
  // The instruction that last wrote the stored register writes y0 itself;
  // a load stored as it is (no operation to write it) is not taken.
  int producer = -1;
  for (int k = 0; k < store_at; ++k)
    if (program.code[std::size_t(k)].dst == stored) producer = k;
  if (producer < 0 || program.code[std::size_t(producer)].kind == pf::Kind::load) {
    why = "the tail stores a value it loaded";
    return std::nullopt;
  }
  // Check every code before describing anything.
  for (int k = 0; k < store_at; ++k) {
    const pf::Instruction& in = program.code[std::size_t(k)];
    if ((in.kind == pf::Kind::unary && !unary_mode(in.code)) || (in.kind == pf::Kind::binary && !binary_mode(in.code))) {
      why = "cuDNN has no pointwise mode for code " + std::to_string(in.code) + " of instruction " + std::to_string(k);
      return std::nullopt;
    }
  }

  CudnnTail tail;
  Builder b(calls, tail);
  std::array<std::optional<Value>, 3> input_values;
  std::array<Value, pf::kRegisters> regs{};
  for (int k = 0; k < store_at; ++k) {
    const pf::Instruction& in = program.code[std::size_t(k)];
    cudnnBackendDescriptor_t out = nullptr;
    if (k == producer) out = b.tensor(kTailOutputUid, y0.dtype, dims, packed_strides(dims), y0.alignment, false);
    switch (in.kind) {
      case pf::Kind::load: {
        if (in.a == 0) {
          regs[std::size_t(in.dst)] = Value{head, dims};
          break;
        }
        const std::optional<TailTensor>& t = inputs[std::size_t(in.a - 1)];
        if (!t) {
          why = "the tail loads an absent input";
          return std::nullopt;
        }
        std::optional<Value>& v = input_values[std::size_t(in.a - 1)];
        if (!v) v = Value{b.tensor(kTailInputUid + in.a, t->dtype, t->dims, t->strides, t->alignment, false), t->dims};
        regs[std::size_t(in.dst)] = *v;
        break;
      }
      case pf::Kind::unary: {
        const Value x = regs[std::size_t(in.a)];
        if (k == producer && x.dims != dims) {
          why = "the stored value is not of the result's shape";
          return std::nullopt;
        }
        const cudnnBackendDescriptor_t y = b.result(x.dims, out);
        b.pointwise(*unary_mode(in.code), x.tensor, nullptr, y);
        regs[std::size_t(in.dst)] = Value{y, x.dims};
        break;
      }
      case pf::Kind::binary: {
        const Value x = regs[std::size_t(in.a)], y_in = regs[std::size_t(in.b)];
        std::array<std::int64_t, 4> d{};
        for (std::size_t i = 0; i < 4; ++i) d[i] = std::max(x.dims[i], y_in.dims[i]);
        if (k == producer && d != dims) {
          why = "the stored value is not of the result's shape";
          return std::nullopt;
        }
        const cudnnBackendDescriptor_t y = b.result(d, out);
        b.pointwise(*binary_mode(in.code), x.tensor, y_in.tensor, y);
        regs[std::size_t(in.dst)] = Value{y, d};
        break;
      }
      default:
        break;
    }
  }
  return tail;
}

}  // namespace xylem::cuda
