#pragma once
// One way to check every CUDA runtime and cuBLAS call: a failure becomes a
// xylem::Error naming the call, the error, the device and what was being
// done. Nothing returned by a vendor call is ignored, except in destructors
// (see Stream/EventPool), which must not throw.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string_view>

namespace xylem::cuda {

// Throws Error; `what` is the operation ("blas::gemm", "upload", "open").
[[noreturn]] void throw_cuda(cudaError_t err, const char* call, int device, std::string_view what);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call, int device, std::string_view what);

inline void check_cuda(cudaError_t err, const char* call, int device, std::string_view what) {
  if (err != cudaSuccess) [[unlikely]]
    throw_cuda(err, call, device, what);
}
inline void check_cublas(cublasStatus_t status, const char* call, int device, std::string_view what) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_cublas(status, call, device, what);
}

}  // namespace xylem::cuda

// XY_CUDA(cudaMalloc(&p, n), device, "allocate")
#define XY_CUDA(call, device, what) ::xylem::cuda::check_cuda((call), #call, (device), (what))
#define XY_CUBLAS(call, device, what) ::xylem::cuda::check_cublas((call), #call, (device), (what))
// After a kernel launch: launch errors (bad configuration, no kernel image).
#define XY_CUDA_LAUNCHED(device, what) ::xylem::cuda::check_cuda(cudaGetLastError(), "kernel launch", (device), (what))
