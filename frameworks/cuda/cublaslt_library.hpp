#pragma once
// cuBLASLt, loaded at run time with dlopen on first use (a gemm whose
// elementwise tail it can apply itself: blas::gemm_epilogue), as cuBLAS is
// (cublas_library.hpp). Only the functions the plugin calls are looked up;
// their types come from cuBLASLt's own header.
#include <cublasLt.h>

#include <string>

namespace xylem::cuda {

#define XYLEM_CUBLASLT_FUNCTIONS(X)                                                                            \
  X(cublasLtGetVersion) X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtMatmulDescCreate)                     \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute) X(cublasLtMatrixLayoutCreate)               \
  X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceDestroy)        \
  X(cublasLtMatmulPreferenceSetAttribute) X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

struct CublasLtLibrary {
#define XYLEM_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  XYLEM_CUBLASLT_FUNCTIONS(XYLEM_CUBLASLT_POINTER)
#undef XYLEM_CUBLASLT_POINTER
};

// The library, loaded on first call (thread-safe); nullptr when it is absent
// or of another major version (`why`, when given, then says why).
[[nodiscard]] const CublasLtLibrary* cublaslt(std::string* why = nullptr);

}  // namespace xylem::cuda
