#pragma once
// cuBLAS, loaded at run time with dlopen on its first use (the first gemm,
// gemv or other matrix op), like cuDNN: loading libcublas and libcublasLt costs a few
// hundred milliseconds, which a program that never touches CUDA — on a
// machine without a GPU, where Backend::best() answers native — must not
// pay. Only the functions the plugin calls are looked up; their types come
// from cuBLAS's own header. cublas_v2.h maps several names to their _v2
// symbols with macros; the table below expands them the same way.
#include <cublas_v2.h>

#include <string>

namespace xylem::cuda {

#define XYLEM_CUBLAS_FUNCTIONS(X)                                                                       \
  X(cublasGetProperty) X(cublasGetStatusName) X(cublasGetStatusString) X(cublasCreate) X(cublasDestroy) \
  X(cublasSetStream) X(cublasSetWorkspace) X(cublasSetPointerMode) X(cublasSgemv) X(cublasDgemv)   \
  X(cublasSger) X(cublasDger) X(cublasSsyrk) X(cublasDsyrk) X(cublasStrsm) X(cublasDtrsm)             \
  X(cublasSgeam) X(cublasDgeam)

// The gemms, whose names the header overloads in C++ (an inline wrapper
// takes the old cudaDataType compute type): the exported one, which takes
// cublasComputeType_t, is named by its type.
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                        const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                                      int, int, const void*, const void*, cudaDataType, int,
                                                      long long, const void*, cudaDataType, int, long long,
                                                      const void*, void*, cudaDataType, int, long long, int,
                                                      cublasComputeType_t, cublasGemmAlgo_t);
#define XYLEM_CUBLAS_TYPED_FUNCTIONS(X) \
  X(cublasGemmEx, CublasGemmEx) X(cublasGemmStridedBatchedEx, CublasGemmStridedBatchedEx)

struct CublasLibrary {
#define XYLEM_CUBLAS_POINTER(name) decltype(&::name) name = nullptr;
#define XYLEM_CUBLAS_TYPED_POINTER(name, type) type name = nullptr;
  XYLEM_CUBLAS_FUNCTIONS(XYLEM_CUBLAS_POINTER)
  XYLEM_CUBLAS_TYPED_FUNCTIONS(XYLEM_CUBLAS_TYPED_POINTER)
#undef XYLEM_CUBLAS_TYPED_POINTER
#undef XYLEM_CUBLAS_POINTER
};

// The library, loaded on first call (thread-safe). Throws Error(unsupported)
// naming the library and why when it is absent or of another major version.
[[nodiscard]] const CublasLibrary& cublas();

// "cuBLAS 13.1.0 (/usr/local/cuda/lib64/libcublas.so.13)", or why it is not
// there; loads the library.
[[nodiscard]] std::string cublas_description();

}  // namespace xylem::cuda
