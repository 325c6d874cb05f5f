#pragma once
// CUDA replay of captured work (xylem/capture.hpp) as a CUDA graph. Each
// recorded call's kernel function is looked up when it is added. On the
// first replay (and again only when a rebind changes a pointer) the calls'
// kernel functions run once on a stream of the recording's own under
// cudaStreamBeginCapture (thread-local mode), cuBLAS and cuDNN following
// that stream; the graph is instantiated, and every replay is one
// cudaGraphLaunch on the compute stream. A collective's step puts its NCCL
// calls (their pointers fixed at the capture) on a second stream forked from
// the capture stream there, so the ops after it run beside it until the
// first that touches its tensors (join_native) waits for it: a gradient
// bucket's all_reduce overlaps the rest of the backward pass, as eagerly.
// Temporaries become the graph's own
// allocation nodes (TempBuffer), so no cudaMalloc runs while capturing; an
// op that cannot be captured (its library call breaks the capture) is
// refused with unsupported, naming it.
#include <cuda_runtime_api.h>

#include <functional>
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

// One recorded step: an op's kernel function, or a library's own launch
// (a collective), which puts its work on the stream it is given. `joins`:
// the native steps (counted among them) this step waits for.
struct RecordedStep {
  Kernel kernel = nullptr;
  std::function<void(void*)> native;
  std::vector<std::size_t> joins;
};

class CudaRecording final : public plugin::Recording {
 public:
  explicit CudaRecording(CudaDevice& device) : device_(device) {}
  void add(const plugin::OpCall& call) override;
  void add_native(std::function<void(void*)> enqueue) override;
  void join_native(std::size_t native, std::size_t step) override;
  EventPtr replay(std::vector<plugin::OpCall> calls, plugin::Deps deps) override;

 private:
  CudaDevice& device_;
  std::vector<RecordedStep> steps_;
  // The graph, and the pointers it was captured with: a rebind that
  // changes one captures it again.
  std::unique_ptr<GraphExec> graph_;
  plugin::BoundPointers bound_;
};

}  // namespace xylem::cuda
