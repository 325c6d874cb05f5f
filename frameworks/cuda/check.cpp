#include "check.hpp"

#include <string>

#include "xylem/error.hpp"
#include "xylem/plugin/fault.hpp"

namespace xylem::cuda {
namespace {

ErrorCode code_of(cudaError_t err) noexcept {
  switch (err) {
    case cudaErrorMemoryAllocation:
      return ErrorCode::out_of_memory;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
      return ErrorCode::plugin_unavailable;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorDevicesUnavailable:
      return ErrorCode::device_lost;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
      return ErrorCode::compile_failed;
    case cudaErrorInvalidValue:
      return ErrorCode::invalid_argument;
    default:
      return ErrorCode::internal;
  }
}

std::string where(int device, std::string_view what) {
  std::string s = "cuda:" + std::to_string(device);
  if (!what.empty()) s.append(" ").append(what);
  return s;
}

}  // namespace

bool library_call_fails() noexcept { return plugin::should_fail(plugin::FaultSite::library_call, "cuda"); }
bool transfer_fails() noexcept { return plugin::should_fail(plugin::FaultSite::transfer, "cuda"); }

void throw_cuda(cudaError_t err, const char* call, int device, std::string_view what) {
  throw Error(code_of(err), where(device, what) + ": " + call + " failed: " + cudaGetErrorName(err) + " (" +
                                cudaGetErrorString(err) + ")");
}

void throw_cublas(cublasStatus_t status, const char* call, int device, std::string_view what) {
  ErrorCode code = status == CUBLAS_STATUS_ALLOC_FAILED      ? ErrorCode::out_of_memory
                   : status == CUBLAS_STATUS_NOT_SUPPORTED   ? ErrorCode::unsupported
                   : status == CUBLAS_STATUS_INVALID_VALUE   ? ErrorCode::invalid_argument
                   : status == CUBLAS_STATUS_EXECUTION_FAILED ? ErrorCode::device_lost
                                                              : ErrorCode::internal;
  // The fault point reports a status without loading cuBLAS; name it by
  // number if the library cannot be loaded to name it.
  std::string status_text = "status " + std::to_string(int(status));
  try {
    const CublasLibrary& lib = cublas();
    status_text = std::string(lib.cublasGetStatusName(status)) + " (" + lib.cublasGetStatusString(status) + ")";
  } catch (const Error&) {
  }
  throw Error(code, where(device, what) + ": " + call + " failed: " + status_text);
}

}  // namespace xylem::cuda
