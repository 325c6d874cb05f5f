#include "kernels.hpp"

#include "../check.hpp"
#include "../memory.hpp"

namespace xylem::cuda {

const KernelTable& kernels() {
  static const KernelTable table = plugin::make_kernel_table<Kernel>(
      {register_creation, register_copy, register_blas, register_layer_norm, register_batch_norm, register_pool,
       register_lrn, register_conv2d, register_matrix, register_elementwise, register_cast,
       register_reduce, register_softmax, register_dropout, register_cross_entropy, register_optim,
       register_index, register_attention, register_fft, register_rnn, register_blas_extra, register_fused,
       register_gemm_epilogue, register_softmax_epilogue,
       register_rnn_cudnn});
  return table;
}

cublasHandle_t BlasState::handle(cudaStream_t stream) {
  std::call_once(once_, [&] {
    XY_CUDA(cudaSetDevice(device_), device_, "cuBLAS setup");
    cublasHandle_t h = nullptr;
    XY_CUBLAS(cublasCreate(&h), device_, "cuBLAS setup");
    try {
      XY_CUBLAS(cublasSetStream(h, stream_), device_, "cuBLAS setup");
      // Our own workspace, used in stream order, so cuBLAS does not allocate
      // behind our back during a gemm.
      workspace_ = std::make_unique<DeviceBuffer>(device_, kWorkspaceBytes, "cuBLAS workspace");
      XY_CUBLAS(cublasSetWorkspace(h, workspace_->get(), kWorkspaceBytes), device_, "cuBLAS setup");
      XY_CUBLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), device_, "cuBLAS setup");
    } catch (...) {
      (void)cublas().cublasDestroy(h);
      throw;
    }
    handle_ = h;
  });
  if (stream != stream_) {
    // Setting the stream also drops the workspace we gave it.
    XY_CUBLAS(cublasSetStream(handle_, stream), device_, "cuBLAS stream");
    XY_CUBLAS(cublasSetWorkspace(handle_, workspace_->get(), kWorkspaceBytes), device_, "cuBLAS stream");
    stream_ = stream;
  }
  return handle_;
}

BlasState::~BlasState() {
  // Errors ignored: the runtime may be gone at exit (see queue.cpp).
  if (handle_ != nullptr) (void)cublas().cublasDestroy(handle_);
}

}  // namespace xylem::cuda
