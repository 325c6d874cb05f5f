#pragma once
// What the users of cuDNN's graph API (conv2d_cudnn_graph.cpp,
// attention_cudnn.cpp) share: backend descriptors that destroy themselves,
// and the steps from an operation graph to a plan run on a stream.
//
// A graph is built once per shape: tensors and operations are described,
// cuDNN's heuristics list the engine configurations that can run it, best
// first, and the first that builds into an execution plan is kept. Each
// call then only binds its pointers (a variant pack) and executes the plan.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cudnn_library.hpp"

namespace xylem::cuda {

// One backend descriptor, destroyed with its owner.
class CudnnDescriptor {
 public:
  CudnnDescriptor(const CudnnLibrary& lib, cudnnBackendDescriptorType_t type, int device, const char* what)
      : lib_(&lib) {
    XY_CUDNN(lib, cudnnBackendCreateDescriptor(type, &d_), device, what);
  }
  ~CudnnDescriptor() {
    if (d_) (void)lib_->cudnnBackendDestroyDescriptor(d_);  // errors ignored: destructors run at exit too
  }
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : lib_(o.lib_), d_(std::exchange(o.d_, nullptr)) {}
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(CudnnDescriptor&& o) noexcept {
    std::swap(lib_, o.lib_);
    std::swap(d_, o.d_);
    return *this;
  }

  [[nodiscard]] cudnnBackendDescriptor_t get() const noexcept { return d_; }

 private:
  const CudnnLibrary* lib_;
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The graph API's calls for one op on one device: failures throw naming
// `what` (the op) and the device, as every cuDNN call of the plugin does.
class CudnnGraphCalls {
 public:
  CudnnGraphCalls(const CudnnLibrary& lib, int device, const char* what) : lib_(lib), device_(device), what_(what) {}

  [[nodiscard]] const CudnnLibrary& lib() const noexcept { return lib_; }
  [[nodiscard]] int device() const noexcept { return device_; }
  [[nodiscard]] const char* what() const noexcept { return what_; }

  [[nodiscard]] CudnnDescriptor make(cudnnBackendDescriptorType_t type) const {
    return CudnnDescriptor(lib_, type, device_, what_);
  }
  void set(const CudnnDescriptor& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           std::int64_t count, const void* values) const {
    XY_CUDNN(lib_, cudnnBackendSetAttribute(d.get(), name, type, count, values), device_, what_);
  }
  // Sets an attribute that names other descriptors.
  void set(const CudnnDescriptor& d, cudnnBackendAttributeName_t name,
           std::initializer_list<cudnnBackendDescriptor_t> values) const {
    set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, std::int64_t(values.size()), values.begin());
  }
  void finalize(const CudnnDescriptor& d) const { XY_CUDNN(lib_, cudnnBackendFinalize(d.get()), device_, what_); }

  // A finalized rank-4 tensor descriptor: `uid` in the variant pack; a
  // virtual one lives only inside the graph, a by-value one is a host scalar.
  [[nodiscard]] CudnnDescriptor tensor(std::int64_t uid, cudnnDataType_t type, const std::int64_t (&dims)[4],
                                       const std::int64_t (&strides)[4], std::int64_t alignment, bool is_virtual,
                                       bool by_value = false) const {
    CudnnDescriptor t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    if (is_virtual) set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    finalize(t);
    return t;
  }

  // An operation graph of `ops` on `handle`, or none when cuDNN does not
  // take it (an operation or graph that does not finalize), with `why`.
  [[nodiscard]] std::optional<CudnnDescriptor> graph(cudnnHandle_t handle,
                                                     const std::vector<cudnnBackendDescriptor_t>& ops,
                                                     std::string& why) const;

  // The engine configurations cuDNN's heuristics list for the graph, best
  // first; none where the mode cannot serve the graph.
  [[nodiscard]] std::vector<CudnnDescriptor> configurations(const CudnnDescriptor& graph,
                                                            cudnnBackendHeurMode_t mode) const;

  // The configuration built into an execution plan on `handle`, with its
  // workspace size, or none where cuDNN cannot build it for this device
  // (expected for some configurations) or its workspace exceeds `max_workspace`.
  [[nodiscard]] std::optional<CudnnDescriptor> build(cudnnHandle_t handle, const CudnnDescriptor& config,
                                                     std::int64_t& workspace, std::uint64_t max_workspace) const;

  // Runs the plan with the tensors of `uids` at `pointers` (a by-value
  // tensor's pointer is to host memory holding its value).
  void execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan, std::int64_t count, const std::int64_t* uids,
               void* const* pointers, void* workspace) const;

 private:
  const CudnnLibrary& lib_;
  int device_;
  const char* what_;
};

}  // namespace xylem::cuda
