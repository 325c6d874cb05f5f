#pragma once
// cuDNN, loaded at run time with dlopen: the plugin then loads (and runs
// every other op) on a machine without cuDNN, and convolutions fall back to
// im2col there. Only the functions the convolution engine calls are looked
// up; their types come from cuDNN's own header (the legacy convolution API,
// the graph API's backend functions and the RNN API, all in every cuDNN 9).
#include <cudnn.h>

#include <string>
#include <string_view>

#include "../check.hpp"

namespace xylem::cuda {

#define XYLEM_CUDNN_FUNCTIONS(X)                                                                                \
  X(cudnnGetVersion) X(cudnnGetErrorString) X(cudnnCreate) X(cudnnDestroy) X(cudnnSetStream)                      \
  X(cudnnCreateTensorDescriptor) X(cudnnDestroyTensorDescriptor) X(cudnnSetTensor4dDescriptor)                    \
  X(cudnnCreateFilterDescriptor) X(cudnnDestroyFilterDescriptor) X(cudnnSetFilter4dDescriptor)                    \
  X(cudnnCreateConvolutionDescriptor) X(cudnnDestroyConvolutionDescriptor) X(cudnnSetConvolution2dDescriptor)     \
  X(cudnnSetConvolutionGroupCount) X(cudnnSetConvolutionMathType)                                                 \
  X(cudnnGetConvolutionForwardAlgorithm_v7) X(cudnnFindConvolutionForwardAlgorithmEx)                             \
  X(cudnnConvolutionForward)                                                                                      \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) X(cudnnFindConvolutionBackwardDataAlgorithmEx)                   \
  X(cudnnConvolutionBackwardData)                                                                                 \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7) X(cudnnFindConvolutionBackwardFilterAlgorithmEx)               \
  X(cudnnConvolutionBackwardFilter)                                                                               \
  X(cudnnBackendCreateDescriptor) X(cudnnBackendDestroyDescriptor) X(cudnnBackendSetAttribute)                    \
  X(cudnnBackendGetAttribute) X(cudnnBackendFinalize) X(cudnnBackendExecute)                                    \
  X(cudnnSetTensorNdDescriptor) X(cudnnGetTensorNdDescriptor)                                                     \
  X(cudnnCreateDropoutDescriptor) X(cudnnDestroyDropoutDescriptor) X(cudnnSetDropoutDescriptor)                   \
  X(cudnnCreateRNNDescriptor) X(cudnnDestroyRNNDescriptor) X(cudnnSetRNNDescriptor_v8)                            \
  X(cudnnCreateRNNDataDescriptor) X(cudnnDestroyRNNDataDescriptor) X(cudnnSetRNNDataDescriptor)                   \
  X(cudnnGetRNNTempSpaceSizes) X(cudnnGetRNNWeightSpaceSize) X(cudnnGetRNNWeightParams)                           \
  X(cudnnRNNForward) X(cudnnRNNBackwardData_v8) X(cudnnRNNBackwardWeights_v8)

struct CudnnLibrary {
#define XYLEM_CUDNN_POINTER(name) decltype(&::name) name = nullptr;
  XYLEM_CUDNN_FUNCTIONS(XYLEM_CUDNN_POINTER)
#undef XYLEM_CUDNN_POINTER
};

// The library, loaded on first call (thread-safe), or nullptr when it is
// absent, of another major version, or disabled with XYLEM_CUDA_CUDNN=0;
// then `why_not` says why.
[[nodiscard]] const CudnnLibrary* cudnn_library(std::string* why_not = nullptr);

// "cuDNN 9.14.0 (/usr/local/cuda/lib64/libcudnn.so.9)", or why it is not used;
// loads the library.
[[nodiscard]] std::string cudnn_description();

[[noreturn]] void throw_cudnn(const CudnnLibrary& lib, cudnnStatus_t status, const char* call, int device,
                              std::string_view what);
inline void check_cudnn(const CudnnLibrary& lib, cudnnStatus_t status, const char* call, int device,
                        std::string_view what) {
  if (status != CUDNN_STATUS_SUCCESS) [[unlikely]]
    throw_cudnn(lib, status, call, device, what);
}

}  // namespace xylem::cuda

// XY_CUDNN(lib, cudnnCreate(&h), device, "conv2d"): calls lib.cudnnCreate(&h) and checks it.
// Behind the library-call fault point: a failed call is not made, and
// reports what cuDNN reports for a failure inside it.
#define XY_CUDNN(lib, call, device, what)                                                                      \
  ::xylem::cuda::check_cudnn((lib), ::xylem::cuda::library_call_fails() ? CUDNN_STATUS_INTERNAL_ERROR : (lib).call, \
                             #call, (device), (what))
