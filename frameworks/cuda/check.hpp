#pragma once
// One way to check every CUDA runtime and cuBLAS call: a failure becomes a
// xylem::Error naming the call, the error, the device and what was being
// done. Nothing returned by a vendor call is ignored, except in destructors
// (see Stream/EventPool), which must not throw.
#include <cuda_runtime_api.h>

#include "cublas_library.hpp"

#include <string_view>

namespace xylem::cuda {

// Throws Error; `what` is the operation ("blas::gemm", "upload", "open").
[[noreturn]] void throw_cuda(cudaError_t err, const char* call, int device, std::string_view what);
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call, int device, std::string_view what);

// Fault points (xylem/plugin/fault.hpp), defined in check.cpp so that the
// CUDA sources need not see the test switch's headers: whether the test
// switch fails this library call (cuBLAS, cuDNN) or this transfer.
[[nodiscard]] bool library_call_fails() noexcept;
[[nodiscard]] bool transfer_fails() noexcept;

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
// XY_CUBLAS(cublasCreate(&h), device, "cuBLAS setup"): calls the function
// through the run-time loaded library (cublas_library.hpp), so a call site
// reads like a plain cuBLAS call. Behind the library-call fault point: a
// failed call is not made, and reports what cuBLAS reports for a failure
// inside it.
#define XY_CUBLAS(call, device, what)                                                                  \
  ::xylem::cuda::check_cublas(                                                                         \
      ::xylem::cuda::library_call_fails() ? CUBLAS_STATUS_INTERNAL_ERROR : ::xylem::cuda::cublas().call, \
      #call, (device), (what))
// A cudaMemcpy*Async, behind the transfer fault point: a failed one is not
// made, and reports what a copy on a broken device reports.
#define XY_CUDA_TRANSFER(call, device, what) \
  ::xylem::cuda::check_cuda(::xylem::cuda::transfer_fails() ? cudaErrorLaunchFailure : (call), #call, (device), (what))
// After a kernel launch: launch errors (bad configuration, no kernel image).
#define XY_CUDA_LAUNCHED(device, what) ::xylem::cuda::check_cuda(cudaGetLastError(), "kernel launch", (device), (what))
