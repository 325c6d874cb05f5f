#pragma once
// NVRTC, the CUDA run-time compiler, loaded at run time with dlopen on the
// first fused chain (libnvrtc.so.13, else .so.12), like cuBLAS and cuDNN:
// the plugin loads without it, and where it is missing math::fused is
// unsupported on CUDA, with the reason (`xylem info` shows it). The few
// functions used are declared here, so the build needs no NVRTC header.
#include <cstddef>
#include <string>
#include <type_traits>

namespace xylem::cuda {

struct NvrtcProgramImpl;
using NvrtcProgram = NvrtcProgramImpl*;  // nvrtcProgram
using NvrtcResult = int;                  // nvrtcResult: 0 is NVRTC_SUCCESS
inline constexpr NvrtcResult kNvrtcSuccess = 0;

#define XYLEM_NVRTC_FUNCTIONS(X)                                                                       \
  X(nvrtcVersion, NvrtcResult(int* major, int* minor))                                               \
  X(nvrtcGetErrorString, const char*(NvrtcResult result))                                            \
  X(nvrtcCreateProgram, NvrtcResult(NvrtcProgram * program, const char* source, const char* name,    \
                                        int headers, const char* const* header_texts,                    \
                                        const char* const* header_names))                                \
  X(nvrtcDestroyProgram, NvrtcResult(NvrtcProgram * program))                                        \
  X(nvrtcCompileProgram, NvrtcResult(NvrtcProgram program, int options, const char* const* option_texts)) \
  X(nvrtcGetProgramLogSize, NvrtcResult(NvrtcProgram program, std::size_t * size))                   \
  X(nvrtcGetProgramLog, NvrtcResult(NvrtcProgram program, char* log))                                \
  X(nvrtcGetCUBINSize, NvrtcResult(NvrtcProgram program, std::size_t * size))                        \
  X(nvrtcGetCUBIN, NvrtcResult(NvrtcProgram program, char* cubin))

struct NvrtcLibrary {
#define XYLEM_NVRTC_POINTER(name, type) std::add_pointer_t<type> name = nullptr;
  XYLEM_NVRTC_FUNCTIONS(XYLEM_NVRTC_POINTER)
#undef XYLEM_NVRTC_POINTER
  int major = 0, minor = 0;  // its version
  std::string path;          // of the file loaded
};

// The library, loaded on first call (thread-safe), or nullptr when it is
// absent or lacks a function; then `why_not` says why.
[[nodiscard]] const NvrtcLibrary* nvrtc_library(std::string* why_not = nullptr) noexcept;

}  // namespace xylem::cuda

namespace xylem::cuda {

// "fusion: NVRTC 13.0 (path)", or "fusion off (why)": a line of the
// hardware details `xylem info` shows.
[[nodiscard]] std::string fusion_description();

}  // namespace xylem::cuda
