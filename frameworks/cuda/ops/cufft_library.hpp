#pragma once
// cuFFT, loaded at run time with dlopen on the first transform, like cuBLAS
// and cuDNN: the plugin loads without it (libcufft is some 280 MB), and
// where it is missing the fft ops are unsupported on CUDA, with the reason.
// Only the functions the fft kernels call are looked up; their types come
// from cuFFT's own header.
#include <cufft.h>

#include <string>

namespace xylem::cuda {

#define XYLEM_CUFFT_FUNCTIONS(X)                                                                        \
  X(cufftGetVersion) X(cufftCreate) X(cufftDestroy) X(cufftSetAutoAllocation) X(cufftMakePlanMany64)    \
  X(cufftSetWorkArea) X(cufftSetStream) X(cufftExecC2C) X(cufftExecZ2Z) X(cufftExecR2C) X(cufftExecD2Z) \
  X(cufftExecC2R) X(cufftExecZ2D)

struct CufftLibrary {
#define XYLEM_CUFFT_POINTER(name) decltype(&::name) name = nullptr;
  XYLEM_CUFFT_FUNCTIONS(XYLEM_CUFFT_POINTER)
#undef XYLEM_CUFFT_POINTER
};

// The library, loaded on first call (thread-safe), or nullptr when it is
// absent or of another major version; then `why_not` says why.
[[nodiscard]] const CufftLibrary* cufft_library(std::string* why_not = nullptr) noexcept;

// A cuFFT status as its enumerator's name ("CUFFT_ALLOC_FAILED").
[[nodiscard]] const char* cufft_status_name(cufftResult r) noexcept;

}  // namespace xylem::cuda
