#pragma once
// CUDA replay of captured work (xylem/capture.hpp) as a CUDA graph. Each
// recorded call's kernel function is looked up when it is added. On the
// first replay (and again only when a rebind changes a pointer) the calls'
// kernel functions run once on a stream of the recording's own under
// cudaStreamBeginCapture (thread-local mode), cuBLAS and cuDNN following
// that stream; the graph is instantiated, and every replay is one
// cudaGraphLaunch on the compute stream. Temporaries become the graph's own
// allocation nodes (TempBuffer), so no cudaMalloc runs while capturing; an
// op that cannot be captured (its library call breaks the capture) is
// refused with unsupported, naming it.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "ops/kernels.hpp"
#include "xylem/plugin/bound_pointers.hpp"
#include "xylem/plugin/plugin.hpp"

namespace xylem::cuda {

class CudaDevice;

// An instantiated graph; destroyed once its last launch has completed.
class GraphExec {
 public:
  GraphExec(cudaGraphExec_t exec, int device) noexcept : exec_(exec), device_(device) {}
  ~GraphExec();
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  [[nodiscard]] cudaGraphExec_t get() const noexcept { return exec_; }
  // The event of its latest launch, waited for before it is destroyed.
  EventPtr last_launch;

 private:
  cudaGraphExec_t exec_;
  int device_;
};

class CudaRecording final : public plugin::Recording {
 public:
  explicit CudaRecording(CudaDevice& device) : device_(device) {}
  void add(const plugin::OpCall& call) override;
  EventPtr replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) override;

 private:
  CudaDevice& device_;
  std::vector<Kernel> kernels_;
  // The graph, and the pointers it was captured with: a rebind that
  // changes one captures it again.
  std::unique_ptr<GraphExec> graph_;
  plugin::BoundPointers bound_;
};

}  // namespace xylem::cuda
