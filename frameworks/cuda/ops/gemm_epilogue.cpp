// CUDA blas::gemm_epilogue. Where the tail is one cuBLASLt can apply inside
// the gemm (a bias along the rows' columns, then ReLU or tanh-GELU, each
// optional: nn::linear and its activation), one cublasLtMatmul writes the
// result and the product never reaches memory. Any other tail: cuBLAS's
// gemm writes the product into y0, then the NVRTC-compiled tail reads it
// back from there as its input 0 (xylem/plugin/epilogue.hpp).
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "../check.hpp"
#include "../cublaslt_library.hpp"
#include "frameworks/cuda/ops/gemm_rows.hpp"
#include "frameworks/cuda/ops/kernels.hpp"
#include "xylem/error.hpp"
#include "xylem/plugin/epilogue.hpp"
#include "xylem/plugin/math.h"

namespace xylem::cuda {
namespace {

using plugin::OpCall;
using plugin::OpId;
using plugin::TensorArg;
namespace pe = plugin::epilogue;
namespace pf = plugin::fused;

constexpr const char* kWhat = "blas::gemm_epilogue";

// What a register of the program holds, followed symbolically: the
// product, with the bias added, then an activation; or the bias alone.
struct Term {
  bool known = false;
  bool product = false;
  bool bias = false;
  int activation = -1;  // XY_UN_RELU or XY_UN_GELU_TANH once applied
};

// x1 as cuBLASLt's bias: one value per column of the [m, n] result.
bool bias_shaped(const TensorArg& x, std::int64_t m, std::int64_t n) {
  return x.data != nullptr && x.view.dims()[0] == m && x.view.dims()[1] == n && x.view.strides()[0] == 0 &&
         x.view.strides()[1] == 1;
}

// The cuBLASLt epilogue that computes the whole program, or nothing: it
// must store, to y0 alone, the product, plus x1 as a bias, then ReLU or
// tanh-GELU (cuBLASLt's GELU is the tanh form).
std::optional<cublasLtEpilogue_t> lt_epilogue_of(const pe::Args& e) {
  if (e.y1.data != nullptr || e.y2.data != nullptr || e.x2.data != nullptr || e.x3.data != nullptr) return {};
  const std::int64_t m = e.y0.view.dims()[0], n = e.y0.view.dims()[1];
  const pf::Program program = pf::decode_program(pe::words(e));
  std::array<Term, pf::kRegisters> reg{};
  std::optional<Term> stored;
  for (int i = 0; i < program.size; ++i) {
    const pf::Instruction& in = program.code[std::size_t(i)];
    Term& dst = reg[std::size_t(in.dst)];
    const Term& a = reg[std::size_t(in.a)];
    const Term& b = reg[std::size_t(in.b)];
    switch (in.kind) {
      case pf::Kind::load:
        if (in.a == 0) {
          dst = Term{true, true, false, -1};
        } else if (in.a == 1 && bias_shaped(e.x1, m, n)) {
          dst = Term{true, false, true, -1};
        } else {
          return {};
        }
        break;
      case pf::Kind::binary: {
        if (in.code != XY_BIN_ADD || !a.known || !b.known) return {};
        const Term& product = a.product ? a : b;
        const Term& bias = a.product ? b : a;
        if (!product.product || product.bias || product.activation >= 0 || !bias.bias || bias.product) return {};
        dst = Term{true, true, true, -1};
        break;
      }
      case pf::Kind::unary:
        if ((in.code != XY_UN_RELU && in.code != XY_UN_GELU_TANH) || !a.known || !a.product || a.activation >= 0)
          return {};
        dst = Term{true, true, a.bias, in.code};
        break;
      case pf::Kind::store:
        if (in.dst != 0 || stored || !a.known || !a.product) return {};
        stored = a;
        break;
      default:
        return {};
    }
  }
  if (!stored) return {};
  const int act = stored->activation;
  if (stored->bias) {
    return act == XY_UN_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS
           : act >= 0        ? CUBLASLT_EPILOGUE_GELU_BIAS
                             : CUBLASLT_EPILOGUE_BIAS;
  }
  return act == XY_UN_RELU ? CUBLASLT_EPILOGUE_RELU : act >= 0 ? CUBLASLT_EPILOGUE_GELU : CUBLASLT_EPILOGUE_DEFAULT;
}

// One device's cuBLASLt handle and the algorithm its heuristic chose per
// problem (the heuristic costs tens of microseconds; launches of one device
// are serialised, the mutex guards the map across devices).
using Problem = std::tuple<int, int, int, int, int, int, int, int, int, int, int, bool>;
struct LtState {
  cublasLtHandle_t handle = nullptr;
  std::map<Problem, std::optional<cublasLtMatmulAlgo_t>> algos;
};
std::mutex lt_mutex;
LtState& lt_state(const CublasLtLibrary& lt, int device) {
  static auto* states = new std::map<int, LtState>;  // never destroyed: handles outlive exit's order
  LtState& s = (*states)[device];
  if (s.handle == nullptr) check_cublas(lt.cublasLtCreate(&s.handle), "cublasLtCreate", device, kWhat);
  return s;
}

// RAII for the descriptors of one call.
template <class T, auto Destroy>
struct Owned {
  const CublasLtLibrary& lt;
  T value = nullptr;
  ~Owned() {
    if (value != nullptr) (void)(lt.*Destroy)(value);
  }
};

// The view's first element (its offset counts elements of `element` bytes).
char* first_byte(const TensorArg& t, std::size_t element) {
  return static_cast<char*>(t.data) + t.view.offset() * std::int64_t(element);
}

bool aligned16(const TensorArg& t, std::size_t element) {
  return reinterpret_cast<std::uintptr_t>(first_byte(t, element)) % 16 == 0;
}

// XYLEM_CUDA_CUBLASLT=0: every tail in two steps (for comparison).
bool lt_disabled() {
  static const bool off = [] {
    const char* v = std::getenv("XYLEM_CUDA_CUBLASLT");
    return v != nullptr && std::string_view(v) == "0";
  }();
  return off;
}

// The whole call as one cublasLtMatmul, or false (nothing run) where
// cuBLASLt cannot take it.
bool run_on_lt(const pe::Args& e, DType dtype, const Context& ctx) {
  if (dtype != DType::f32 && dtype != DType::f16 && dtype != DType::bf16) return false;
  const std::optional<cublasLtEpilogue_t> epilogue = lt_epilogue_of(e);
  if (!epilogue) return false;
  const CublasLtLibrary* lt = cublaslt();
  if (lt == nullptr) return false;
  const bool ta = e.transpose_a != 0, tb = e.transpose_b != 0;
  const std::int64_t m = e.y0.view.dims()[0], n = e.y0.view.dims()[1];
  const std::int64_t k = ta ? e.a.view.dims()[0] : e.a.view.dims()[1];
  const std::size_t element = size_of(dtype);
  const bool bias = *epilogue == CUBLASLT_EPILOGUE_BIAS || *epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
                    *epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  // A product of fewer 128 x 128 output tiles than the GPU has
  // multiprocessors (a linear layer at a small batch: VGG-A's first
  // classifier layer is [64, 25088] x [25088, 4096], 32 tiles) runs in two
  // steps, cuBLAS's gemm then the fused tail. cuBLASLt's epilogue was
  // measured on large products only ([16384, 1024] x [1024, 4096]: 1.3x
  // PyTorch in bf16); for a skinny one with a long k, cuBLAS's gemm splits k
  // over the idle multiprocessors, and whether the heuristic's first
  // cuBLASLt algorithm does is not known here. The reference networks'
  // classifier layers ran in two steps when they were last timed (their
  // ReLU then kept its input, a second output), and stay there.
  if ((m + 127) / 128 * ((n + 127) / 128) < ctx.multiprocessors) return false;
  for (const TensorArg* t : {&e.a, &e.b, &e.y0})
    if (!aligned16(*t, element)) return false;
  if (bias && !aligned16(e.x1, element)) return false;
  const cudaDataType_t type = dtype == DType::f32 ? CUDA_R_32F : dtype == DType::f16 ? CUDA_R_16F : CUDA_R_16BF;
  const bool tf32 = dtype == DType::f32 && tf32_allowed();
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLASLt's
  // "A" is our b, its "B" our a (gemm_rows.hpp).
  const int lda = leading_dim(e.b, kWhat), ldb = leading_dim(e.a, kWhat), ldc = leading_dim(e.y0, kWhat);
  const int mi = cublas_int(n, kWhat), ni = cublas_int(m, kWhat), ki = cublas_int(k, kWhat);

  const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  const auto check = [&](cublasStatus_t s, const char* call) { check_cublas(s, call, ctx.device, kWhat); };
  Owned<cublasLtMatmulDesc_t, &CublasLtLibrary::cublasLtMatmulDescDestroy> desc{*lt};
  check(lt->cublasLtMatmulDescCreate(&desc.value, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const auto set = [&](cublasLtMatmulDescAttributes_t attribute, const auto& value) {
    check(lt->cublasLtMatmulDescSetAttribute(desc.value, attribute, &value, sizeof(value)),
          "cublasLtMatmulDescSetAttribute");
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set(CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, *epilogue);
  if (bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, static_cast<const void*>(first_byte(e.x1, element)));
  using Layout_ = Owned<cublasLtMatrixLayout_t, &CublasLtLibrary::cublasLtMatrixLayoutDestroy>;
  Layout_ layout_a{*lt}, layout_b{*lt}, layout_c{*lt};
  check(lt->cublasLtMatrixLayoutCreate(&layout_a.value, type, tb ? ki : mi, tb ? mi : ki, lda),
        "cublasLtMatrixLayoutCreate");
  check(lt->cublasLtMatrixLayoutCreate(&layout_b.value, type, ta ? ni : ki, ta ? ki : ni, ldb),
        "cublasLtMatrixLayoutCreate");
  check(lt->cublasLtMatrixLayoutCreate(&layout_c.value, type, mi, ni, ldc), "cublasLtMatrixLayoutCreate");

  (void)ctx.blas->handle(ctx.stream);  // made first: its workspace serves cuBLASLt too
  void* workspace = ctx.blas->workspace();
  std::size_t workspace_bytes = BlasState::kWorkspaceBytes;
  std::optional<cublasLtMatmulAlgo_t> algo;
  cublasLtHandle_t handle = nullptr;
  {
    std::lock_guard lock(lt_mutex);
    LtState& state = lt_state(*lt, ctx.device);
    handle = state.handle;
    const Problem key{ctx.device, int(dtype), mi, ni, ki, int(op_a), int(op_b), lda, ldb, ldc, int(*epilogue), tf32};
    auto found = state.algos.find(key);
    if (found == state.algos.end()) {
      Owned<cublasLtMatmulPreference_t, &CublasLtLibrary::cublasLtMatmulPreferenceDestroy> pref{*lt};
      check(lt->cublasLtMatmulPreferenceCreate(&pref.value), "cublasLtMatmulPreferenceCreate");
      check(lt->cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                     &workspace_bytes, sizeof(workspace_bytes)),
            "cublasLtMatmulPreferenceSetAttribute");
      cublasLtMatmulHeuristicResult_t result{};
      int count = 0;
      const cublasStatus_t s = lt->cublasLtMatmulAlgoGetHeuristic(handle, desc.value, layout_a.value, layout_b.value,
                                                                 layout_c.value, layout_c.value, pref.value, 1,
                                                                 &result, &count);
      std::optional<cublasLtMatmulAlgo_t> chosen;
      if (s == CUBLAS_STATUS_SUCCESS && count > 0) chosen = result.algo;
      found = state.algos.emplace(key, chosen).first;
    }
    algo = found->second;
  }
  if (!algo) return false;  // no algorithm for this problem with this epilogue: the two-step way
  const float one = 1.0f, zero = 0.0f;
  check(lt->cublasLtMatmul(handle, desc.value, &one, first_byte(e.b, element), layout_a.value,
                           first_byte(e.a, element), layout_b.value, &zero, first_byte(e.y0, element),
                           layout_c.value, first_byte(e.y0, element), layout_c.value, &*algo, workspace,
                           workspace_bytes, ctx.stream),
        "cublasLtMatmul");
  return true;
}

// cuBLAS's gemm into y0, then the fused tail over it.
void run_in_two_steps(const pe::Args& e, const Context& ctx) {
  kernels().get(OpId::blas_gemm, e.y0.dtype)(pe::gemm(e), ctx);
  kernels().get(OpId::math_fused, e.y0.dtype)(pe::tail(e), ctx);
}

void gemm_epilogue_kernel(const OpCall& call, const Context& ctx) {
  const auto e = plugin::unpack<plugin::args::blas_gemm_epilogue>(call);
  if (e.y0.view.numel() == 0) return;
  const std::int64_t k = e.transpose_a != 0 ? e.a.view.dims()[0] : e.a.view.dims()[1];
  if (k > 0 && !lt_disabled() && run_on_lt(e, e.y0.dtype, ctx)) return;
  run_in_two_steps(e, ctx);
}

}  // namespace

void register_gemm_epilogue(KernelTable& table) {
  for (const DType d : {DType::f16, DType::bf16, DType::f32, DType::f64})
    table.set(OpId::blas_gemm_epilogue, d, &gemm_epilogue_kernel);
}

}  // namespace xylem::cuda
